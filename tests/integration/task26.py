#!/usr/bin/env python3
"""A 2026-07-28 client of the tasks extension, one request per run (raw JSON-RPC over
HTTP, stateless): `create` makes a request_feedback task and prints {taskId, status};
`get TASKID` prints what tasks/get says ({status, result?}). One JSON line.
Usage: task26.py HOST:PORT KEY create|get [TASKID]"""
import http.client, json, sys

addr, key, mode = sys.argv[1], sys.argv[2], sys.argv[3]
host, port = addr.rsplit(":", 1)
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
if mode == "create":
    method, params = "tools/call", {"name": "request_feedback", "_meta": META,
                                    "arguments": {"type": "approval", "message": "a 2026 task across the restart"}}
    name = "request_feedback"
else:
    method, params, name = "tasks/get", {"taskId": sys.argv[4], "_meta": META}, sys.argv[4]
c = http.client.HTTPConnection(host, int(port), timeout=30)
c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
          {"Content-Type": "application/json", "Accept": "application/json", "MCP-Protocol-Version": "2026-07-28",
           "Mcp-Method": method, "Mcp-Name": name, "Authorization": f"Bearer {key}"})
d = json.loads(c.getresponse().read() or b"null") or {}
r = d.get("result") or {}
out = {"error": d["error"]["message"]} if "error" in d else {"taskId": r.get("taskId"), "status": r.get("status")}
if r.get("result"):
    out["result"] = r["result"].get("structuredContent")
print(json.dumps(out))
