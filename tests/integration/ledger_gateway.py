"""Writes a real gateway ledger for ledger_rewrite.sh: one stdio agent asks, the
reviewer `tester` decides with the `assent` CLI (approve, reject, approve, ...).
Run with: STATE BUILD_DIR N (N requests; the second is rejected). Prints one JSON
line per request: {"message", "session_id", "outcome"}."""
import json, os, subprocess, sys, threading, time

state, build, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
env = dict(os.environ, ASSENT_SINGLE_USER="1")
p = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, env=env)
results, lock = {}, threading.Lock()


def reader():
    for line in p.stdout:
        m = json.loads(line)
        if "id" in m:
            with lock:
                results[m["id"]] = m


def send(i, method, params):
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
    p.stdin.flush()


def wait(i, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        with lock:
            if i in results:
                return results.pop(i)
        time.sleep(0.02)
    sys.exit("no answer to request %d" % i)


def assent(*args):
    r = subprocess.run([f"{build}/assent", "--state", state, *args], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("assent %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


threading.Thread(target=reader, daemon=True).start()
send(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "ledger-test", "version": "1"}})
wait(1)
for n in range(count):
    msg = "please deploy build number %d to production" % n
    send(10 + n, "tools/call", {"name": "request_feedback", "arguments": {"type": "approval", "message": msg}})
    sid = None
    for _ in range(200):
        pend = json.loads(assent("pending", "--json"))
        if pend:
            sid = pend[0]["session_id"]
            break
        time.sleep(0.05)
    if sid is None:
        sys.exit("request %d never became pending" % n)
    outcome = "rejected" if n == 1 else "approved"
    if outcome == "rejected":
        assent("reject", sid, "-m", "not today")
    else:
        assent("approve", sid, "-m", "looks right")
    r = wait(10 + n)
    if "result" not in r:
        sys.exit("request %d: %s" % (n, r))
    print(json.dumps({"message": msg, "session_id": sid, "outcome": outcome}), flush=True)
p.stdin.close()
p.wait(timeout=10)
