"""Connecting and tools/list, per protocol era: a 2026-07-28 client (no handshake: every request
is one POST carrying params._meta with the protocol version and client capabilities, plus the
MCP-Protocol-Version and Mcp-Method headers) next to a 2025-11-25 client (initialize, then
notifications/initialized, then requests on the session), against assentd's agent listener
(Streamable HTTP, an agent key) and against the official SDK 2.4 reference server
(tests/bench/ref2_server.mjs: @modelcontextprotocol/server's createMcpHandler, one tool), in
the same run, side by side:

  - connect: a fresh TCP connection until the client may send its first request: for
    2026-07-28 the server/discover exchange (what the SDK 2.4 client sends at connect), for
    2025-11-25 initialize + notifications/initialized. p50 and p90 of --connects (100) each.
  - tools/list: one client on one keep-alive connection, one request after the other for
    --seconds (2) after a warm-up: requests per second, p50 and p99 latency, the server's CPU
    seconds per 1,000 requests.

The driver speaks raw JSON-RPC over http.client: the SDK client's listTools() compiles a
validator for every tool's output schema on each call and would measure itself (NOTES.md).
Prints figures only; never judges them. A column whose requests fail says so (with the error)
and the bench exits non-zero. Usage (from the repository root):
  python3 tests/bench/mcp2026_bench.py [--build build] [--keep]
Stdlib only; a temporary state directory; stops every process it started.
"""
import argparse, http.client, json, os, select, signal, socket, subprocess, sys, tempfile, time
from benchlib import finish, require, running, tree
from gateway_http_bench import Failed, cpu_s, parse_answer, pct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODERN, LEGACY = "2026-07-28", "2025-11-25"
ACCEPT = "application/json, text/event-stream"
CLIENT = {"name": "mcp2026-bench", "version": "1"}
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": CLIENT}


class Conn:
    """One client on one keep-alive HTTP connection, in one era."""

    def __init__(self, host, port, era, bearer=None):
        self.era, self.host, self.port = era, host, port
        self.c = http.client.HTTPConnection(host, port, timeout=30)
        self.base = {"Content-Type": "application/json", "Accept": ACCEPT, "Host": f"{host}:{port}"}
        if bearer:
            self.base["Authorization"] = f"Bearer {bearer}"
        self.sid, self.next = None, 1

    def post(self, method, params=None, notify=False):
        h = dict(self.base)
        msg = {"jsonrpc": "2.0", "method": method}
        if self.era == MODERN:
            params = dict(params or {}, _meta=META)
            h["MCP-Protocol-Version"] = MODERN
            h["Mcp-Method"] = method
        elif method != "initialize":
            h["MCP-Protocol-Version"] = LEGACY
            if self.sid:
                h["Mcp-Session-Id"] = self.sid
        if params is not None:
            msg["params"] = params
        rid = None
        if not notify:
            rid, self.next = self.next, self.next + 1
            msg["id"] = rid
        self.c.request("POST", "/mcp", body=json.dumps(msg, separators=(",", ":")).encode(), headers=h)
        r = self.c.getresponse()
        body = r.read()
        if notify:
            if r.status not in (200, 202, 204):
                raise Failed(f"{method}: HTTP {r.status}: {body[:200]!r}")
            return r, None
        if r.status != 200:
            raise Failed(f"{method}: HTTP {r.status}: {body[:240]!r}")
        a = parse_answer(r, body, rid)
        if "result" not in a:
            raise Failed(f"{method}: {json.dumps(a)[:240]}")
        return r, a["result"]

    def open(self):
        """What a client does before its first request."""
        if self.era == MODERN:
            _, res = self.post("server/discover")
            if MODERN not in (res.get("supportedVersions") or []):
                raise Failed(f"server/discover does not offer {MODERN}: {json.dumps(res)[:200]}")
        else:
            r, res = self.post("initialize", {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": CLIENT})
            if "serverInfo" not in res:
                raise Failed(f"initialize: no serverInfo: {json.dumps(res)[:200]}")
            self.sid = r.getheader("Mcp-Session-Id")  # the SDK's stateless reference issues none
            self.post("notifications/initialized", notify=True)
        return self

    def tools_list(self):
        _, res = self.post("tools/list")
        if not any(t.get("name") == "request_feedback" for t in res.get("tools", [])):
            raise Failed(f"tools/list without request_feedback: {json.dumps(res)[:200]}")

    def close(self):
        if self.sid:  # end the session, as a 2025 client leaving does
            try:
                h = dict(self.base, **{"Mcp-Session-Id": self.sid, "MCP-Protocol-Version": LEGACY})
                self.c.request("DELETE", "/mcp", headers=h)
                self.c.getresponse().read()
            except (OSError, http.client.HTTPException):
                pass
        self.c.close()


def measure(host, port, era, bearer, pids, a):
    out = {}
    times = []
    for _ in range(a.connects):
        t0 = time.perf_counter()
        c = Conn(host, port, era, bearer).open()
        times.append(time.perf_counter() - t0)
        c.close()
    out["connect_p50"], out["connect_p90"] = pct(times, 50) * 1e3, pct(times, 90) * 1e3
    c = Conn(host, port, era, bearer).open()
    for _ in range(50):
        c.tools_list()
    lat, cpu0 = [], cpu_s(pids())
    t0 = time.perf_counter()
    end = t0 + a.seconds
    while True:
        s = time.perf_counter()
        if s >= end:
            break
        c.tools_list()
        lat.append(time.perf_counter() - s)
    wall = time.perf_counter() - t0
    cpu = cpu_s(pids()) - cpu0
    c.close()
    out["rate"] = len(lat) / wall
    out["p50"], out["p99"] = pct(lat, 50) * 1e3, pct(lat, 99) * 1e3
    out["cpu_per_1k"] = cpu / len(lat) * 1000
    out["n"] = len(lat)
    return out


class Bench:
    def __init__(self, a):
        self.a, self.build = a, os.path.abspath(a.build)
        self.top = tempfile.mkdtemp(prefix="assent-mcp2026bench-")
        self.state = os.path.join(self.top, "state")
        self.env = {k: v for k, v in os.environ.items() if k not in ("ASSENT_SINGLE_USER", "ASSENT_STATE_DIR")}
        # The bench asks and approves from one process: as root that is the daemon's own uid,
        # whose requests only single-user mode lets anyone decide (same-user assurance).
        if os.geteuid() == 0:
            self.env["ASSENT_SINGLE_USER"] = "1"
        self.env.update(ASSENT_HTTP_MAX_SESSIONS_PER_AGENT="4096", ASSENT_HTTP_MAX_SESSIONS="4096",
                        FEEDBACK_SSE_PORT="0", ASSENT_REVIEW_PORT="0")
        self.daemon, self.node = None, None

    def start_assentd(self):
        r = subprocess.run([os.path.join(self.build, "assent"), "--state", self.state, "agent", "add", "bench2026"],
                           capture_output=True, text=True, env=self.env, timeout=60)
        if r.returncode != 0:
            raise Failed(f"assent agent add: {r.stderr.strip()[:200]}")
        key = r.stdout.strip().splitlines()[-1]
        log = open(os.path.join(self.top, "assentd.log"), "ab")
        p = subprocess.Popen([os.path.join(self.build, "assentd"), "--state", self.state], env=self.env,
                             stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=self.top)
        log.close()
        end = time.monotonic() + 20
        while time.monotonic() < end and p.poll() is None:
            try:
                with open(os.path.join(self.state, "assentd.json")) as f:
                    info = json.load(f)
                if int(info.get("pid", 0)) == p.pid and info.get("http"):
                    self.daemon = p.pid
                    host, port = info["http"].rsplit(":", 1)
                    return host, int(port), key
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        raise Failed(f"assentd did not open its HTTP listener (exit status {p.poll()})")

    def start_ref(self):
        log = open(os.path.join(self.top, "ref2_server.log"), "ab")
        self.node = subprocess.Popen(["node", os.path.join(ROOT, "tests", "bench", "ref2_server.mjs"), "0"],
                                     env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                     cwd=self.top)
        log.close()
        if not select.select([self.node.stdout], [], [], 20)[0]:
            raise Failed("ref2_server.mjs printed no port within 20 s")
        line = self.node.stdout.readline().strip()
        if not line.isdigit():
            raise Failed(f"ref2_server.mjs printed {line!r} instead of its port")
        return "127.0.0.1", int(line)

    def cleanup(self):
        if self.daemon and running(self.daemon):
            procs = tree(self.daemon)
            os.kill(self.daemon, signal.SIGTERM)
            end = time.monotonic() + 10
            while any(running(p) for p in procs) and time.monotonic() < end:
                time.sleep(0.02)
            for p in procs:
                if running(p):
                    os.kill(p, signal.SIGKILL)
        if self.node and self.node.poll() is None:
            self.node.terminate()
            try:
                self.node.wait(5)
            except subprocess.TimeoutExpired:
                self.node.kill()

    def run(self):
        cols = {}
        host, port, key = self.start_assentd()
        for era in (MODERN, LEGACY):
            cols[("assentd", era)] = self.one(host, port, era, key, lambda: tree(self.daemon))
        host, port = self.start_ref()
        for era in (MODERN, LEGACY):
            cols[("SDK 2.4 reference", era)] = self.one(host, port, era, None, lambda: [self.node.pid])
        return cols

    def one(self, host, port, era, key, pids):
        try:
            return measure(host, port, era, key, pids, self.a)
        except (Failed, OSError, http.client.HTTPException, ValueError) as e:
            return {"error": f"{type(e).__name__}: {e}"}


def report(cols, a):
    names = list(cols)
    w = 20
    print(f"MCP eras over HTTP: connect and tools/list, one client (python3 tests/bench/mcp2026_bench.py; "
          f"{a.connects} connects, {a.seconds:g} s of tools/list each)")
    print(" " * 30 + "".join(f"{s[:w]:>{w}}" for s, _ in names))
    print(" " * 30 + "".join(f"{e:>{w}}" for _, e in names))
    rows = [("connect p50 (ms)", "connect_p50", "{:.2f}"), ("connect p90 (ms)", "connect_p90", "{:.2f}"),
            ("tools/list per second", "rate", "{:,.0f}"), ("tools/list p50 (ms)", "p50", "{:.3f}"),
            ("tools/list p99 (ms)", "p99", "{:.3f}"), ("server CPU s / 1,000 lists", "cpu_per_1k", "{:.3f}")]
    for label, k, fmt in rows:
        cells = []
        for n in names:
            v = cols[n].get(k)
            cells.append(f"{fmt.format(v) if v is not None else 'failed':>{w}}")
        print(f"{label:<30}" + "".join(cells))
    for n in names:
        if "error" in cols[n]:
            print(f"  {n[0]} {n[1]}: failed: {cols[n]['error'][:300]}")
    print("2026-07-28: no handshake, params._meta on every request. "
          "connect: a fresh TCP connection until the first request may go (2026-07-28: server/discover; "
          "2025-11-25: initialize + notifications/initialized). The reference serves 2025 clients statelessly "
          "(no session); assentd keeps a session per 2025 client.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--connects", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = ap.parse_args()
    require("mcp2026_bench", a.build, ("assentd", "assent"))
    if not os.path.isdir(os.path.join(ROOT, "tests", "mcp", "node_modules", "@modelcontextprotocol", "server")):
        sys.exit("mcp2026_bench: @modelcontextprotocol/server is not installed in tests/mcp (make deps runs npm ci there)")
    b = Bench(a)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    ok = False
    try:
        cols = b.run()
        report(cols, a)
        bad = [f"{n[0]} {n[1]}: {c['error']}" for n, c in cols.items() if "error" in c]
        for p in bad:
            print(f"mcp2026_bench: FAILED: {p[:300]}", file=sys.stderr)
        ok = not bad
    except (Failed, OSError, ValueError) as e:
        print(f"mcp2026_bench: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
    finally:
        status = finish("mcp2026_bench", b, ok, a.keep, os.path.join(b.top, "assentd.log"))
    sys.exit(status)


if __name__ == "__main__":
    main()
