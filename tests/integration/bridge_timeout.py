#!/usr/bin/env python3
"""A client's own FEEDBACK_TIMEOUT_SECONDS (the seed's env block) when a daemon already runs:
each bridge's value is its connection's default deadline, capped by the daemon's
ASSENT_MAX_TIMEOUT_SECONDS like a timeout_override; a call's own timeout_override still wins;
a bridge without it gets the daemon's default; a malformed one is named on the bridge's stderr.
argv: STATE BUILD (the daemon runs with FEEDBACK_TIMEOUT_SECONDS=300, ASSENT_MAX_TIMEOUT_SECONDS=1000)."""
import json, os, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from taplib import ok, plan, done

state, build = sys.argv[1], sys.argv[2]


class Bridge:
    def __init__(self, timeout_env):
        env = dict(os.environ)
        env.pop("FEEDBACK_TIMEOUT_SECONDS", None)
        if timeout_env is not None:
            env["FEEDBACK_TIMEOUT_SECONDS"] = timeout_env
        self.p = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.n = 0
        r = self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "seed-env", "version": "1"}})
        self.ready = bool(r and "result" in r)

    def call(self, method, params):
        self.n += 1
        self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}) + "\n").encode())
        self.p.stdin.flush()
        for line in self.p.stdout:
            m = json.loads(line)
            if m.get("id") == self.n:
                return m
        return None

    def window(self, extra=None):
        """deadline - timestamp of a new pending request, in seconds."""
        args = {"type": "approval", "message": "how long do you wait?", "wait": False}
        args.update(extra or {})
        r = self.call("tools/call", {"name": "request_feedback", "arguments": args})
        d = ((r or {}).get("result") or {}).get("structuredContent") or {}
        return d.get("deadline", 0) - d.get("timestamp", 0) if d.get("status") == "pending" else f"not pending: {r}"

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=20)
        return self.p.stderr.read().decode(errors="replace")


def near(v, want):  # the deadline is whole seconds after the timestamp
    return isinstance(v, int) and want - 2 <= v <= want


b = Bridge("120")
ok(b.ready, "a bridge with FEEDBACK_TIMEOUT_SECONDS=120 reaches the running daemon")
w = b.window()
ok(near(w, 120), f"its request_feedback without timeout_override waits 120 s, not the daemon's 300 ({w})")
w = b.window({"timeout_override": 600})
ok(near(w, 600), f"a timeout_override (600) still wins over the bridge's default ({w})")
err = b.close()
ok(err.strip() == "" or "FEEDBACK_TIMEOUT_SECONDS" not in err, f"nothing said about a valid value ({err.strip()[:200]})")

b = Bridge(None)
w = b.window()
ok(near(w, 300), f"a bridge without FEEDBACK_TIMEOUT_SECONDS gets the daemon's 300 s ({w})")
b.close()

b = Bridge("86400")
w = b.window()
ok(near(w, 1000), f"FEEDBACK_TIMEOUT_SECONDS=86400 is capped at the daemon's ASSENT_MAX_TIMEOUT_SECONDS=1000 ({w})")
b.close()

b = Bridge("soon")
w = b.window()
ok(near(w, 300), f"a malformed FEEDBACK_TIMEOUT_SECONDS leaves the daemon's default ({w})")
err = b.close()
ok("FEEDBACK_TIMEOUT_SECONDS must be 1 to 86400, not 'soon'" in err,
   f"and the bridge says so on its stderr ({err.strip()[:300]})")

# Two bridges at once keep their own defaults: the value is the connection's, not the daemon's.
b1, b2 = Bridge("60"), Bridge("900")
w1, w2 = b1.window(), b2.window()
ok(near(w1, 60) and near(w2, 900), f"two bridges at once: 60 s and 900 s ({w1}, {w2})")
b1.close()
b2.close()
plan()
done()
