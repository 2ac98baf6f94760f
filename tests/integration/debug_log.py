#!/usr/bin/env python3
"""An agent over a stdio bridge for debug_log.sh: an allowed gated call (dispatched), a denied one,
a request_feedback left pending. Every text it sends carries a marker the log must never show.
argv: STATE BUILD MARK"""
import json, os, subprocess, sys

state, build, mark = sys.argv[1:4]
p = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
n = 0


def call(method, params):
    global n
    n += 1
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n").encode())
    p.stdin.flush()
    for line in p.stdout:
        m = json.loads(line)
        if m.get("id") == n:
            return m
    return {}


call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "dbg", "version": "1"}})
r = call("tools/call", {"name": "up__echo", "arguments": {"text": f"echo {mark} arguments"}})
print("echo:", json.dumps(r)[:300])
r = call("tools/call", {"name": "up__forbidden", "arguments": {"why": f"{mark} denied"}})
print("forbidden:", json.dumps(r)[:300])
r = call("tools/call", {"name": "request_feedback",
                        "arguments": {"type": "approval", "message": f"message {mark}", "context": f"context {mark}",
                                      "wait": False}})
print("feedback:", json.dumps(r)[:300])
p.stdin.close()
p.wait(timeout=20)
