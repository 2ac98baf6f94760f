#!/usr/bin/env python3
"""Multi-round input (MCP 2026-07-28, SEP-2322): an input or selection request that
the policy lets the client channel answer is offered to the client's own user as an
elicitation form (InputRequiredResult), and answered by retrying the call with
inputResponses and the requestState. The answer is self-attested and tokenless; the
state is single-use and bound to the caller, the call and the deadline: forged,
altered, replayed, foreign, expired and other-call states are refused. Prints TAP.
Usage: gateway_mrtr.py STATE HOST:PORT KEY_A KEY_B BUILD"""
import json, os, subprocess, sys, time, http.client

sys.path.insert(0, os.path.dirname(__file__))
from taplib import ok, plan, done

state, addr, key_a, key_b, build = sys.argv[1:6]
host, port = addr.rsplit(":", 1)
rid = [0]


def call(args, key=key_a, extra=None, caps=None):
    rid[0] += 1
    params = {"name": "request_feedback", "arguments": args,
              "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}} if caps is None else caps}}
    params.update(extra or {})
    h = {"Content-Type": "application/json", "Accept": "application/json", "MCP-Protocol-Version": "2026-07-28",
         "Mcp-Method": "tools/call", "Mcp-Name": "request_feedback", "Authorization": f"Bearer {key}"}
    c = http.client.HTTPConnection(host, int(port), timeout=30)
    c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": rid[0], "method": "tools/call", "params": params}), h)
    r = c.getresponse()
    d = json.loads(r.read() or b"null")
    c.close()
    return r.status, d


def answer(text):
    return {"assent_answer": {"action": "accept", "content": {"answer": text}}}


def ledger():
    out = subprocess.run([f"{build}/assent-verify", "export", f"{state}/ledger"], capture_output=True, text=True).stdout
    return [json.loads(l)["entry"] for l in out.splitlines() if l.strip()]


q = {"type": "input", "message": "Which branch should I deploy?", "default": "main"}
st, d = call(q)
res = d.get("result", {})
form = res.get("inputRequests", {}).get("assent_answer", {})
s1 = res.get("requestState", "")
ok(st == 200 and res.get("resultType") == "input_required" and form.get("method") == "elicitation/create"
   and form["params"]["message"] == q["message"] and form["params"]["requestedSchema"]["properties"]["answer"]["type"] == "string"
   and len(s1) > 64, "an input the policy lets the client answer: an InputRequiredResult with a form and a requestState")
st, d = call(q, extra={"requestState": s1})
ok(d.get("result", {}).get("resultType") == "input_required" and d["result"].get("requestState") == s1,
   "a retry without the answer is asked again, with the same state")
forged = "7b7d." + "0" * 64
st, d = call(q, extra={"requestState": forged, "inputResponses": answer("dev")})
ok(st == 400 and d.get("error", {}).get("code") == -32602 and "does not verify" in d["error"]["message"],
   f"a forged requestState is refused ({d.get('error', {}).get('message')})")
alt = s1[:10] + ("0" if s1[10] != "0" else "1") + s1[11:]
st, d = call(q, extra={"requestState": alt, "inputResponses": answer("dev")})
ok(st == 400 and d["error"]["code"] == -32602, "an altered requestState is refused")
st, d = call(q, key=key_b, extra={"requestState": s1, "inputResponses": answer("dev")})
ok(st == 400 and "another client" in d["error"]["message"], "another agent's requestState is refused (foreign)")
st, d = call(dict(q, message="Something else?"), extra={"requestState": s1, "inputResponses": answer("dev")})
ok(st == 400 and "another call" in d["error"]["message"], "a requestState for another call is refused")
st, d = call(q, extra={"requestState": s1, "inputResponses": answer("release-7")})
sc = d.get("result", {}).get("structuredContent", {})
ok(st == 200 and d["result"]["resultType"] == "complete" and sc.get("status") == "answered"
   and sc.get("response") == "release-7" and sc.get("assurance") == "self-attested" and "approval_token" not in sc,
   f"the answer: answered, self-attested, no token ({sc})")
sid = sc.get("session_id")
st, d = call(q, extra={"requestState": s1, "inputResponses": answer("again")})
ok(st == 400 and "used already" in d["error"]["message"], "the same requestState a second time is refused (replay)")
dec = [e for e in ledger() if e.get("kind") == "decision" and e.get("session_id") == sid]
ok(len(dec) == 1 and dec[0].get("assurance") == "self-attested" and dec[0]["reviewer"]["channel"] == "client"
   and dec[0]["reviewer"]["name"] == "agent:mrtr-a" and "token" not in dec[0],
   "the ledger records it once: assurance self-attested, channel client, the agent that answered, no token")

# a selection: the answer must be one of the options
sel = {"type": "selection", "message": "Which region?", "options": ["eu-west", "us-east"]}
st, d = call(sel)
res = d["result"]
ok(res["inputRequests"]["assent_answer"]["params"]["requestedSchema"]["properties"]["answer"]["enum"] == sel["options"],
   "a selection's form offers its options")
s2 = res["requestState"]
st, d = call(sel, extra={"requestState": s2, "inputResponses": answer("mars")})
ok(st == 400 and d["error"]["code"] == -32602, "an answer that is none of the options is refused")
st, d = call(sel, extra={"requestState": s2, "inputResponses": answer("us-east")})
sc = d["result"]["structuredContent"]
ok(sc.get("status") == "selected" and sc.get("response") == "us-east", "the option chosen: selected")

# declined in the client: rejected, self-attested
st, d = call(q)
s3 = d["result"]["requestState"]
st, d = call(q, extra={"requestState": s3, "inputResponses": {"assent_answer": {"action": "decline"}}})
sc = d["result"]["structuredContent"]
ok(sc.get("status") == "rejected" and sc.get("assurance") == "self-attested", "declined in the client: rejected")

# a reviewer may still answer first; then the state is spent
st, d = call(q)
s4 = d["result"]["requestState"]
pend = json.loads(subprocess.run([f"{build}/assent", "--state", state, "pending", "--json"], capture_output=True,
                                 text=True).stdout or "[]")
mine = [p for p in pend if p["message"] == q["message"]]
ok(len(mine) == 1, "the offered request also waits for the reviewers")
a = subprocess.run([f"{build}/assent", "--state", state, "answer", mine[0]["session_id"], "from-the-reviewer"],
                   capture_output=True, text=True)
st, d = call(q, extra={"requestState": s4, "inputResponses": answer("late")})
ok(a.returncode == 0 and st == 400 and "decided" in d.get("error", {}).get("message", ""),
   f"after a reviewer's answer the client's state is refused ({a.stdout.strip()}{a.stderr.strip()}; {d})")

# expired: the deadline passed
st, d = call(dict(q, timeout_override=1))
s5 = d["result"]["requestState"]
time.sleep(2.2)
st, d = call(dict(q, timeout_override=1), extra={"requestState": s5, "inputResponses": answer("too late")})
ok(st == 400 and "expired" in d["error"]["message"], "a requestState past its deadline is refused")

# approvals never go this way; nor without the client's elicitation capability
st, d = call({"type": "approval", "message": "Approve via the client?", "wait": False})
ok(d["result"].get("resultType") == "complete" and d["result"]["structuredContent"]["status"] == "pending",
   "an approval is never offered to the client (it waits for a reviewer)")
st, d = call(dict(q, wait=False), caps={})
ok(d["result"]["structuredContent"].get("status") == "pending" and "requestState" not in d["result"],
   "a client without the elicitation capability is not offered the form")
plan()
done()
