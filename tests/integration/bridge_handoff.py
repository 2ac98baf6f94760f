"""The stdio bridge hands its stdin and stdout to the daemon (issue 33): the mcp worker then
reads and writes the client's sockets itself. What an agent can hand over is checked by the
worker: only two sockets, once per connection, used only with MSG_DONTWAIT so that nothing
the agent does to them can block the worker; anything else ends that connection alone. TAP out.
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

def pair():
    """A socketpair: (ours, the end handed over), as Node starts a server's stdin and stdout."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


def sock_line(s, timeout=20):
    s.settimeout(timeout)
    buf = b""
    try:
        while b"\n" not in buf:
            b = s.recv(65536)
            if not b:
                break
            buf += b
    except OSError:
        pass
    return buf.split(b"\n")[0]


# 1. a well-formed hand-off: answers come on the handed-over stdout, never on the bridge's socket
cin, hin = pair()
cout, hout = pair()
s = connect()
hand(s, [hin.fileno(), hout.fileno()])
hin.close()
hout.close()
cin.sendall(line(INIT))
ok(initialize_ok(sock_line(cout)), "a handed-over stdin and stdout (sockets): initialize is answered on stdout")
s.settimeout(0.3)
try:
    got = s.recv(65536)
except socket.timeout:
    got = None
ok(got is None, "  ... and nothing comes on the bridge's socket")
cin.shutdown(socket.SHUT_WR)  # what libuv's end() does
ok(ended(s), "  ... the client ending stdin ends the connection (the bridge's socket closes)")
ok(sock_line(cout, 5) == b"", "  ... and stdout ends with it (the worker let go of it)")
cin.close()
cout.close()
s.close()


# 2. what the worker refuses, each ending that connection alone
def refused(desc, fds, data=MARK, prelude=None):
    s = connect()
    if prelude:
        prelude(s)
    hand(s, fds, data)
    ok(ended(s), f"{desc}: the connection is ended")
    s.close()


r, w = os.pipe()
refused("pipes (their O_NONBLOCK is the agent's to change: the bridge relays pipes)", [r, w])
ok(read_line(r, 1) == b"", "  ... and nothing was written to them")
with tempfile.TemporaryFile() as f:
    f.write(line(INIT))
    f.flush()
    f.seek(0)
    a, b = pair()
    refused("a regular file as stdin (it could block the worker: a FUSE file)", [f.fileno(), b.fileno()])
    a.settimeout(1)
    try:
        got = a.recv(65536)
    except socket.timeout:
        got = None
    ok(not got, "  ... and the file's request was never read: nothing was answered")
    refused("a regular file as stdout", [b.fileno(), f.fileno()])
    a.close()
    b.close()
os.close(r)
os.close(w)
a, b = pair()
refused("three descriptors", [a.fileno(), b.fileno(), b.fileno()])
refused("one descriptor", [a.fileno()])
dev = os.open("/dev/zero", os.O_RDWR)
refused("a character device (/dev/zero, endless)", [dev, dev])
os.close(dev)
c2, d2 = pair()
refused("a second hand-off on the same connection", [a.fileno(), b.fileno()],
        prelude=lambda s: hand(s, [c2.fileno(), d2.fileno()]))
c2.close()
d2.close()

# bytes on the socket after a hand-off: refused (two sources would interleave)
s = connect()
hand(s, [a.fileno(), b.fileno()])
time.sleep(0.2)
s.sendall(line(INIT))
ok(ended(s), "bytes on the bridge's socket after its hand-off: the connection is ended")
s.close()
a.close()
b.close()

# 3. an agent that sets its stdout blocking again after the hand-off (O_NONBLOCK is the open
# file's, shared with the agent) and never reads it cannot stall the worker: every write is
# MSG_DONTWAIT (found in review: with write() the worker froze for every agent)
cin, hin = pair()
cout, hout = pair()
s = connect()
hand(s, [hin.fileno(), hout.fileno()])
time.sleep(0.2)
hin.setblocking(True)
hout.setblocking(True)  # the worker's copies are the same open files
ok(os.get_blocking(hout.fileno()), "(the handed-over ends are blocking again, set by the agent)")
req = b"".join(line({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/list", "params": {}}) for i in range(2000))
cin.setblocking(False)
sent = 0
try:
    cin.sendall(line(INIT))
    while sent < len(req):
        sent += cin.send(req[sent:sent + 65536])
except (BlockingIOError, OSError):
    pass
time.sleep(1.0)
ok(fresh_serves(), "an agent that never reads its stdout, set blocking after the hand-off: another connection is "
   f"still answered ({sent} bytes of requests sent)")
for x in (cin, hin, cout, hout, s):
    x.close()

ok(fresh_serves(), "after all of the above the daemon still serves")
ok(worker_pids() == workers, "  ... with the same mcp worker: nothing above killed or restarted it")


# 4. the bridge itself: it hands off sockets (the running daemon says stdio_handoff), exits 0 when
# its stdin ends, and relays pipes
def bridge(stdin, stdout):
    return subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=stdin, stdout=stdout,
                            stderr=subprocess.PIPE, env=env)


def worker_holds(pid):
    """How many of the bridge's fd 0 and 1 the mcp worker holds too (the same socket or pipe)."""
    mine = {os.readlink(f"/proc/{pid}/fd/0"), os.readlink(f"/proc/{pid}/fd/1")}
    n = 0
    for w_pid in worker_pids():
        for fd in os.listdir(f"/proc/{w_pid}/fd"):
            try:
                n += os.readlink(f"/proc/{w_pid}/fd/{fd}") in mine
            except OSError:
                pass
    return n


info = json.load(open(f"{state}/assentd.json"))
ok(info.get("stdio_handoff") is True, "assentd.json says stdio_handoff")
cin, hin = pair()
cout, hout = pair()
p = bridge(hin.fileno(), hout.fileno())
hin.close()
hout.close()
cin.sendall(line(INIT))
ok(initialize_ok(sock_line(cout)), "assentd --stdio on sockets: initialize answered")
held = worker_holds(p.pid)
ok(held == 2, f"  ... the mcp worker holds the bridge's stdin and stdout ({held} of 2)")
cin.shutdown(socket.SHUT_WR)
try:
    rc = p.wait(20)
except subprocess.TimeoutExpired:
    p.kill()
    rc = None
ok(rc == 0, f"  ... and the bridge exits 0 when the client ends its stdin with shutdown (exit {rc}; "
   f"{p.stderr.read().decode()[-200:]!r})")
cin.close()
cout.close()

p = bridge(subprocess.PIPE, subprocess.PIPE)
p.stdin.write(line(INIT))
p.stdin.flush()
ok(initialize_ok(p.stdout.readline()), "assentd --stdio on pipes: initialize answered")
held = worker_holds(p.pid)
ok(held == 0, f"  ... relayed: the mcp worker holds neither pipe ({held})")
p.stdin.close()
try:
    rc = p.wait(20)
except subprocess.TimeoutExpired:
    p.kill()
    rc = None
ok(rc == 0, f"  ... and exits 0 when its stdin ends (exit {rc})")
plan()
done()
