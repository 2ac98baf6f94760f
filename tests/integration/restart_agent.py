#!/usr/bin/env python3
"""One MCP agent call (raw JSON-RPC) for gateway_restart.sh, on a fresh connection to a
running daemon: over an `assentd --stdio` bridge, or over HTTP when ASSENT_TEST_HTTP is set.
Usage: restart_agent.py BUILD STATE call|hold TOOL JSON_ARGS
  call: prints the tool's structuredContent (or {"error": ...}) as one JSON line.
  hold: prints {"sent": true} once the call is sent, then waits for its answer or for
        the bridge to end (the daemon went away) and prints what came, as one JSON line.
ASSENT_TEST_POLICY: the daemon's policy file, passed to the bridge so that it agrees.
ASSENT_TEST_HTTP=HOST:PORT: Streamable HTTP instead (call only), with the API key in
ASSENT_TEST_KEY (none: an anonymous client)."""
import http.client, json, os, subprocess, sys

build, state, mode, tool, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "restart-agent", "version": "1"}}


def result_of(m):
    if m is None:
        return {"error": "no answer"}
    if "error" in m:
        return {"error": m["error"].get("message")}
    return m["result"].get("structuredContent") or {"error": json.dumps(m["result"])}


def over_http(addr):
    host, port = addr.rsplit(":", 1)
    key = os.environ.get("ASSENT_TEST_KEY")

    def post(body, session=None):
        c = http.client.HTTPConnection(host, int(port), timeout=60)
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if key:
            h["Authorization"] = f"Bearer {key}"
        if session:
            h["Mcp-Session-Id"] = session
        c.request("POST", "/mcp", json.dumps(body), h)
        r = c.getresponse()
        data, sid = r.read(), r.getheader("Mcp-Session-Id")
        if data and "text/event-stream" in (r.getheader("Content-Type") or ""):  # the stream's last message
            data = [l[5:] for l in data.decode().splitlines() if l.startswith("data:")][-1].encode()
        c.close()
        return r.status, (json.loads(data) if data else None), sid

    st, _, session = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
    if st != 200 or not session:
        return {"error": f"initialize: HTTP {st}"}
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    _, m, _ = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": args}},
                   session)
    return result_of(m)


if os.environ.get("ASSENT_TEST_HTTP"):
    print(json.dumps(over_http(os.environ["ASSENT_TEST_HTTP"])), flush=True)
    sys.exit(0)

policy = os.environ.get("ASSENT_TEST_POLICY")
p = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state] + (["--policy", policy] if policy else []),
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def send(i, method, params):
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
    p.stdin.flush()


def answer(i):
    for line in p.stdout:
        m = json.loads(line)
        if m.get("id") == i:
            return m
    return None


send(1, "initialize", INIT)
if not answer(1):
    print(json.dumps({"error": "no answer to initialize"}))
    sys.exit(1)
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
send(2, "tools/call", {"name": tool, "arguments": args})
if mode == "hold":
    print(json.dumps({"sent": True}), flush=True)
m = answer(2)
print(json.dumps({"error": "the bridge ended without an answer"} if m is None else result_of(m)), flush=True)
try:
    p.stdin.close()
    p.wait(timeout=10)
except Exception:
    p.kill()
