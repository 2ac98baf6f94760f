#!/usr/bin/env python3
"""Resumable SSE answers on assent's agent listener (MCP 2025-11-25, SEP-1699), with a raw
HTTP client: the priming event and retry:, ids on every event, a client that hangs up and
resumes with GET + Last-Event-ID (the answer came while it was away, or comes after it is
back), ids that are not the session's refused, and a call whose client never comes back
cancelled once the grace period ends (the ledger says cancelled). No clocks: every wait is
for an event (a log line, a pending request going), bounded by a generous timeout.
Usage: sse_resume.py HOST:PORT KEY STATE_DIR ASSENT ASSENT_VERIFY DAEMON_LOG [poll]
poll: the daemon runs with ASSENT_HTTP_SSE_POLL_SECONDS, and assent ends the stream itself."""
import http.client, json, subprocess, sys, time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from taplib import done, ok, plan  # noqa: E402

addr, key, state, assent, verify, daemon_log = sys.argv[1:7]
host, port = addr.rsplit(":", 1)
WAIT = 60  # seconds: a bound on waiting for an event, never a threshold that is measured


def conn():
    return http.client.HTTPConnection(host, int(port), timeout=WAIT)


def headers(sid=None, proto="2025-11-25", extra=None):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "Authorization": "Bearer " + key}
    if sid:
        h.update({"Mcp-Session-Id": sid, "MCP-Protocol-Version": proto})
    h.update(extra or {})
    return h


def session(proto="2025-11-25"):
    c = conn()
    c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": proto, "capabilities": {}, "clientInfo": {"name": "sse-resume-test", "version": "1"}}}),
        headers())
    r = c.getresponse()
    r.read()
    sid = r.getheader("Mcp-Session-Id")
    c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
              headers(sid, proto))
    c.getresponse().read()
    c.close()
    return sid


def event(r):
    """The next SSE event of response r as {field: value} (comments skipped); None at the end."""
    ev = {}
    while True:
        line = r.readline()
        if not line:
            return None
        line = line.decode().rstrip("\r\n")
        if line == "":
            if ev:
                return ev
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        ev[name] = ev[name] + "\n" + value if name in ev and name == "data" else value


def call(sid, message, proto="2025-11-25"):
    """A blocking request_feedback; its connection and the streamed response."""
    c = conn()
    c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "request_feedback", "arguments": {"type": "approval", "message": message}}}), headers(sid, proto))
    return c, c.getresponse()


def resume(sid, last_id):
    c = conn()
    h = {"Accept": "text/event-stream", "Authorization": "Bearer " + key}
    if sid:
        h.update({"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
    if last_id is not None:
        h["Last-Event-ID"] = last_id
    c.request("GET", "/mcp", headers=h)
    return c, c.getresponse()


def pending_id(message, present=True):
    """The id of the pending request with this message, once it is (or is no longer) pending."""
    end = time.monotonic() + WAIT
    while time.monotonic() < end:
        out = subprocess.run([assent, "--state", state, "pending", "--json"], capture_output=True, text=True).stdout
        ids = [p["session_id"] for p in json.loads(out or "[]") if p.get("message") == message]
        if bool(ids) == present:
            return ids[0] if ids else "gone"
        time.sleep(0.1)
    return None


def parked(n):
    """Wait until the daemon has logged its n-th parked stream."""
    end = time.monotonic() + WAIT
    while time.monotonic() < end:
        with open(daemon_log, errors="replace") as f:
            if f.read().count("its stream is parked") >= n:
                return True
        time.sleep(0.1)
    return False


def hang_up(c):
    c.sock.close()
    c.close()


def approve(rid):
    return subprocess.run([assent, "--state", state, "approve", rid], capture_output=True).returncode == 0


def answer_of(ev):
    try:
        return json.loads(ev["data"])["result"]["structuredContent"]
    except (KeyError, TypeError, ValueError):
        return {}


def resumed_answer(sid, first, rid, what):
    """Resume the stream after its priming event `first`, approve request rid, and check that
    the answer comes on the resumed stream as the event after it."""
    c2, r2 = resume(sid, first.get("id"))
    ok(r2.status == 200, "%s: the GET with Last-Event-ID resumes the stream (%d)" % (what, r2.status))
    ok(approve(rid), "%s: a reviewer approves the call" % what)
    ev = event(r2) or {}
    no = first.get("id", "x-").split("-")[0]
    ok(ev.get("id") == no + "-1" and answer_of(ev).get("approved") is True,
       "%s: the answer comes on the resumed stream with the next id (%s)" % (what, ev.get("id")))
    c2.close()


sid = session()
ok(bool(sid), "a 2025-11-25 session over HTTP")

if len(sys.argv) > 7 and sys.argv[7] == "poll":
    # E (ASSENT_HTTP_SSE_POLL_SECONDS=5): assent itself ends the stream before the answer; the
    # client resumes and gets the answer there.
    c, r = call(sid, "resume E")
    first = event(r) or {}
    rid_e = pending_id("resume E")
    ended = event(r)
    ok(first.get("retry") == "2000" and ended is None,
       "assent ends a held call's stream after its priming event, before the answer (%s)" % ended)
    c.close()
    ok(pending_id("resume E") == rid_e, "the call is still pending after its stream ended")
    resumed_answer(sid, first, rid_e, "resumed after assent ended it")
    plan()
    done()

# A: the client hangs up; the answer comes while it is away; the resume replays it.
c, r = call(sid, "resume A")
ok(r.status == 200 and "text/event-stream" in (r.getheader("Content-Type") or ""), "a held call is answered as SSE")
first = event(r) or {}
ok("id" in first and first.get("data", "") == "" and first.get("retry") == "2000",
   "the stream opens with a priming event: an id, retry: 2000, empty data (%s)" % first)
rid_a = pending_id("resume A")
hang_up(c)
ok(parked(1), "the client hung up: the daemon parks its stream instead of cancelling the call")
ok(approve(rid_a), "the call is still pending after the hangup, and a reviewer approves it")
other = session()
c2, r2 = resume(other, first.get("id"))
body = r2.read().decode(errors="replace")
ok(r2.status == 400 and "not an event of this session" in body,
   "another session's GET with that Last-Event-ID is refused 400, saying so (%d %s)" % (r2.status, body[:160]))
c2, r2 = resume(sid, "999999-0")
body = r2.read().decode(errors="replace")
ok(r2.status == 400 and "not an event of this session" in body, "an unknown Last-Event-ID is refused 400 (%d)" % r2.status)
c2, r2 = resume(sid, "not-an-id")
body = r2.read().decode(errors="replace")
ok(r2.status == 400 and "is not an event id this server sends" in body,
   "a malformed Last-Event-ID is refused 400, naming it (%d %s)" % (r2.status, body[:160]))
c2, r2 = resume(None, first.get("id"))
body = r2.read().decode(errors="replace")
ok(r2.status == 400 and "Mcp-Session-Id" in body, "a resume without its session is refused 400 (%d)" % r2.status)
c2, r2 = resume(sid, None)
r2.read()
ok(r2.status == 405, "a GET /mcp without Last-Event-ID is still 405 (%d)" % r2.status)
c2, r2 = resume(sid, first.get("id"))
ok(r2.status == 200 and "text/event-stream" in (r2.getheader("Content-Type") or ""),
   "the session's own GET with Last-Event-ID resumes the stream (%d)" % r2.status)
ev = event(r2) or {}
no = first.get("id", "x-").split("-")[0]
ok(ev.get("id") == no + "-1" and answer_of(ev).get("approved") is True,
   "the resume replays what the client missed: the answer, approved, as event %s-1 (%s)" % (no, ev.get("id")))
ok(event(r2) is None, "the resumed stream ends after the answer")
c2.close()
c2, r2 = resume(sid, first.get("id"))
r2.read()
ok(r2.status == 400, "once the answer is delivered the stream is gone: resuming it again is refused (%d)" % r2.status)

# B: the client hangs up and comes back before the answer, which then comes live.
c, r = call(sid, "resume B")
first = event(r) or {}
rid_b = pending_id("resume B")
hang_up(c)
ok(parked(2), "a second hangup parks its stream too")
resumed_answer(sid, first, rid_b, "resumed before the answer")

# C: the client never comes back: the call is cancelled when the grace period ends.
c, r = call(sid, "resume C")
first = event(r) or {}
rid_c = pending_id("resume C")
hang_up(c)
ok(parked(3), "a third hangup parks its stream")
ok(pending_id("resume C", present=False) == "gone",
   "without a resume the request stops being pending once the grace period (10 s) ends")
exp = subprocess.run([verify, "export", state + "/ledger"], capture_output=True, text=True).stdout
kinds = [json.loads(l)["entry"]["kind"] for l in exp.splitlines() if json.loads(l)["entry"].get("session_id") == rid_c]
ok("cancelled" in kinds, "the ledger records that call as cancelled (%s)" % kinds)

# D: a 2025-06-18 client gets no priming event nor ids (its SDK would parse the empty data).
old = session("2025-06-18")
c, r = call(old, "resume D", "2025-06-18")
rid_d = pending_id("resume D")
ok(approve(rid_d), "a 2025-06-18 client's call is approved")
ev = event(r) or {}
ok("id" not in ev and answer_of(ev).get("approved") is True,
   "its stream carries the answer first, without an id (%s)" % sorted(ev))
c.close()
plan()
done()
