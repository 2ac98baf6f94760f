#!/usr/bin/env python3
"""A stdio agent, within its own limits, that files 90 requests with long messages and
then pipelines 3,000 list_pending_feedback calls without reading one answer: the
answers must not pile up in the signer until the mcp worker counts as stuck (which
cancelled every other agent's calls). Usage: pipeline_flood.py ASSENTD STATE."""
import subprocess, json, time, sys
assentd, state = sys.argv[1], sys.argv[2]
p = subprocess.Popen([assentd,"--stdio","--state",state], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
def send(o): p.stdin.write((json.dumps(o)+"\n").encode()); p.stdin.flush()
send({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"slow","version":"1"}}}); p.stdout.readline()
for i in range(90):
    send({"jsonrpc":"2.0","id":i+1,"method":"tools/call","params":{"name":"request_feedback","arguments":{"type":"approval","message":"m"*500+str(i),"wait":False}}}); p.stdout.readline()
try:
    for i in range(3000):
        send({"jsonrpc":"2.0","id":100000+i,"method":"tools/call","params":{"name":"list_pending_feedback","arguments":{}}})
except BrokenPipeError: print("attacker's bridge closed at", i)
time.sleep(3)
p.kill()
