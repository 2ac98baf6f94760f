"""Policy end-to-end bench: request_feedback calls decided by a policy, per second, with p50 and
p99 latency, over stdio from the official TypeScript SDK client (tests/bench/policy_client.mjs),
against assent and, in the same run, a reference server on the same SDK doing the same work
(tests/bench/ref_policy_server.mjs: an ES256 or HS256 JWT signed and a JSON line appended and
fsynced per decision):

  - assent: `assentd --state DIR --policy P` (P: `allow type approval`, `default ask`) with
    FEEDBACK_SSE_PORT=off, once signing ES256 (the default) and once HS256
    (FEEDBACK_SIGN_TOKENS=true, FEEDBACK_TOKEN_SECRET 48 random bytes in hex); the client spawns
    `assentd --stdio --state DIR --policy P` (the bridge) as an MCP client configuration does;
  - one call in flight and sixteen; each run after a warm-up; every call must come back approved
    with a token;
  - the ES256 and HS256 signing rates alone (build/bench/policy_bench --sign: the signer's own
    tok_prepare + tok_issue in a loop, one core), measured first and last in the same run (the
    goal uses the higher: the machine's load drifts).

Prints figures and the ratios the policy issue's goals name; never judges them. Exits non-zero
only when something did not work (a call not approved, a daemon that did not start or stop).
Usage (from the repository root): python3 tests/bench/policy_e2e_bench.py [--build build]
Stdlib only. Uses a temporary directory and stops every process it started, even on error.
"""
import argparse, json, os, resource, shutil, signal, subprocess, sys, tempfile, time
from benchlib import finish, mib, require, running, settled_rss, tree

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "tests", "bench")
POLICY = "# policy_e2e_bench: everything of type approval is allowed at once\nallow type approval\ndefault ask\n"


class Failed(Exception):
    pass


def cpu_s(pid):
    """utime + stime of one process, seconds (0 when gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            x = f.read().rsplit(")", 1)[1].split()
        return (int(x[11]) + int(x[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def rss_split(pids):
    """(RssAnon, RssFile) summed over pids, KiB: LMDB's map of the ledger is file-backed."""
    anon = file = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        anon += int(line.split()[1])
                    elif line.startswith("RssFile:"):
                        file += int(line.split()[1])
        except OSError:
            pass
    return anon, file


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Bench:
    def __init__(self, a):
        self.a = a
        self.build = os.path.abspath(a.build)
        self.top = tempfile.mkdtemp(prefix="assent-pbench-", dir=a.dir)
        self.policy = os.path.join(self.top, "allow.policy")
        with open(self.policy, "w") as f:
            f.write(POLICY)
        self.secret = os.urandom(48).hex()
        self.base = {k: v for k, v in os.environ.items()
                     if not k.startswith(("ASSENT_", "FEEDBACK_")) and k != "REF_ALG"}
        self.base["FEEDBACK_SSE_PORT"] = "off"
        self.base["ASSENT_REVIEW_PORT"] = "off"
        self.base.update(ASSENT_MAX_PENDING_PER_AGENT="100000", ASSENT_MAX_BLOCKING_PER_AGENT="1024",
                         ASSENT_MAX_CONNECTIONS_PER_UID="1024")  # one uid holds the whole load
        self.daemon = None  # Popen of the running daemon
        self.clients = []

    def env(self, alg):
        e = dict(self.base, REF_ALG=alg)
        if alg == "HS256":
            e.update(FEEDBACK_SIGN_TOKENS="true", FEEDBACK_TOKEN_SECRET=self.secret)
        return e

    # ---- the daemon ----
    def start_daemon(self, alg):
        state = os.path.join(self.top, f"state-{alg}")
        os.mkdir(state, 0o700)
        log = open(os.path.join(self.top, f"assentd-{alg}.log"), "wb")
        self.daemon = subprocess.Popen([os.path.join(self.build, "assentd"), "--state", state, "--policy", self.policy],
                                       stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=self.env(alg),
                                       cwd=self.top, start_new_session=True)
        log.close()
        end = time.monotonic() + 30
        while time.monotonic() < end:
            if self.daemon.poll() is not None:
                raise Failed(f"assentd ({alg}) exited with status {self.daemon.returncode} at start; see {log.name}")
            try:
                with open(os.path.join(state, "assentd.json")) as f:
                    j = json.load(f)
                if j.get("pid") == self.daemon.pid and os.path.exists(os.path.join(state, "agent.sock")):
                    if j.get("token_mode") != alg:
                        raise Failed(f"assentd signs {j.get('token_mode')}, {alg} meant")
                    return state
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        raise Failed(f"assentd ({alg}) did not come up within 30 s")

    def assent(self, state, alg, *args):
        r = subprocess.run([os.path.join(self.build, "assent"), "--state", state, *args], capture_output=True,
                           text=True, env=self.env(alg), timeout=60)
        if r.returncode != 0:
            raise Failed(f"assent {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()[:300]}")
        return r.stdout

    def stop_daemon(self, timeout=10.0):
        p, self.daemon = self.daemon, None
        if not p or p.poll() is not None:
            return
        procs = tree(p.pid)
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            for q in tree(p.pid):
                os.kill(q, signal.SIGKILL)
            p.wait()
            raise Failed(f"assentd {p.pid} did not stop within {timeout:.0f} s of SIGTERM")
        end = time.monotonic() + timeout
        while any(running(q) for q in procs if q != p.pid) and time.monotonic() < end:
            time.sleep(0.01)

    # ---- one client run ----
    def client(self, alg, conc, server_argv, name):
        err = open(os.path.join(self.top, f"{name}-{alg}-{conc}.stderr"), "wb")
        argv = ["node", os.path.join(BENCH, "policy_client.mjs"), str(self.a.seconds), str(conc), str(self.a.warmup),
                "--", *server_argv]
        c0 = children_cpu()
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=self.env(alg), cwd=self.top)
        err.close()
        self.clients.append(p)
        try:
            out, _ = p.communicate(timeout=self.a.seconds + self.a.warmup + 60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise Failed(f"{name} {alg} x{conc}: the client did not finish in time (hang?); see {err.name}")
        cpu = children_cpu() - c0
        try:
            r = json.loads(out.decode().strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise Failed(f"{name} {alg} x{conc}: the client printed no result (exit {p.returncode}); see {err.name}")
        if p.returncode != 0 or r.get("errors"):
            raise Failed(f"{name} {alg} x{conc}: {r.get('errors')} calls failed, e.g. {r.get('first_error')}")
        r["server_cpu_s"] = max(0.0, cpu - r["client_cpu_s"])  # the spawned server (assent: the bridge)
        return r

    def run(self):
        a, R = self.a, {"runs": {}}
        R["signs"] = [self.sign_alone()]
        df = subprocess.run(["df", "--output=fstype,target", self.top], capture_output=True, text=True)
        R["fs"] = " on ".join(df.stdout.split()[-2:]) if df.returncode == 0 else self.top
        for alg in ("ES256", "HS256"):
            state = self.start_daemon(alg)
            self.assent(state, alg, "reviewer", "add", "bench", "--uid", str(os.getuid()))  # for `assent status`
            dpid = self.daemon.pid
            procs = lambda: tree(dpid)
            settled_rss(procs)
            R[f"rss0-{alg}"] = rss_split(procs())
            st0 = json.loads(self.assent(state, alg, "status", "--json"))
            for conc in (1, 16):
                s0, w0 = cpu_s(dpid), sum(cpu_s(q) for q in procs() if q != dpid)
                ra = self.client(alg, conc, [os.path.join(self.build, "assentd"), "--stdio", "--state", state,
                                             "--policy", self.policy], "assent")
                ra["signer_cpu_s"] = cpu_s(dpid) - s0
                ra["workers_cpu_s"] = sum(cpu_s(q) for q in procs() if q != dpid) - w0
                rr = self.client(alg, conc, ["node", os.path.join(BENCH, "ref_policy_server.mjs"),
                                             os.path.join(self.top, f"ref-{alg}.jsonl")], "reference")
                R["runs"][(alg, conc)] = (ra, rr)
            st1 = json.loads(self.assent(state, alg, "status", "--json"))
            settled_rss(procs)
            R[f"rss1-{alg}"] = rss_split(procs())
            R[f"commits-{alg}"] = (st1["entries_written"] - st0["entries_written"], st1["commits"] - st0["commits"])
            R[f"restarts-{alg}"] = st1["mcp_worker_restarts"] + st1["review_worker_restarts"]
            self.stop_daemon()
        R["signs"].append(self.sign_alone())
        R["sign"] = max(R["signs"], key=lambda x: x["es256_per_s"])
        return R

    def sign_alone(self):
        """policy_bench --sign: the signer's own issuance in a loop, nothing else running of ours."""
        pb = os.path.join(self.build, "bench", "policy_bench")
        r = subprocess.run([pb, "--sign", str(self.a.sign_seconds)], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise Failed(f"{pb} --sign: exit {r.returncode}: {r.stderr.strip()[:300]}")
        return json.loads(r.stdout)

    def cleanup(self):
        for p in self.clients:
            if p.poll() is None:
                p.kill()
                p.wait()
        try:
            self.stop_daemon(timeout=5)
        except Failed as e:
            print(f"policy_e2e_bench: {e}", file=sys.stderr)


def report(R, a, cmdline):
    sign = R["sign"]
    print(f"\npolicy end-to-end bench: {cmdline}")
    print(f"request_feedback decided by policy (allow), over stdio from the official SDK client; "
          f"{a.seconds:g} s a run after {a.warmup:g} s of warm-up; ledger and log in {R['fs']}")
    print("signing alone, one core (policy_bench --sign: the signer's tok_prepare + tok_issue), before and after: "
          + ", ".join(f"ES256 {x['es256_per_s']:,.0f}/s HS256 {x['hs256_per_s']:,.0f}/s" for x in R["signs"])
          + "; the goal below uses the higher ES256 figure\n")
    h = ("", "in flight", "assent calls/s", "p50 ms", "p99 ms", "ref calls/s", "p50 ms", "p99 ms", "ratio")
    fmt = "{:6} {:>9} {:>15} {:>8} {:>8} {:>12} {:>8} {:>8} {:>6}"
    print(fmt.format(*h))
    for (alg, conc), (ra, rr) in R["runs"].items():
        print(fmt.format(alg, conc, f"{ra['calls_per_s']:,.0f}", f"{ra['p50_ms']:.2f}", f"{ra['p99_ms']:.2f}",
                         f"{rr['calls_per_s']:,.0f}", f"{rr['p50_ms']:.2f}", f"{rr['p99_ms']:.2f}",
                         f"{ra['calls_per_s'] / rr['calls_per_s']:.2f}x"))
    run = R["runs"]
    x = lambda alg, c: run[(alg, c)][0]["calls_per_s"] / run[(alg, c)][1]["calls_per_s"]
    print("\ngoals (policy issue):")
    print(f"  HS256, 1 in flight:  goal: >=2x the reference's calls/s       measured: {x('HS256', 1):.2f}x")
    print(f"  HS256, 16 in flight: goal: >=3x the reference's calls/s       measured: {x('HS256', 16):.2f}x")
    print(f"  ES256, 1 in flight:  goal: >=1.5x the reference's calls/s     measured: {x('ES256', 1):.2f}x")
    es16 = run[("ES256", 16)][0]["calls_per_s"]
    print(f"  ES256, 16 in flight: goal: >=90% of ES256 signing alone ({sign['es256_per_s']:,.0f}/s)"
          f"  measured: {100 * es16 / sign['es256_per_s']:.0f}%")
    for (alg, conc), (ra, rr) in run.items():
        print(f"  p99, {alg}, {conc:>2} in flight: goal: lower than the reference's   measured: "
              f"{ra['p99_ms']:.2f} ms vs {rr['p99_ms']:.2f} ms")
    print("\nwhere the CPU went (microseconds per call, warm-up included):")
    print(f"{'':6} {'in flight':>9} {'signer':>8} {'workers':>8} {'bridge':>8} {'client':>8}   "
          f"{'reference server':>17} {'client':>8}")
    for (alg, conc), (ra, rr) in run.items():
        us = lambda r, k: f"{r[k] * 1e6 / max(r['all_calls'], 1):.0f}"
        print(f"{alg:6} {conc:>9} {us(ra, 'signer_cpu_s'):>8} {us(ra, 'workers_cpu_s'):>8} {us(ra, 'server_cpu_s'):>8}"
              f" {us(ra, 'client_cpu_s'):>8}   {us(rr, 'server_cpu_s'):>17} {us(rr, 'client_cpu_s'):>8}")
    for alg in ("ES256", "HS256"):
        n, c = R[f"commits-{alg}"]
        (a0, f0), (a1, f1) = R[f"rss0-{alg}"], R[f"rss1-{alg}"]
        print(f"assentd {alg}: {n:,} ledger entries in {c:,} commits; signer+workers RSS anon {mib(a0)} -> {mib(a1)} MiB,"
              f" file (the ledger's map) {mib(f0)} -> {mib(f1)} MiB; worker restarts {R[f'restarts-{alg}']}")
    print(f"({os.cpu_count()} CPUs; client, server and assentd share them)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="directory with assentd, assent and bench/policy_bench")
    ap.add_argument("--seconds", type=float, default=8.0, help="length of each measured run, s (8)")
    ap.add_argument("--warmup", type=float, default=1.0, help="warm-up before each run, s (1)")
    ap.add_argument("--sign-seconds", type=float, default=1.0, help="length of each signing-alone loop, s (1)")
    ap.add_argument("--dir", default=None, help="where the state directories and the reference's log go "
                    "(default: $TMPDIR or /tmp; /dev/shm takes the disk out: fsync is then nearly free)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = ap.parse_args()
    require("policy_e2e_bench", a.build, ("assentd", "assent", "bench/policy_bench"))
    b = Bench(a)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    ok = False
    try:
        R = b.run()
        report(R, a, " ".join([os.path.basename(sys.executable), *sys.argv]))
        ok = True
    except Failed as e:
        print(f"policy_e2e_bench: FAILED: {e}", file=sys.stderr)
    finally:
        status = finish("policy_e2e_bench", b, ok, a.keep, None)
    sys.exit(status)


if __name__ == "__main__":
    main()
