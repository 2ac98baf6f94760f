"""What the gateway benchmarks share: processes and their memory, read from /proc."""
import os, shutil, sys, time


def proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def running(pid):
    return proc_state(pid) not in (None, "Z", "X")


def children_of(pid):
    kids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        kids.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return kids


def tree(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        if running(p):
            out.append(p)
            todo.extend(children_of(p))
    return out


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def settled_rss(pids_fn, timeout=10.0):
    """Sum of VmRSS (KiB) of pids_fn(), sampled every 250 ms until two samples agree within 1%."""
    last, end = None, time.monotonic() + timeout
    while True:
        pids = pids_fn()
        now = {p: rss_kib(p) for p in pids}
        total = sum(now.values())
        if last is not None and abs(total - last) <= 0.01 * max(last, 1) or time.monotonic() > end:
            return total, now
        last = total
        time.sleep(0.25)


def mib(k):
    return f"{k / 1024:.1f}"


def require(name, build, files):
    """Exit with a clear message when a program the bench runs is missing."""
    for f in files:
        if not os.access(os.path.join(build, f), os.X_OK):
            sys.exit(f"{name}: {build}/{f} is missing: run make all first")
    if not shutil.which("node"):
        sys.exit(f"{name}: node is not on the PATH")


def finish(name, b, ok, keep, log=None):
    """After a run: stop what it started, show the daemon log's tail on failure, keep or remove
    the temporary directory; returns the exit status."""
    b.cleanup()
    if not ok and log and os.path.exists(log):
        with open(log, errors="replace") as f:
            tail = f.readlines()[-15:]
        print("last lines of assentd.log:\n" + "".join("  " + l for l in tail), file=sys.stderr)
    if keep or not ok:
        print(f"{name}: files kept in {b.top}", file=sys.stderr)
    else:
        shutil.rmtree(b.top, ignore_errors=True)
    return 0 if ok else 1
