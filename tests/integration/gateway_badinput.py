"""Bad input on stdio, through the bridge and the daemon: each gets the right
JSON-RPC error or isError result, and the server keeps serving. TAP out."""
import json, os, subprocess, sys

state, build = sys.argv[1], sys.argv[2]
from taplib import done, ok, plan

p = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send_raw(b):
    p.stdin.write(b + b"\n"); p.stdin.flush()
def recv():
    line = p.stdout.readline()
    return json.loads(line) if line else None
def call(obj):
    send_raw(json.dumps(obj).encode()); return recv()
ping_id = [1000]
def still_serving():
    ping_id[0] += 1
    r = call({"jsonrpc": "2.0", "id": ping_id[0], "method": "ping"})
    return r is not None and r.get("id") == ping_id[0] and r.get("result") == {}

r = call({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
          "capabilities": {}, "clientInfo": {"name": "bad", "version": "1"}}})
ok(r and r["result"]["protocolVersion"] == "2025-11-25", "initialize negotiates 2025-11-25")

cases = [
    ("malformed JSON", b'{"jsonrpc": "2.0", "id": 2, "method": ', -32700),
    ("a non-object", b'[1, 2, 3]', -32600),
    ("a string", b'"hello"', -32600),
    ("wrong jsonrpc", b'{"jsonrpc": "1.0", "id": 3, "method": "ping"}', -32600),
    ("unknown method", b'{"jsonrpc": "2.0", "id": 4, "method": "frobnicate"}', -32601),
    ("deep nesting", b'{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"a": ' + b'[' * 5000 + b']' * 5000 + b'}}', -32600),
    ("invalid UTF-8", b'{"jsonrpc": "2.0", "id": 6, "method": "p\xff\xfeng"}', -32700),
    ("a line over 4 MiB", b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"x": "' + b'a' * (4 << 20) + b'"}}', -32600),
    ("an unknown tool", json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "rm_rf", "arguments": {}}}).encode(), -32602),
]
for desc, raw, code in cases:
    send_raw(raw)
    r = recv()
    ok(r is not None and r.get("error", {}).get("code") == code, f"{desc}: JSON-RPC error {code} (got {r and r.get('error', {}).get('code')})")
    ok(still_serving(), f"{desc}: the server keeps serving")

# A line over 4 MiB is never parsed, yet its answer carries its id when the line's start
# shows it, or its end does (the official SDKs write "jsonrpc" and "id" last): a client
# waiting for that id is answered instead of waiting for ever.
big = b'a' * (4 << 20)
for desc, raw, want in [
    ("id first", b'{"jsonrpc": "2.0", "id": 71, "method": "ping", "params": {"x": "' + big + b'"}}', 71),
    ("id last, as the SDK writes it", b'{"method":"tools/call","params":{"name":"request_feedback","arguments":{"type":"approval","message":"' + big + b'"}},"jsonrpc":"2.0","id":72}', 72),
    ("a string id last", b'{"method":"ping","params":{"x":"' + big + b'"},"jsonrpc":"2.0","id" : "big \\"73\\""}\r', 'big "73"'),
    ("an id inside params only", b'{"method":"ping","params":{"x":"' + big + b'","id":74}}', None),
]:
    send_raw(raw)
    r = recv()
    ok(r is not None and r.get("error", {}).get("code") == -32600 and r.get("id") == want,
       f"a line over 4 MiB, {desc}: -32600 with id {want!r} (got {r and r.get('id')!r})")
    ok(still_serving(), f"a line over 4 MiB, {desc}: the server keeps serving")

for k, (desc, args, word) in enumerate([
    ("message of the wrong type", {"type": "approval", "message": 42}, "message"),
    ("an unknown type", {"type": "vote", "message": "x"}, "type"),
    ("timeout_override as a string", {"type": "approval", "message": "x", "timeout_override": "10"}, "timeout_override"),
    ("a bad digest", {"type": "approval", "message": "x", "subject": {"name": "f", "digest": {"sha256": "abc"}}}, "sha256"),
]):
    r = call({"jsonrpc": "2.0", "id": 50 + k, "method": "tools/call", "params": {"name": "request_feedback", "arguments": args}})
    res = r and r.get("result", {})
    ok(res and res.get("isError") is True and word in res["content"][0]["text"], f"{desc}: an isError result naming {word}")
# An id is echoed whatever its JSON text's length: a string of 256 bytes that each escape
# to \u0001 is 1538 bytes of JSON (the worker once cut the text it sends the signer at 300
# bytes, and such a call was never answered).
import select
long_id = "\u0001" * 256
send_raw(json.dumps({"jsonrpc": "2.0", "id": long_id, "method": "tools/call",
                     "params": {"name": "list_pending_feedback", "arguments": {}}}).encode())
r = recv() if select.select([p.stdout], [], [], 30)[0] else None
ok(r is not None and r.get("id") == long_id and "result" in r, "a string id of 256 escaped characters is answered with that id")
ok(still_serving(), "a long escaped id: the server keeps serving")
# A long declared client name (up to 256 bytes of name and of version, multi-byte characters at
# the cut) is kept cut on a character boundary: it never takes the worker down for everyone.
q = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def qcall(obj):
    q.stdin.write(json.dumps(obj).encode() + b"\n"); q.stdin.flush()
    line = q.stdout.readline()
    return json.loads(line) if line else None
qcall({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
       "capabilities": {}, "clientInfo": {"name": "n" * 100 + "\u00e9" * 78, "version": "v" * 256}}})
r = qcall({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "request_feedback",
           "arguments": {"type": "approval", "message": "long client", "wait": False}}})
res = (r or {}).get("result", {}).get("structuredContent") or {}
ok(res.get("status") == "pending", f"a client declaring a 512-byte name/version asks and is queued (got {str(r)[:200]})")
ok(still_serving(), "... and the worker serving everyone else was not restarted for it")
log = open(f"{state}/assentd.log", encoding="utf-8", errors="replace").read()
ok('"security"' not in log, "no security event in the daemon's log")
q.stdin.close()
q.wait(timeout=10)
ok(still_serving(), "after all of it the server still serves")
p.stdin.close()
p.wait(timeout=10)
plan()
done()
