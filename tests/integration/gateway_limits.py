"""No one uses up what others need, against one daemon with small limits
(gateway_limits.sh starts it). TAP out. argv: STATE BUILD LOG; env
ASSENT_TEST_KEY1 (agent "greedy"), ASSENT_TEST_KEY2 (agent "modest")."""
import http.client, json, os, re, socket, subprocess, sys, threading, time

state, build, logpath = sys.argv[1], sys.argv[2], sys.argv[3]
KEY1, KEY2 = os.environ["ASSENT_TEST_KEY1"], os.environ["ASSENT_TEST_KEY2"]
n = failed = 0
def ok(cond, desc):
    global n, failed
    n += 1
    failed += 0 if cond else 1
    print(("ok" if cond else "not ok") + f" {n} - {desc}", flush=True)
    return cond

info = json.load(open(f"{state}/assentd.json"))
HOST, PORT = info["http"].rsplit(":", 1)
PORT = int(PORT)
env = dict(os.environ, ASSENT_SINGLE_USER="1")

def assent(*args):
    return subprocess.run([f"{build}/assent", "--state", state, *args], capture_output=True, text=True, timeout=60)

def ctl(cmd, timeout=10):
    """One command on a fresh control connection: its reply (dict), or None."""
    k = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    k.settimeout(timeout)
    try:
        k.connect(f"{state}/control.sock")
        k.sendall((json.dumps(cmd) + "\n").encode())
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = k.recv(1 << 20)
            if not chunk:
                break
            buf += chunk
        return json.loads(buf) if buf.strip() else None
    except (OSError, ValueError):
        return None
    finally:
        k.close()

class Stdio:
    """A raw JSON-RPC client on its own `assentd --stdio` bridge."""
    def __init__(self, name="limits"):
        self.p = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=env)
        self.results, self.lock, self.next = {}, threading.Lock(), 1
        threading.Thread(target=self.reader, daemon=True).start()
        r = self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": name, "version": "1"}})
        self.ready = bool(r and r.get("result", {}).get("serverInfo", {}).get("name") == "assent")
    def reader(self):
        for line in self.p.stdout:
            try:
                m = json.loads(line)
            except ValueError:
                continue
            if "id" in m:
                with self.lock:
                    self.results[m["id"]] = m
    def send(self, method, params):
        with self.lock:
            i = self.next
            self.next += 1
        try:
            self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
            self.p.stdin.flush()
        except OSError:
            pass
        return i
    def wait(self, i, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            with self.lock:
                if i in self.results:
                    return self.results.pop(i)
            time.sleep(0.02)
        return None
    def call(self, method, params, timeout=20):
        return self.wait(self.send(method, params), timeout)
    def tool(self, args, timeout=20):
        return self.call("tools/call", {"name": "request_feedback", "arguments": args}, timeout)
    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()

def sc(r):
    return ((r or {}).get("result") or {}).get("structuredContent") or {}
def tool_text(r):
    res = (r or {}).get("result") or {}
    return " ".join(c.get("text", "") for c in res.get("content", []) if isinstance(c, dict))

def cancel_all():
    """Reject everything pending (between sections), as tester."""
    for _ in range(50):
        p = ctl({"cmd": "pending"}) or {}
        reqs = p.get("requests") or []
        if not reqs:
            return
        for r in reqs:
            ctl({"cmd": "decide", "session_id": r["session_id"], "outcome": "rejected", "text": "cleanup"})

# ---- 1. connection slots are released on every unix socket ----
N = 3000
answered = 0
for i in range(N):
    r = ctl({"cmd": "whoami"})
    answered += bool(r and r.get("ok"))
ok(answered == N, f"{N} control-socket commands, one connection each, are all answered ({answered}/{N}; the signer has 1,024 slots)")
for i in range(N):
    k = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    k.connect(f"{state}/agent.sock")
    k.close()
ok(True, f"{N} agent-socket connections opened and closed")
a = Stdio("after-slots")
ok(a.ready, "after them a stdio agent is served (initialize answered)")
r = a.tool({"type": "approval", "message": "after the slots", "wait": False}) if a.ready else None
ok(sc(r).get("status") == "pending", f"... and its request is queued ({sc(r) or tool_text(r)})")
a.close()
r = assent("pending", "--json")
ok(r.returncode == 0 and "after the slots" in r.stdout, f"... and `assent pending` shows it (exit {r.returncode}: {r.stderr.strip()[:200]})")
cancel_all()

print(f"1..{n}")
sys.exit(1 if failed else 0)
