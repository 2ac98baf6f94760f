#!/usr/bin/env python3
"""A gated call's multi-round input (MCP 2026-07-28, SEP-2322) through assent to an upstream
that speaks 2026-07-28 (the conformance fixture over stdio, gateway/signer/gatemrtr.c): the
server's inputRequests reach the agent under their own keys; the requestState the agent gets
is the signer's, carrying the server's; the retry's answers are part of the call (ledgered and
shown to reviewers in the request's view) and reach the server with its own state. Altered,
foreign and other-call states, and malformed answers, are protocol errors and nothing is
forwarded. Prints TAP. Usage: gate_mrtr.py STATE HOST:PORT KEY_A KEY_B BUILD CALL_LOG"""
import json, os, subprocess, sys, http.client

sys.path.insert(0, os.path.dirname(__file__))
from taplib import ok, done

state, addr, key_a, key_b, build, call_log = sys.argv[1:7]
host, port = addr.rsplit(":", 1)
rid = [0]
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}, "roots": {}}}


def call(name, key=key_a, extra=None, method="tools/call"):
    rid[0] += 1
    params = {"name": name, "_meta": META}
    if method == "tools/call":
        params["arguments"] = {}
    params.update(extra or {})
    h = {"Content-Type": "application/json", "Accept": "application/json", "MCP-Protocol-Version": "2026-07-28",
         "Mcp-Method": method, "Mcp-Name": name, "Authorization": f"Bearer {key}"}
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": rid[0], "method": method, "params": params}), h)
    r = c.getresponse()
    d = json.loads(r.read() or b"null")
    c.close()
    return d


def forwarded():
    try:
        return sum(1 for _ in open(call_log))
    except FileNotFoundError:
        return 0


def err(d):
    return (d.get("error") or {}).get("code"), (d.get("error") or {}).get("message", "")


TOOL = "test_input_required_result_request_state"
d = call(TOOL)
r1 = d.get("result", {})
st1 = r1.get("requestState", "")
ok(r1.get("resultType") == "input_required" and r1.get("inputRequests", {}).get("confirm", {}).get("method")
   == "elicitation/create", f"round 1: the server's question reaches the agent under its own key ({str(r1)[:160]})")
payload = bytes.fromhex(st1.split(".")[0]).decode() if "." in st1 else ""
ok(st1 and json.loads(payload).get("k") == "gate" and json.loads(payload).get("us"),
   "... with a requestState the signer minted around the server's own")
n0 = forwarded()
answer = {"confirm": {"action": "accept", "content": {"ok": True}}}
alt = st1[:-1] + ("0" if st1[-1] != "0" else "1")
c, m = err(call(TOOL, extra={"inputResponses": answer, "requestState": alt}))
ok(c == -32602 and "does not verify" in m, f"an altered requestState is a protocol error ({m})")
c, m = err(call(TOOL, key=key_b, extra={"inputResponses": answer, "requestState": st1}))
ok(c == -32602 and "another client" in m, f"another agent's requestState is refused ({m})")
c, m = err(call("test_input_required_result_elicitation", extra={"inputResponses": answer, "requestState": st1}))
ok(c == -32602 and "another call" in m, f"a requestState of another tool is refused ({m})")
c, m = err(call(TOOL, extra={"inputResponses": {"confirm": 12345}, "requestState": st1}))
ok(c == -32602 and "inputResponses.confirm" in m, f"an answer that is not an object is a protocol error ({m})")
c, m = err(call(TOOL, extra={"inputResponses": None}))
ok(c == -32602 and "inputResponses" in m, f"null inputResponses is a protocol error ({m})")
ok(forwarded() == n0, "none of those reached the server")
d = call(TOOL, extra={"inputResponses": answer, "requestState": st1})
r2 = d.get("result", {})
text = " ".join(x.get("text", "") for x in r2.get("content", []))
ok("state-ok" in text and r2.get("resultType") == "complete",
   f"round 2: the answers and the server's own state reach it: a complete result ({text[:80]})")
ok(forwarded() == n0 + 1, "... forwarded once")
out = subprocess.run([f"{build}/assent-verify", "export", f"{state}/ledger"], capture_output=True, text=True).stdout
entries = [json.loads(l)["entry"] for l in out.splitlines() if l.strip()]
reqs = [e for e in entries if e.get("kind") == "request" and e.get("tool") == TOOL]
ok(len(reqs) == 2 and "input" not in reqs[0] and reqs[1].get("input") == answer,
   f"the ledger has both rounds as requests; the second's view shows the answers ({len(reqs)} requests)")
outs = [e for e in entries if e.get("kind") == "outcome"]
ok(any(e.get("status") == "input_required" for e in outs), "round 1's outcome is ledgered as input_required")
d = call("test_input_required_result_prompt", method="prompts/get")
rp = d.get("result", {})
k = next(iter(rp.get("inputRequests", {})), "")
d = call("test_input_required_result_prompt", method="prompts/get",
         extra={"inputResponses": {k: {"action": "accept", "content": {"context": "ctx-91"}}},
                "requestState": rp.get("requestState")})
ok(rp.get("resultType") == "input_required" and "ctx-91" in json.dumps(d.get("result", {}).get("messages")),
   "a prompts/get takes the same two rounds")
done()
