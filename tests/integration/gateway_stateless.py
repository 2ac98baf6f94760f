#!/usr/bin/env python3
"""MCP 2026-07-28 over HTTP and stdio, as a raw JSON-RPC client sends it (no SDK):
no initialize, _meta on every request, headers that must repeat the body, the
errors the revision names with the request's id, and pending approvals as tasks
of the io.modelcontextprotocol/tasks extension, each owned by the agent key that
asked. Prints TAP.
Usage: gateway_stateless.py STATE HOST:PORT KEY_A KEY_B BUILD"""
import json, os, subprocess, sys, time, http.client

sys.path.insert(0, os.path.dirname(__file__))
from taplib import ok, plan, done

state, addr, key_a, key_b, build = sys.argv[1:6]
host, port = addr.rsplit(":", 1)
V = "2026-07-28"
EXT = "io.modelcontextprotocol/tasks"
rid = [0]


def meta(tasks=True, version=V):
    caps = {"extensions": {EXT: {}}} if tasks else {}
    return {"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": caps,
            "io.modelcontextprotocol/clientInfo": {"name": "stateless-test", "version": "1"}}


def post(method, params, key=key_a, headers=None, body=None, http_method="POST"):
    rid[0] += 1
    msg = body if body is not None else {"jsonrpc": "2.0", "id": rid[0], "method": method, "params": params}
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "MCP-Protocol-Version": V, "Mcp-Method": method}
    name = (params or {}).get("name") or (params or {}).get("taskId")
    if name:
        h["Mcp-Name"] = name
    if key:
        h["Authorization"] = f"Bearer {key}"
    for k, v in (headers or {}).items():
        if v is None:
            h.pop(k, None)
        else:
            h[k] = v
    c = http.client.HTTPConnection(host, int(port), timeout=30)
    c.request(http_method, "/mcp", json.dumps(msg) if http_method == "POST" else None, h)
    r = c.getresponse()
    data = r.read()
    c.close()
    if data and "text/event-stream" in (r.getheader("Content-Type") or ""):
        data = [l[5:] for l in data.decode().splitlines() if l.startswith("data:")][-1].encode()
    return r.status, (json.loads(data) if data else None), r


def assent(*args):
    return subprocess.run([f"{build}/assent", "--state", state, *args], capture_output=True, text=True)


# ---- the stateless revision ----
st, d, r = post("server/discover", {"_meta": meta()})
res = (d or {}).get("result") or {}
ok(st == 200 and res.get("resultType") == "complete" and V in res.get("supportedVersions", [])
   and res.get("capabilities", {}).get("tools") is not None and isinstance(res.get("ttlMs"), int)
   and res.get("cacheScope") in ("public", "private") and res.get("instructions"),
   f"server/discover: resultType, supportedVersions, capabilities, instructions, ttlMs, cacheScope (HTTP {st})")
ok(res.get("_meta", {}).get("io.modelcontextprotocol/serverInfo", {}).get("name") == "assent",
   "server/discover names the server in _meta (as the conformance suite reads it)")
ok(EXT in res.get("capabilities", {}).get("extensions", {}), "server/discover offers the tasks extension")
ok(r.getheader("Mcp-Session-Id") is None, "no Mcp-Session-Id: the revision is stateless")
st, d, _ = post("tools/list", {"_meta": meta()})
res = (d or {}).get("result") or {}
ok(st == 200 and res.get("resultType") == "complete" and res.get("ttlMs", -1) >= 0 and res.get("cacheScope") == "public"
   and any(t["name"] == "request_feedback" for t in res.get("tools", [])),
   "tools/list without a handshake: the tools, resultType, ttlMs, cacheScope")
st, d, _ = post("tools/list", {})
ok(st == 400 and d["error"]["code"] == -32602 and d["id"] == rid[0], "no _meta: -32602, HTTP 400, with the request's id")
m = meta()
del m["io.modelcontextprotocol/clientCapabilities"]
st, d, _ = post("tools/list", {"_meta": m})
ok(st == 400 and d["error"]["code"] == -32602 and "clientCapabilities" in d["error"]["message"],
   "_meta without clientCapabilities: -32602 naming it")
st, d, _ = post("server/discover", {"_meta": meta(version="v999")}, headers={"MCP-Protocol-Version": "v999"})
ok(st == 400 and d["error"]["code"] == -32022 and d["error"]["data"]["requested"] == "v999"
   and V in d["error"]["data"]["supported"] and d["id"] == rid[0],
   "an unknown version: -32022 with the supported list and the requested one echoed")
st, d, _ = post("server/discover", {"_meta": meta(version="v999")})
ok(st == 400 and d["error"]["code"] == -32020, "header 2026-07-28, _meta another version: -32020 header mismatch")
st, d, _ = post("tools/list", {"_meta": meta()}, headers={"Mcp-Method": "prompts/list"})
ok(st == 400 and d["error"]["code"] == -32020 and d["id"] == rid[0], "Mcp-Method that disagrees with the body: -32020")
st, d, _ = post("tools/list", {"_meta": meta()}, headers={"Mcp-Method": None})
ok(st == 400 and d["error"]["code"] == -32020, "Mcp-Method missing: -32020")
st, d, _ = post("tools/call", {"name": "list_pending_feedback", "arguments": {}, "_meta": meta()},
                headers={"Mcp-Name": "get_feedback"})
ok(st == 400 and d["error"]["code"] == -32020, "Mcp-Name that disagrees with params.name: -32020")
st, d, _ = post("tools/call", {"name": "list_pending_feedback", "arguments": {}, "_meta": meta()},
                headers={"Mcp-Name": "  list_pending_feedback\t"})
ok(st == 200 and d["result"]["resultType"] == "complete" and d["result"]["isError"] is False,
   "Mcp-Name with surrounding whitespace is the same name; a tool result carries resultType")
for meth in ("initialize", "ping", "logging/setLevel", "no/such"):
    st, d, _ = post(meth, {"_meta": meta()})
    ok(st == 404 and d["error"]["code"] == -32601 and d["id"] == rid[0], f"{meth} on a 2026-07-28 request: 404, -32601")
st, d, r = post("tools/list", None, http_method="DELETE")
ok(st == 405 and "POST" in (r.getheader("Allow") or ""), "DELETE with 2026-07-28: 405, Allow: POST")
st, d, _ = post("tools/list", {"_meta": meta()}, headers={"Content-Type": "text/plain"})
ok(st == 415 and d["id"] == rid[0] and d["error"]["code"] == -32600,
   "a POST refused for its media type still carries the request's id (its body is read first)")
st, d, _ = post("tools/list", {"_meta": meta()}, key=None, headers={"Authorization": "Basic eDp5"})
ok(st == 401 and d["id"] == rid[0], "so does one refused for the shape of its Authorization")
st, d, _ = post("tools/list", {"_meta": meta()}, key="not-a-key")
ok(st == 401, "who asks is measured: a bad key is refused, _meta does not matter")

# ---- a pending approval as a task (the extension) ----
call = {"name": "request_feedback", "arguments": {"type": "approval", "message": "Stateless deploy?"}, "_meta": meta()}
st, d, _ = post("tools/call", call)
t = (d or {}).get("result") or {}
tid = t.get("taskId", "")
ok(st == 200 and t.get("resultType") == "task" and t.get("status") == "working" and tid.startswith("req-")
   and "task" not in t and isinstance(t.get("ttlMs"), int) and isinstance(t.get("pollIntervalMs"), int)
   and t.get("createdAt", "").endswith("Z"),
   f"a client with the extension gets a flat CreateTaskResult, working ({t})")
pending = json.loads(assent("pending", "--json").stdout or "[]")
ok(any(p["session_id"] == tid for p in pending), "the reviewer sees the task's request pending")
st, d, _ = post("tasks/get", {"taskId": tid, "_meta": meta()})
ok(st == 200 and d["result"]["status"] == "working" and d["result"]["resultType"] == "complete"
   and "result" not in d["result"], "tasks/get while it waits: working, no result yet")
st, d, _ = post("tasks/get", {"taskId": tid, "_meta": meta()}, key=key_b)
ok(st == 400 and d["error"]["code"] == -32602, "another agent's tasks/get on it: not found (-32602)")
st, d, _ = post("tasks/cancel", {"taskId": tid, "_meta": meta()}, key=key_b)
ok(st == 400 and d["error"]["code"] == -32602, "another agent cannot cancel it either")
st, d, _ = post("tasks/get", {"taskId": tid, "_meta": meta(tasks=False)})
ok(st == 400 and d["error"]["code"] == -32021
   and EXT in d["error"]["data"]["requiredCapabilities"]["extensions"],
   "tasks/get without the extension declared: -32021 naming it")
st, d, _ = post("tasks/get", {"taskId": tid, "_meta": meta()}, headers={"Mcp-Name": "req-other"})
ok(st == 400 and d["error"]["code"] == -32020, "tasks/get whose Mcp-Name is not its taskId: -32020")
for meth in ("tasks/result", "tasks/list"):
    st, d, _ = post(meth, {"taskId": tid, "_meta": meta()})
    ok(st == 404 and d["error"]["code"] == -32601, f"{meth} is not part of the extension: -32601")
st, d, _ = post("tasks/update", {"taskId": tid, "_meta": meta(), "inputResponses": {}})
ok(st == 400 and d["error"]["code"] == -32602, "tasks/update: this task waits for a reviewer, not for input")
a = assent("approve", tid, "-m", "go stateless")
ok(a.returncode == 0, f"the reviewer approves it ({a.stdout.strip()}{a.stderr.strip()})")
st, d, _ = post("tasks/get", {"taskId": tid, "_meta": meta()})
res = d["result"]
sc = (res.get("result") or {}).get("structuredContent") or {}
ok(res["status"] == "completed" and sc.get("approved") is True and sc.get("response") == "go stateless"
   and sc.get("approval_token"), "tasks/get after the decision: completed, the result inlined with its token")
with open(f"{state}/task.token", "w") as f:
    f.write(sc.get("approval_token", ""))
st, d, _ = post("tasks/cancel", {"taskId": tid, "_meta": meta()})
ok(st == 200 and d["result"] == {"resultType": "complete"}, "tasks/cancel on a finished task: the empty ack (idempotent)")
st, d, _ = post("tasks/get", {"taskId": tid, "_meta": meta()})
ok(d["result"]["status"] == "completed", "and it stays completed")

# cancel a working one: ledgered, then cancelled
st, d, _ = post("tools/call", dict(call, arguments={"type": "approval", "message": "Cancel this one"}))
cid = d["result"]["taskId"]
st, d, _ = post("tasks/cancel", {"taskId": cid, "_meta": meta()})
ok(st == 200 and d["result"] == {"resultType": "complete"}, "tasks/cancel on a working task: the empty ack")
st, d, _ = post("tasks/get", {"taskId": cid, "_meta": meta()})
ok(d["result"]["status"] == "cancelled", "tasks/get then says cancelled")
ok(not any(p["session_id"] == cid for p in json.loads(assent("pending", "--json").stdout or "[]")),
   "the cancelled task left the reviewers' queue")
exp = subprocess.run([f"{build}/assent-verify", "export", f"{state}/ledger"], capture_output=True, text=True).stdout
ok(any('"kind":"cancelled"' in l and cid in l for l in exp.splitlines()), "the cancel is ledgered as cancelled")

# without the extension: a plain blocking call, and wait: false as before
st, d, _ = post("tools/call", {"name": "request_feedback", "arguments": {"type": "approval", "message": "Poll me",
                                                                      "wait": False}, "_meta": meta(tasks=False)})
sc = d["result"].get("structuredContent") or {}
ok(d["result"]["resultType"] == "complete" and sc.get("status") == "pending" and "taskId" not in d["result"],
   "without the extension, wait: false answers pending as before (no task)")
assent("reject", sc.get("session_id", "x"), "-m", "no")
st, d, _ = post("tools/call", {"name": "get_feedback", "arguments": {"session_id": sc.get("session_id", "x"),
                                                                  "wait_seconds": 0}, "_meta": meta(tasks=False)})
ok(d["result"]["structuredContent"].get("status") == "rejected", "and get_feedback collects the decision statelessly")

# a blocking stateless call a person takes a while over: progress, then keep-alives as a stream
import threading
body = {"jsonrpc": "2.0", "id": 777, "method": "tools/call", "params": {
    "name": "request_feedback", "arguments": {"type": "approval", "message": "Think it over"},
    "_meta": dict(meta(tasks=False), progressToken="p1")}}
c = http.client.HTTPConnection(host, int(port), timeout=120)
c.request("POST", "/mcp", json.dumps(body), {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
          "MCP-Protocol-Version": V, "Mcp-Method": "tools/call", "Mcp-Name": "request_feedback",
          "Authorization": f"Bearer {key_a}"})


def approve_later():
    for _ in range(400):
        hit = next((p for p in json.loads(assent("pending", "--json").stdout or "[]") if p["message"] == "Think it over"), None)
        if hit:
            break
        time.sleep(0.05)
    time.sleep(17)  # past the first progress notification (10 s) and the 15 s keep-alive
    assent("approve", hit["session_id"], "-m", "after some thought")


th = threading.Thread(target=approve_later)
th.start()
r = c.getresponse()
raw = r.read().decode()
th.join()
events = [json.loads(l[5:]) for l in raw.splitlines() if l.startswith("data:")]
final = [e for e in events if e.get("id") == 777]
prog = [e for e in events if e.get("method") == "notifications/progress"]
ok(r.status == 200 and "text/event-stream" in (r.getheader("Content-Type") or "") and prog and final
   and final[0]["result"]["structuredContent"]["approved"] is True and final[0]["result"]["resultType"] == "complete",
   f"a 17 s stateless call streams its progress ({len(prog)} notifications) and then its result")
c.close()

# closing the response stream is the client's cancel
import socket
body = json.dumps({"jsonrpc": "2.0", "id": 999, "method": "tools/call", "params": {
    "name": "request_feedback", "arguments": {"type": "approval", "message": "Hang up on me"}, "_meta": meta(tasks=False)}})
sk = socket.create_connection((host, int(port)))
sk.sendall((f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json\r\nMCP-Protocol-Version: {V}\r\nMcp-Method: tools/call\r\n"
            f"Mcp-Name: request_feedback\r\nAuthorization: Bearer {key_a}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
hung = None
for _ in range(400):
    hung = next((p for p in json.loads(assent("pending", "--json").stdout or "[]") if p["message"] == "Hang up on me"), None)
    if hung:
        break
    time.sleep(0.05)
sk.close()
cancelled = False
for _ in range(400):
    exp = subprocess.run([f"{build}/assent-verify", "export", f"{state}/ledger"], capture_output=True, text=True).stdout
    cancelled = bool(hung) and any('"kind":"cancelled"' in l and hung["session_id"] in l for l in exp.splitlines())
    if cancelled:
        break
    time.sleep(0.05)
ok(hung is not None and cancelled, "a blocking stateless call whose client closes the stream is ledgered cancelled")

# ---- stdio: the same per-request rules through the bridge ----
p = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     text=True)


def line(msg):
    p.stdin.write(json.dumps(msg) + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())


d = line({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}})
ok(d.get("result", {}).get("resultType") == "complete" and V in d["result"]["supportedVersions"],
   "stdio: server/discover with no initialize")
d = line({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta()}})
ok(d.get("result", {}).get("ttlMs", -1) >= 0 and d["result"]["resultType"] == "complete", "stdio: tools/list, stateless")
d = line({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_meta": meta()}})
ok(d.get("error", {}).get("code") == -32601 and d["id"] == 3, "stdio: ping on a 2026-07-28 request: -32601")
d = line({"jsonrpc": "2.0", "id": 4, "method": "server/discover", "params": {}})
ok(d.get("error", {}).get("code") == -32602, "stdio: server/discover without _meta: -32602")
d = line({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": meta(version="2030-01-01")}})
ok(d.get("error", {}).get("code") == -32022 and d["error"]["data"]["requested"] == "2030-01-01", "stdio: -32022")
d = line({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": dict(call, arguments={
    "type": "approval", "message": "stdio task"})})
ok(d.get("result", {}).get("resultType") == "task", "stdio: a task too")
p.stdin.close()
p.wait(timeout=10)

# ---- 2025-11-25 tasks on stdio: the task's end is told (notifications/tasks/status) ----
p = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     text=True)
d = line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {"tasks": {}}, "clientInfo": {"name": "t25", "version": "1"}}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
d = line({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
    "name": "request_feedback", "arguments": {"type": "approval", "message": "stdio 2025 task"}, "task": {"ttl": 60000}}})
t25 = (d.get("result") or {}).get("task") or {}
ok(t25.get("status") == "working" and t25.get("taskId", "").startswith("req-") and "ttl" in t25,
   "stdio 2025-11-25: params.task gives a CreateTaskResult {task: ...}, working")
assent("approve", t25.get("taskId", "x"), "-m", "told")
d = json.loads(p.stdout.readline())
ok(d.get("method") == "notifications/tasks/status" and d["params"].get("taskId") == t25.get("taskId")
   and d["params"].get("status") == "completed",
   f"... and when a reviewer decides, notifications/tasks/status says completed ({str(d)[:160]})")
d = line({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": t25.get("taskId", "x")}})
ok((d.get("result") or {}).get("structuredContent", {}).get("response") == "told"
   and d["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == t25.get("taskId"),
   "tasks/result: the tool's result, naming its task")
p.stdin.close()
p.wait(timeout=10)
plan()
done()
