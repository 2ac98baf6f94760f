#!/usr/bin/env python3
"""A minimal MCP agent over Streamable HTTP, for tests that need it to run as some
Unix user (setpriv): initialize with an API key, then one request_feedback with
wait false. Prints the session_id, or the error, as one JSON line.
Usage: http_agent.py HOST:PORT KEY MESSAGE [AUDIENCE]
ASSENT_TEST_SOURCE_ADDR: the local address to connect from (default: the kernel's choice).
ASSENT_TEST_CONTEXT: a JSON object sent as the request's context."""
import http.client, json, os, sys

addr, key, message = sys.argv[1], sys.argv[2], sys.argv[3]
host, port = addr.rsplit(":", 1)

def post(body, session=None):
    src = os.environ.get("ASSENT_TEST_SOURCE_ADDR")
    c = http.client.HTTPConnection(host, int(port), timeout=30, source_address=(src, 0) if src else None)
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "Authorization": f"Bearer {key}"}
    if session:
        h["Mcp-Session-Id"] = session
    c.request("POST", "/mcp", json.dumps(body), h)
    r = c.getresponse()
    data = r.read()
    sid = r.getheader("Mcp-Session-Id")
    c.close()
    if data and "text/event-stream" in (r.getheader("Content-Type") or ""):  # the last message of the stream
        data = [l[5:] for l in data.decode().splitlines() if l.startswith("data:")][-1].encode()
    return r.status, (json.loads(data) if data else None), sid

st, _, session = post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "http-agent-test", "version": "1"}}})
if st != 200 or not session:
    print(json.dumps({"error": f"initialize: HTTP {st}"}))
    sys.exit(1)
post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
args = {"type": "approval", "message": message, "wait": False}
if len(sys.argv) > 4:
    args["audience"] = sys.argv[4]
if os.environ.get("ASSENT_TEST_CONTEXT"):
    args["context"] = json.loads(os.environ["ASSENT_TEST_CONTEXT"])
st, ans, _ = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "request_feedback", "arguments": args}}, session)
res = ((ans or {}).get("result") or {}).get("structuredContent") or {}
print(json.dumps({"status": st, "session_id": res.get("session_id"), "result": res, "raw": ans}))
sys.exit(0 if res.get("session_id") else 1)
