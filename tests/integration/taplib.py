"""TAP for the Python test drivers: ok() prints one line per check and returns the
condition; plan() prints the plan; done() exits 1 when any check failed. Imported by the scripts beside it."""
import sys

_count = {"n": 0, "failed": 0}


def ok(cond, desc):
    _count["n"] += 1
    _count["failed"] += 0 if cond else 1
    print(("ok" if cond else "not ok") + f" {_count['n']} - {desc}", flush=True)
    return cond


def plan():
    print(f"1..{_count['n']}", flush=True)


def done():
    sys.exit(1 if _count["failed"] else 0)
