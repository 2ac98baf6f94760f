#!/usr/bin/env python3
"""FEEDBACK_INSIGHTS_ENABLED (the seed's usage analytics): tool usage and submission metadata
(type, lengths, timing), never feedback text or contact details. argv: STATE BUILD MODE
MODE on: two reports and an event over stdio, assent qa list; the counts in /metrics, the
metadata events under key insights, no title, description or contact anywhere in them.
MODE off: the same calls; no insights line in /metrics but assent_insights_enabled 0, no event."""
import json, os, sqlite3, subprocess, sys, time, urllib.request
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from taplib import ok, plan, done

state, build, mode = sys.argv[1:4]
on = mode == "on"
TITLE, DESC, CONTACT = "title-3f9a secret words", "description-77c1 the customer's order 4411", "ops@example.com"
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


def tool(name, args):
    return ((call("tools/call", {"name": name, "arguments": args}).get("result") or {}).get("structuredContent") or {})


call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "ins", "version": "1"}})
r1 = tool("qa_submit_feedback", {"type": "bug", "title": TITLE, "description": DESC, "contact": CONTACT})
r2 = tool("qa_submit_feedback", {"type": "question", "title": "t", "description": "dd"})
ok(r1.get("feedback_id") and r2.get("feedback_id"), f"two reports submitted ({r1}, {r2})")
r3 = call("tools/call", {"name": "qa_record_event", "arguments": {"kind": "deploy.note", "key": "turn-1"}})
ok("queued" in json.dumps(r3), f"qa_record_event is answered ({json.dumps(r3)[:200]})")
res = subprocess.run([f"{build}/assent", "--state", state, "qa", "list", "--json"], capture_output=True, text=True)
ok(res.returncode == 0, f"assent qa list ({res.stderr.strip()[:200]})")
p.stdin.close()
p.wait(timeout=20)

info = json.load(open(f"{state}/assentd.json"))
metrics = urllib.request.urlopen(f"http://{info['review']}/metrics", timeout=10).read().decode()
ok(f"assent_insights_enabled {1 if on else 0}" in metrics.splitlines(), f"/metrics: assent_insights_enabled {1 if on else 0}")
lines = [l for l in metrics.splitlines() if l.startswith("assent_insights_") and "enabled" not in l]
if on:
    want = ['assent_insights_tool_uses_total{tool="submit_feedback"} 2', 'assent_insights_tool_uses_total{tool="record_event"} 1',
            'assent_insights_tool_uses_total{tool="list_feedback"} 1', 'assent_insights_submissions_total{type="bug"} 1',
            'assent_insights_submissions_total{type="question"} 1', 'assent_insights_submissions_total{type="feature"} 0']
    for w in want:
        ok(w in lines, f"/metrics: {w}")
else:
    ok(lines == [], f"/metrics: no insights counts when off ({lines[:3]})")


def events():
    c = sqlite3.connect(f"file:{state}/calls.db?mode=ro", uri=True, timeout=10)
    c.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in c.execute("SELECT kind, key, attrs, occurred_at FROM ffb_events WHERE kind LIKE 'assent.insights.%' OR kind = 'deploy.note'")]
    except sqlite3.OperationalError:
        return []
    finally:
        c.close()


ev = []
for _ in range(400):  # written in batches: wait until the agent's own event is there (written after ours)
    ev = events()
    if any(e["kind"] == "deploy.note" for e in ev) and (not on or sum(e["kind"].startswith("assent.insights") for e in ev) >= 6):
        break
    time.sleep(0.05)
ins = [e for e in ev if e["kind"].startswith("assent.insights")]
if on:
    subs = [json.loads(e["attrs"]) for e in ins if e["kind"] == "assent.insights.submission"]
    bug = [s for s in subs if s.get("type") == "bug"]
    ok(len(subs) == 2 and bug and bug[0] == {"type": "bug", "title_length": len(TITLE), "description_length": len(DESC),
                                             "contact_given": True, "channel": "mcp"},
       f"each submission's metadata is an event: type, lengths, contact given ({subs})")
    tools = sorted(json.loads(e["attrs"])["tool"] for e in ins if e["kind"] == "assent.insights.tool")
    ok(tools == ["list_feedback", "record_event", "submit_feedback", "submit_feedback"], f"each tool use is an event ({tools})")
    ok(all(e["key"] == "insights" and e["occurred_at"] for e in ins), "keyed insights, with their time")
    blob = json.dumps(ins)
    ok(not any(t in blob for t in ("title-3f9a", "description-77c1", "ops@example.com", "secret words")),
       "no title, description or contact in any insights event")
    res = subprocess.run([f"{build}/assent", "--state", state, "events", "insights", "--json"], capture_output=True, text=True)
    ok(res.returncode == 0 and "assent.insights.submission" in res.stdout, "assent events insights lists them")
    res = subprocess.run([f"{build}/assent", "--state", state, "event", "assent.insights.submission", "--key", "x"],
                         capture_output=True, text=True)
    ok(res.returncode != 0, f"nobody else records an insights kind ({res.stderr.strip()[:120]})")
else:
    ok(ins == [], f"no insights event when off ({ins[:2]})")
plan()
done()
