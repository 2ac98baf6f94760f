"""Issue 33's bench: assent's durable paths beside the disk's own sync floor and the references
the issue names, in one run, with the goals as ratios:

  - the disk's floor in the bench's directory: one and two 512-byte write+fdatasync per operation;
  - durable request_feedback decided by the policy (`allow type approval`), over stdio through
    the bridge (`assentd --stdio`), 1 and 16 in flight, against the reference SDK server
    (tests/bench/ref_policy_server.mjs: an ES256 JWT and an fsynced JSON line per decision);
  - a gated tools/call of echo allowed by a plain `allow` rule (ledgered: request, decision and
    dispatch in one commit, the outcome in the next), over stdio, 1 and 16 in flight, against
    the SDK reference proxy (tests/bench/ref_proxy.mjs: a rule lookup and an fsynced line per
    call) and the upstream directly (the p50 assent adds);
  - the same call allowed with `record calls` (no ledger entry: a call record);
  - resident memory of all assentd's processes fresh, and idle after N decisions (--decisions,
    100,000), a few seconds after the load stops.
Each figure is the median of --rounds (3) runs of --seconds (3), the order of the columns reversed
every round, so that the machine's other load falls on all alike. The driver is the raw JSON-RPC
client of the gate bench (tests/bench/gate_client.mjs). Prints figures and ratios, never judges;
exits non-zero only when something did not work. Usage (from the repository root):
  python3 tests/bench/durable_bench.py [--build build] [--seconds 3] [--rounds 3] [--decisions N] [--keep]
"""
import argparse, json, os, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gate_bench as gb  # noqa: E402 (its processes, daemon and proxy helpers)
from benchlib import finish, mib, settled_rss, tree  # noqa: E402

RF_ARGS = {"type": "approval", "message": "deploy web-frontend to staging",
           "context": {"command": "kubectl rollout restart deployment/web-frontend -n staging", "risk": "low"}}
REF_POLICY = os.path.join(gb.BENCH, "ref_policy_server.mjs")


def memory(pids):
    """{"rss", "pss", "anon"} summed over pids, KiB (smaps_rollup), and each process's name and RSS."""
    tot, by = {"rss": 0, "pss": 0, "anon": 0}, {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                m = {l.split(":")[0]: int(l.split()[1]) for l in f if l.split(":")[0] in ("Rss", "Pss", "Anonymous")}
            with open(f"/proc/{pid}/comm") as f:
                name = f.read().strip()
        except (OSError, ValueError, IndexError):
            continue
        tot["rss"] += m.get("Rss", 0)
        tot["pss"] += m.get("Pss", 0)
        tot["anon"] += m.get("Anonymous", 0)
        by[f"{name}[{pid}]"] = (m.get("Rss", 0), m.get("Anonymous", 0))
    return tot, by


def disk_floor(d, per, n=2000):
    """ops/s and p50 ms of `per` write+fdatasync of 512 bytes, appending, `per` files."""
    fds = [os.open(os.path.join(d, f"floor-{k}"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600) for k in range(per)]
    blk, lat = b"x" * 512, []
    t0 = time.perf_counter()
    for _ in range(n):
        a = time.perf_counter()
        for fd in fds:
            os.write(fd, blk)
            os.fdatasync(fd)
        lat.append(time.perf_counter() - a)
    dt = time.perf_counter() - t0
    for k, fd in enumerate(fds):
        os.close(fd)
        os.unlink(os.path.join(d, f"floor-{k}"))
    return n / dt, statistics.median(lat) * 1e3


class Durable(gb.Bench):
    def __init__(self, a):
        super().__init__(a)
        self.env.update(ASSENT_MAX_PENDING_PER_AGENT="100000", ASSENT_MAX_BLOCKING_PER_AGENT="1024",
                        ASSENT_MAX_CONNECTIONS_PER_UID="1024")
        self.env.pop("ASSENT_SINGLE_USER", None)

    def drive_args(self, inflight, tool, stdio, args=None, expect=None, seconds=None):
        argv = [gb.NODE, gb.DRIVER, "--inflight", str(inflight), "--seconds", str(seconds or self.a.seconds),
                "--tool", tool, "--warmup", str(gb.WARMUP)]
        if args is not None:
            argv += ["--args", json.dumps(args)]
        if expect:
            argv += ["--expect", expect]
        argv += ["--stdio"] + stdio
        with self.log("driver") as err:
            r = subprocess.run(argv, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                               cwd=self.top, timeout=(seconds or self.a.seconds) + 120)
        try:
            out = json.loads(r.stdout.decode().strip().splitlines()[-1])
        except (IndexError, ValueError):
            raise gb.Failed(f"{tool}: the driver printed no figures (exit {r.returncode})")
        if out.get("errors") or not out.get("n"):
            raise gb.Failed(f"{tool}: {out.get('errors')} of {out.get('n')} calls failed; first: {out.get('first_error')}")
        return out

    def daemon(self, name, policy, upstreams=False):
        """A daemon of its own with this policy (and the fs upstream) -> (pid, state, bridge argv)."""
        d = os.path.join(self.top, name)
        os.makedirs(os.path.join(d, "root"))
        pol = os.path.join(d, "p.policy")
        with open(pol, "w") as f:
            f.write(policy)
        state = os.path.join(d, "state")
        argv = [os.path.join(self.build, "assentd"), "--state", state, "--policy", pol]
        if upstreams:
            ups = os.path.join(d, "upstreams.json")
            with open(ups, "w") as f:
                json.dump({"mcpServers": {"fs": {"command": gb.NODE, "args": [gb.FS, "--root", os.path.join(d, "root")],
                                                 "env": {"UPSTREAM_SECRET": self.secret}}}}, f)
            pid, hp = self.start_daemon(state, pol, ups)
            self.wait_tools(hp, self.agent_key(state), 1)
        else:
            with self.log(name) as err:
                p = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                     cwd=self.top)
            self.daemons.append(p.pid)
            pid, end = p.pid, time.monotonic() + 30
            while not os.path.exists(os.path.join(state, "agent.sock")):
                if p.poll() is not None or time.monotonic() > end:
                    raise gb.Failed(f"{name}: assentd did not start (exit {p.poll()})")
                time.sleep(0.05)
        return pid, state, [os.path.join(self.build, "assentd"), "--stdio", "--state", state, "--policy", pol]

    def run(self):
        a, R = self.a, {"floor": {}}
        R["floor"][1] = disk_floor(self.top, 1)
        R["floor"][2] = disk_floor(self.top, 2)
        rf_pid, _, rf_bridge = self.daemon("rf", "allow type approval\ndefault ask\n")
        procs = lambda: tree(rf_pid)
        time.sleep(1.5)
        settled_rss(procs)
        R["mem_fresh"] = memory(procs())
        _, _, led_bridge = self.daemon("led", "allow upstream fs tool echo\ndefault deny reason \"echo only\"\n", True)
        _, _, rec_bridge = self.daemon("rec", "allow upstream fs tool echo record calls\n"
                                              "default deny reason \"echo only\"\n", True)
        ref = [gb.NODE, REF_POLICY, os.path.join(self.top, "ref-decisions.jsonl")]
        fs = [gb.NODE, gb.FS, "--root", self.root]
        cols = {
            "assent rf": lambda c: self.drive_args(c, "request_feedback", rf_bridge, RF_ARGS, "approved"),
            "SDK server rf": lambda c: self.drive_args(c, "request_feedback", ref, RF_ARGS, "approved"),
            "assent allow": lambda c: self.drive_args(c, "fs__echo", led_bridge),
            "assent record": lambda c: self.drive_args(c, "fs__echo", rec_bridge),
            "ref proxy": lambda c: self.drive_args(c, "fs__echo", self.proxy_args(False)),
            "direct": lambda c: self.drive_args(c, "echo", fs),
        }
        runs = {(k, c): [] for k in cols for c in (1, 16)}
        for r in range(a.rounds):
            order = list(cols) if r % 2 == 0 else list(reversed(cols))
            for c in (1, 16):
                for k in order:
                    runs[(k, c)].append(cols[k](c))
        R["cells"] = {kc: sorted(v, key=lambda x: x["rate"])[(len(v) - 1) // 2] for kc, v in runs.items()}
        # memory after N decisions: the rf daemon, 16 in flight, then idle
        done, t0 = sum(x["n"] for (k, c), v in runs.items() if k == "assent rf" for x in v), time.monotonic()
        while done < a.decisions:
            rate = max(R["cells"][("assent rf", 16)]["rate"], 100)
            left = a.decisions - done
            done += self.drive_args(16, "request_feedback", rf_bridge, RF_ARGS, "approved",
                                    seconds=min(max(left / rate, 1.0), 60.0))["n"]
        R["decisions"], R["load_s"] = done, time.monotonic() - t0
        time.sleep(3.0)  # idle: the processes give their heap back after a second (heap_idle)
        settled_rss(procs)
        R["mem_after"] = memory(procs())
        return R


def report(R, a):
    f1, p1 = R["floor"][1]
    f2, p2 = R["floor"][2]
    C = R["cells"]
    print(f"\ndurable bench (issue 33): python3 tests/bench/durable_bench.py --seconds {a.seconds:g} "
          f"--rounds {a.rounds} --decisions {a.decisions}")
    print(f"the disk's floor here: one write+fdatasync per op {f1:,.0f}/s (p50 {p1:.3f} ms); "
          f"two {f2:,.0f}/s (p50 {p2:.3f} ms)")
    print(f"{'':<40}{'in flight':>10}{'calls/s':>10}{'p50 ms':>9}{'p99 ms':>9}")
    for (k, c), v in sorted(C.items(), key=lambda x: (x[0][1], x[0][0])):
        print(f"{k:<40}{c:>10}{v['rate']:>10,.0f}{v['p50_ms']:>9.3f}{v['p99_ms']:>9.3f}")
    x = lambda k, ref, c: C[(k, c)]["rate"] / C[(ref, c)]["rate"]
    added = lambda k, c: C[(k, c)]["p50_ms"] - C[("direct", c)]["p50_ms"]
    print("goals (issue 33), measured in this run:")
    print(f"  request_feedback (durable, by policy), 1 in flight: >= 1.5x the SDK server   "
          f"measured {x('assent rf', 'SDK server rf', 1):.2f}x")
    print(f"  request_feedback, 16 in flight: >= 2.5x the SDK server                  "
          f"measured {x('assent rf', 'SDK server rf', 16):.2f}x")
    print(f"  gated call, allow (ledgered), 1 in flight: >= 1.2x the reference proxy  "
          f"measured {x('assent allow', 'ref proxy', 1):.2f}x")
    print(f"  ... p50 added over direct <= two syncs + 0.15 ms ({2 * p1 + 0.15:.3f} ms)       "
          f"measured {added('assent allow', 1):.3f} ms")
    print(f"  gated call, allow (ledgered), 16 in flight: >= 2x the reference proxy   "
          f"measured {x('assent allow', 'ref proxy', 16):.2f}x")
    print(f"  record calls, 1 in flight: p50 added <= 0.2 ms                          "
          f"measured {added('assent record', 1):.3f} ms")
    print(f"  record calls, 16 in flight: >= 40% of the direct rate                   "
          f"measured {100 * x('assent record', 'direct', 16):.0f}%")
    (fr, fby), (af, aby) = R["mem_fresh"], R["mem_after"]
    print(f"  memory, a fresh daemon's processes: <= 20 MiB                          measured RSS {mib(fr['rss'])} "
          f"MiB (PSS, shared pages counted once: {mib(fr['pss'])} MiB; anonymous {mib(fr['anon'])} MiB)")
    print(f"  memory, idle after {R['decisions']:,} decisions ({R['load_s']:.0f} s of load): <= 1.25x fresh   "
          f"measured anonymous {mib(af['anon'])} MiB = {af['anon'] / max(fr['anon'], 1):.2f}x; RSS {mib(af['rss'])} "
          f"MiB = {af['rss'] / max(fr['rss'], 1):.2f}x (RSS includes the ledger's LMDB pages the signer mapped)")
    print("  per process, RSS (anonymous) MiB, fresh -> after: " + ", ".join(
        f"{p} {mib(fby.get(p, (0, 0))[0])} ({mib(fby.get(p, (0, 0))[1])}) -> {mib(aby.get(p, (0, 0))[0])} "
        f"({mib(aby.get(p, (0, 0))[1])})" for p in sorted(set(fby) | set(aby))))
    print("  (mode meta's cost and the other columns: gate_bench.py above; the verifier's SHA-256 and ES256: "
          "ledger_bench and token_bench)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--decisions", type=int, default=100000)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    b, ok = Durable(a), False
    try:
        report(b.run(), a)
        ok = True
    except (gb.Failed, OSError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
        print(f"durable_bench: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
    finally:
        status = finish("durable_bench", b, ok, a.keep)
    sys.exit(status)


if __name__ == "__main__":
    main()
