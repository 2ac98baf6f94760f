#!/usr/bin/env python3
"""What a reviewer approves is exactly what runs (issue 28, item 1), end to end: an agent
on the stdio bridge calls a gated tool whose arguments try to steer the secret masks; the
reviewer's `assent show` must show every character that will run, or a mark that says how
much it hides; `assent show --full` reveals the exact call and the ledger records who
looked; the exact call is kept and assent-verify checks it against the ledger.
usage: view_exact.py STATE BUILD POLICY UPSTREAMS UPLOG"""
import json
import os
import queue
import subprocess
import sys
import threading
import time

import taplib as t

state, build, policy, upstreams, uplog = sys.argv[1:6]

ASSENT = [f"{build}/assent", "--state", state]


def assent(*args):
    return subprocess.run(ASSENT + list(args), capture_output=True, text=True, timeout=60)


class Agent:
    def __init__(self):
        argv = [f"{build}/assentd", "--stdio", "--state", state, "--policy", policy, "--upstreams", upstreams]
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  env={**os.environ, "ASSENT_SINGLE_USER": "1"})
        self.q = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "view-exact", "version": "1"}}})
        self.wait("init")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self):
        for line in self.p.stdout:
            try:
                self.q.put(json.loads(line))
            except ValueError:
                pass

    def send(self, m):
        self.p.stdin.write((json.dumps(m) + "\n").encode())
        self.p.stdin.flush()

    def wait(self, rid, secs=60):
        end = time.time() + secs
        while time.time() < end:
            try:
                m = self.q.get(timeout=0.5)
            except queue.Empty:
                continue
            if m.get("id") == rid:
                return m
        return None


def pending_call(tool_args_marker):
    for _ in range(200):
        r = assent("pending", "--json")
        if r.returncode == 0:
            for p in json.loads(r.stdout or "[]"):
                sh = assent("show", p["session_id"], "--json").stdout if p.get("type") == "call" else ""
                if tool_args_marker in sh:
                    return p["session_id"]
        time.sleep(0.1)
    return None


def ledger_entries(sid):
    out = subprocess.run([f"{build}/assent-verify", "export", f"{state}/ledger"], capture_output=True, text=True)
    return [json.loads(l)["entry"] for l in out.stdout.splitlines() if json.loads(l)["entry"].get("session_id") == sid]


a = Agent()
tools = None
a.send({"jsonrpc": "2.0", "id": "tl", "method": "tools/list"})
m = a.wait("tl")
names = [x["name"] for x in (m or {}).get("result", {}).get("tools", [])]
t.ok("sh__run" in names, f"the gated tool is served ({names})")

# 1. The attack of the issue: a secret-like key, an unmatched quote, a newline, then what runs.
attack = 'ls -l /srv/data # password="\nrm -rf /srv/data'
a.send({"jsonrpc": "2.0", "id": "c1", "method": "tools/call",
        "params": {"name": "sh__run", "arguments": {"command": attack}}})
sid = pending_call("/srv/data")
t.ok(sid, "the call is held for a person")
show = assent("show", sid).stdout
t.ok("rm -rf /srv/data" in show, "assent show shows the line the agent tried to hide behind an open quote")
t.ok("MASKED" not in show and "[secret:" not in show and "[REDACTED]" not in show,
     "... and masks nothing there (nothing in it is a complete secret)")
jshow = json.loads(assent("show", sid, "--json").stdout)
t.ok(jshow.get("arguments", {}).get("command") == attack, "the view's arguments are the exact call's")
req = [e for e in ledger_entries(sid) if e.get("kind") == "request"]
t.ok(req and req[0].get("arguments", {}).get("command") == attack, "the ledger's request entry holds the exact text")
r = assent("reject", sid, "-m", "no")
t.ok(r.returncode == 0, "the reviewer rejects it")
m = a.wait("c1")
t.ok(m is not None, "the agent hears the rejection")

# 2. A call with real secrets: marked with their size, said at the top, revealed on request.
args = {"command": "deploy --password=hunter2x --to prod", "token": "tok-SECRET-1\nline2"}
a.send({"jsonrpc": "2.0", "id": "c2", "method": "tools/call", "params": {"name": "sh__run", "arguments": args}})
sid2 = pending_call("deploy --password")
t.ok(sid2, "a call with secrets is held")
show = assent("show", sid2).stdout
first = show.splitlines()[0] if show else ""
t.ok(first.startswith("MASKED") and "2 marked spans" in first and "assent show --full" in first,
     f"assent show says first that the view masks, and how to see it ({first[:120]!r})")
t.ok("--password=[secret: 8 chars] --to prod" in show, "the masked password says its length; the rest is shown")
t.ok("[secret: 18 chars, 2 lines]" in show, "a multi-line value under a secret key says its length and lines")
t.ok("hunter2x" not in show and "tok-SECRET-1" not in show, "the secrets themselves are not shown")
req = [e for e in ledger_entries(sid2) if e.get("kind") == "request"]
t.ok(req and req[0].get("masked") == {"spans": 2, "chars": 26}, f"the request entry says what its view masks ({req and req[0].get('masked')})")
digest = req[0]["action"] if req else ""
kept = f"{state}/exact/sha256-{digest[7:]}.cbor"
t.ok(os.path.exists(kept) and (os.stat(kept).st_mode & 0o777) == 0o600 and
     (os.stat(f"{state}/exact").st_mode & 0o777) == 0o700, "the exact call is kept by its digest, 0600 in a 0700 directory")
full = assent("show", "--full", sid2)
t.ok(full.returncode == 0 and "hunter2x" in full.stdout and "tok-SECRET-1" in full.stdout and "revealed to you" in full.stdout,
     f"assent show --full reveals the exact arguments ({full.stderr.strip()[:200]})")
rev = [e for e in ledger_entries(sid2) if e.get("kind") == "reveal"]
t.ok(len(rev) == 1 and rev[0].get("reviewer", {}).get("name") == "rev" and rev[0]["reviewer"].get("channel") == "cli",
     f"the ledger records the reveal and who looked ({rev})")
r = assent("approve", sid2)
m = a.wait("c2")
t.ok(r.returncode == 0 and m and "ran" in json.dumps(m.get("result")), "approved, the call runs")
ran = [json.loads(l) for l in open(uplog)]
t.ok(ran and ran[-1] == args, "the upstream received exactly the call that was approved")

# 2b. The same on the page (headless Chromium): the card's note, the mark, the Reveal button.
args3 = {"command": "deploy --password=s3cretPW --to prod", "ratio": 0.1, "big": 1e300, "neg": -2.5}
a.send({"jsonrpc": "2.0", "id": "c3", "method": "tools/call", "params": {"name": "sh__run", "arguments": args3}})
sid3 = pending_call("s3cret") or pending_call("deploy --password=[secret: 8 chars] --to prod")
t.ok(sid3, "a call with one secret is held")
# A file edit (edit_file's {oldText, newText}) is shown again as a diff, in `assent show` and on the page.
edit = {"path": "/srv/app/config.yml", "edits": [{"oldText": "replicas: 2\nport: 80", "newText": "replicas: 9\nport: 80"}]}
a.send({"jsonrpc": "2.0", "id": "c4", "method": "tools/call", "params": {"name": "sh__edit_file", "arguments": edit}})
sid4 = pending_call("config.yml")
show = assent("show", sid4 or "").stdout
t.ok(sid4 and "edits, as a diff of the arguments above:" in show and
     "--- /srv/app/config.yml (now)\n+++ /srv/app/config.yml (after the call)\n@@ edit 1 of 1 @@\n-replicas: 2\n-port: 80\n"
     "+replicas: 9\n+port: 80" in show, f"assent show prints an edit as a diff after its arguments ({show[-300:]!r})")
review = json.load(open(f"{state}/assentd.json")).get("review")
tok = assent("reviewer", "token", "rev").stdout.strip().splitlines()[-1:]
t.ok(review and tok and tok[0].startswith("rt_"), f"the page listens ({review}) and rev has a web token")
mjs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp", "web_reveal.mjs")
nxt = t._count["n"] + 1
w = subprocess.run(["timeout", "300", "node", mjs, f"http://{review}", tok[0] if tok else "", sid3 or "", "s3cretPW", str(nxt),
                    sid4 or ""],
                   capture_output=True, text=True)
lines = [l for l in w.stdout.splitlines() if l.startswith(("ok ", "not ok "))]
for l in lines:  # the browser's checks, counted as this script's
    t.ok(l.startswith("ok "), l.split(" - ", 1)[-1])
t.ok(w.returncode == 0 and len(lines) == 7, f"the browser's checks all ran ({len(lines)} of 7; {w.stderr.strip()[-300:]})")
rev = [e for e in ledger_entries(sid3) if e.get("kind") == "reveal"]
t.ok(len(rev) == 1 and rev[0].get("reviewer", {}).get("name") == "rev" and rev[0]["reviewer"].get("channel") == "web"
     and rev[0]["reviewer"].get("via") == "session", f"the page's reveal is on the ledger, channel web ({rev})")
r = assent("reject", sid3, "-m", "not now")
t.ok(r.returncode == 0 and a.wait("c3") is not None, "rejected, the agent hears it")
r = assent("reject", sid4 or "", "-m", "not now")
t.ok(r.returncode == 0 and a.wait("c4") is not None, "the edit rejected too")
# request_feedback's text never reached the daemon unmasked: no reveal, and it says why.
r = assent("show", "--full", "no-such-request")
t.ok(r.returncode != 0 and "no pending request" in (r.stderr + r.stdout), "a reveal of an unknown request is refused, naming it")

# 3. The auditor: the kept call against the ledger, and a tampered copy refused.
v = subprocess.run([f"{build}/assent-verify", "exact", f"{state}/ledger", f"{state}/exact"], capture_output=True, text=True)
t.ok(v.returncode == 0 and "2 exact calls match" in v.stdout, f"assent-verify exact holds ({v.stdout.strip()} {v.stderr.strip()})")
data = open(kept, "rb").read()
os.chmod(kept, 0o600)
open(kept, "wb").write(data.replace(b"prod", b"prox"))
v = subprocess.run([f"{build}/assent-verify", "exact", f"{state}/ledger", f"{state}/exact"], capture_output=True, text=True)
t.ok(v.returncode == 1 and "hash" in v.stderr, f"a changed exact call is refused, naming why ({v.stderr.strip()[:160]})")
os.unlink(kept)
v = subprocess.run([f"{build}/assent-verify", "exact", f"{state}/ledger", f"{state}/exact"], capture_output=True, text=True)
t.ok(v.returncode == 1 and "missing" in v.stderr, f"a missing exact call is refused ({v.stderr.strip()[:160]})")
a.p.stdin.close()
a.p.wait(timeout=10)
t.plan()
t.done()
