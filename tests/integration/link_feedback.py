#!/usr/bin/env python3
"""qa_link_feedback (the seed's capture_recent_calls + link_feedback): an agent links the calls it
made before now to a report kept elsewhere, under that report's id there. argv: STATE BUILD"""
import json, os, sqlite3, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from taplib import ok, plan, done

state, build = sys.argv[1:3]


class Agent:
    def __init__(self):
        self.p = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.n = 0
        self.list = self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                             "clientInfo": {"name": "lk", "version": "1"}})

    def call(self, method, params):
        self.n += 1
        self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}) + "\n").encode())
        self.p.stdin.flush()
        for line in self.p.stdout:
            r = json.loads(line)
            if r.get("id") == self.n:
                return r
        return {}

    def tool(self, name, args):
        r = (self.call("tools/call", {"name": name, "arguments": args}).get("result") or {})
        return r.get("structuredContent") or {"error": " ".join(c.get("text", "") for c in r.get("content", []))}

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=20)


def q(sql, args=()):
    c = sqlite3.connect(f"file:{state}/calls.db?mode=ro", uri=True, timeout=10)
    c.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in c.execute(sql, args)]
    except sqlite3.OperationalError:
        return []
    finally:
        c.close()


a = Agent()
tools = [t["name"] for t in (a.call("tools/list", {}).get("result") or {}).get("tools", [])]
ok("qa_link_feedback" in tools, f"tools/list shows qa_link_feedback ({tools})")
for i in range(3):
    a.tool("up__echo", {"text": f"call {i}"})
r = a.tool("qa_link_feedback", {"feedback_id": "bug-7Q2X"})
ok(r.get("feedback_id") == "bug-7Q2X" and r.get("linked_calls") == 3, f"three calls linked to bug-7Q2X ({r})")
links = q("SELECT l.position, l.rule, c.tool FROM ffb_feedback_call_links l JOIN ffb_tool_calls c ON c.call_id = l.call_id "
          "WHERE l.feedback_id = 'bug-7Q2X' ORDER BY l.position")
ok([(x["position"], x["rule"], x["tool"]) for x in links] == [(1, "session", "up__echo"), (2, "session", "up__echo"),
                                                             (3, "session", "up__echo")],
   f"in ffb_feedback_call_links, in order, rule session ({links})")
ok(q("SELECT count(*) AS n FROM ffb_feedback")[0]["n"] == 0, "no report of assent's own was made")
r = a.tool("qa_link_feedback", {"feedback_id": "bug-7Q2X", "n": 2})
ok(r.get("linked_calls") == 2, f"linking again with n 2 replaces them: 2 ({r})")
ok(len(q("SELECT 1 FROM ffb_feedback_call_links WHERE feedback_id = 'bug-7Q2X'")) == 2, "two rows left")
r = a.tool("qa_link_feedback", {"feedback_id": "42"})
ok("digits alone" in r.get("error", ""), f"an id of digits alone is refused, naming why ({r})")
r = a.tool("qa_link_feedback", {"feedback_id": "x\u0001y"})
ok("control characters" in r.get("error", ""), f"control characters are refused ({r})")
r = a.tool("qa_link_feedback", {"feedback_id": "bug-1", "n": 50})
ok("1 to 20" in r.get("error", ""), f"n over 20 is refused ({r})")
r = a.tool("qa_link_feedback", {"feedback_id": "bug-1", "extra": 1})
ok("unknown argument" in r.get("error", ""), f"an unknown argument is refused ({r})")
a.close()

# The same principal from another session: its links under that id are replaced, its session's
# calls first, then its others of the last 15 minutes (ASSENT_QA_WINDOW).
b = Agent()
b.tool("up__echo", {"text": "b's call"})
r = b.tool("qa_link_feedback", {"feedback_id": "bug-7Q2X"})
rules = [x["rule"] for x in q("SELECT rule FROM ffb_feedback_call_links WHERE feedback_id = 'bug-7Q2X' ORDER BY position")]
ok(r.get("linked_calls", 0) == len(rules) and "session" in rules and "user_window" in rules,
   f"another session of the same agent: its session's calls and its others of the window ({r}, {rules})")
b.close()
plan()
done()
