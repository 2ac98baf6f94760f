"""The reviewer listener lets no one in where they don't belong (issue 7), against
one running daemon: each refusal in its own check, then what a reviewer may do
(log in, see a request, decide it over the web, /feedback/submit, the admin
endpoint, logout ending the event stream), the failed-login limiter, /metrics,
/.well-known/jwks.json and /checkpoint. Agents make their requests over stdio
through `assentd --stdio` (blocking calls in threads), so each decision is seen
arriving at the agent with its token. TAP out.

argv: STATE BUILD; env: TOKEN_ALICE, TOKEN_BOB (reviewer web tokens), ADMIN
(admin token), AGENT_KEY (an agent's API key), PROXY_SECRET."""
import http.client, json, os, socket, subprocess, sys, threading, time

state, build = sys.argv[1], sys.argv[2]
ALICE, BOB, ADMIN, AGENT = (os.environ[k] for k in ("TOKEN_ALICE", "TOKEN_BOB", "ADMIN", "AGENT_KEY"))
PROXY_SECRET = os.environ["PROXY_SECRET"]
info = json.load(open(f"{state}/assentd.json"))
RHOST, RPORT = info["review"].rsplit(":", 1)
AHOST, APORT = info["http"].rsplit(":", 1)
ORIGIN = f"http://{RHOST}:{RPORT}"
EVIL = "http://evil.example"

from taplib import done, ok, plan

class Resp:
    def __init__(self, r, body):
        self.status, self.headers, self.body = r.status, r.getheaders(), body
    def header(self, name):
        vals = [v for k, v in self.headers if k.lower() == name.lower()]
        return vals[0] if vals else None
    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None
    def __repr__(self):
        return f"{self.status} {self.body[:200]!r}"

def req(method, path, body=None, headers=None, port=RPORT, host=RHOST, origin=ORIGIN, ctype="application/json"):
    h = {}
    if origin:
        h["Origin"] = origin
    if body is not None:
        h["Content-Type"] = ctype
        body = body if isinstance(body, (bytes, str)) else json.dumps(body)
    h.update(headers or {})
    c = http.client.HTTPConnection(host, int(port), timeout=30)
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    out = Resp(r, r.read())
    c.close()
    return out

def login(token):
    r = req("POST", "/review/api/login", {"token": token})
    # The session's secret comes in the body, and goes back in the Authorization header
    # (never a cookie: a page on another port of this host could plant one).
    secret = (r.json() or {}).get("session") or ""
    return r, f"Bearer {secret}", (r.json() or {}).get("csrf")

# ---- an agent over stdio, blocking calls answered on a thread ----
class Agent:
    def __init__(self):
        # As another user than the daemon's (tests/lib.sh: ASSENT_TEST_AGENT_PREFIX).
        prefix = os.environ.get("ASSENT_TEST_AGENT_PREFIX", "").split()
        self.p = subprocess.Popen(prefix + [f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, bufsize=1)
        self.answers, self.lock, self.next = {}, threading.Lock(), 1
        threading.Thread(target=self.reader, daemon=True).start()
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "web-security-test", "version": "1"}})
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    def reader(self):
        for line in self.p.stdout:
            m = json.loads(line)
            if "id" in m:
                with self.lock:
                    self.answers[m["id"]] = m
    def send(self, method, params):
        with self.lock:
            i = self.next
            self.next += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
        return i
    def wait(self, i, secs=60):
        end = time.time() + secs
        while time.time() < end:
            with self.lock:
                if i in self.answers:
                    return self.answers.pop(i)
            time.sleep(0.02)
        return None
    def call(self, method, params):
        return self.wait(self.send(method, params))
    def ask(self, **args):
        return self.send("tools/call", {"name": "request_feedback", "arguments": args})

def result_of(m):
    return (m or {}).get("result", {}).get("structuredContent") or {}

def pending_sids(cookie):
    r = req("GET", "/review/api/pending", headers={"Authorization": cookie}, origin=None)
    return [x["session_id"] for x in (r.json() or {}).get("requests", [])], r

def wait_pending(cookie, count):
    for _ in range(300):
        sids, r = pending_sids(cookie)
        if len(sids) >= count:
            return sids
        time.sleep(0.05)
    return pending_sids(cookie)[0]

agent = Agent()
q1 = agent.ask(type="approval", message="deploy web-1 to production", context={"risk": "high", "diff": "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n"})

# ---- refused: every reviewer endpoint without a session ----
for method, path, body in [("GET", "/review/api/me", None), ("GET", "/review/api/pending", None),
                           ("GET", "/review/events", None), ("GET", "/pending", None),
                           ("POST", "/review/api/decide", {"session_id": "x", "outcome": "approved"}),
                           ("POST", "/review/api/logout", {}),
                           ("POST", "/feedback/submit", {"session_id": "x", "approved": True})]:
    r = req(method, path, body, origin=ORIGIN if method == "POST" else None)
    ok(r.status == 401 and "error" in (r.json() or {}), f"{method} {path} without a session: 401 with a reason ({r})")

# ---- log in ----
r, cookie, csrf = login(ALICE)
ok(r.status == 200 and (r.json() or {}).get("reviewer") == "alice" and csrf, f"alice logs in with her web token ({r})")
ok(r.header("Set-Cookie") is None and cookie.startswith("Bearer ws_") and len(cookie) == 7 + 46,
   f"no cookie is set: the session's secret (ws_...) comes in the body, for the page to hold ({r.header('Set-Cookie')})")
ok(ALICE not in open(f"{state}/identities.json").read() and "web_token_sha256" in open(f"{state}/identities.json").read(),
   "the registry holds only the web token's hash")
sids = wait_pending(cookie, 1)
ok(len(sids) == 1, "the agent's request is on alice's pending list")
sid = sids[0] if sids else "none"
_, r = pending_sids(cookie)
v = ((r.json() or {}).get("requests") or [{}])[0]
ok(v.get("risk") == "high" and v.get("requester", {}).get("uid") is not None and "deadline" in v and r.header("Cache-Control") == "no-store",
   "a pending view carries risk, requester, deadline, and data is Cache-Control: no-store")
for name in ("Content-Security-Policy", "X-Frame-Options"):
    ok(r.header(name) and (name != "X-Frame-Options" or r.header(name) == "DENY") and
       (name != "Content-Security-Policy" or ("script-src 'self'" in r.header(name) and "unsafe-inline" not in r.header(name))),
       f"{name} on data responses: {r.header(name)}")

# ---- refused: a decision POST from another origin; without the CSRF token; a stream from another origin ----
d = {"session_id": sid, "outcome": "approved", "text": "looks fine"}
r = req("POST", "/review/api/decide", d, headers={"Authorization": cookie, "X-CSRF-Token": csrf}, origin=EVIL)
ok(r.status == 403 and "origin" in r.body.decode().lower(), f"a decision POST from another origin: 403 ({r})")
r = req("POST", "/review/api/decide", d, headers={"Authorization": cookie}, origin=ORIGIN)
ok(r.status == 403 and "CSRF" in r.body.decode(), f"a decision POST without the CSRF token: 403 ({r})")
r = req("POST", "/review/api/decide", d, headers={"Authorization": cookie, "X-CSRF-Token": "A" * 43}, origin=ORIGIN)
ok(r.status == 403 and "CSRF" in r.body.decode(), f"a decision POST with a wrong CSRF token: 403 ({r})")
as_cookie = "assent_session=" + cookie.split()[-1]
r = req("POST", "/review/api/decide", d, headers={"Cookie": as_cookie, "X-CSRF-Token": csrf}, origin=None)
ok(r.status == 403, f"a decision POST without any Origin (and no bearer): 403 ({r})")
r = req("POST", "/review/api/decide", d, headers={"Cookie": as_cookie, "X-CSRF-Token": csrf}, origin=ORIGIN)
ok(r.status == 401, f"a session's secret in a cookie is no credential (any page on this host can set cookies): 401 ({r})")
r = req("GET", "/review/api/me", headers={"Cookie": as_cookie}, origin=None)
ok(r.status == 401, f"... for reading either: GET /review/api/me with it as a cookie: 401 ({r})")
r = req("POST", "/review/api/decide", "session_id=x", headers={"Authorization": cookie, "X-CSRF-Token": csrf}, ctype="application/x-www-form-urlencoded")
ok(r.status == 415, f"a form-encoded POST (what a cross-site form sends): 415 ({r})")
r = req("GET", "/review/events", headers={"Authorization": cookie}, origin=EVIL)
ok(r.status == 403, f"an event stream opened from another origin: 403 ({r})")
r = req("GET", "/review/events", headers={"Authorization": cookie, "Sec-Fetch-Site": "cross-site"}, origin=None)
ok(r.status == 403, f"an event stream fetched cross-site (Sec-Fetch-Site): 403 ({r})")

# ---- refused: an agent key on the reviewer listener; reviewer credentials on the agent listener ----
r = req("GET", "/pending", headers={"Authorization": f"Bearer {AGENT}"}, origin=None)
ok(r.status == 403 and "agent" in r.body.decode(), f"an agent's API key on the reviewer listener: 403 ({r})")
init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}
mh = {"Accept": "application/json, text/event-stream"}
r = req("POST", "/review/mcp", init, headers={"Authorization": f"Bearer {AGENT}", **mh}, origin=None)
ok(r.status == 403, f"an agent's API key on /review/mcp: 403 ({r})")
r = req("POST", "/mcp", init, headers={"Authorization": f"Bearer {ALICE}", **mh}, port=APORT, host=AHOST, origin=None)
ok(r.status == 403 and "reviewer" in r.body.decode(), f"a reviewer's token on the agent listener: 403 ({r})")
r = req("POST", "/mcp", init, headers={"Authorization": f"Bearer {ADMIN}", **mh}, port=APORT, host=AHOST, origin=None)
ok(r.status == 403, f"an admin token on the agent listener: 403 ({r})")
r = req("POST", "/mcp", init, headers={"Authorization": f"Bearer {AGENT}", "Cookie": "assent_session=" + cookie.split()[-1], **mh}, port=APORT, host=AHOST, origin=None)
ok(r.status == 403 and "cookie" in r.body.decode(), f"a reviewer's session cookie on the agent listener: 403 ({r})")

# ---- refused: a proxy identity header on any listener but the proxy's ----
r = req("GET", "/review/api/me", headers={"X-Reviewer-Email": "alice@example.com"}, origin=None)
ok(r.status == 403 and "proxy" in r.body.decode(), f"X-Reviewer-Email on the reviewer TCP listener: 403 ({r})")
r = req("GET", "/review/api/me", headers={"X-Reviewer-Email": "alice@example.com", "Authorization": cookie}, origin=None)
ok(r.status == 403, f"... even alongside a valid session cookie: 403 ({r})")
r = req("GET", "/review/api/me", headers={"X-Reviewer-Email": "alice@example.com", "X-Assent-Proxy-Secret": "x" * 40}, origin=None)
ok(r.status == 403, f"... with a wrong proxy secret: 403 ({r})")
r = req("GET", "/review/api/me", headers={"X-Reviewer-Email": "alice@example.com", "X-Assent-Proxy-Secret": PROXY_SECRET}, origin=None)
ok(r.status == 200 and (r.json() or {}).get("reviewer") == "alice" and (r.json() or {}).get("session", "").startswith("ws_"),
   f"... with the proxy's shared secret it names alice (and gives the page a session): {r}")
r = req("GET", "/review/api/me", headers={"X-Reviewer-Email": "a" * 300 + "@example.com"}, origin=None)
ok(r.status == 400 and "too long" in r.body.decode(), f"an identity header over 254 bytes: 400 naming it ({r})")
r = req("POST", "/mcp", init, headers={"Authorization": f"Bearer {AGENT}", "X-Reviewer-Email": "alice@example.com", **mh}, port=APORT, host=AHOST, origin=None)
ok(r.status == 403 and "identity" in r.body.decode(), f"X-Reviewer-Email on the agent listener: 403 ({r})")

# ---- /review/mcp reads JSON-RPC with the agent listener's own parser (mcp.c): same codes for the same bodies ----
for what, body, code in (("not JSON", b"{nope", -32700), ("a batch", b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600),
                         ("jsonrpc 1.0", b'{"jsonrpc":"1.0","id":1,"method":"ping"}', -32600),
                         ("an id that is an object", b'{"jsonrpc":"2.0","id":{},"method":"ping"}', -32600),
                         ("params an array", b'{"jsonrpc":"2.0","id":7,"method":"ping","params":[]}', -32602)):
    r = req("POST", "/review/mcp", body, headers={"Authorization": f"Bearer {ALICE}", **mh}, origin=None)
    a = req("POST", "/mcp", body, headers={"Authorization": f"Bearer {AGENT}", **mh}, port=APORT, host=AHOST, origin=None)
    rc, ac = ((x.json() or {}).get("error", {}).get("code") for x in (r, a))
    ok(r.status == 400 and rc == code and ac == code, f"/review/mcp and /mcp refuse {what} alike: {code} ({r.status} {rc}, {a.status} {ac})")
r = req("POST", "/review/mcp", {"jsonrpc": "2.0", "id": "p", "method": "ping"}, headers={"Authorization": f"Bearer {ALICE}", **mh}, origin=None)
ok(r.status == 200 and (r.json() or {}).get("id") == "p" and (r.json() or {}).get("result") == {}, f"/review/mcp ping echoes a string id ({r})")
r = req("POST", "/review/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=mh, origin=None)
ok(r.status == 401, f"/review/mcp: a notification without a token is refused too: 401 ({r})")
r = req("POST", "/review/mcp", {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "request_feedback", "arguments": {}}},
        headers={"Authorization": f"Bearer {ALICE}", **mh}, origin=None)
ok(r.status == 200 and (r.json() or {}).get("error", {}).get("code") == -32602, f"/review/mcp: an agent's tool is no reviewer tool: -32602 ({r})")

# ---- refused: /review/mcp without a reviewer token; admin endpoint without an admin token ----
r = req("POST", "/review/mcp", init, headers=mh, origin=None)
ok(r.status == 401 and r.header("WWW-Authenticate") and "error" in (r.json() or {}), f"/review/mcp without a token: 401, JSON-RPC error ({r})")
r = req("POST", "/review/mcp", init, headers={"Authorization": cookie, **mh}, origin=ORIGIN)
ok(r.status == 401, f"/review/mcp with a session cookie but no token: 401 ({r})")
r = req("POST", "/admin/clear-stale-sessions", {}, origin=None, headers={"Authorization": "Bearer at_" + "x" * 43})
ok(r.status == 401, f"the admin endpoint with an unknown token: 401 ({r})")
r = req("POST", "/admin/clear-stale-sessions", {}, origin=None, headers={"Authorization": f"Bearer {ALICE}"})
ok(r.status == 403, f"the admin endpoint with a reviewer's token: 403 ({r})")
r = req("POST", "/admin/clear-stale-sessions", {}, headers={"Authorization": cookie, "X-CSRF-Token": csrf})
ok(r.status == 401, f"the admin endpoint takes no session cookie, only an admin token: 401 ({r})")
r = req("POST", "/admin/clear-stale-sessions", {}, origin=None, headers={"Authorization": f"Bearer {ADMIN}"})
ok(r.status == 200 and "expired_requests" in (r.json() or {}), f"the admin endpoint with the admin token: 200 ({r})")
# The seed's curl as written: POST, the admin token, no body and no Content-Type.
r = req("POST", "/admin/clear-stale-sessions", None, origin=None, headers={"Authorization": f"Bearer {ADMIN}"})
ok(r.status == 200 and "expired_requests" in (r.json() or {}), f"... and as the seed's curl sends it, no body, no Content-Type: 200 ({r})")
r = req("POST", "/admin/clear-stale-sessions", "x", origin=None, ctype="text/plain", headers={"Authorization": f"Bearer {ADMIN}"})
ok(r.status == 415, f"... but a body that is not JSON is still refused: 415 ({r})")
# Where the seed's users look for the reviewer endpoints, the agent listener points them to ours.
for m, p in (("GET", "/pending"), ("POST", "/feedback/submit"), ("POST", "/admin/clear-stale-sessions")):
    r = req(m, p, None, origin=None, port=APORT, host=AHOST)
    loc = r.header("Location") or ""
    ok(r.status == 307 and loc == f"{ORIGIN}{p}", f"the agent listener's {m} {p}: 307 to the reviewer listener ({r.status} {loc})")
r = req("GET", "/pending", None, origin=None, port=APORT, host=AHOST, headers={"Cookie": "assent_session=abc"})
ok(r.status == 403, f"... a reviewer's cookie there is still refused, not redirected: 403 ({r})")

# ---- still pending after all that; alice approves over the web ----
ok(sid in pending_sids(cookie)[0], "the request survived every refused attempt")
# Each refusal's HTTP status follows from its typed status (the signer's words are not matched).
h = {"Authorization": cookie, "X-CSRF-Token": csrf}
r = req("POST", "/review/api/decide", {"session_id": "req-nosuch", "outcome": "approved"}, headers=h)
ok(r.status == 404 and (r.json() or {}).get("ok") is False and "no pending request req-nosuch" in (r.json() or {}).get("error", ""),
   f"a decision on an unknown request: 404, saying so ({r})")
r = req("POST", "/review/api/decide", {"session_id": sid, "outcome": "rejected"}, headers=h)
ok(r.status == 400 and "needs a reason" in (r.json() or {}).get("error", ""), f"a rejection without a reason: 400 ({r})")
r = req("POST", "/review/api/decide", {"session_id": sid, "outcome": "selected", "option": 1}, headers=h)
ok(r.status == 400 and "cannot be selected" in (r.json() or {}).get("error", ""), f"an approval request selected: 400 ({r})")
ok(sid in pending_sids(cookie)[0], "... and the request is still pending")
r = req("POST", "/review/api/decide", d, headers={"Authorization": cookie, "X-CSRF-Token": csrf})
j = r.json() or {}
ok(r.status == 200 and j.get("outcome") == "approved" and j.get("seq"), f"alice approves over the web: the answer names the ledger seq ({r})")
m = agent.wait(q1)
res = result_of(m)
ok(res.get("approved") is True and res.get("reviewer") == "alice" and res.get("approval_token"),
   f"the agent's call returns approved by alice with a token ({str(res)[:200]})")
tokfile = f"{state}/web-approve.token"
open(tokfile, "w").write(res.get("approval_token", ""))
_, r = pending_sids(cookie)
rec = (r.json() or {}).get("recent", [])
ok(rec and rec[0]["session_id"] == sid and rec[0]["seq"] == j.get("seq") and rec[0]["by"] == "alice", f"recent decisions list it with its seq ({rec[:1]})")

# ---- /feedback/submit (bearer, the seed's shape) and /pending ----
q2 = agent.ask(type="input", message="which region?", default="eu-west-1")
sids = wait_pending(cookie, 1)
r = req("GET", "/pending", headers={"Authorization": f"Bearer {BOB}"}, origin=None)
ok(r.status == 200 and len((r.json() or {}).get("requests", [])) == 1, f"/pending with bob's token lists it ({r})")
r = req("POST", "/feedback/submit", {"session_id": sids[0] if sids else "x", "approved": True, "response": ""}, origin=None,
        headers={"Authorization": f"Bearer {BOB}"})
res = result_of(agent.wait(q2))
ok(r.status == 200 and res.get("response") == "eu-west-1" and res.get("reviewer") == "bob",
   f"/feedback/submit with approved and an empty response answers the input with its default ({r}; {str(res)[:160]})")
r = req("POST", "/feedback/submit", {"session_id": "x", "approved": "yes"}, origin=None, headers={"Authorization": f"Bearer {BOB}"})
ok(r.status == 400 and "approved" in r.body.decode(), f"/feedback/submit with approved as a string: 400 naming it ({r})")

# ---- a client that trickles its request (a header line a second) is cut off ----
REQUEST_S = int(os.environ.get("ASSENT_HTTP_REQUEST_SECONDS", "30"))
s = socket.create_connection((RHOST, int(RPORT)), timeout=REQUEST_S + 30)
s.sendall(f"GET /review/api/me HTTP/1.1\r\nHost: {RHOST}:{RPORT}\r\n".encode())
cut = False
for i in range(REQUEST_S + 20):
    try:
        s.sendall(f"X-Slow-{i}: a\r\n".encode())
        time.sleep(1)
        s.setblocking(False)
        try:
            if s.recv(4096) == b"":
                cut = True
                break
        except BlockingIOError:
            pass
        finally:
            s.setblocking(True)
    except OSError:
        cut = True
        break
s.close()
ok(cut, f"a request trickled a header line a second is cut off (ASSENT_HTTP_REQUEST_SECONDS={REQUEST_S}), not held for ever")
r = req("GET", "/health", origin=None)
ok(r.status == 200, "the listener still serves others")

# ---- the review worker killed (kill -9): sessions are the signer's, nothing is lost ----
def review_worker_pid():
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            st = open(f"/proc/{d}/stat").read()
            argv = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if int(st[st.rindex(")") + 2:].split()[1]) == info["pid"] and os.path.basename(argv[0]) == b"assent-worker" and argv[1:2] == [b"review"]:
            return int(d)
    return None
wpid = review_worker_pid()
ok(wpid is not None, f"the review worker runs as its own process ({wpid})")
if wpid:
    os.kill(wpid, 9)
    for _ in range(200):
        try:
            if review_worker_pid() not in (None, wpid) and req("GET", "/health", origin=None).status == 200:
                break
        except OSError:
            pass
        time.sleep(0.05)
r = req("GET", "/review/api/me", headers={"Authorization": cookie}, origin=None)
ok(r.status == 200 and (r.json() or {}).get("reviewer") == "alice", f"after a kill -9 of the review worker, the same session still names alice ({r})")

# ---- the event stream: opened, told of a change, ended by logout ----
s = socket.create_connection((RHOST, int(RPORT)), timeout=30)
s.sendall(f"GET /review/events HTTP/1.1\r\nHost: {RHOST}:{RPORT}\r\nAuthorization: {cookie}\r\nAccept: text/event-stream\r\n\r\n".encode())
buf = b""
while b"event: pending" not in buf:
    chunk = s.recv(4096)
    if not chunk:
        break
    buf += chunk
ok(b"200 OK" in buf and b"text/event-stream" in buf and b"event: pending" in buf, "the event stream opens with a pending event")
q3 = agent.ask(type="confirmation", message="restart the cache?")
buf = b""
while b'"pending":1' not in buf:
    chunk = s.recv(4096)
    if not chunk:
        break
    buf += chunk
ok(b'"pending":1' in buf, "a new request is pushed down the stream")
r = req("POST", "/review/api/logout", {}, headers={"Authorization": cookie, "X-CSRF-Token": csrf})
ok(r.status == 200 and (r.json() or {}).get("ok") is True, f"logout ({r})")
buf = b""
s.settimeout(30)
try:
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
except OSError:
    pass
ok(b"event: logout" in buf, "logout ends the session's event stream")
s.close()
r = req("GET", "/review/api/me", headers={"Authorization": cookie}, origin=None)
ok(r.status == 401, f"the old session no longer works ({r})")

# ---- failed logins are limited ----
# (one failed login came before: the shell's replaced-token check, from the same address)
codes = [login("rt_" + "A" * 43)[0].status for _ in range(6)]
r = login("rt_" + "A" * 43)[0]
ok(codes[0] == 401 and codes.count(401) <= 5 and r.status == 429 and r.header("Retry-After") and
   codes[codes.index(429):] == [429] * (len(codes) - codes.index(429)),
   f"failed logins: 401 up to five a minute from one address, then 429 with Retry-After ({codes + [r.status]})")
r, _, _ = login(ALICE)
ok(r.status == 200 and (r.json() or {}).get("reviewer") == "alice",
   f"... and yet the right token logs in: others' failures never lock a reviewer out ({r.status})")

# ---- operators' endpoints ----
r = req("GET", "/metrics", origin=None)
t = r.body.decode()
ok(r.status == 200 and "assent_pending 1" in t and 'assent_decisions_total{outcome="approved"} 1' in t and
   'assent_decisions_total{outcome="answered"} 1' in t and "assent_decision_latency_seconds_bucket" in t and
   'assent_auth_failures_total{listener="review"}' in t and "assent_worker_restarts_total" in t and "assent_ledger_entries" in t,
   "/metrics: pending, decisions by outcome, latency histogram, ledger, restarts, auth failures")
fails = [l for l in t.splitlines() if l.startswith('assent_auth_failures_total{listener="review"}')]
ok(fails and int(fails[0].split()[-1]) >= 10, f"authentication failures are counted ({fails})")
r = req("GET", "/.well-known/jwks.json", origin=None)
ok(r.status == 200 and (r.json() or {}).get("keys"), f"/.well-known/jwks.json serves the token keys ({r.status})")
r = req("GET", "/checkpoint", origin=None)
ok(r.status in (200, 404), f"/checkpoint answers ({r.status})")
r = req("GET", "/health", origin=None)
ok(r.status == 200 and (r.json() or {}).get("pending_sessions") == 1 and "uptime_seconds" in (r.json() or {}), f"/health ({r})")
r = req("GET", "/nope", origin=None)
ok(r.status == 404, f"an unknown path: 404 ({r.status})")
r = req("DELETE", "/review/api/decide", origin=None)
ok(r.status == 405 and r.header("Allow") == "POST", f"a wrong method: 405 with Allow ({r.status})")
r = req("GET", "/review/api/me", headers={"Host": "evil.example"}, origin=None)
ok(r.status == 403, f"a foreign Host header (DNS rebinding): 403 ({r.status})")
r = req("POST", "/review/api/login", b"{" * 70000, origin=ORIGIN)
ok(r.status == 413, f"a body over 64 KiB: 413 ({r.status})")
r = req("POST", "/review/api/login", b"[1,2", origin=ORIGIN)
ok(r.status == 400 and "JSON" in r.body.decode(), f"a body that is not JSON: 400 naming it ({r})")

agent.p.stdin.close()
agent.p.wait(timeout=30)
plan()
done()
