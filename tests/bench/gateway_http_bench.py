"""HTTP gateway benchmark: assent's agent listener (Streamable HTTP, an agent key) against a
reference server on the official TypeScript SDK over HTTP (tests/bench/ref_http_server.mjs: the
SDK's McpServer and StreamableHTTPServerTransport with stateful sessions, an ES256 JWS and one
fsynced JSON line per approval), in the same run. Each server is started twice, fresh each time:

  - memory: resident memory (sum of VmRSS: assent's daemon and its two workers; the reference's
    node process) idle, then with --pending (1,000) blocking request_feedback calls held over HTTP,
    each on its own TCP connection with its SSE stream open; then how long until those calls
    are cancelled once their connections close. assent serves at most ASSENT_HTTP_MAX_CONNECTIONS
    connections (--max-connections, 1,100 here); one more connection (GET /health) shows what a
    client over the limit sees.
  - throughput: N = 1, 16, 64 concurrent clients (threads), each with its own MCP session
    (initialize, then blocking tools/call request_feedback in a loop, Accept: application/json,
    text/event-stream), while an automated reviewer thread polls for pending requests and approves
    each one: completed calls per second, p50/p99 latency of a call (POST sent to answer read),
    the server's CPU; then RSS after the runs.

The reviewer: for assent, one connection to STATE/control.sock ({"cmd":"pending"}, then one
{"cmd":"decide",...,"outcome":"approved"} line per request, pipelined, one JSON line back per
command), which is what `assent pending` and `assent approve` send; for the reference, GET
/pending and POST /decide {"session_ids": [...]} on one keep-alive connection.

Prints figures only; never judges them. Exits non-zero when something did not work: a call that
failed or was not approved, a server that would not start, held calls that never became pending
or had no stream, assent calls not cancelled after their connections closed, a worker restarted.
Usage (from the repository root): python3 tests/bench/gateway_http_bench.py [--build build]
Stdlib only. Uses a temporary state directory and stops every process it started, even on error.
"""
import argparse, http.client, json, math, os, resource, select, shutil, signal, socket, subprocess, sys
from benchlib import children_of, finish, mib, proc_state, require, rss_kib, running, settled_rss, tree  # noqa: F401 (shared with the other bench)
import tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROTO = "2025-06-18"
INIT = {"protocolVersion": PROTO, "capabilities": {}, "clientInfo": {"name": "gateway-http-bench", "version": "1"}}
ACCEPT = "application/json, text/event-stream"


class Failed(Exception):
    pass


# ---- processes (as in gateway_bench.py) ----

def cpu_s(pids):
    """User + system CPU seconds of pids so far."""
    t = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                v = f.read().rsplit(")", 1)[1].split()
            t += int(v[11]) + int(v[12])
        except (OSError, IndexError, ValueError):
            pass
    return t / os.sysconf("SC_CLK_TCK")


# ---- MCP over Streamable HTTP ----

def parse_answer(resp, body, rid):
    """The JSON-RPC message answering rid in an application/json or text/event-stream body."""
    ctype = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
    text = body.decode("utf-8", errors="replace")
    if ctype == "application/json":
        msgs = [json.loads(text)]
    elif ctype == "text/event-stream":
        msgs = []
        for event in text.replace("\r\n", "\n").split("\n\n"):
            data = "\n".join(l[5:].lstrip(" ") if l.startswith("data:") else "" for l in event.split("\n")
                             if l.startswith("data:"))
            if data:
                msgs.append(json.loads(data))
    else:
        raise Failed(f"HTTP {resp.status} with Content-Type {ctype!r}: {text[:200]}")
    for m in msgs:
        if isinstance(m, dict) and m.get("id") == rid and ("result" in m or "error" in m):
            return m
    raise Failed(f"HTTP {resp.status}: no answer to request {rid!r} in {text[:300]!r}")


class Session:
    """One MCP session on one keep-alive HTTP connection."""

    def __init__(self, host, port, bearer=None, timeout=120.0):
        self.host, self.port, self.timeout = host, port, timeout
        self.conn = http.client.HTTPConnection(host, port, timeout=timeout)
        self.headers = {"Content-Type": "application/json", "Accept": ACCEPT, "Host": f"{host}:{port}"}
        if bearer:
            self.headers["Authorization"] = f"Bearer {bearer}"
        self.sid, self.next = None, 1

    def post(self, msg):
        h = dict(self.headers)
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
            h["MCP-Protocol-Version"] = PROTO
        self.conn.request("POST", "/mcp", body=json.dumps(msg, separators=(",", ":")).encode(), headers=h)
        r = self.conn.getresponse()
        return r, r.read()

    def call(self, method, params=None):
        rid, self.next = self.next, self.next + 1
        m = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            m["params"] = params
        r, body = self.post(m)
        if r.status != 200:
            raise Failed(f"{method}: HTTP {r.status}: {body[:300]!r}")
        a = parse_answer(r, body, rid)
        if "result" not in a:
            raise Failed(f"{method}: {json.dumps(a)[:300]}")
        return r, a["result"]

    def initialize(self):
        r, res = self.call("initialize", INIT)
        self.sid = r.getheader("Mcp-Session-Id")
        if not self.sid or "serverInfo" not in res:
            raise Failed(f"initialize: no session id or serverInfo ({res})")
        r, body = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if r.status not in (200, 202, 204):
            raise Failed(f"notifications/initialized: HTTP {r.status}: {body[:200]!r}")
        return self

    def close(self):
        self.conn.close()


def feedback_args(i, timeout):
    return {"type": "approval", "message": f"bench request {i}: delete /tmp/bench-{i}?",
            "context": {"command": f"rm -rf /tmp/bench-{i}", "host": "bench"}, "timeout_override": timeout}


# ---- reviewers ----

class AssentReviewer:
    """Talks to STATE/control.sock as `assent pending` and `assent approve` do, on one connection."""

    def __init__(self, state):
        self.path = os.path.join(state, "control.sock")
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(60)
        self.s.connect(self.path)
        self.buf = b""

    def _line(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise Failed("control.sock closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def _send(self, objs):
        self.s.sendall(b"".join(json.dumps(o, separators=(",", ":")).encode() + b"\n" for o in objs))

    def pending(self):
        self._send([{"cmd": "pending"}])
        r = self._line()
        if not r.get("ok"):
            raise Failed(f"control.sock pending: {r}")
        return [q["session_id"] for q in r.get("requests", [])], r.get("more", 0)

    def count(self):
        ids, more = self.pending()
        return len(ids) + (more or 0)

    def approve(self, ids):
        self._send([{"cmd": "decide", "session_id": i, "outcome": "approved"} for i in ids])
        bad = []
        for i in ids:
            r = self._line()
            if not r.get("ok"):
                bad.append(f"{i}: {r.get('error')}")
        return bad

    def close(self):
        self.s.close()


class RefReviewer:
    """GET /pending and POST /decide on the reference, on one keep-alive connection."""

    def __init__(self, port):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def pending(self):
        self.c.request("GET", "/pending")
        r = self.c.getresponse()
        body = r.read()
        if r.status != 200:
            raise Failed(f"reference /pending: HTTP {r.status}")
        return [q["session_id"] for q in json.loads(body)["requests"]], 0

    def count(self):
        return len(self.pending()[0])

    def approve(self, ids):
        self.c.request("POST", "/decide", body=json.dumps({"session_ids": ids}),
                       headers={"Content-Type": "application/json"})
        r = self.c.getresponse()
        body = r.read()
        return [] if r.status == 200 else [f"/decide: HTTP {r.status}: {body[:200]!r}"]

    def close(self):
        self.c.close()


def review_loop(make_reviewer, stop, stats):
    """Approve whatever is pending until stop is set; counts decisions and polls, keeps errors."""
    try:
        rv = make_reviewer()
        while not stop.is_set():
            ids, _ = rv.pending()
            stats["polls"] += 1
            if not ids:
                time.sleep(0.0005)
                continue
            bad = rv.approve(ids)
            stats["decided"] += len(ids) - len(bad)
            stats["errors"].extend(bad[:5])
        rv.close()
    except Exception as e:  # noqa: BLE001 -- reported by the caller
        stats["errors"].append(f"reviewer: {type(e).__name__}: {e}")


# ---- the bench ----

def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, math.ceil(p / 100 * len(xs)) - 1)]


class Bench:
    def __init__(self, a):
        self.a = a
        self.build = os.path.abspath(a.build)
        self.top = tempfile.mkdtemp(prefix="assent-httpbench-")
        self.state = os.path.join(self.top, "state")
        os.mkdir(self.state, 0o700)
        self.env = {k: v for k, v in os.environ.items() if k not in ("ASSENT_SINGLE_USER", "ASSENT_STATE_DIR")}
        # The bench asks and approves from one process: as root that is the daemon's own uid,
        # whose requests only single-user mode lets anyone decide (same-user assurance).
        if os.geteuid() == 0:
            self.env["ASSENT_SINGLE_USER"] = "1"
        # one agent key holds the whole load: past the limits per principal
        self.env.update(ASSENT_MAX_PENDING_PER_AGENT="100000", ASSENT_MAX_BLOCKING_PER_AGENT="1024",
                        ASSENT_HTTP_MAX_SESSIONS_PER_AGENT="4096", ASSENT_HTTP_MAX_UNAUTH_PER_ADDRESS="8192")
        self.daemon = None
        self.node = None
        self.held = []  # sockets of held calls
        self.rx = {}  # fd of a held socket -> what it received
        self.findings = []

    def assent(self, *args):
        r = subprocess.run([os.path.join(self.build, "assent"), "--state", self.state, *args],
                           capture_output=True, text=True, env=self.env, timeout=60)
        if r.returncode != 0:
            raise Failed(f"assent {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()[:300]}")
        return r.stdout

    # -- servers --
    def start_assentd(self):
        env = dict(self.env, FEEDBACK_SSE_PORT="0", ASSENT_REVIEW_PORT="0", ASSENT_HTTP_MAX_CONNECTIONS=str(self.a.max_connections),
                   ASSENT_HTTP_MAX_SESSIONS=str(self.a.max_sessions))
        log = open(os.path.join(self.top, "assentd.log"), "ab")  # both runs of the daemon log here
        p = subprocess.Popen([os.path.join(self.build, "assentd"), "--state", self.state], env=env,
                             stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=self.top)
        log.close()
        end = time.monotonic() + 20
        while time.monotonic() < end:
            try:
                with open(os.path.join(self.state, "assentd.json")) as f:
                    info = json.load(f)
                # the daemon runs in the foreground: the pid is ours, not one a previous run left
                if int(info.get("pid", 0)) == p.pid and info.get("http") and \
                        os.path.exists(os.path.join(self.state, "control.sock")):
                    self.daemon = int(info["pid"])
                    host, port = info["http"].rsplit(":", 1)
                    return host, int(port)
            except (OSError, ValueError):
                pass
            if p.poll() is not None:
                break
            time.sleep(0.05)
        if p.poll() is None:
            p.kill()
            p.wait()
        raise Failed(f"assentd did not open its HTTP listener (exit status {p.poll()})")

    def start_node(self):
        log = open(os.path.join(self.top, "ref_http_server.log"), "ab")
        self.node = subprocess.Popen(["node", os.path.join(ROOT, "tests", "bench", "ref_http_server.mjs"), "0",
                                      os.path.join(self.top, "ref-decisions.jsonl")], env=self.env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, cwd=self.top)
        log.close()
        if not select.select([self.node.stdout], [], [], 20)[0]:
            raise Failed("the reference printed no port within 20 s")
        line = self.node.stdout.readline().strip()
        if not line.isdigit():
            raise Failed(f"the reference printed {line!r} instead of its port (exit status {self.node.poll()})")
        return "127.0.0.1", int(line)

    def stop_daemon(self, timeout=10.0):
        if not self.daemon or not running(self.daemon):
            return
        procs = tree(self.daemon)
        os.kill(self.daemon, signal.SIGTERM)
        end = time.monotonic() + timeout
        while any(running(p) for p in procs):
            if time.monotonic() > end:
                for p in procs:
                    if running(p):
                        os.kill(p, signal.SIGKILL)
                self.findings.append(f"assentd {self.daemon} did not stop within {timeout:.0f} s of SIGTERM: killed")
                break
            time.sleep(0.02)
        self.daemon = None

    def stop_node(self):
        if self.node and self.node.poll() is None:
            self.node.terminate()
            try:
                self.node.wait(5)
            except subprocess.TimeoutExpired:
                self.node.kill()
                self.node.wait()
        self.node = None

    def drop_held(self):
        for s in self.held:
            s.close()
        self.held, self.rx = [], {}

    def cleanup(self):
        self.drop_held()
        try:
            self.stop_daemon(timeout=5)
        except ProcessLookupError:
            pass
        self.stop_node()

    # -- throughput --
    def throughput(self, name, host, port, bearer, n, make_reviewer, pids):
        sessions = [Session(host, port, bearer).initialize() for _ in range(n)]
        stop_rev = threading.Event()
        rstats = {"decided": 0, "polls": 0, "errors": []}
        rev = threading.Thread(target=review_loop, args=(make_reviewer, stop_rev, rstats), daemon=True)
        rev.start()
        lat = [[] for _ in range(n)]
        errs = []
        go = threading.Barrier(n + 1)
        end = [0.0]
        last = [0.0] * n

        def client(k):
            s = sessions[k]
            go.wait()
            i = 0
            try:
                while time.perf_counter() < end[0]:
                    i += 1
                    t = time.perf_counter()
                    _, res = s.call("tools/call", {"name": "request_feedback",
                                                   "arguments": feedback_args(f"{k}-{i}", self.a.call_timeout)})
                    d = time.perf_counter() - t
                    sc = res.get("structuredContent") or {}
                    if res.get("isError") or sc.get("approved") is not True:
                        errs.append(f"client {k} call {i}: not approved: {json.dumps(res)[:300]}")
                        break
                    if name == "assent" and not sc.get("approval_token"):
                        errs.append(f"client {k} call {i}: approved without a token")
                        break
                    lat[k].append(d)
                    last[k] = time.perf_counter()
            except Exception as e:  # noqa: BLE001 -- reported below
                errs.append(f"client {k} call {i}: {type(e).__name__}: {e}")

        threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(n)]
        for t in threads:
            t.start()
        procs = pids()
        cpu0, me0 = {p: cpu_s([p]) for p in procs}, time.process_time()
        t0 = time.perf_counter()
        end[0] = t0 + self.a.seconds
        go.wait()
        for t in threads:
            t.join(self.a.seconds + self.a.call_timeout + 30)
        hung = sum(t.is_alive() for t in threads)
        el = max(last + [t0]) - t0
        if el <= 0:
            el = time.perf_counter() - t0
        cpu1, me1 = {p: cpu_s([p]) for p in procs}, time.process_time()
        stop_rev.set()
        rev.join(30)
        for s in sessions:
            s.close()
        all_lat = [x for l in lat for x in l]
        if hung:
            errs.append(f"{hung} of {n} clients still waiting for an answer {self.a.call_timeout + 30:.0f} s after the run")
        if rstats["errors"]:
            errs.extend(rstats["errors"][:5])
        return {"n": n, "calls": len(all_lat), "rate": len(all_lat) / el if el > 0 else 0,
                "p50": pct(all_lat, 50) * 1000 if all_lat else float("nan"),
                "p99": pct(all_lat, 99) * 1000 if all_lat else float("nan"),
                "srv_cpu": sum(cpu1[p] - cpu0[p] for p in procs) / el, "drv_cpu": (me1 - me0) / el,
                "cpu_by": {p: (cpu1[p] - cpu0[p]) / el for p in procs},
                "polls": rstats["polls"], "errors": errs}

    # -- held calls --
    def hold(self, host, port, bearer, i0, count):
        """Open count more TCP connections, each POSTing one blocking request_feedback on one of
        ceil(count / per_session) fresh sessions, without reading the answers."""
        per = self.a.per_session
        sids = [Session(host, port, bearer).initialize() for _ in range(math.ceil(count / per))]
        for s in sids:
            s.close()
        t0 = time.perf_counter()
        refused = []
        for k in range(count):
            i = i0 + k
            body = json.dumps({"jsonrpc": "2.0", "id": f"h{i}", "method": "tools/call",
                               "params": {"name": "request_feedback",
                                          "arguments": feedback_args(f"held-{i}", self.a.pending_timeout)}},
                              separators=(",", ":")).encode()
            hdr = (f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                   f"Accept: {ACCEPT}\r\nMcp-Session-Id: {sids[k // per].sid}\r\nMCP-Protocol-Version: {PROTO}\r\n"
                   + (f"Authorization: Bearer {bearer}\r\n" if bearer else "")
                   + f"Content-Length: {len(body)}\r\n\r\n").encode()
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.settimeout(self.a.connect_timeout)
            try:
                sock.connect((host, port))
                sock.sendall(hdr + body)
            except OSError as e:
                refused.append(f"connection {i}: {e}")
                sock.close()
                continue
            self.held.append(sock)
            self.rx[sock.fileno()] = b""
        return t0, refused

    def held_status(self, wait=3.0):
        """Count the held sockets by what they received: 'stream' (200 text/event-stream and still
        open), 'silent' (nothing at all), 'closed' (closed with no response), 'other' (anything
        else). Reads each socket only until its response head is in."""
        socks = {s.fileno(): s for s in self.held}
        poll = select.poll()
        todo = 0
        for fd in socks:
            if b"\r\n\r\n" not in self.rx[fd] and not self.rx[fd].endswith(b"<closed>"):
                poll.register(fd, select.POLLIN)
                todo += 1
        end = time.monotonic() + wait
        while todo and time.monotonic() < end:
            for fd, _ in poll.poll(200):
                try:
                    chunk = socks[fd].recv(65536, socket.MSG_DONTWAIT)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    chunk = b""
                self.rx[fd] += chunk if chunk else b"<closed>"
                if not chunk or b"\r\n\r\n" in self.rx[fd]:
                    poll.unregister(fd)  # the head is in: leave the stream alone
                    todo -= 1
        out, samples = {"stream": 0, "silent": 0, "closed": 0, "other": 0}, []
        for fd in socks:
            b = self.rx[fd]
            head = b.split(b"\r\n\r\n", 1)[0].lower()
            if not b:
                out["silent"] += 1
            elif head.startswith(b"http/1.1 200") and b"text/event-stream" in head and not b.endswith(b"<closed>"):
                out["stream"] += 1
            elif b == b"<closed>":
                out["closed"] += 1
            else:
                out["other"] += 1
                if len(samples) < 3:
                    samples.append(b[:300].decode(errors="replace"))
        return out, samples

    def wait_pending(self, rv, want, timeout):
        """Poll the pending count until it reaches want, or holds still for 2 s, or timeout.
        Returns the count and when it last changed."""
        end, got, still = time.monotonic() + timeout, -1, time.perf_counter()
        while time.monotonic() < end:
            n = rv.count()
            if n != got:
                got, still = n, time.perf_counter()
            if got >= want or time.perf_counter() - still > 2:
                break
            time.sleep(0.05)
        return got, still

    def wait_pending_zero(self, rv, timeout):
        end, got = time.monotonic() + timeout, None
        while time.monotonic() < end:
            got = rv.count()
            if got == 0:
                return 0
            time.sleep(0.1)
        return got

    def probe(self, host, port):
        """One more connection asking GET /health: its status, or what became of it."""
        try:
            c = http.client.HTTPConnection(host, port, timeout=self.a.connect_timeout + 1)
            t0 = time.perf_counter()
            c.request("GET", "/health", headers={"Host": f"{host}:{port}"})
            r = c.getresponse()
            r.read()
            return f"HTTP {r.status} in {(time.perf_counter() - t0) * 1000:.0f} ms"
        except OSError as e:
            return f"{type(e).__name__} ({e}) after {time.perf_counter() - t0:.1f} s"
        finally:
            c.close()

    def memory(self, host, port, bearer, make_reviewer, pids, steps, cancel_wait):
        """RSS idle, then with each count of steps held; then how long until the held calls are
        cancelled once their connections close."""
        R = {"idle": settled_rss(pids), "steps": []}
        rv = make_reviewer()
        held = 0
        for want in steps:
            t0, refused = self.hold(host, port, bearer, held, want - held)
            n, t1 = self.wait_pending(rv, want, 30)
            streams, samples = self.held_status()
            rss, by = settled_rss(pids)
            R["steps"].append({"want": want, "pending": n, "accept": t1 - t0, "refused": refused,
                               "streams": streams, "samples": samples, "rss": rss, "by": by})
            held = want
        R["probe"] = self.probe(host, port)
        t0 = time.perf_counter()
        self.drop_held()
        R["left"] = self.wait_pending_zero(rv, cancel_wait)
        R["cancel"] = time.perf_counter() - t0
        R["after"] = settled_rss(pids)
        rv.close()
        return R

    def status(self):
        rv = AssentReviewer(self.state)
        rv._send([{"cmd": "status"}])
        r = rv._line()
        rv.close()
        return r

    def roles(self):
        """assent's processes by role: signer, mcp worker, review worker."""
        out = {}
        for p in tree(self.daemon):
            if p == self.daemon:
                out["signer"] = p
            else:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    out[f.read().split(b"\0")[-2].decode(errors="replace") + " worker"] = p
        return out

    def run(self):
        """Each server twice, fresh each time: the memory phase, then the throughput runs."""
        a, R = self.a, {"assent": {}, "ref": {}}
        A, F = R["assent"], R["ref"]
        cap = min(a.pending, a.max_connections)
        restarts = []
        # ---- assent ----
        self.assent("reviewer", "add", "benchrev", "--uid", str(os.getuid()))
        self.key = self.assent("agent", "add", "bench-agent").strip().splitlines()[-1]
        mk = lambda: AssentReviewer(self.state)
        apids = lambda: tree(self.daemon)
        for phase in ("mem", "tp"):
            host, port = self.start_assentd()
            Session(host, port, self.key).initialize().close()
            A["roles_" + phase] = self.roles()
            if phase == "mem":
                A["mem"] = self.memory(host, port, self.key, mk, apids, [cap], a.cancel_wait)
            else:
                A["tp"] = [self.throughput("assent", host, port, self.key, n, mk, apids) for n in a.clients]
                A["end"] = settled_rss(apids)
            st = self.status()
            restarts.append(st)
            self.stop_daemon()
        A["status"] = restarts
        # ---- reference ----
        mk = lambda: RefReviewer(port)
        rpids = lambda: tree(self.node.pid)
        for phase in ("mem", "tp"):
            host, port = self.start_node()
            Session(host, port).initialize().close()
            if phase == "mem":
                F["mem"] = self.memory(host, port, None, mk, rpids, sorted({cap, a.pending}), a.ref_cancel_wait)
            else:
                F["tp"] = [self.throughput("ref", host, port, None, n, mk, rpids) for n in a.clients]
                F["end"] = settled_rss(rpids)
            self.stop_node()
        return R


def report(R, a, cmdline):
    A, F = R["assent"], R["ref"]
    rows = []
    for ta, tr in zip(A["tp"], F["tp"]):
        n = f"{ta['n']:>2} client{'s' if ta['n'] > 1 else ' '}"
        rows.append((f"{n}: calls per second", f"{ta['rate']:,.0f}", f"{tr['rate']:,.0f}"))
        rows.append((f"{n}: p50 / p99 latency, ms", f"{ta['p50']:.2f} / {ta['p99']:.2f}", f"{tr['p50']:.2f} / {tr['p99']:.2f}"))
        rows.append((f"{n}: server CPU, cores / ms per call", f"{ta['srv_cpu']:.2f} / {ta['srv_cpu'] / max(ta['rate'], 1e-9) * 1000:.2f}",
                     f"{tr['srv_cpu']:.2f} / {tr['srv_cpu'] / max(tr['rate'], 1e-9) * 1000:.2f}"))
    ma, mr = A["mem"], F["mem"]
    mem = [("RSS idle (fresh, one session), MiB", mib(ma["idle"][0]), mib(mr["idle"][0]))]
    sa = {st["want"]: st for st in ma["steps"]}
    for st in mr["steps"]:
        w = st["want"]
        x = sa.get(w)
        cell = (lambda t: f"{mib(t['rss'])}" + ("" if t["pending"] >= t["want"] else f" ({t['pending']} pending)"))
        mem.append((f"RSS with {w} calls held over HTTP, MiB", cell(x) if x else
                    f"- (max {a.max_connections} connections)", cell(st)))
        if x:
            mem.append(("  per held call, KiB", f"{(x['rss'] - ma['idle'][0]) / w:.0f}",
                        f"{(st['rss'] - mr['idle'][0]) / w:.0f}"))
            mem.append((f"  s until all {w} were pending", f"{x['accept']:.2f}", f"{st['accept']:.2f}"))
    ca = f"{ma['cancel']:.1f}" if not ma["left"] else f"> {a.cancel_wait:.0f} ({ma['left']} left)"
    cr = f"{mr['cancel']:.1f}" if not mr["left"] else f"not within {a.ref_cancel_wait:.0f} ({mr['left']} left)"
    mem.append(("s until held calls were cancelled after close", ca, cr))
    mem.append(("RSS once they were gone, MiB", mib(ma["after"][0]), mib(mr["after"][0])))
    rows = mem + rows
    rows.append(("RSS after the runs, MiB", mib(A["end"][0]), mib(F["end"][0])))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows + [("", "assent", "")])
    print(f"\nHTTP gateway bench: {cmdline}")
    print(f"{a.seconds:g} s per run; each client a Python thread with its own MCP session on one keep-alive connection;"
          f" {os.cpu_count()} CPUs")
    print(f"{'':{w0}}  {'assent':>{w1}}  reference (node, official SDK)")
    for r in rows:
        print(f"{r[0]:{w0}}  {r[1]:>{w1}}  {r[2]}")
    last = ma["steps"][-1]
    print("\nassent processes, VmRSS MiB: idle / held / once gone (memory phase), after the runs; CPU cores at"
          f" {A['tp'][-1]['n']} clients")
    rm, rt = A["roles_mem"], A["roles_tp"]
    for role in sorted(rm, key=lambda r: (r != "signer", r)):
        pm, pt = rm[role], rt.get(role)
        print(f"  {role:16} {mib(ma['idle'][1].get(pm, 0)):>6} {mib(last['by'].get(pm, 0)):>6}"
              f" {mib(ma['after'][1].get(pm, 0)):>6} {mib(A['end'][1].get(pt, 0)):>6}"
              f"   {A['tp'][-1]['cpu_by'].get(pt, 0):.2f}")
    st = A["status"][-1]
    print(f"  throughput phase: {st.get('entries_written')} ledger entries in {st.get('commits')} commits")
    drv = max(t["drv_cpu"] for t in A["tp"] + F["tp"])
    print(f"the driver itself (Python) used up to {drv:.2f} cores, on the same CPUs as the server")
    if a.pending > a.max_connections:
        print(f"assent holds at most ASSENT_HTTP_MAX_CONNECTIONS={a.max_connections} calls over HTTP (one TCP connection"
              f" each); one more connection then, GET /health: {ma['probe']}")
    for name, m in (("assent", ma), ("reference", mr)):
        for s in m["steps"]:
            t = s["streams"]
            if t["silent"] or t["closed"] or t["other"] or s["refused"]:
                print(f"{name}: of {s['want']} held calls, {t['stream']} had an open SSE stream, {t['silent']} no response"
                      f" at all, {t['closed']} were closed unanswered, {t['other']} got something else, "
                      f"{len(s['refused'])} could not connect" + (f"; e.g. {s['samples'][0]!r}" if s["samples"] else ""))
    print("cancelled after close: assent cancels a blocking call whose stream is gone (docs/agents.md); the SDK does not tell"
          " a tool handler that its HTTP client left, so the reference keeps such calls until their timeout.")


def problems(R, a):
    """What did not work. assent serves at most ASSENT_HTTP_MAX_CONNECTIONS HTTP
    connections, so it is asked to hold that many calls, not --pending; the reference is not
    expected to cancel calls whose stream closed."""
    out = []
    for name in ("assent", "ref"):
        for t in R[name]["tp"]:
            for e in t["errors"][:5]:
                out.append(f"{name}, {t['n']} clients: {e}")
            if not t["calls"]:
                out.append(f"{name}, {t['n']} clients: no call completed")
        m = R[name]["mem"]
        for s in m["steps"]:
            if s["pending"] < s["want"]:
                out.append(f"{name}: only {s['pending']} of {s['want']} held calls became pending")
            if s["streams"]["stream"] < s["want"]:
                out.append(f"{name}: only {s['streams']['stream']} of {s['want']} held calls had an open SSE stream")
    m = R["assent"]["mem"]
    if m["left"]:
        out.append(f"assent: {m['left']} held calls were still pending {a.cancel_wait:.0f} s after their connections closed")
    for st in R["assent"]["status"]:
        if st.get("mcp_worker_restarts") or st.get("review_worker_restarts"):
            out.append(f"assent: workers were restarted during the run: {st}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="directory with assentd and assent (default: build)")
    ap.add_argument("--clients", default="1,16,64", help="concurrent clients per run (1,16,64)")
    ap.add_argument("--seconds", type=float, default=4.0, help="length of each run, s (4)")
    ap.add_argument("--pending", type=int, default=1000, help="calls held over HTTP for the memory figure (1000)")
    ap.add_argument("--per-session", type=int, default=50, help="held calls per MCP session (50)")
    ap.add_argument("--pending-timeout", type=int, default=600, help="timeout_override of held calls, s (600)")
    ap.add_argument("--call-timeout", type=int, default=60, help="timeout_override of calls in the runs, s (60)")
    ap.add_argument("--connect-timeout", type=float, default=2.0, help="connect timeout of a held call, s (2)")
    ap.add_argument("--cancel-wait", type=float, default=40.0,
                    help="how long to wait for held calls to be cancelled once closed, s (40)")
    ap.add_argument("--ref-cancel-wait", type=float, default=3.0,
                    help="the same for the reference, which does not cancel them (3)")
    ap.add_argument("--max-connections", type=int, default=1100, help="ASSENT_HTTP_MAX_CONNECTIONS for the bench's daemon (1100)")
    ap.add_argument("--max-sessions", type=int, default=256, help="ASSENT_HTTP_MAX_SESSIONS (256)")
    ap.add_argument("--keep", action="store_true", help="keep the state directory and logs")
    a = ap.parse_args()
    a.clients = [int(x) for x in a.clients.split(",") if x]
    require("gateway_http_bench", a.build, ("assentd", "assent"))
    if not os.path.isdir(os.path.join(ROOT, "tests", "mcp", "node_modules", "@modelcontextprotocol", "sdk")):
        sys.exit("gateway_http_bench: the MCP SDK is not installed in tests/mcp (make deps runs npm ci there)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = a.pending + max(a.clients) + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard) if hard != resource.RLIM_INFINITY else want, hard))
    b = Bench(a)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    ok = False
    try:
        R = b.run()
        report(R, a, " ".join([os.path.basename(sys.executable), *sys.argv]))
        bad = problems(R, a)
        for f in b.findings:
            bad.append(f)
        for p in bad:
            print(f"gateway_http_bench: FAILED: {p}", file=sys.stderr)
        ok = not bad
    except Failed as e:
        print(f"gateway_http_bench: FAILED: {e}", file=sys.stderr)
    except (OSError, ValueError, http.client.HTTPException) as e:
        print(f"gateway_http_bench: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
    finally:
        status = finish("gateway_http_bench", b, ok, a.keep, os.path.join(b.top, "assentd.log"))
    sys.exit(status)


if __name__ == "__main__":
    main()
