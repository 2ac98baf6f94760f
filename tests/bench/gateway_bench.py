"""Gateway benchmark: assent against a reference server written with the official TypeScript SDK
(tests/bench/ref_server.mjs, the same `request_feedback`), in the same run:

  - time from process start to the `initialize` answer: `assentd --stdio` bridging to a running
    daemon (warm), the same with no daemon running (cold: the bridge starts the detached daemon),
    and `node ref_server.mjs`;
  - resident memory (sum of VmRSS) of every assentd process (signer, its two jailed workers, the
    bridge), idle after initialize and with 1,000 blocking request_feedback calls pending; the
    same for the reference's node process;
  - sequential tools/list calls per second over one connection.

Prints figures only; never judges them. Exits non-zero only when something did not work (an
answer that never came, requests that never became pending, a daemon that would not stop).
Usage (from the repository root): python3 tests/bench/gateway_bench.py [--build build]
Stdlib only. Uses a temporary state directory and stops every daemon it started, even on error.
"""
import argparse, json, math, os, select, shutil, signal, statistics, subprocess, sys, tempfile, time
from benchlib import children_of, finish, mib, proc_state, require, rss_kib, running, settled_rss, tree  # noqa: F401 (shared with the other bench)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INIT = {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "gateway-bench", "version": "1"}}


class Failed(Exception):
    pass


class Conn:
    """One MCP stdio server process spoken to with raw JSON-RPC lines."""

    def __init__(self, argv, env, errfile):
        self.t0 = time.perf_counter()
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errfile,
                                  env=env, cwd=ROOT)
        self.buf, self.next, self.early = b"", 1, []
        self.argv0 = os.path.basename(argv[0])

    def send(self, method, params=None, rid=None):
        if rid is None:
            rid, self.next = self.next, self.next + 1
        m = {"jsonrpc": "2.0", "method": method}
        if rid is not False:
            m["id"] = rid
        if params is not None:
            m["params"] = params
        self.p.stdin.write((json.dumps(m, separators=(",", ":")) + "\n").encode())
        self.p.stdin.flush()
        return rid

    def recv(self, rid, timeout=30.0):
        """The answer to request rid; answers to other ids are kept in self.early."""
        end = time.monotonic() + timeout
        fd = self.p.stdout.fileno()
        while True:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                line, self.buf = self.buf[:nl], self.buf[nl + 1:]
                m = json.loads(line)
                if m.get("id") == rid:
                    return m
                if "id" in m:
                    self.early.append(m)
                continue
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise Failed(f"{self.argv0}: no answer to request {rid!r} within {timeout:.0f} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise Failed(f"{self.argv0}: closed its stdout before answering request {rid!r}"
                             f" (exit status {self.p.poll()})")
            self.buf += chunk

    def call(self, method, params=None, timeout=30.0):
        m = self.recv(self.send(method, params), timeout)
        if "result" not in m:
            raise Failed(f"{self.argv0}: {method} failed: {json.dumps(m)[:300]}")
        return m["result"]

    def initialize(self, timeout=30.0):
        """Seconds from process start to the initialize answer."""
        r = self.call("initialize", INIT, timeout)
        t = time.perf_counter() - self.t0
        if "serverInfo" not in r:
            raise Failed(f"{self.argv0}: initialize answered without serverInfo: {r}")
        self.send("notifications/initialized", rid=False)
        return t

    def close(self, timeout=10.0):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


# ---- processes ----

def is_assentd(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"assentd" in f.read().split(b"\0")[0]
    except OSError:
        return False


def cmd(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return " ".join(a.decode(errors="replace") for a in f.read().split(b"\0") if a)
    except OSError:
        return "?"


# ---- the bench ----

class Bench:
    def __init__(self, a):
        self.build = os.path.abspath(a.build)
        self.a = a
        self.top = tempfile.mkdtemp(prefix="assent-bench-")
        self.state = os.path.join(self.top, "state")  # the daemon's; stderr files go beside it
        self.logs = os.path.join(self.top, "logs")
        os.mkdir(self.state, 0o700)
        os.mkdir(self.logs)
        self.env = {k: v for k, v in os.environ.items() if k not in ("ASSENT_SINGLE_USER", "ASSENT_STATE_DIR")}
        # The bench asks and approves from one process: as root that is the daemon's own uid,
        # whose requests only single-user mode lets anyone decide (same-user assurance).
        if os.geteuid() == 0:
            self.env["ASSENT_SINGLE_USER"] = "1"
        self.env["FEEDBACK_SSE_PORT"] = "0"  # any free port: never collide with a real daemon on 8765
        self.env["ASSENT_REVIEW_PORT"] = "0"  # nor on 8766
        # one bridge holds the whole load: past the limits per principal
        self.env.update(ASSENT_MAX_PENDING_PER_AGENT="100000", ASSENT_MAX_BLOCKING_PER_AGENT="1024",
                        ASSENT_MAX_CONNECTIONS_PER_UID="1024")
        self.daemons = set()  # every daemon pid seen, to stop at the end
        self.conns = []
        self.nerr = 0

    # files for stderr: never a pipe, which a detached daemon could inherit and fill
    def errfile(self, name):
        self.nerr += 1
        return open(os.path.join(self.logs, f"{self.nerr:03d}-{name}.stderr"), "wb")

    def assentd(self):
        f = self.errfile("assentd-stdio")
        c = Conn([os.path.join(self.build, "assentd"), "--stdio", "--state", self.state], self.env, f)
        f.close()
        self.conns.append(c)
        return c

    def ref(self):
        f = self.errfile("ref_server")
        c = Conn(["node", os.path.join(ROOT, "tests", "bench", "ref_server.mjs")], self.env, f)
        f.close()
        self.conns.append(c)
        return c

    def assent(self, *args):
        r = subprocess.run([os.path.join(self.build, "assent"), "--state", self.state, *args],
                           capture_output=True, text=True, env=self.env, timeout=60)
        if r.returncode != 0:
            raise Failed(f"assent {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()[:300]}")
        return r.stdout

    def daemon_pid(self):
        try:
            with open(os.path.join(self.state, "assentd.json")) as f:
                pid = int(json.load(f)["pid"])
        except (OSError, ValueError, KeyError):
            return None
        if running(pid) and is_assentd(pid):
            self.daemons.add(pid)
            return pid
        return None

    def stop_daemon(self, pid, timeout=10.0):
        """SIGTERM the daemon, wait for it and its workers to go; SIGKILL after timeout."""
        procs = tree(pid)
        os.kill(pid, signal.SIGTERM)
        end = time.monotonic() + timeout
        while any(running(p) for p in procs):
            if time.monotonic() > end:
                for p in procs:
                    if running(p) and is_assentd(p):
                        os.kill(p, signal.SIGKILL)
                raise Failed(f"daemon {pid} did not stop within {timeout:.0f} s of SIGTERM")
            time.sleep(0.01)

    def cleanup(self):
        for c in self.conns:
            if c.p.poll() is None:
                c.p.kill()
                c.p.wait()
        pid = self.daemon_pid()
        for p in sorted(self.daemons | ({pid} if pid else set())):
            if running(p) and is_assentd(p):
                try:
                    self.stop_daemon(p, timeout=5)
                except (Failed, ProcessLookupError):
                    pass

    def init_times(self, start, n):
        out = []
        for _ in range(n):
            c = start()
            out.append(c.initialize())
            c.close()
        return out

    def cold_once(self):
        pid = self.daemon_pid()
        if pid:
            self.stop_daemon(pid)
        c = self.assentd()
        t = c.initialize()
        c.close()
        if not self.daemon_pid():
            raise Failed("the cold bridge answered initialize but no daemon runs on the state directory")
        return t

    def lists_per_second(self, c, seconds):
        c.call("tools/list")  # once, outside the clock
        n, t0 = 0, time.perf_counter()
        while True:
            r = c.call("tools/list")
            if not r.get("tools"):
                raise Failed(f"{c.argv0}: tools/list returned no tools")
            n += 1
            el = time.perf_counter() - t0
            if el >= seconds:
                return n / el

    def flood(self, c, n):
        """Send n blocking request_feedback calls in one write; returns their ids."""
        ids, lines = [], []
        for i in range(n):
            rid = f"p{i}"
            ids.append(rid)
            lines.append(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
                "name": "request_feedback", "arguments": {
                    "type": "approval", "message": f"bench request {i}: delete /tmp/bench-{i}?",
                    "context": {"command": f"rm -rf /tmp/bench-{i}", "host": "bench"},
                    "timeout_override": self.a.pending_timeout}}}, separators=(",", ":")))
        c.p.stdin.write(("\n".join(lines) + "\n").encode())
        c.p.stdin.flush()
        return ids

    def still_pending(self, c):
        if c.early:
            raise Failed(f"{c.argv0}: {len(c.early)} of the held calls were answered while they were being "
                         f"measured (is --pending-timeout too short?), e.g. {json.dumps(c.early[0])[:200]}")

    def count_pending(self):
        return len(json.loads(self.assent("pending", "--json")))

    def run(self):
        a, R = self.a, {}
        # first start on an empty state directory: the daemon creates its keys and ledger
        R["fresh"] = [self.cold_once()]
        self.assent("reviewer", "add", "benchrev", "--uid", str(os.getuid()))
        # cold: no daemon (each run stops the previous one); the last one leaves its daemon running
        R["cold"] = [self.cold_once() for _ in range(a.cold_runs)]
        R["warm"] = self.init_times(self.assentd, a.runs)
        R["ref"] = self.init_times(self.ref, a.runs)

        # ---- assent: memory and throughput on one bridge ----
        daemon = self.daemon_pid()
        if not daemon:
            raise Failed("no daemon runs after the warm runs")
        c = self.assentd()
        c.initialize()
        c.call("ping")
        procs = lambda: tree(daemon) + [c.p.pid]
        R["a_idle"], R["a_idle_by"] = settled_rss(procs)
        R["a_names"] = {p: cmd(p) for p in R["a_idle_by"]}
        R["a_lps"] = self.lists_per_second(c, a.seconds)
        t0 = time.perf_counter()
        ids = self.flood(c, a.pending)
        c.recv(c.send("ping"), timeout=120)
        end, got = time.monotonic() + 120, 0
        while time.monotonic() < end:
            got = self.count_pending()
            if got >= a.pending or c.early:
                break
            time.sleep(0.1)
        R["a_accept"] = time.perf_counter() - t0
        if c.early:
            raise Failed(f"assent answered {len(c.early)} of the {a.pending} calls at once, e.g. "
                         f"{json.dumps(c.early[0])[:300]}")
        if got < a.pending:
            raise Failed(f"only {got} of {a.pending} requests became pending within 120 s")
        R["a_busy"], R["a_busy_by"] = settled_rss(procs)
        R["a_lps_busy"] = self.lists_per_second(c, a.seconds)
        self.still_pending(c)
        # closing the bridge cancels its blocking calls; what does the daemon keep?
        t0 = time.perf_counter()
        c.close()
        end = time.monotonic() + 60
        while self.count_pending() and time.monotonic() < end:
            time.sleep(0.1)
        R["a_cancel"] = time.perf_counter() - t0
        R["a_after"], _ = settled_rss(lambda: tree(daemon))
        R["a_daemon_idle"] = sum(v for p, v in R["a_idle_by"].items() if p != c.p.pid)

        # ---- reference: the same on its node process ----
        r = self.ref()
        r.initialize()
        r.call("ping")
        rprocs = lambda: tree(r.p.pid)
        R["r_idle"], _ = settled_rss(rprocs)
        R["r_lps"] = self.lists_per_second(r, a.seconds)
        t0 = time.perf_counter()
        self.flood(r, a.pending)
        r.recv(r.send("ping"), timeout=120)  # handled in order: all calls were read and dispatched
        R["r_accept"] = time.perf_counter() - t0
        if r.early:
            raise Failed(f"the reference answered {len(r.early)} calls at once, e.g. {json.dumps(r.early[0])[:300]}")
        R["r_busy"], _ = settled_rss(rprocs)
        R["r_lps_busy"] = self.lists_per_second(r, a.seconds)
        self.still_pending(r)
        r.close()
        return R


def ms(xs):
    xs = sorted(xs)
    med = statistics.median(xs) * 1000
    if len(xs) == 1:
        return f"{med:.1f}"
    return f"{med:.1f} / {xs[max(0, math.ceil(0.9 * len(xs)) - 1)] * 1000:.1f}"


def report(R, a, cmdline):
    rows = [
        (f"initialize, ms (median / p90; {a.runs} runs)", ms(R["warm"]) + "  warm", ms(R["ref"])),
        (f"initialize, ms, no daemon ({a.cold_runs} run{'s' if a.cold_runs != 1 else ''})", ms(R["cold"]) + "  cold", "-"),
        ("initialize, ms, empty state dir (1 run)", ms(R["fresh"]) + "  first", "-"),
        ("RSS idle, MiB", mib(R["a_idle"]), mib(R["r_idle"])),
        (f"RSS with {a.pending} pending, MiB", mib(R["a_busy"]), mib(R["r_busy"])),
        (f"time to accept {a.pending} calls, s", f"{R['a_accept']:.2f}", f"{R['r_accept']:.2f}"),
        ("tools/list per second, idle", f"{R['a_lps']:,.0f}", f"{R['r_lps']:,.0f}"),
        (f"tools/list per second, {a.pending} pending", f"{R['a_lps_busy']:,.0f}", f"{R['r_lps_busy']:,.0f}"),
    ]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows + [("", "assent", "")])
    print(f"\ngateway bench: {cmdline}")
    print(f"{'':{w0}}  {'assent':>{w1}}  reference (node, official SDK)")
    for r in rows:
        print(f"{r[0]:{w0}}  {r[1]:>{w1}}  {r[2]}")
    print("\nassent processes (VmRSS MiB)      idle   pending")
    for pid, k in R["a_idle_by"].items():
        print(f"  {pid:>7} {R['a_names'][pid][:24]:24} {mib(k):>7}   {mib(R['a_busy_by'].get(pid, 0)):>7}")
    print(f"daemon alone: idle {mib(R['a_daemon_idle'])} MiB; {R['a_cancel']:.2f} s after its bridge closed,"
          f" the {a.pending} calls were cancelled and it held {mib(R['a_after'])} MiB")
    print("time to accept: assent until `assent pending` lists them all; reference until a ping sent"
          " after them is answered.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="directory with assentd and assent (default: build)")
    ap.add_argument("--runs", type=int, default=20, help="initialize runs, warm and reference (20)")
    ap.add_argument("--cold-runs", type=int, default=5, help="initialize runs with no daemon running (5)")
    ap.add_argument("--pending", type=int, default=1000, help="requests held pending (1000)")
    ap.add_argument("--pending-timeout", type=int, default=600, help="their timeout_override, s (600)")
    ap.add_argument("--seconds", type=float, default=2.0, help="length of each tools/list run, s (2)")
    ap.add_argument("--keep", action="store_true", help="keep the state directory")
    a = ap.parse_args()
    require("gateway_bench", a.build, ("assentd", "assent"))
    b = Bench(a)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    ok = False
    try:
        R = b.run()
        report(R, a, " ".join([os.path.basename(sys.executable), *sys.argv]))
        ok = True
    except Failed as e:
        print(f"gateway_bench: FAILED: {e}", file=sys.stderr)
    finally:
        status = finish("gateway_bench", b, ok, a.keep, os.path.join(b.state, "assentd.log"))
    sys.exit(status)


if __name__ == "__main__":
    main()
