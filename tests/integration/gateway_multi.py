"""Several agents on one daemon, and a crash in the middle of a burst.
Prints TAP lines; run by gateway_multi.sh with: STATE BUILD_DIR."""
import json, os, signal, subprocess, sys, threading, time

state, build = sys.argv[1], sys.argv[2]
from taplib import done, ok, plan

env = dict(os.environ, ASSENT_SINGLE_USER="1")

class Agent:
    """A raw JSON-RPC client on its own `assentd --stdio` bridge."""
    def __init__(self, name):
        self.p = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=env)
        self.results, self.lock, self.next = {}, threading.Lock(), 1
        threading.Thread(target=self.reader, daemon=True).start()
        r = self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": name, "version": "1"}})
        assert r["result"]["serverInfo"]["name"] == "assent"
    def reader(self):
        for line in self.p.stdout:
            m = json.loads(line)
            if "id" in m:
                with self.lock:
                    self.results[m["id"]] = m
    def send(self, method, params):
        with self.lock:
            i = self.next
            self.next += 1
        self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
        self.p.stdin.flush()
        return i
    def wait(self, i, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            with self.lock:
                if i in self.results:
                    return self.results.pop(i)
            time.sleep(0.02)
        return None
    def call(self, method, params):
        return self.wait(self.send(method, params))
    def ask(self, message):
        return self.send("tools/call", {"name": "request_feedback", "arguments": {
            "type": "approval", "message": message, "audience": "multi"}})
    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)

def assent(*args):
    return subprocess.run([f"{build}/assent", "--state", state, *args], capture_output=True, text=True)

def pending():
    r = assent("pending", "--json")
    return json.loads(r.stdout) if r.returncode == 0 else []

def wait_pending(count, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        p = pending()
        if len(p) >= count:
            return p
        time.sleep(0.05)
    return pending()

# ---- two bridges, four requests in flight each ----
a, b = Agent("agent-a"), Agent("agent-b")
ids_a = {a.ask(f"a-{i}"): f"a-{i}" for i in range(4)}
ids_b = {b.ask(f"b-{i}"): f"b-{i}" for i in range(4)}
p = wait_pending(8)
ok(len(p) == 8 and {r["message"] for r in p} == {f"{x}-{i}" for x in "ab" for i in range(4)},
   "assent pending shows all eight requests of the two bridges")
by_msg = {r["message"]: r["session_id"] for r in p}
a.close()  # closing the first bridge cancels its blocking calls, and only those
time.sleep(0.5)
left = {r["message"] for r in pending()}
ok(left == {f"b-{i}" for i in range(4)}, "closing the first bridge cancels its four calls and no other")
for i in range(4):
    assent("approve", by_msg[f"b-{i}"], "-m", f"for b-{i}")
got = {}
for rid, msg in ids_b.items():
    r = b.wait(rid)
    got[msg] = r and r["result"]["structuredContent"]
ok(all(got[f"b-{i}"] and got[f"b-{i}"]["response"] == f"for b-{i}" and
       got[f"b-{i}"]["session_id"] == by_msg[f"b-{i}"] for i in range(4)),
   "the second bridge receives exactly its own four answers")
b.close()

# ---- concurrent decisions share durable commits ----
# 32 reviewers' decisions sent at once on 32 control connections (raw, so that
# process start-up does not spread them out): the signer commits what arrives in
# one turn of its loop together, and still answers each caller only afterwards.
import socket
def status():
    r = assent("status", "--json")
    return json.loads(r.stdout) if r.returncode == 0 else {}
d = Agent("agent-d")
many = {d.ask(f"d-{i}"): f"d-{i}" for i in range(32)}
p = wait_pending(32)
sids = [r["session_id"] for r in p if r["message"].startswith("d-")]
before = status()
socks = []
for sid in sids:
    k = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    k.connect(f"{state}/control.sock")
    socks.append((k, sid))
for k, sid in socks:
    k.sendall((json.dumps({"cmd": "decide", "session_id": sid, "outcome": "approved"}) + "\n").encode())
replies = []
for k, sid in socks:
    k.settimeout(30)
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = k.recv(65536)
        if not chunk:
            break
        buf += chunk
    replies.append(json.loads(buf) if buf else {})
    k.close()
answers = [d.wait(rid) for rid in many]
after = status()
ok(len(sids) == 32 and all(r.get("ok") for r in replies) and
   all(a and a["result"]["structuredContent"]["approved"] and a["result"]["structuredContent"].get("approval_token")
       for a in answers), "32 concurrent decisions: every reviewer and every caller hears back, each with a token")
written = after.get("entries_written", 0) - before.get("entries_written", 0)
commits = after.get("commits", 0) - before.get("commits", 0)
ok(written == 32 and 0 < commits < 32,
   f"the 32 concurrent decisions shared durable commits ({written} entries in {commits} commits)")
d.close()

# ---- kill -9 during a burst of decisions, then restart ----
c = Agent("agent-c")
burst = {c.ask(f"c-{i}"): f"c-{i}" for i in range(40)}
p = wait_pending(40)
sids = [r["session_id"] for r in p if r["message"].startswith("c-")]
procs = [subprocess.Popen([f"{build}/assent", "--state", state, "approve", s], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL) for s in sids]
time.sleep(0.03)
info = json.load(open(f"{state}/assentd.json"))
os.kill(info["pid"], signal.SIGKILL)
time.sleep(0.1)
def running(pid):  # a killed daemon may linger as a zombie until init reaps it
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
alive = running(info["pid"])
for pr in procs:
    pr.wait()
tokens = []
for rid in burst:
    r = c.wait(rid, timeout=3)
    if r and "result" in r and r["result"].get("structuredContent", {}).get("approval_token"):
        tokens.append(r["result"]["structuredContent"]["approval_token"])
try:
    c.close()
except Exception:
    c.p.kill()
ok(not alive, f"the daemon was killed with SIGKILL during the burst ({len(tokens)} of 40 answers had arrived)")
with open(f"{state}/received.tokens", "w") as f:
    f.write("\n".join(tokens) + ("\n" if tokens else ""))
# A new bridge starts a new daemon, which cancels the blocking calls the dead one left pending.
d = Agent("agent-d")
r = d.call("ping", {})
ok(r is not None and r.get("result") == {}, "a new bridge starts a new daemon after the crash")
d.close()
plan()
done()
