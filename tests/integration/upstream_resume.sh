#!/usr/bin/env bash
# SSE resumption towards url upstreams (issue 29, 1; SEP-1699): a url upstream
# (resume_upstream.py) ends each call's SSE answer before its result. assent asks it for
# 2025-11-25, resumes with GET + Last-Event-ID (the id the server sent), and so a tool that
# answers on the first resume reaches the agent; one that never answers fails after the bounded
# resumes, and one whose GET is refused fails at once, each saying so.
. "$(dirname "$0")/../lib.sh"
S=$T/state
UPID=""
trap 'p=$(daemon_pid "$S"); [ -n "$p" ] && kill "$p" 2>/dev/null; [ -n "$UPID" ] && kill "$UPID"; sleep 0.2; rm -rf "$T"' EXIT
mkdir -p "$S"
$PY "$ROOT/tests/integration/resume_upstream.py" "$T/gets.log" >"$T/up.out" 2>"$T/up.err" &
UPID=$!
for _ in $(seq 200); do grep -q '^PORT ' "$T/up.out" && break; sleep 0.05; done
UPORT=$(sed -n 's/^PORT //p' "$T/up.out")
check "the url upstream listens" test -n "$UPORT"
printf '{"mcpServers": {"r": {"url": "http://127.0.0.1:%s/mcp", "prefix": ""}}}\n' "$UPORT" >"$T/up.json"
printf 'allow upstream "*"\ndefault allow\n' >"$T/policy"
FEEDBACK_ALLOW_ANONYMOUS=true "$ROOT/build/assentd" --state "$S" --policy "$T/policy" --upstreams "$T/up.json" \
	>"$S.log" 2>&1 &
for _ in $(seq 200); do [ -n "$(http_of "$S")" ] && break; sleep 0.05; done
check "assentd opens its HTTP listener" test -n "$(http_of "$S")"
$PY - "$(http_of "$S")" >"$T/calls.json" <<'PY'
import json, sys, time, urllib.request
url = "http://%s/mcp" % sys.argv[1]
def post(msg, sid=None):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if sid:
        h.update({"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
    r = urllib.request.urlopen(urllib.request.Request(url, json.dumps(msg).encode(), h), timeout=120)
    return r.headers.get("Mcp-Session-Id"), r.read().decode(errors="replace")
sid, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
              "capabilities": {}, "clientInfo": {"name": "upstream-resume", "version": "1"}}})
post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
end = time.monotonic() + 60  # a bound on waiting for the upstream's tools, not a measure
while time.monotonic() < end and '"refuse"' not in post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, sid)[1]:
    time.sleep(0.2)
out = {}
for n in ("once", "never", "refuse"):
    out[n] = " ".join(post({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": n, "arguments": {}}},
                           sid)[1].split())
print(json.dumps(out))
PY
calls=$(cat "$T/calls.json")
field() { $PY -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2], ""))' "$calls" "$1"; }
check "assent asks its upstreams for 2025-11-25 (the upstream answers what it was asked)" \
	grep -q "initialized (protocol 2025-11-25)" "$S.log"
case "$(field once)" in
*"resumed once"*) ok "a call whose SSE answer ended early is resumed: its result reaches the agent" ;;
*) not_ok "a call whose SSE answer ended early is resumed: got $(field once | head -c 300)" ;;
esac
check "the resume carried the server's event id as Last-Event-ID (c1-0)" grep -qx "c1-0" "$T/gets.log"
case "$(field never)" in
*"ended the call's event stream before its result 6 times"*) ok "a call never answered fails after 5 resumes, saying so" ;;
*) not_ok "a call never answered fails after 5 resumes, saying so: got $(field never | head -c 300)" ;;
esac
check "each resume named the last id the server sent (c2-0 ... c2-4)" \
	test "$(grep '^c2-' "$T/gets.log" | tr '\n' ' ')" = "c2-0 c2-1 c2-2 c2-3 c2-4 "
case "$(field refuse)" in
*"refused to resume the call's event stream"*"405"*) ok "a refused resume fails the call, naming the status" ;;
*) not_ok "a refused resume fails the call, naming the status: got $(field refuse | head -c 300)" ;;
esac
check "assentd is still running" kill -0 "$(daemon_pid "$S")"
done_testing
