"""Raw JSON-RPC agents for gateway_gate.sh (what an SDK client will not do, or needs many calls in
flight on one connection). TAP out for the checks; run against a running daemon.

Usage: gateway_gate.py CONFIG.json MODE   (CONFIG: the one sdk_gate.mjs reads, plus for the mode)
  dupid      a JSON-RPC retry of a held call with the same id on the same connection (stdio, then
             HTTP): the two never make two dispatches; one approval forwards exactly one
  call TOOL JSON_ARGS
             one call over stdio, its answer printed as one JSON line
  memgrep NEEDLE PID...
             which processes hold NEEDLE in their memory (read through /proc/PID/mem, as root)
  hold TOOL JSON_ARGS
             one call over stdio; prints {"sent": true}, then whatever comes (the answer, or
             {"eof": true} when the bridge ends), one JSON line each; ends at EOF
  misbehave  against the daemon of crashing, hanging, garbage-writing and flooding upstreams next
             to a healthy one (CONFIG: state, build, policy, upstreams, log, callLogs {name: file},
             transcript): each call ends, the healthy upstream keeps answering, the daemon stays up
"""
import http.client, json, os, queue, subprocess, sys, threading, time

from taplib import done, ok, plan

cfg = json.load(open(sys.argv[1]))
mode = sys.argv[2]
WAIT = 60  # bounds a wait for an event that should come; never what a check measures
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "gate-raw", "version": "1"}}


def assent(*args):
    return subprocess.run([f"{cfg['build']}/assent", "--state", cfg["state"], *args], capture_output=True, text=True)


def record(what, x):
    with open(cfg["transcript"], "a") as f:
        f.write(json.dumps({"what": what, "x": x}) + "\n")


def ledger(sid=None):
    out = subprocess.run([f"{cfg['build']}/assent-verify", "export", f"{cfg['state']}/ledger"], capture_output=True,
                         text=True).stdout
    es = [json.loads(l) for l in out.splitlines() if l]
    return [e for e in es if sid is None or e["entry"].get("session_id") == sid]


def kinds(sid):
    return ",".join(e["entry"]["kind"] for e in ledger(sid))


def calls(log, tool, pred=lambda a: True):
    if not os.path.exists(log):
        return 0
    n = 0
    for line in open(log):
        t, _, rest = line.rstrip("\n").partition(" ")
        try:
            if t == tool and pred(json.loads(rest)):
                n += 1
        except ValueError:
            pass
    return n


def held_for(path, n=1, skip=(), wait=WAIT):
    """The held calls (assent show --json) whose arguments say path: once there are n of them."""
    end = time.time() + wait
    found = []
    while time.time() < end:
        found = []
        for r in json.loads(assent("pending", "--json").stdout or "[]"):
            if r.get("type") != "call" or r["session_id"] in skip:
                continue
            j = json.loads(assent("show", r["session_id"], "--json").stdout or "{}")
            if (j.get("arguments") or {}).get("path") == path:
                found.append(j)
        if len(found) >= n:
            break
        time.sleep(0.05)
    return found


def text_of(m):
    res = (m or {}).get("result") or {}
    return "\n".join(c.get("text", "") for c in res.get("content") or [] if c.get("type") == "text")


def gate_facts(m):
    return (((m or {}).get("result") or {}).get("_meta") or {}).get("io.assent/gate") or {}


class Stdio:
    """An agent on an assentd --stdio bridge; every message it gets goes to self.q."""

    def __init__(self):
        argv = [f"{cfg['build']}/assentd", "--stdio", "--state", cfg["state"], "--policy", cfg["policy"],
                "--upstreams", cfg["upstreams"]]
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  env={**os.environ, "ASSENT_SINGLE_USER": "1"})
        self.q = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": INIT})
        self.wait_id("init")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self):
        for line in self.p.stdout:
            try:
                m = json.loads(line)
            except ValueError:
                continue
            record("stdio", m)
            self.q.put(m)
        self.q.put({"eof": True})

    def send(self, m):
        self.p.stdin.write((json.dumps(m) + "\n").encode())
        self.p.stdin.flush()

    def call(self, rid, name, args):
        self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": args}})

    def wait_id(self, rid, wait=WAIT, others=None):
        """The answer with id rid (one of them, in order, when an id was sent twice); answers to
        other ids are kept for their own wait_id, and also listed in others (a list) when given."""
        if not hasattr(self, "kept"):
            self.kept = []
        end = time.time() + wait
        while True:
            for i, m in enumerate(self.kept):
                if m.get("id") == rid:
                    return self.kept.pop(i)
            try:
                m = self.q.get(timeout=max(0.01, end - time.time()))
            except queue.Empty:
                return None
            if m.get("eof"):
                return m
            if "id" in m and ("result" in m or "error" in m):
                self.kept.append(m)
                if others is not None and m.get("id") != rid:
                    others.append(m)
            if time.time() > end and not any(k.get("id") == rid for k in self.kept):
                return None

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        self.p.wait(timeout=WAIT)


class Http:
    """An agent over Streamable HTTP with the agent key; each POST runs in a thread of its own and
    its messages go to self.q."""

    def __init__(self):
        self.host, port = cfg["url"].split("//")[1].split("/")[0].rsplit(":", 1)
        self.port = int(port)
        self.session = None
        self.q = queue.Queue()
        st, msgs, self.session = self._post({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": INIT})
        self.h = {"Mcp-Session-Id": self.session or "", "MCP-Protocol-Version": INIT["protocolVersion"]}
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _post(self, body):
        c = http.client.HTTPConnection(self.host, self.port, timeout=WAIT * 2)
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "Authorization": f"Bearer {cfg['key']}"}
        if self.session:
            h.update({"Mcp-Session-Id": self.session, "MCP-Protocol-Version": INIT["protocolVersion"]})
        c.request("POST", "/mcp", json.dumps(body), h)
        r = c.getresponse()
        data = r.read().decode(errors="replace")
        sid = r.getheader("Mcp-Session-Id")
        c.close()
        if "text/event-stream" in (r.getheader("Content-Type") or ""):
            msgs = [json.loads(l[5:]) for l in data.splitlines() if l.startswith("data:") and l[5:].strip()]
        else:
            msgs = [json.loads(data)] if data.strip() else []
        for m in msgs:
            record("http", m)
        return r.status, msgs, sid

    def call(self, rid, name, args):
        def go():
            try:
                _, msgs, _ = self._post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                         "params": {"name": name, "arguments": args}})
            except OSError as e:
                msgs = [{"id": rid, "error": {"message": f"POST failed: {e}"}}]
            for m in msgs:
                self.q.put(m)
        threading.Thread(target=go, daemon=True).start()

    wait_id = Stdio.wait_id

    def close(self):
        pass


def dupid():
    log = cfg["callLog"]
    for kind, agent in (("stdio", Stdio), ("http", Http)):
        a = agent()
        path = f"dup-{kind}.txt"
        args = {"path": path, "content": f"once ({kind})\n"}
        a.call(7, "fs__write_file", args)
        first = held_for(path)
        sid1 = first[0]["session_id"] if first else None
        a.call(7, "fs__write_file", args)  # the retry: the same id, the same connection, still held
        if kind == "stdio":  # one connection is read in order: once a later call is answered, the retry was read
            a.call(8, "fs__echo", {"text": "after the retry"})
            later = []
            a.wait_id(8, others=later)
            both = held_for(path, 2, wait=5)
        else:  # separate POSTs: the retry shows up as held, or (another design) never does
            both = held_for(path, 2, wait=10)
        sids = [h["session_id"] for h in both]
        ok(sid1 is not None and calls(log, "write_file", lambda x: x.get("path") == path) == 0,
           f"{kind}: a write held ({sid1}); the same id sent again on the connection "
           f"({len(sids)} held for it now: {' '.join(sids)})")
        c0 = commits()
        r = assent("approve", sid1 or "none", "-m", "one approval")
        got = []
        m = a.wait_id(7)
        c1 = commits()
        if m:
            got.append(m)
        if kind == "stdio":  # issue 33: the decision and the dispatch in one commit, the outcome in the next
            ok(c1 - c0 == 2, f"{kind}: an approved call takes two commits after the approval: decision and dispatch "
               f"before it leaves, its outcome after ({c1 - c0})")
        ok(r.returncode == 0 and m and not m.get("result", {}).get("isError") and gate_facts(m).get("session_id") == sid1
           and text_of(m).startswith("wrote "), f"{kind}: one approval: the agent gets the upstream's result for it "
           f"({json.dumps(m)[:200]})")
        ok(calls(log, "write_file", lambda x: x.get("path") == path) == 1,
           f"{kind}: ... the upstream got the call exactly once")
        rest = [s for s in sids if s != sid1]
        pend = json.loads(assent("pending", "--json").stdout or "[]")
        still = [s for s in rest if any(p["session_id"] == s for p in pend)]
        ok(still == rest and all(kinds(s) == "request" for s in rest),
           f"{kind}: ... the retry is not dispatched by that approval: still held, a request only on the ledger "
           f"({[kinds(s) for s in rest]})")
        for s in rest:
            assent("reject", s, "-m", "a retry of a call already approved")
            m2 = a.wait_id(7)
            if m2:
                got.append(m2)
            ok(m2 and m2.get("result", {}).get("isError") and "rejected by tester" in text_of(m2),
               f"{kind}: ... rejected, the retry's answer says so ({text_of(m2)[:100]})")
        disp = sum(1 for s in sids for e in ledger(s) if e["entry"]["kind"] == "dispatch")
        ok(calls(log, "write_file", lambda x: x.get("path") == path) == 1 and disp == 1,
           f"{kind}: ... the upstream got it once in all, one dispatch entry on the ledger (of {len(sids)} requests)")
        a.close()


def hold(tool, args):
    a = Stdio()
    a.call(1, tool, json.loads(args))
    print(json.dumps({"sent": True}), flush=True)
    while True:
        m = a.q.get()
        print(json.dumps(m), flush=True)
        if m.get("eof"):
            return


def commits():
    try:
        return json.loads(assent("status", "--json").stdout).get("commits", -1)
    except ValueError:
        return -1


def misbehave():
    st0 = assent("status")
    a = Stdio()
    logs = cfg["callLogs"]
    a.send({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
    m = a.wait_id("list")
    names = [t["name"] for t in ((m or {}).get("result") or {}).get("tools", [])]
    ok(all(f"{u}__echo" in names for u in ("fs", "crash", "hang", "garbage", "flood")),
       f"tools/list serves the healthy and the misbehaving upstreams' tools ({len(names)} tools)")

    # -- one ledger commit before a call the policy allows leaves (request, decision and dispatch
    # together), one after (its outcome): issue 33
    c0 = commits()
    a.call("one", "fs__echo", {"text": "two commits"})
    m = a.wait_id("one")
    c1 = commits()
    sid = gate_facts(m).get("session_id")
    ks = [e["entry"]["kind"] for e in ledger(sid)] if sid else []
    ok(m and text_of(m) == "two commits" and c1 - c0 == 2 and ks == ["request", "decision", "dispatch", "outcome"],
       f"an allowed call takes two ledger commits: request, decision and dispatch before it leaves, its outcome "
       f"after ({c1 - c0} commits; {ks})")

    # -- hang: the call ends after ASSENT_UPSTREAM_CALL_TIMEOUT; the others answer meanwhile
    a.call("h1", "hang__echo", {"text": "into the void"})
    a.call("f1", "fs__echo", {"text": "while hang hangs"})
    early = []
    m = a.wait_id("f1", others=early)
    ok(m and text_of(m) == "while hang hangs" and not any(x.get("id") == "h1" for x in early),
       "hang: a call to the healthy upstream sent after the hung one is answered first")
    ok(calls(logs["hang"], "echo") == 1, "hang: ... the hung call reached its upstream")
    m = a.wait_id("h1")
    t = text_of(m)
    ok(m and m.get("result", {}).get("isError") and "did not answer within 3 s" in t and "outcome is unknown" in t,
       f"hang: after ASSENT_UPSTREAM_CALL_TIMEOUT=3 the agent gets isError, outcome unknown ({t[:160]})")
    sid = gate_facts(m).get("session_id")
    out = [e["entry"] for e in ledger(sid)] if sid else []
    ok(any(e["kind"] == "outcome" and e.get("status") == "unknown" for e in out),
       f"hang: ... the ledger's outcome for it is unknown ({[(e['kind'], e.get('status')) for e in out]})")
    a.call("h2", "fs__echo", {"text": "after the timeout"})
    m = a.wait_id("h2")
    ok(m and text_of(m) == "after the timeout", "hang: the healthy upstream answers after it")

    # -- crash: that call fails, the server is restarted and the next call reaches the new one
    started = lambda: sum(1 for l in open(cfg["log"]) if "upstream crash: 5 tools served" in l)
    s0 = started()
    a.call("c1", "crash__echo", {"text": "boom"})
    m = a.wait_id("c1")
    t = text_of(m)
    ok(m and m.get("result", {}).get("isError") and "outcome is unknown" in t,
       f"crash: the call whose server exits on it ends isError, outcome unknown ({t[:160]})")
    sid = gate_facts(m).get("session_id")
    ok(sid and any(e["entry"]["kind"] == "outcome" and e["entry"].get("status") == "unknown" for e in ledger(sid)),
       "crash: ... its ledger outcome is unknown")
    a.call("c2", "fs__echo", {"text": "after the crash"})
    m = a.wait_id("c2")
    ok(m and text_of(m) == "after the crash", "crash: the healthy upstream keeps answering")
    end = time.time() + WAIT
    while started() <= s0 and time.time() < end:
        time.sleep(0.1)
    ok(started() > s0, f"crash: the server is started again and lists its tools ({started()} times in the log)")
    got = None
    for i in range(100):  # the restarted server's worker may still be starting: not forwarded then, said so
        a.call(f"c3-{i}", "crash__echo", {"text": f"again {i}"})
        got = a.wait_id(f"c3-{i}")
        if "not forwarded" not in text_of(got):
            break
        time.sleep(0.1)
    ok(calls(logs["crash"], "echo") == 2 and "outcome is unknown" in text_of(got),
       f"crash: ... and the next call reaches the restarted server (its call log: {calls(logs['crash'], 'echo')} calls)")
    exits = sum(1 for l in open(cfg["log"]) if "upstream crash: its server exited with status 3" in l)
    ok(exits == 2, f"crash: the log says each time how its server ended (exited with status 3: {exits} of 2)")

    # -- garbage: what it wrote is skipped; its call ends and the healthy one answers
    a.call("g1", "garbage__echo", {"text": "over garbage"})
    a.call("g2", "fs__echo", {"text": "next to garbage"})
    m = a.wait_id("g2")
    ok(m and text_of(m) == "next to garbage", "garbage: the healthy upstream answers")
    m = a.wait_id("g1")
    ok(m is not None and text_of(m) == "over garbage",
       f"garbage: its worker skipped what was not JSON-RPC and the server's answer to a call came through ({text_of(m)[:160]})")
    lines = [l for l in open(cfg["log"]) if "upstream garbage:" in l]
    ok(any("not a JSON-RPC message" in l for l in lines) and any("a line over 4194304 bytes: skipped" in l for l in lines)
       and len(lines) < 50, f"garbage: the log says what it wrote, and that the 10 MB line was skipped ({len(lines)} lines)")

    # -- results too big: over the gateway's bound (2 MiB encoded) the agent is told; over the upstream
    # worker's line bound (4 MiB) the line is skipped, and the call it answers (its id read from the
    # line's end) ends at once; the same upstream answers the next call either way
    import base64
    for name, size in (("big-3m.txt", 3 << 20), ("big-6m.txt", 6 << 20)):
        with open(f"{cfg['root']}/{name}", "w") as f:
            f.write(base64.b64encode(os.urandom(size * 3 // 4)).decode())
    a.call("b1", "fs__read_file", {"path": "big-3m.txt"})
    m = a.wait_id("b1")
    t = text_of(m)
    sid = gate_facts(m).get("session_id")
    out = [e["entry"] for e in ledger(sid)] if sid else []
    ok(m and m.get("result", {}).get("isError") and "cannot be forwarded" in t,
       f"a 3 MiB result: isError, the agent is told it cannot be forwarded ({t[:120]}; ledger: "
       f"{[(e['kind'], e.get('status')) for e in out]})")
    a.call("b2", "fs__read_file", {"path": "big-6m.txt"})
    m = a.wait_id("b2")
    t = text_of(m)
    sid = gate_facts(m).get("session_id")
    out = [e["entry"] for e in ledger(sid)] if sid else []
    ok(m and m.get("result", {}).get("isError") and "its answer is a line over 4194304 bytes: not forwarded" in t,
       f"a 6 MiB result (one line over the upstream worker's bound): the call ends at once, isError, saying so "
       f"({t[:120]})")
    ok(any(e["kind"] == "outcome" and e.get("status") == "error" for e in out),
       f"... its ledger outcome is error, not unknown: the server answered ({[(e['kind'], e.get('status')) for e in out]})")
    a.call("b3", "fs__echo", {"text": "after the big ones"})
    m = a.wait_id("b3")
    ok(m and text_of(m) == "after the big ones", "... and the same upstream answers the next call")

    # -- flood: it keeps answering, and so does the healthy one, while it floods
    for i in range(20):
        a.call(f"fl{i}", "flood__echo", {"text": f"flood {i}"})
        a.call(f"fs{i}", "fs__echo", {"text": f"healthy {i}"})
    good_fl = sum(1 for i in range(20) if text_of(a.wait_id(f"fl{i}")) == f"flood {i}")
    good_fs = sum(1 for i in range(20) if text_of(a.wait_id(f"fs{i}")) == f"healthy {i}")
    ok(good_fs == 20, f"flood: 20 of 20 calls to the healthy upstream answered during the flood ({good_fs})")
    ok(good_fl == 20, f"flood: 20 of 20 calls to the flooding upstream itself answered ({good_fl})")
    st1 = assent("status")
    ok(st0.returncode == 0 and st1.returncode == 0, "the daemon is up and answers its control socket after it all")
    a.close()


def memgrep(needle, pids):
    """How many readable mappings of each process hold needle (its memory read through
    /proc/PID/mem, as root), as one JSON line {pid: count}."""
    import re
    out = {}
    for pid in pids:
        found = 0
        try:
            with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
                for line in maps:
                    m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+)", line)
                    a, b = int(m[1], 16), int(m[2], 16)
                    if m[3][0] != "r" or "[vvar]" in line or "[vsyscall]" in line:
                        continue
                    tail, off = b"", a
                    while off < b:
                        try:
                            mem.seek(off)
                            data = mem.read(min(1 << 20, b - off))
                        except OSError:
                            break
                        if not data:
                            break
                        if needle in tail + data:
                            found += 1
                            break
                        tail, off = data[-len(needle):], off + len(data)
        except OSError as e:
            found = f"unreadable: {e}"
        out[pid] = found
    print(json.dumps(out))


if mode == "memgrep":
    memgrep(sys.argv[3].encode(), sys.argv[4:])
    sys.exit(0)
if mode == "call":
    a = Stdio()
    a.call(1, sys.argv[3], json.loads(sys.argv[4]))
    print(json.dumps(a.wait_id(1)), flush=True)
    a.close()
    sys.exit(0)
if mode == "dupid":
    dupid()
elif mode == "hold":
    hold(sys.argv[3], sys.argv[4])
    sys.exit(0)
elif mode == "misbehave":
    misbehave()
plan()
done()
