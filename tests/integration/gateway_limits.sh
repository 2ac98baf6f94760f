#!/usr/bin/env bash
# No one uses up what others need (see gateway_limits.py): connection slots are
# released on every channel (thousands of connections opened and closed), and
# the limits per principal answer with errors that name them; anonymous clients
# are owners of their own; reviewers see only what they may decide; a big queue
# never breaks a reviewer's view.
. "$(dirname "$0")/../lib.sh"
ASSENTD=${ASSENTD:-$ROOT/build/assentd}
S=$T/state
LOG=$T/state.log
DPID=
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$S/assentd.json" 2>/dev/null; }
http_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("http") or "")' "$S/assentd.json" 2>/dev/null; }
stop_daemon() {
	local p
	for p in "$DPID" "$(daemon_pid)"; do
		if [ -z "$p" ] || ! kill -0 "$p" 2>/dev/null; then continue; fi
		kill "$p" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
		kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null
	done
	return 0
}
cleanup() { stop_daemon; sleep 0.1; rm -rf "$T"; }
trap cleanup EXIT

mkdir -p "$S"
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
OUTSIDER=$("$ASSENT" --state "$S" reviewer add outsider --web | tail -1)
INSIDER=$("$ASSENT" --state "$S" reviewer add insider --web | tail -1)
KEY1=$("$ASSENT" --state "$S" agent add greedy | tail -1)
KEY2=$("$ASSENT" --state "$S" agent add modest | tail -1)
cat >"$S/limits.policy" <<'POL'
# Requests whose message starts with "only-outsider" are for outsider alone.
ask message ~ "^only-outsider" reviewers outsider same-user ok
deny message ~ "^flood" reason "decided at once, so its answer waits for get_feedback"
default ask same-user ok
POL
env ASSENT_SINGLE_USER=1 FEEDBACK_ALLOW_ANONYMOUS=true ASSENT_MAX_PENDING_PER_AGENT=20 ASSENT_MAX_BLOCKING_PER_AGENT=2 \
	ASSENT_HTTP_MAX_SESSIONS_PER_AGENT=3 ASSENT_HTTP_MAX_UNAUTH_PER_ADDRESS=4 ASSENT_HTTP_MAX_CONNECTIONS=8 ASSENT_HTTP_REQUEST_SECONDS=30 \
	"$ASSENTD" --state "$S" --policy "$S/limits.policy" >"$LOG" 2>&1 &
DPID=$!
for _ in $(seq 200); do [ -n "$(http_of)" ] && break; sleep 0.05; done
if [ -z "$(http_of)" ]; then
	not_ok "the daemon did not open its HTTP listener: $(tail -3 "$LOG")"
	done_testing
	exit 1
fi
ASSENT_TEST_KEY1=$KEY1 ASSENT_TEST_KEY2=$KEY2 ASSENT_TEST_OUTSIDER=$OUTSIDER ASSENT_TEST_INSIDER=$INSIDER $PY "$ROOT/tests/integration/gateway_limits.py" "$S" "$ROOT/build" "$LOG" \
	>"$T/py.tap" 2>"$T/py.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	"#"*) echo "$line" ;;
	esac
done <"$T/py.tap"
[ "$rc" -eq 0 ] || not_ok "the Python clients exited $rc: $(tail -3 "$T/py.err")"
stop_daemon

# HTTP sessions the signer ends (unused for too long) give their slots back in the
# mcp worker too (256): 250 sessions, swept, then 250 more.
S=$T/sweep LOG=$T/sweep.log DPID=
mkdir -p "$S"
env FEEDBACK_ALLOW_ANONYMOUS=true ASSENT_HTTP_MAX_SESSIONS_PER_AGENT=4096 ASSENT_HTTP_SESSION_IDLE_SECONDS=10 \
	FEEDBACK_SESSION_CLEANUP_INTERVAL=1 ASSENT_REVIEW_PORT=off "$ASSENTD" --state "$S" >"$LOG" 2>&1 &
DPID=$!
for _ in $(seq 200); do [ -n "$(http_of)" ] && break; sleep 0.05; done
sessions() { # N: how many of N initialize calls open a session
	$PY - "$(http_of)" "$1" <<'PY'
import http.client, json, sys
host, port = sys.argv[1].rsplit(":", 1)
def init():
    c = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "sweep", "version": "1"}}}),
            {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        r = c.getresponse()
        r.read()
        return r.status
    except OSError:
        return None
    finally:
        c.close()
print([init() for _ in range(int(sys.argv[2]))].count(200))
PY
}
first=$(sessions 250)
check "250 anonymous sessions open ($first)" test "$first" = 250
for _ in $(seq 300); do [ "$(grep -c 'unused for too long' "$LOG")" -ge 250 ] && break; sleep 0.1; done
check "the signer ends them once unused ($(grep -c 'unused for too long' "$LOG") ended)" test "$(grep -c 'unused for too long' "$LOG")" -ge 250
again=$(sessions 250)
check "then 250 more open: the worker's 256 slots were given back ($again)" test "$again" = 250
done_testing
