"""The stdio bridge hands its stdin and stdout to the daemon (issue 33): the mcp worker then
reads and writes the client's pipes itself. What an agent can hand over is checked by the
worker: only two pipe or socket ends of the right direction, once per connection, never a
descriptor that could block the worker; anything else ends that connection alone. TAP out.
argv: STATE BUILD (bridge_handoff.sh starts the daemon)."""
import array, fcntl, json, os, socket, subprocess, sys, tempfile, time

state, build = sys.argv[1], sys.argv[2]
from taplib import done, ok, plan

MARK = b'{"jsonrpc":"2.0","method":"notifications/assent/stdio"}\n'
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "handoff", "version": "1"}}}
env = dict(os.environ)


def line(obj):
    return (json.dumps(obj) + "\n").encode()


def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    s.connect(f"{state}/agent.sock")
    return s


def hand(s, fds, data=MARK):
    s.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])


def ended(s, timeout=20):
    """True when the daemon closes the connection (EOF or reset) within timeout."""
    s.settimeout(timeout)
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return True
    except ConnectionResetError:
        return True
    except OSError:
        return False


def read_line(fd, timeout=20):
    end, buf = time.monotonic() + timeout, b""
    os.set_blocking(fd, False)
    while time.monotonic() < end and b"\n" not in buf:
        try:
            b = os.read(fd, 65536)
            if not b:
                break
            buf += b
        except BlockingIOError:
            time.sleep(0.01)
    return buf.split(b"\n")[0]


def initialize_ok(raw):
    try:
        return json.loads(raw)["result"]["serverInfo"]["name"] == "assent"
    except (ValueError, KeyError, TypeError):
        return False


def fresh_serves():
    """A new plain socket connection is answered: the worker and the daemon still serve."""
    s = connect()
    s.sendall(line(INIT))
    s.settimeout(20)
    buf = b""
    try:
        while b"\n" not in buf:
            b = s.recv(65536)
            if not b:
                break
            buf += b
    except OSError:
        pass
    s.close()
    return initialize_ok(buf.split(b"\n")[0])


def worker_pids():
    out = subprocess.run(["pgrep", "-f", "assent-worker mcp"], capture_output=True, text=True).stdout.split()
    return sorted(out)


workers = worker_pids()

# 1. a well-formed hand-off: answers come on the pipe, never on the socket
in_r, in_w = os.pipe()
out_r, out_w = os.pipe()
s = connect()
hand(s, [in_r, out_w])
os.close(in_r)
os.close(out_w)
os.write(in_w, line(INIT))
ok(initialize_ok(read_line(out_r)), "a handed-over stdin and stdout: initialize is answered on the pipe")
s.settimeout(0.3)
try:
    got = s.recv(65536)
except socket.timeout:
    got = None
ok(got is None, "  ... and nothing comes on the bridge's socket")
os.close(in_w)
ok(ended(s), "  ... the client closing stdin ends the connection (the bridge's socket closes)")
ok(read_line(out_r, 5) == b"", "  ... and stdout ends with it (the worker let go of the pipe)")
os.close(out_r)
s.close()

# 2. what the worker refuses, each ending that connection alone
def refused(desc, fds, data=MARK, prelude=None):
    s = connect()
    if prelude:
        prelude(s)
    hand(s, fds, data)
    ok(ended(s), f"{desc}: the connection is ended")
    s.close()

with tempfile.TemporaryFile() as f:
    f.write(line(INIT))
    f.flush()
    f.seek(0)
    r, w = os.pipe()
    refused("a regular file as stdin (it could block the worker: a FUSE file)", [f.fileno(), w])
    ok(read_line(r, 1) == b"", "  ... and the file's request was never read: nothing was answered")
    refused("a regular file as stdout", [r, f.fileno()])
    os.close(r)
    os.close(w)
r, w = os.pipe()
refused("stdin and stdout swapped (a write end to read)", [w, r])
refused("three descriptors", [r, w, w])
refused("one descriptor", [r])
dev = os.open("/dev/zero", os.O_RDWR)
refused("a character device (/dev/zero, endless)", [dev, dev])
os.close(dev)
a_r, a_w = os.pipe()
refused("a second hand-off on the same connection", [r, w], prelude=lambda s: hand(s, [a_r, a_w]))
os.close(a_r)
os.close(a_w)

# bytes on the socket after a hand-off: refused (two sources would interleave)
s = connect()
hand(s, [r, w])
time.sleep(0.2)
s.sendall(line(INIT))
ok(ended(s), "bytes on the bridge's socket after its hand-off: the connection is ended")
s.close()
os.close(r)
os.close(w)

# 3. a blocking pipe nobody reads never stalls the worker: it is made non-blocking
in_r, in_w = os.pipe()
out_r, out_w = os.pipe()
ok(os.get_blocking(out_w), "(the pipe handed over is a blocking one)")
s = connect()
hand(s, [in_r, out_w])
os.close(in_r)
os.close(out_w)
req = b"".join(line({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/list", "params": {}}) for i in range(400))
os.set_blocking(in_w, False)
try:
    os.write(in_w, line(INIT) + req[:60000])
except BlockingIOError:
    pass
time.sleep(0.5)
ok(fresh_serves(), "an agent that never reads its stdout: another connection is still answered")
os.close(in_w)
os.close(out_r)
s.close()

ok(fresh_serves(), "after all of the above the daemon still serves")
ok(worker_pids() == workers, "  ... with the same mcp worker: nothing above killed or restarted it")

# 4. the bridge itself hands off (the running daemon says stdio_handoff), and exits 0 at the end of stdin
info = json.load(open(f"{state}/assentd.json"))
ok(info.get("stdio_handoff") is True, "assentd.json says stdio_handoff")
p = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, env=env)
p.stdin.write(line(INIT))
p.stdin.flush()
ok(initialize_ok(p.stdout.readline()), "assentd --stdio: initialize answered")
pipes_in_worker = 0
for w_pid in worker_pids():
    for fd in os.listdir(f"/proc/{w_pid}/fd"):
        try:
            if os.readlink(f"/proc/{w_pid}/fd/{fd}") in (os.readlink(f"/proc/{p.pid}/fd/0"), os.readlink(f"/proc/{p.pid}/fd/1")):
                pipes_in_worker += 1
        except OSError:
            pass
ok(pipes_in_worker == 2, f"  ... the mcp worker holds the bridge's stdin and stdout ({pipes_in_worker} of 2)")
p.stdin.close()
try:
    rc = p.wait(20)
except subprocess.TimeoutExpired:
    p.kill()
    rc = None
ok(rc == 0, f"  ... and the bridge exits 0 when its stdin ends (exit {rc})")
plan()
done()
