#!/usr/bin/env python3
"""QA reports and events end to end (issue 16): a report linked to the calls before it by
session (stdio) and by principal within the window (stateless HTTP with an agent key), the
report's text redacted, assent qa list|show|status|delete, each principal's tools on
/review/mcp, the reviewers' read and the admins' change, events from POST /events, from
`assent event` and from assent itself read back by key with who recorded each, nobody writing
into another's request or recording assent's own kinds (issue 28), and pruning that keeps a
report's calls. Run by records_qa.sh with the daemon already started; prints TAP."""
import json, os, sqlite3, subprocess, sys, time, urllib.request, urllib.error

sys.path.insert(0, os.path.dirname(__file__))
import taplib as t  # noqa: E402

S, ASSENT, ASSENTD, AGENT_KEY, RT, AT, OTHER_KEY = sys.argv[1:8]
info = json.load(open(os.path.join(S, "assentd.json")))
def base(u):  # assentd.json says "127.0.0.1:PORT" or a URL
    u = u.split("/mcp")[0].split("/review")[0]
    return u if u.startswith("http") else "http://" + u


HTTP, REVIEW = base(info["http"]), base(info["review"])


def post(url, body, token=None, headers=None):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token:
        h["Authorization"] = "Bearer " + token
    h.update(headers or {})
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=h, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw.decode(errors="replace")


PSQL = os.environ.get("RECORDS_PSQL")  # "psql CONNINFO" when the records are in PostgreSQL
MYSQL = os.environ.get("RECORDS_MYSQL")  # "my.sh DIR" when they are in MariaDB (database records)
LABEL = os.environ.get("RECORDS_LABEL", "sqlite")


def count(sql):
    if MYSQL:  # ANSI_QUOTES: "key" is the column, as the recorder's session has it
        mysh, d = MYSQL.split(" ", 1)
        out = subprocess.run([mysh, "sql", d, f"SET SESSION sql_mode = 'ANSI_QUOTES'; USE records; {sql}"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
        return int(out)
    if PSQL:
        psql, conninfo = PSQL.split(" ", 1)
        return int(subprocess.run([psql, conninfo, "-At", "-c", sql], capture_output=True, text=True, timeout=30).stdout.strip())
    return sqlite3.connect(os.path.join(S, "calls.db")).execute(sql).fetchone()[0]


_ok = t.ok


def labelled(cond, desc):
    return _ok(cond, f"[{LABEL}] {desc}")


t.ok = labelled


def assent(*args):
    p = subprocess.run([ASSENT, "--state", S, *args], capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


def stdio(lines, wait=1.5):
    """Lines through the stdio bridge; the answers by id."""
    p = subprocess.Popen([ASSENTD, "--stdio", "--state", S], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "qa-test", "version": "1"}}}
    p.stdin.write(json.dumps(init) + "\n")
    p.stdin.flush()
    out = {}
    want = {0}
    for ln in lines:
        want.add(ln["id"])
        p.stdin.write(json.dumps(ln) + "\n")
        p.stdin.flush()
        while True:  # one at a time: each answered before the next is sent
            m = json.loads(p.stdout.readline())
            if "id" in m:
                out[m["id"]] = m
            if ln["id"] in out:
                break
    p.stdin.close()
    p.wait(timeout=10)
    return out


def call(i, name, args):
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": args}}


def sc(m):
    return (m.get("result") or {}).get("structuredContent") or {}


# ---- a report over stdio links the calls of its session, in order ----
out = stdio([call(1, "list_pending_feedback", {}), call(2, "no_such_tool", {}),
             call(3, "qa_submit_feedback", {"type": "bug", "title": "the list is empty",
                                            "description": "it failed with password=hunter2 and ghp_" + "a" * 36,
                                            "contact": "me@example.com"})])
r = sc(out[3])
t.ok(isinstance(r.get("feedback_id"), int) and r.get("linked_calls") == 2,
     f"qa_submit_feedback answers {{feedback_id, linked_calls: 2}} over stdio ({r})")
fid = r.get("feedback_id")
rc, so, se = assent("qa", "show", str(fid), "--json")
rep = json.loads(so) if rc == 0 else {}
calls = rep.get("calls") or []
t.ok([c.get("tool") for c in calls] == ["list_pending_feedback", "no_such_tool"],
     f"assent qa show: the two calls before it, in order ({[c.get('tool') for c in calls]})")
t.ok([c.get("outcome") for c in calls] == ["ok", "error"] and all(c.get("rule") == "session" for c in calls),
     f"... with their outcomes, each linked by session ({[(c.get('outcome'), c.get('rule')) for c in calls]})")
fb = rep.get("feedback") or {}
t.ok(fb.get("user_sub", "").startswith("uid:") and fb.get("caller_kind") == "uid" and
     str(fb.get("client_id", "")).startswith("qa-test") and str(fb.get("session_id", "")).startswith("stdio:"),
     f"the report says who filed it: measured uid, the declared client, the stdio session ({fb})")
desc = fb.get("description", "")
t.ok("hunter2" not in desc and "ghp_" not in desc and "[REDACTED]" in desc,
     f"the report's description is redacted ({desc!r})")
rc, so, se = assent("qa", "show", str(fid))
t.ok(rc == 0 and "linked calls: 2" in so and "ProtocolError" in so, "assent qa show prints the report and its calls")

# ---- stateless HTTP with an agent key: linked by principal within the window ----
MODERN = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}


def modern_call(i, name, args):
    body = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": name, "arguments": args,
                       "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {},
                                 "io.modelcontextprotocol/clientInfo": {"name": "ci-job", "version": "2"}}}}
    return post(HTTP + "/mcp", body, AGENT_KEY, dict(MODERN, **{"Mcp-Name": name}))


st, _ = modern_call(1, "list_pending_feedback", {})
st2, _ = modern_call(2, "list_pending_feedback", {})
st3, ans = modern_call(3, "qa_submit_feedback", {"type": "question", "title": "ci", "description": "from CI"})
r = ((ans or {}).get("result") or {}).get("structuredContent") or {}
t.ok(st == st2 == st3 == 200 and r.get("linked_calls", 0) >= 2,
     f"a stateless client's report links its principal's calls ({st} {st2} {st3} {r})")
rc, so, se = assent("qa", "show", str(r.get("feedback_id", 0)), "--json")
rules = {c.get("rule") for c in (json.loads(so).get("calls") if rc == 0 else [])}
t.ok(rules == {"user_window"}, f"... each by user_window ({rules})")

# ---- listing, statistics, the workflow ----
rc, so, se = assent("qa", "list", "--json")
items = json.loads(so).get("items", []) if rc == 0 else []
t.ok(rc == 0 and len(items) == 2, f"assent qa list lists both reports ({len(items)})")
rc, so, se = assent("qa", "list", "--type", "bug", "--json")
t.ok(rc == 0 and [i.get("type") for i in json.loads(so).get("items", [])] == ["bug"], "... filtered by type")
rc, so, se = assent("qa", "stats", "--json")
s = json.loads(so) if rc == 0 else {}
t.ok(s.get("total") == 2 and s.get("by_type", {}).get("bug") == 1 and s.get("last_7_days") == 2,
     f"assent qa stats counts by type and the last 7 days ({s})")
rc, so, se = assent("qa", "stats")
t.ok(rc == 0 and so.startswith("2 reports, 2 in the last 7 days\n") and "\nTYPE " in so and "\nbug " in so
     and "\nSTATUS " in so and "{" not in so, f"assent qa stats without --json prints tables, not JSON ({so!r})")
rc, so, se = assent("qa", "status", str(fid), "resolved")
t.ok(rc == 1 and "in_progress" in se, f"open -> resolved is refused, naming the next step ({se.strip()})")
rc, so, se = assent("qa", "status", str(fid), "in_progress")
t.ok(rc == 0, "open -> in_progress")
rc, so, se = assent("qa", "status", str(fid), "open")
t.ok(rc == 1, "... and no way back")

# ---- /review/mcp: each principal sees the tools it may use ----
def review_mcp(token, method, params=None, i=1):
    return post(REVIEW + "/review/mcp", {"jsonrpc": "2.0", "id": i, "method": method, "params": params or {}}, token)


st, ans = review_mcp(RT, "tools/list")
names = sorted(x["name"] for x in (ans.get("result") or {}).get("tools", [])) if isinstance(ans, dict) else []
t.ok("qa_list_feedback" in names and "qa_get_feedback_statistics" in names and "qa_delete_feedback" not in names
     and "qa_update_feedback_status" not in names, f"a reviewer's tools/list: decide and read reports ({names})")
st, ans = review_mcp(AT, "tools/list")
names = sorted(x["name"] for x in (ans.get("result") or {}).get("tools", [])) if isinstance(ans, dict) else []
t.ok("qa_update_feedback_status" in names and "qa_delete_feedback" in names and "list_pending_feedback" not in names,
     f"an admin's tools/list: the reports' tools, no decisions ({names})")
st, ans = review_mcp(RT, "tools/call", {"name": "qa_list_feedback", "arguments": {"status": "in_progress"}})
res = (ans.get("result") or {}) if isinstance(ans, dict) else {}
t.ok(not res.get("isError") and [i.get("id") for i in res.get("structuredContent", {}).get("items", [])] == [fid],
     f"qa_list_feedback (reviewer) filters by status ({res.get('structuredContent')})")
st, ans = review_mcp(RT, "tools/call", {"name": "qa_update_feedback_status", "arguments": {"feedback_id": fid, "status": "resolved"}})
res = (ans.get("result") or {}) if isinstance(ans, dict) else {}
t.ok(res.get("isError") is True or "only an admin" in str((ans or {}).get("error")),
     f"a reviewer may not move a report ({str(ans)[:160]})")
st, ans = review_mcp(AT, "tools/call", {"name": "qa_update_feedback_status", "arguments": {"feedback_id": fid, "status": "resolved"}})
res = (ans.get("result") or {}) if isinstance(ans, dict) else {}
t.ok(not res.get("isError") and res.get("structuredContent", {}).get("status") == "resolved",
     f"an admin moves it with qa_update_feedback_status ({str(ans)[:160]})")
st, ans = review_mcp(AT, "tools/call", {"name": "qa_get_feedback_statistics", "arguments": {}})
res = (ans.get("result") or {}) if isinstance(ans, dict) else {}
t.ok(res.get("structuredContent", {}).get("by_status", {}).get("resolved") == 1, "qa_get_feedback_statistics")

# ---- events: POST /events, assent event, assent's own; read back by key ----
key = "deploy-" + str(os.getpid())
st, ans = post(HTTP + "/events", {"kind": "deploy.started", "key": key, "attrs": {"env": "prod", "api_key": "sk-" + "x" * 30}}, AGENT_KEY)
t.ok(st == 200 and ans == {"queued": True}, f"POST /events with an agent key: {{queued: true}} ({st} {ans})")
st, ans = post(HTTP + "/events", {"kind": "deploy.started", "key": key}, "ak_not_a_key")
t.ok(st == 401, f"... refused without a valid key ({st})")
st, ans = post(HTTP + "/events", {"kind": "no dots allowed!", "key": key}, AGENT_KEY)
t.ok(st == 400 and "kind" in str(ans), f"... and a bad kind is named ({st} {ans})")
rc, so, se = assent("event", "deploy.finished", "--key", key, "--attr", "ok=true", "--attr", "duration_s=12")
t.ok(rc == 0, f"assent event records one ({se.strip()})")
rc, so, se = assent("events", key, "--json")
evs = json.loads(so).get("events", []) if rc == 0 else []
t.ok([e.get("kind") for e in evs] == ["deploy.started", "deploy.finished"], f"assent events KEY: oldest first ({[e.get('kind') for e in evs]})")
t.ok(evs and evs[0].get("user_sub") == "agent:ci" and evs[0].get("attrs", {}).get("api_key") == "[REDACTED]",
     f"... the agent's event with its measured principal, redacted ({evs[0] if evs else None})")
t.ok(len(evs) == 2 and evs[1].get("attrs") == {"ok": True, "duration_s": 12}, "... attributes as JSON where they read as JSON")
rc, so, se = assent("events", key, "--kind", "deploy.finished", "--json")
t.ok(rc == 0 and [e.get("kind") for e in json.loads(so).get("events", [])] == ["deploy.finished"], "--kind filters")
st, ans = post(REVIEW + "/review/api/qa", {"op": "events", "key": key}, RT)
t.ok(st == 200 and len(ans.get("events", [])) == 2, f"the review page's API reads a key's events ({st})")
st, ans = post(REVIEW + "/review/api/qa", {"op": "delete", "id": fid}, RT)
t.ok(st == 403, f"... but a reviewer may not delete a report there ({st})")

# assent's own: a request decided leaves approval.requested and approval.decided under its session_id
p = subprocess.Popen([ASSENTD, "--stdio", "--state", S], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, text=True)
p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}) + "\n")
p.stdin.write(json.dumps(call(1, "request_feedback", {"type": "approval", "message": "ship it", "wait": False})) + "\n")
p.stdin.flush()
sid = None
for _ in range(4):
    m = json.loads(p.stdout.readline())
    if m.get("id") == 1:
        sid = sc(m).get("session_id")
        break
rc, so, se = assent("approve", sid or "none")
time.sleep(0.5)
rc2, so2, se2 = assent("events", sid or "none", "--json")
evs = json.loads(so2).get("events", []) if rc2 == 0 else []
t.ok(rc == 0 and [e.get("kind") for e in evs][:2] == ["approval.requested", "approval.decided"] and
     all(e.get("user_sub") == "assent" for e in evs[:2]),
     f"assent's own events under the request's session_id, recorded by assent ({[(e.get('kind'), e.get('user_sub')) for e in evs]}; {se.strip()} {se2.strip()})")

# ---- issue 28: nobody writes into another's request, nor records assent's own kinds ----
def events_of(k, *more):
    rc, so, _ = assent("events", k, "--json", *more)
    return json.loads(so).get("events", []) if rc == 0 else None


# the request is uid:0's (stdio): neither agent key may attach to it
st, ans = post(HTTP + "/events", {"kind": "deploy.finished", "key": sid or "none", "attrs": {"ok": True}}, OTHER_KEY)
t.ok(st == 403 and "not yours" in str(ans) and "agent:mallory" in str(ans),
     f"another agent key's event on uid:0's request is refused with 403, naming why ({st} {ans})")
st2, ans2 = post(HTTP + "/events", {"kind": "deploy.finished", "key": sid or "none"}, AGENT_KEY)
t.ok(st2 == 403 and "not yours" in str(ans2), f"... and so is agent:ci's ({st2} {ans2})")
if os.getuid() == 0:  # a second Unix user over stdio: nobody (65534)
    q = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", ASSENTD, "--stdio", "--state", S],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for m in [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "nobody", "version": "1"}}},
              call(1, "qa_record_event", {"kind": "deploy.finished", "key": sid or "none"})]:
        q.stdin.write(json.dumps(m) + "\n")
    q.stdin.flush()
    ans = []
    for _ in range(4):
        ln = q.stdout.readline()
        if not ln:
            break
        ans.append(json.loads(ln))
        if ans[-1].get("id") == 1:
            break
    q.stdin.close()
    q.wait(timeout=10)
    r1 = next((m for m in ans if m.get("id") == 1), {})
    txt = json.dumps(r1)
    t.ok((r1.get("result") or {}).get("isError") is True and "not yours" in txt and "uid:65534" in txt,
         f"another Unix user's qa_record_event on it over stdio is refused, naming why ({txt[:300]})")
else:
    t.ok(True, "another Unix user over stdio # SKIP needs root (setpriv)")
st, ans = post(HTTP + "/events", {"kind": "approval.decided", "key": "free-" + str(os.getpid()), "attrs": {"outcome": "approved"}}, AGENT_KEY)
t.ok(st == 400 and "approval.decided" in str(ans) and "own events" in str(ans),
     f"an agent posting assent's own kind is refused with 400, naming the kind ({st} {ans})")
st, ans = post(HTTP + "/events", {"kind": "Call.Finished", "key": "free-" + str(os.getpid())}, AGENT_KEY)
t.ok(st == 400 and "Call.Finished" in str(ans), f"... in any case ({st} {ans})")
rc, so, se = assent("event", "request.created", "--key", "free-" + str(os.getpid()))
t.ok(rc != 0 and "request.created" in se, f"... and so is an operator's assent event of one ({rc} {se.strip()})")
time.sleep(0.5)
evs = events_of(sid or "none")
t.ok(evs is not None and [e.get("user_sub") for e in evs] == ["assent", "assent"],
     f"nothing of theirs is recorded under uid:0's request ({[(e.get('kind'), e.get('user_sub')) for e in evs or []]})")
t.ok(events_of("free-" + str(os.getpid())) == [], "... nor under the free key the reserved kinds named")
t.ok(count(f"SELECT COUNT(*) FROM ffb_events WHERE \"key\" = '{sid}' AND user_sub <> 'assent'") == 0,
     "... and the table holds none of theirs")
# the operator may record under any request (the CI job's deploy.finished joins the approval)
rc, so, se = assent("event", "deploy.finished", "--key", sid or "none", "--attr", "ok=true")
t.ok(rc == 0, f"an operator's assent event on the request is recorded ({se.strip()})")

# agent:ci's own request: its events are taken, shown with who recorded them
st, ans = modern_call(20, "request_feedback", {"type": "approval", "message": "deploy?", "wait": False})
own = ((ans or {}).get("result") or {}).get("structuredContent", {}).get("session_id") if isinstance(ans, dict) else None
st1, a1 = post(HTTP + "/events", {"kind": "deploy.started", "key": own or "none", "attrs": {"env": "prod"}}, AGENT_KEY)
t.ok(st1 == 200 and a1 == {"queued": True}, f"agent:ci's event on its own request is taken ({own} {st1} {a1})")
st2, a2 = post(HTTP + "/events", {"kind": "deploy.started", "key": own or "none"}, OTHER_KEY)
t.ok(st2 == 403 and "agent:ci" in str(a2), f"... agent:mallory's on it is refused, naming whose it is ({st2} {a2})")
st3, a3 = post(HTTP + "/events", {"kind": "deploy.started", "key": "req-" + "0" * 32}, AGENT_KEY)
t.ok(st3 == 403 and "no request" in str(a3), f"... and one on a request assent does not know ({st3} {a3})")
time.sleep(0.5)
evs = events_of(own or "none")
t.ok(evs is not None and [(e.get("kind"), e.get("user_sub")) for e in evs] ==
     [("approval.requested", "assent"), ("deploy.started", "agent:ci")],
     f"assent events --json: the owner's event with its recorder, no other ({[(e.get('kind'), e.get('user_sub')) for e in evs or []]})")
rc, so, se = assent("events", own or "none")
line = next((ln for ln in so.splitlines() if "deploy.started" in ln), "")
t.ok(rc == 0 and "by agent:ci" in line and "by assent" in so, f"assent events prints who recorded each ({so.strip()!r})")
st, ans = post(REVIEW + "/review/api/qa", {"op": "events", "key": own or "none"}, RT)
t.ok(st == 200 and [e.get("user_sub") for e in ans.get("events", [])] == ["assent", "agent:ci"],
     f"the review page's API gives each event's recorder ({st} {ans})")
# a free-form key: each principal's own namespace, read with --by
free = "job-" + str(os.getpid())
post(HTTP + "/events", {"kind": "job.step", "key": free}, AGENT_KEY)
post(HTTP + "/events", {"kind": "job.step", "key": free}, OTHER_KEY)
time.sleep(0.5)
both = events_of(free)
mine = events_of(free, "--by", "agent:ci")
t.ok(both is not None and sorted(e.get("user_sub") for e in both) == ["agent:ci", "agent:mallory"] and
     [e.get("user_sub") for e in mine or []] == ["agent:ci"],
     f"a free-form key keeps each recorder's events apart: --by reads one's ({both} {mine})")
st, ans = post(REVIEW + "/review/api/qa", {"op": "events", "key": free, "by": "agent:mallory"}, RT)
t.ok(st == 200 and [e.get("user_sub") for e in ans.get("events", [])] == ["agent:mallory"],
     f"... and so does the page's API with by ({st} {ans})")
p.stdin.close()
p.wait(timeout=10)

# ---- pruning keeps the calls a report links ----
time.sleep(1.1)
rc, so, se = assent("calls", "prune", "--older-than", "1s")
t.ok(rc == 0 and "ffb_tool_calls:" in so and "ffb_events:" in so, f"assent calls prune prints the rows deleted per table ({so.strip()})")
left = count("SELECT COUNT(*) FROM ffb_tool_calls")
linked = count("SELECT COUNT(*) FROM ffb_feedback_call_links")
kept = count("SELECT COUNT(*) FROM ffb_tool_calls WHERE call_id IN (SELECT call_id FROM ffb_feedback_call_links)")
t.ok(left == kept == linked and linked >= 4, f"... only the linked calls are left, and every link ({left} {kept} {linked})")
rc, so, se = assent("qa", "delete", str(fid))
t.ok(rc == 0, "assent qa delete")
rc, so, se = assent("qa", "show", str(fid))
t.ok(rc == 1, f"... and it is gone ({se.strip()})")
rc, so, se = assent("calls", "prune", "--older-than", "soon")
t.ok(rc == 2 and "--older-than" in se, "a bad --older-than is named")
t.done()
