"""A token says no more than the policy allowed, and an agent's owner never decides its
requests. Driven by token_policy.sh (which starts and stops the daemons) with a
subcommand; prints TAP lines. Raw JSON-RPC over `assentd --stdio` bridges, one request
at a time: send, do what the test does meanwhile, then read the answer."""
import http.client, json, os, subprocess, sys

cmd, state, build = sys.argv[1], sys.argv[2], sys.argv[3]
from taplib import done, ok

def assent(*args):
    return subprocess.run([f"{build}/assent", "--state", state, *args], capture_output=True, text=True)

def verify(token, aud):
    keys = [f"{state}/keys/{k}" for k in os.listdir(f"{state}/keys") if k.startswith("token-") and k.endswith(".pub")]
    args = [f"{build}/assent-verify", "token", "-", "--aud", aud, "--ledger", f"{state}/ledger"]
    for k in keys:
        args += ["--key", k]
    return subprocess.run(args, input=token, capture_output=True, text=True)

class Bridge:
    """One stdio bridge; answers are read in order (the bridge keeps one client's order)."""
    def __init__(self):
        pol = ["--policy", os.environ["TEST_POLICY"]] if os.environ.get("TEST_POLICY") else []
        self.p = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state, *pol], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, bufsize=1)
        self.id = 0
        self.answer(self.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                             "clientInfo": {"name": "token-policy-test", "version": "1"}}))
    def send(self, method, params):
        self.id += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params}) + "\n")
        return self.id
    def answer(self, i):
        for line in self.p.stdout:
            m = json.loads(line)
            if m.get("id") == i:
                return m
        return {}
    def ask(self, **args):
        return self.send("tools/call", {"name": "request_feedback", "arguments": args})
    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=20)

def outcome(m):
    """(structured result, the error text when the call was refused)"""
    r = m.get("result") or {}
    text = " ".join(c.get("text", "") for c in r.get("content", []))
    return r.get("structuredContent") or {}, text if r.get("isError") or "error" in m else ""

def pending_one(message):
    for _ in range(200):
        r = assent("pending", "--json")
        hit = [x for x in json.loads(r.stdout or "[]") if x.get("message") == message]
        if hit:
            return hit[0]["session_id"]
        subprocess.run(["sleep", "0.05"])
    return None

if cmd == "examples":  # assentd --policy policy/examples.policy, nothing registered yet
    b = Bridge()
    ro = {"readonly": True}
    sc, err = outcome(b.answer(b.ask(type="confirmation", message="read prod", context=ro, audience="production")))
    ok(not sc.get("approval_token") and 'audience "production" refused' in err and '"assent"' in err,
       f"an unregistered stdio agent's request for audience production is refused, naming what it may ask for ({err[:160]})")
    sc, err = outcome(b.answer(b.ask(type="approval", message="plan", audience="tf-prod")))
    ok('audience "tf-prod" refused' in err and "--uid" in err,
       f"... on an ask rule too, with how to register it ({err[:120]})")
    sc, err = outcome(b.answer(b.ask(type="confirmation", message="read default", context=ro)))
    tok = sc.get("approval_token", "")
    ok(sc.get("approved") is True and tok and verify(tok, "assent").returncode == 0,
       "the readonly rule still allows the default audience, with a token that verifies for it")
    v = verify(tok, "production")
    ok(v.returncode == 1 and "wrong audience" in v.stderr, "... and assent-verify --aud production refuses that token")
    b.close()
    uid = str(os.getuid())
    r = assent("agent", "add", "ci-bot", "--uid", uid, "--audience", "staging", "--audience", "production",
               "--audience", "qa")
    ok(r.returncode == 0 and "ak_" not in r.stdout, "assent agent add ci-bot --uid UID registers a stdio agent (no API key)")
    lst = json.loads(assent("agent", "list", "--json").stdout or "[]")
    ok(any(a["name"] == "ci-bot" and a.get("uids") == [int(uid)] and "production" in a["audiences"] for a in lst),
       "assent agent list shows its uid and audiences")
    b = Bridge()
    sc, err = outcome(b.answer(b.ask(type="confirmation", message="read qa", context=ro, audience="qa")))
    ok(sc.get("status") == "denied" and not sc.get("approval_token") and "names no audience" in (sc.get("response") or ""),
       f"registered for qa, the readonly allow rule (it names no audience) denies it, saying why ({sc.get('response')})")
    sc, err = outcome(b.answer(b.ask(type="approval", message="deploy staging", audience="staging")))
    tok = sc.get("approval_token", "")
    ok(sc.get("approved") is True and verify(tok, "staging").returncode == 0 and verify(tok, "production").returncode == 1,
       "the stdio agent registered by uid matches `allow agent ci-bot audience staging`: a token for staging only")
    i = b.ask(type="approval", message="deploy production", audience="production")
    sid = pending_one("deploy production")
    ok(sid is not None, "a request for production is asked (the ask rule for ci-bot), not allowed")
    b.close()
    done()

if cmd == "tiny":  # a tiny policy: `allow type approval` then `default deny`
    b = Bridge()
    sc, err = outcome(b.answer(b.ask(type="approval", message="any", audience="deploy")))
    ok("refused" in err and not sc.get("approval_token"), f"tiny policy: an unregistered uid gets no token for deploy ({err[:100]})")
    assent("agent", "add", "local", "--uid", str(os.getuid()), "--audience", "deploy")
    sc, err = outcome(b.answer(b.ask(type="approval", message="any 2", audience="deploy")))
    ok(sc.get("status") == "denied" and not sc.get("approval_token") and "line 1" in (sc.get("response") or ""),
       f"tiny policy, agent registered for deploy: `allow type approval` names no audience, so deploy is denied ({sc.get('response')})")
    sc, err = outcome(b.answer(b.ask(type="approval", message="any 3")))
    tok = sc.get("approval_token", "")
    ok(sc.get("approved") is True and verify(tok, "assent").returncode == 0, "... and the default audience is allowed, with a token")
    b.close()
    done()

if cmd == "owner":  # default ask same-user ok, single-user: only the owner rule can refuse
    info = json.load(open(f"{state}/assentd.json"))
    host, port = info["review"].rsplit(":", 1)
    tester_web, bob_web = sys.argv[4], sys.argv[5]
    def post(path, token, body, extra=None, at=(host, port)):
        c = http.client.HTTPConnection(at[0], int(at[1]), timeout=30)
        c.request("POST", path, body=json.dumps(body),
                  headers={**({"Authorization": f"Bearer {token}"} if token else {}), "Content-Type": "application/json",
                           "Accept": "application/json, text/event-stream", **(extra or {})})
        r = c.getresponse()
        out = r.status, r.getheader("Mcp-Session-Id"), r.read().decode()
        c.close()
        return out
    def web_decide(token, sid):
        st, _, body = post("/review/api/decide", token, {"session_id": sid, "outcome": "approved"})
        return st, body
    def mcp_call(path, token, tool, args, at=(host, port)):
        """One tools/call in a new MCP session over HTTP: the answer's text"""
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "owner-test", "version": "1"}}
        _, msid, _ = post(path, token, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, at=at)
        h = {"Mcp-Session-Id": msid or "", "MCP-Protocol-Version": "2025-06-18"}
        post(path, token, {"jsonrpc": "2.0", "method": "notifications/initialized"}, h, at=at)
        call = {"name": tool, "arguments": args}
        return post(path, token, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}, h, at=at)[2]
    def review_mcp_submit(token, sid):
        return mcp_call("/review/mcp", token, "submit_feedback", {"session_id": sid, "approved": True})
    b = Bridge()
    i = b.ask(type="approval", message="owned 1")
    sid = pending_one("owned 1")
    r = assent("approve", sid or "none")
    ok(sid and r.returncode != 0 and "owner of agent mine" in r.stderr + r.stdout,
       f"the agent's owner is refused in the terminal ({(r.stderr + r.stdout).strip()[:160]})")
    st, body = web_decide(tester_web, sid or "none")
    ok(st >= 400 and "owner of agent mine" in body, f"... and on the web ({st} {body[:160]})")
    body = review_mcp_submit(tester_web, sid or "none")
    ok('"error"' in body and "owner of agent mine" in body,
       f"... and over /review/mcp (submit_feedback) ({body[:160]})")
    st, body = web_decide(bob_web, sid or "none")
    sc, _ = outcome(b.answer(i))
    ok(st == 200 and sc.get("approved") is True and sc.get("approval_token"), "someone else (bob, on the web) decides it")
    b.close()
    # An HTTP agent's owner, known by the agent's key; anonymous clients get the default audience only.
    agent_at = tuple(info["http"].rsplit(":", 1))
    body = mcp_call("/mcp", sys.argv[6], "request_feedback", {"type": "approval", "message": "owned http",
                                                             "audience": "deploy", "wait": False}, at=agent_at)
    sid = pending_one("owned http")
    r = assent("approve", sid or "none")
    ok(sid and r.returncode != 0 and "owner of agent http-bot" in r.stderr,
       f"an HTTP agent's owner is refused in the terminal ({r.stderr.strip()[:120]} / {body[:80]})")
    body = mcp_call("/mcp", "", "request_feedback", {"type": "approval", "message": "anon", "audience": "deploy",
                                                     "wait": False}, at=agent_at)
    ok('audience \\"deploy\\" refused: an anonymous client' in body, f"an anonymous client may not ask for deploy ({body[:160]})")
    done()
sys.exit(2)
