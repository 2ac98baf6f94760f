#!/usr/bin/env python3
"""Events recorded inside a call get that call's id (the seed: "Inside a tool call, the event gets
that call's id as call_id"): an agent's qa_record_event while its gated call waits for a reviewer,
and assent's own call.dispatched / call.finished, carry the call_id of the call's row in the
records; an event recorded after the call returned, or with two calls in flight, has none; an
event naming its call_id keeps it. argv: STATE BUILD"""
import json, os, sqlite3, subprocess, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from taplib import ok, plan, done

state, build = sys.argv[1], sys.argv[2]
ASSENT = f"{build}/assent"


class Agent:
    def __init__(self):
        self.p = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.n, self.got, self.cv = 0, {}, threading.Condition()
        threading.Thread(target=self.reader, daemon=True).start()

    def reader(self):
        for line in self.p.stdout:
            m = json.loads(line)
            with self.cv:
                self.got[m.get("id")] = m
                self.cv.notify_all()

    def send(self, method, params):
        self.n += 1
        self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}) + "\n").encode())
        self.p.stdin.flush()
        return self.n

    def wait(self, i, timeout=60):
        with self.cv:
            self.cv.wait_for(lambda: i in self.got, timeout)
            return self.got.get(i)

    def call(self, method, params):
        return self.wait(self.send(method, params))

    def event(self, kind, key, **extra):
        args = {"kind": kind, "key": key}
        args.update(extra)
        r = self.call("tools/call", {"name": "qa_record_event", "arguments": args})
        return ((r or {}).get("result") or {}).get("structuredContent") or r


def pending():
    out = subprocess.run([ASSENT, "--state", state, "pending", "--json"], capture_output=True, text=True).stdout
    try:
        j = json.loads(out)
    except ValueError:
        return []
    return j if isinstance(j, list) else j.get("requests") or j.get("pending") or []


def until(f, tries=400):
    for _ in range(tries):
        v = f()
        if v:
            return v
        time.sleep(0.05)
    return f()


def q(sql, args=()):
    path = f"{state}/calls.db"
    if not os.path.exists(path):
        return []
    c = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    c.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in c.execute(sql, args)]
    except sqlite3.OperationalError:
        return []
    finally:
        c.close()


a = Agent()
a.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "ev", "version": "1"}})
held = a.send("tools/call", {"name": "up__echo", "arguments": {"text": "held for a reviewer"}})
p = until(lambda: [x for x in pending() if "echo" in json.dumps(x)])
sid = (p[0].get("session_id") or p[0].get("id")) if p else None
ok(sid, f"the gated call waits for a reviewer ({sid})")
r = a.event("test.inside", "k-inside", attrs={"n": 1})
ok(r.get("queued") is True, f"qa_record_event answers while the call waits ({r})")
r = a.event("test.named", "k-named", call_id="my-own-call")
ok(r.get("queued") is True, "an event naming its call_id is queued")
res = subprocess.run([ASSENT, "--state", state, "approve", sid], capture_output=True, text=True)
ok(res.returncode == 0, f"assent approve {sid} ({res.stderr.strip()[:200]})")
r = a.wait(held)
ok("held for a reviewer" in json.dumps(r), "the approved call is answered by the upstream")
r = a.event("test.after", "k-after")
ok(r.get("queued") is True, "an event after the call returned is queued")

rows = until(lambda: q("SELECT call_id, tool FROM ffb_tool_calls WHERE tool = 'up__echo'"))
cid = rows[0]["call_id"] if rows else None
ok(cid, f"the call's row in ffb_tool_calls ({rows})")
ev = until(lambda: (lambda r: r if len(r) >= 3 else None)(q("SELECT kind, call_id FROM ffb_events WHERE kind LIKE 'test.%'")))
by = {e["kind"]: e["call_id"] for e in ev or []}
ok(by.get("test.inside") == cid, f"the event recorded inside the call has its call_id ({by.get('test.inside')}, the row's {cid})")
ok(by.get("test.named") == "my-own-call", f"an event naming its call_id keeps it ({by.get('test.named')})")
ok("test.after" in by and by["test.after"] is None, f"an event after the call returned has none ({by.get('test.after', 'missing')})")
own = until(lambda: (lambda r: r if len(r) >= 2 else None)(
    q("SELECT kind, call_id FROM ffb_events WHERE kind IN ('call.dispatched', 'call.finished') AND key = ?", (sid,))))
ok(own and len(own) == 2 and all(e["call_id"] == cid for e in own),
   f"assent's own call.dispatched and call.finished carry the call's id ({own})")

# Two calls of one connection waiting at once: an event between them is inside neither, as far as anyone knows.
h1 = a.send("tools/call", {"name": "up__echo", "arguments": {"text": "one"}})
h2 = a.send("tools/call", {"name": "up__echo", "arguments": {"text": "two"}})
p = until(lambda: (lambda x: x if len(x) >= 2 else None)([x for x in pending() if "echo" in json.dumps(x)]))
ok(p and len(p) == 2, "two gated calls wait at once")
r = a.event("test.ambiguous", "k-amb")
for x in p or []:
    subprocess.run([ASSENT, "--state", state, "reject", x.get("session_id") or x.get("id"), "-m", "done"], capture_output=True)
a.wait(h1)
a.wait(h2)
ev = until(lambda: q("SELECT call_id FROM ffb_events WHERE kind = 'test.ambiguous'"))
ok(ev and ev[0]["call_id"] is None, f"an event while two calls wait names neither ({ev})")
a.p.stdin.close()
a.p.wait(timeout=20)
plan()
done()
