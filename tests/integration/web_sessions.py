"""Web sessions end with their credential; no one locks reviewers out (issue 12, sections 3
and 4). Run by web_sessions.sh against a running daemon; TAP out.

argv: main|lifetime STATE BUILD TMP (TMP/NAME.token holds each reviewer's web token)."""
import http.client, json, select, socket, subprocess, sys, threading, time

mode, state, build, tmp = sys.argv[1:5]
ASSENT = f"{build}/assent"
info = json.load(open(f"{state}/assentd.json"))
RHOST, RPORT = info["review"].rsplit(":", 1)
ORIGIN = f"http://{RHOST}:{RPORT}"
WAIT = 60  # a condition is what is checked; this only bounds a wait that never ends

from taplib import done, ok, plan

def token(who):
    return open(f"{tmp}/{who}.token").read().strip()

def req(method, path, body=None, auth=None, csrf=None, source="127.0.0.1", extra=None):
    h = {"Origin": ORIGIN} if method == "POST" else {}
    if body is not None:
        h["Content-Type"] = "application/json"
    h.update(auth or {})
    if csrf:
        h["X-CSRF-Token"] = csrf
    h.update(extra or {})
    c = http.client.HTTPConnection(RHOST, int(RPORT), timeout=30, source_address=(source, 0))
    c.request(method, path, body=None if body is None else json.dumps(body), headers=h)
    r = c.getresponse()
    set_cookie = r.getheader("Set-Cookie")
    data = r.read()
    c.close()
    try:
        j = json.loads(data)
    except ValueError:
        j = {}
    h = dict((k.lower(), v) for k, v in r.getheaders())
    h["set-cookie"] = set_cookie or ""
    return r.status, j, h

class Session:
    def __init__(self, tok, source="127.0.0.1"):
        self.status, j, self.headers = req("POST", "/review/api/login", {"token": tok}, source=source)
        self.who, self.csrf = j.get("reviewer"), j.get("csrf")
        # The session's secret comes in the body and goes back in the Authorization
        # header. (A daemon that still sets a cookie is met on its own terms, so that
        # these checks show what it does with its sessions, not that it lacks headers.)
        cookie = self.headers.get("set-cookie", "").split(";")[0]
        self.cookie = cookie.split("=", 1)[1] if cookie.startswith("assent_session=") else ""
        self.secret = j.get("session") or self.cookie
        self.auth = {"Cookie": f"assent_session={self.cookie}"} if self.cookie else {"Authorization": f"Bearer {self.secret}"}
    def planted(self, other):
        """Our credentials, with another session's secret planted as a cookie the way a
        page on another port does it (a longer Path: the browser sends it first)."""
        if self.cookie:
            return {"Cookie": f"assent_session={other}; assent_session={self.cookie}"}
        return {**self.auth, "Cookie": f"assent_session={other}"}
    def me(self):
        return req("GET", "/review/api/me", auth=self.auth)[:2]
    def stream(self):
        return Stream(self.auth)

class Stream:
    """GET /review/events on a socket of its own (Connection: close: the end of the
    stream closes it)."""
    def __init__(self, auth):
        self.s = socket.create_connection((RHOST, int(RPORT)), timeout=WAIT)
        cred = "".join(f"{k}: {v}\r\n" for k, v in auth.items())
        self.s.sendall(f"GET /review/events HTTP/1.1\r\nHost: {RHOST}:{RPORT}\r\n{cred}"
                       "Accept: text/event-stream\r\nConnection: close\r\n\r\n".encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.s.recv(4096)
            if not chunk:
                break
            self.buf += chunk
        head = self.buf.split(b"\r\n\r\n", 1)[0].decode(errors="replace")
        self.status = int(head.split()[1]) if head.startswith("HTTP/") else 0
        self.retry_after = next((l.split(":", 1)[1].strip() for l in head.split("\r\n") if l.lower().startswith("retry-after:")), None)
        if self.status == 200:
            while b"event: pending" not in self.buf:
                chunk = self.s.recv(4096)
                if not chunk:
                    break
                self.buf += chunk
        else:
            self.read_to_end(WAIT)
    def read_to_end(self, secs):
        """Everything until the server closes; None when it has not closed after secs."""
        end = time.time() + secs
        while time.time() < end:
            r, _, _ = select.select([self.s], [], [], max(0.0, end - time.time()))
            if not r:
                break
            try:
                chunk = self.s.recv(4096)
            except OSError:
                return self.buf
            if not chunk:
                return self.buf
            self.buf += chunk
        return None
    def still_open(self):
        r, _, _ = select.select([self.s], [], [], 0)
        if not r:
            return True
        chunk = self.s.recv(4096, socket.MSG_PEEK)
        return bool(chunk) and b"event: logout" not in self.buf + chunk and b"event: end" not in self.buf + chunk
    def close(self):
        self.s.close()

def assent(*args):
    return subprocess.run([ASSENT, "--state", state, *args], capture_output=True, text=True)

if mode == "main":
    # A pending request to decide, from a stdio agent.
    agent = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
    threading.Thread(target=lambda: [None for _ in agent.stdout], daemon=True).start()
    for m in ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
               "capabilities": {}, "clientInfo": {"name": "web-sessions-test", "version": "1"}}},
              {"jsonrpc": "2.0", "method": "notifications/initialized"},
              {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "request_feedback",
               "arguments": {"type": "approval", "message": "rotate me"}}}):
        agent.stdin.write(json.dumps(m) + "\n")

    # ---- rotation: `assent reviewer token alice` ends both her sessions and their streams ----
    a1, a2, b = Session(token("alice")), Session(token("alice")), Session(token("bob"))
    ok(a1.status == a2.status == b.status == 200 and a1.who == "alice" and b.who == "bob", "alice (twice) and bob log in")
    sid = None
    for _ in range(600):
        st, j, _ = req("GET", "/review/api/pending", auth=b.auth)
        if j.get("requests"):
            sid = j["requests"][0]["session_id"]
            break
        time.sleep(0.05)
    ok(sid is not None, "the agent's request is pending")
    sa1, sa2, sb = a1.stream(), a2.stream(), b.stream()
    sat = Stream({"Authorization": f"Bearer {token('alice')}"})  # with the token itself, no session
    ok(sa1.status == sa2.status == sb.status == sat.status == 200,
       "each session opens an event stream, and so does alice's token itself (a bearer)")
    r = assent("reviewer", "token", "alice")
    new_alice = r.stdout.strip().splitlines()[-1] if r.returncode == 0 else ""
    ok(new_alice.startswith("rt_"), f"alice's token is rotated ({r.returncode}: {r.stderr.strip()[:100]})")
    open(f"{tmp}/alice.token", "w").write(new_alice + "\n")
    e1, e2 = sa1.read_to_end(WAIT), sa2.read_to_end(WAIT)
    ok(e1 is not None and b"event: logout" in e1 and e2 is not None and b"event: logout" in e2,
       "both of alice's event streams end at once, with a logout event")
    et = sat.read_to_end(WAIT)
    ok(et is not None and b"event: logout" in et, "... and so does the one opened with the old token itself")
    ok(a1.me()[0] == 401 and a2.me()[0] == 401, "both sessions made with the old token are over (401)")
    st, j, _ = req("POST", "/review/api/decide", {"session_id": sid, "outcome": "approved"}, auth=a1.auth, csrf=a1.csrf)
    ok(st == 401, f"a decision with an old session is refused ({st} {j})")
    st, j, _ = req("GET", "/review/api/pending", auth=b.auth)
    ok(st == 200 and sid in [x["session_id"] for x in j.get("requests", [])], "... and the request is still pending")
    ok(b.me() == (200, b.me()[1]) and b.me()[1].get("reviewer") == "bob" and sb.still_open(),
       "bob's session and his event stream go on")
    ok(Session(new_alice).status == 200 and Session(token("bob")).status == 200, "alice's new token logs in")

    # ---- removal: the reviewer's sessions and streams end; re-added under the same name, still over ----
    d = Session(token("dave"))
    sd, sdt = d.stream(), Stream({"Authorization": f"Bearer {token('dave')}"})
    r = assent("reviewer", "remove", "dave")
    ed, edt = sd.read_to_end(WAIT), sdt.read_to_end(WAIT)
    ok(r.returncode == 0 and ed is not None and b"event: logout" in ed and d.me()[0] == 401,
       "removing a reviewer ends their session and its event stream at once")
    ok(edt is not None and b"event: logout" in edt, "... and the stream opened with their token itself")
    c = Session(token("carol"))
    sc = c.stream()
    r1, r2 = assent("reviewer", "remove", "carol"), assent("reviewer", "add", "carol", "--web")
    ec = sc.read_to_end(WAIT)
    ok(r1.returncode == r2.returncode == 0 and ec is not None and b"event: logout" in ec and c.me()[0] == 401,
       "a reviewer removed and added again at once (a new token): the old session and its stream are over")
    open(f"{tmp}/carol.token", "w").write(r2.stdout.strip().splitlines()[-1] + "\n")

    # ---- a session's secret as a cookie counts for nothing: none can be planted or shadow another ----
    a = Session(new_alice)
    st, j, _ = req("GET", "/review/api/me", auth=a.planted(b.secret))
    ok(st == 200 and j.get("reviewer") == "alice", f"bob's session planted as a cookie does not shadow alice's ({j.get('reviewer')})")
    st, j, _ = req("POST", "/review/api/decide", {"session_id": sid, "outcome": "approved"}, auth=a.planted(b.secret),
                   csrf=b.csrf)
    ok(st != 200, f"... nor decides as bob with bob's CSRF token ({st} {j})")
    st, j, _ = req("GET", "/review/api/me", auth=a.planted("ws_garbage"))
    ok(st == 200 and j.get("reviewer") == "alice", f"a garbage session cookie planted does not lock alice out ({st})")

    # ---- event streams per reviewer (three here) ----
    e = Session(token("erin"))
    es = [e.stream() for _ in range(3)]
    ok(all(x.status == 200 for x in es), "erin opens three event streams")
    over = e.stream()
    body = over.buf.split(b"\r\n\r\n", 1)[-1].decode(errors="replace")
    ok(over.status == 429 and over.retry_after and int(over.retry_after) > 0 and "ASSENT_REVIEW_STREAMS_PER_REVIEWER" in body
       and "erin" in body, f"a fourth: 429 with Retry-After ({over.retry_after}), naming the limit: {body[-160:]!r}")
    e2 = Session(token("erin"))
    over2 = e2.stream()
    ok(over2.status == 429, f"... from another session of hers too ({over2.status})")
    other = b.stream()
    ok(other.status == 200, "another reviewer still opens one")
    es[0].close()
    again = None
    for _ in range(WAIT * 4):  # the worker sees a closed stream at its next write (a keep-alive)
        again = e.stream()
        if again.status == 200:
            break
        time.sleep(0.25)
    ok(again is not None and again.status == 200, "once one of hers is closed, she opens another: the count follows the streams")

    # ---- failed logins: other processes and other 127.0.0.0/8 addresses lock no one out ----
    codes = [Session("rt_" + "A" * 43, source=f"127.0.0.{2 + i}").status for i in range(40)]
    codes += [Session("rt_" + "B" * 43).status for _ in range(10)]
    ok(set(codes) <= {401, 429} and codes.count(429) >= 40, f"50 wrong tokens from 41 loopback addresses: 401, then 429 ({codes.count(401)} x 401, {codes.count(429)} x 429)")
    s1 = Session(new_alice)
    ok(s1.status == 200 and s1.who == "alice", f"alice's right token still logs in from 127.0.0.1 ({s1.status})")
    s2 = Session(token("bob"), source="127.0.0.77")
    ok(s2.status == 200 and s2.who == "bob", f"... and bob's from 127.0.0.77 ({s2.status})")
    st, j, h = req("POST", "/review/api/login", {"token": "rt_" + "C" * 43}, source="127.0.0.200")
    ok(st == 429 and int(h.get("retry-after", "0")) > 0,
       f"a wrong token from yet another loopback address counts with the rest: 429, Retry-After {h.get('retry-after')}")
    agent.stdin.close()
    agent.wait(timeout=30)

elif mode == "lifetime":
    a = Session(token("alice"))
    s = a.stream()
    ok(s.status == 200, "an event stream opens (ASSENT_REVIEW_STREAM_SECONDS=2)")
    end = s.read_to_end(WAIT)
    ok(end is not None and b"event: end" in end and b"lifetime" in end, "it ends after its lifetime, saying so")
    ok(a.me()[0] == 200, "the session itself goes on")
    s2 = a.stream()
    ok(s2.status == 200, "and the page opens the next stream, authenticated again")

plan()
done()
