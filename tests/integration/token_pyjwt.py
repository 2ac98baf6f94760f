#!/usr/bin/env python3
"""docs/pipelines.md's PyJWT check (the guide's verify_approval_token with audience=), run as the page
shows it, against an HS256 token from a real approval. argv: STATE BUILD PAGE SECRET"""
import json, os, re, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from taplib import ok, plan, done
import jwt

state, build, readme, secret = sys.argv[1:5]
text = open(readme).read()
m = re.search(r"<!-- token-pyjwt-begin -->\n```python\n(.*?)```\n<!-- token-pyjwt-end -->", text, re.S)
ok(m is not None, "docs/pipelines.md holds the PyJWT block between its markers")
ns = {}
exec(m.group(1) if m else "", ns)
verify = ns.get("verify_approval_token")
ok(callable(verify), "the block defines verify_approval_token")

p = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL)
n = 0


def call(method, params):
    global n
    n += 1
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n").encode())
    p.stdin.flush()
    for line in p.stdout:
        r = json.loads(line)
        if r.get("id") == n:
            return r
    return {}


def sc(r):
    return ((r or {}).get("result") or {}).get("structuredContent") or {}


call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pyjwt", "version": "1"}})
d = sc(call("tools/call", {"name": "request_feedback",
                            "arguments": {"type": "approval", "message": "deploy?", "wait": False}}))
sid = d.get("session_id")
res = subprocess.run([f"{build}/assent", "--state", state, "approve", sid or "none"], capture_output=True, text=True)
ok(res.returncode == 0, f"a reviewer approves {sid} ({res.stderr.strip()[:200]})")
d = sc(call("tools/call", {"name": "get_feedback", "arguments": {"session_id": sid}}))
tok = d.get("approval_token")
ok(isinstance(tok, str) and tok.count(".") == 2, f"get_feedback hands the approval token ({str(d)[:200]})")
hdr = jwt.get_unverified_header(tok) if tok else {}
ok(hdr.get("alg") == "HS256", f"it is HS256 (FEEDBACK_SIGN_TOKENS=true with a secret): {hdr}")

try:
    claims = verify(tok, secret)
    ok(claims.get("approved") is True and claims.get("session_id") == sid and claims.get("aud") == "assent",
       f"docs/pipelines.md's verify_approval_token accepts it: approved, session_id {claims.get('session_id')}, aud {claims.get('aud')}")
except ValueError as e:
    ok(False, f"docs/pipelines.md's verify_approval_token refused a real approval: {e}")


def refused(desc, f):
    try:
        f()
        ok(False, desc + ": accepted")
    except ValueError as e:
        ok(str(e) == "Invalid approval token", f"{desc}: {e}")


refused("another audience (tf-prod) is refused", lambda: verify(tok, secret, audience="tf-prod"))
refused("another secret is refused", lambda: verify(tok, "0" * 64))
h, pl, sg = tok.split(".")
claims = json.loads(jwt.utils.base64url_decode(pl))
claims["approved"] = True
claims["session_id"] = "req-someone-else"
forged = h + "." + jwt.utils.base64url_encode(json.dumps(claims).encode()).decode() + "." + sg
refused("a payload edited after signing is refused", lambda: verify(forged, secret))
# Why docs/pipelines.md adds audience=: the guide's call as written refuses every assent token.
try:
    jwt.decode(tok, secret, algorithms=["HS256"])
    ok(False, "the guide's jwt.decode without audience= accepted an assent token (docs/pipelines.md's note is wrong)")
except jwt.InvalidAudienceError:
    ok(True, "the guide's jwt.decode without audience= raises InvalidAudienceError on it (why docs/pipelines.md adds it)")
p.stdin.close()
p.wait(timeout=20)
plan()
done()
