#!/usr/bin/env python3
"""One MCP agent call over a fresh `assentd --stdio` bridge (raw JSON-RPC), for
gateway_restart.sh: the daemon runs already; the bridge only connects to it.
Usage: restart_agent.py BUILD STATE call|hold TOOL JSON_ARGS
  call: prints the tool's structuredContent (or {"error": ...}) as one JSON line.
  hold: prints {"sent": true} once the call is sent, then waits for its answer or for
        the bridge to end (the daemon went away) and prints what came, as one JSON line.
ASSENT_TEST_POLICY: the daemon's policy file, passed to the bridge so that it agrees."""
import json, os, subprocess, sys

build, state, mode, tool, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
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


send(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "restart-agent", "version": "1"}})
if not answer(1):
    print(json.dumps({"error": "no answer to initialize"}))
    sys.exit(1)
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
send(2, "tools/call", {"name": tool, "arguments": args})
if mode == "hold":
    print(json.dumps({"sent": True}), flush=True)
m = answer(2)
if m is None:
    out = {"error": "the bridge ended without an answer"}
elif "error" in m:
    out = {"error": m["error"].get("message")}
else:
    out = m["result"].get("structuredContent") or {"error": json.dumps(m["result"])}
print(json.dumps(out), flush=True)
try:
    p.stdin.close()
    p.wait(timeout=10)
except Exception:
    p.kill()
