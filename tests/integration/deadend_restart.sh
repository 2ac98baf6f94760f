#!/usr/bin/env bash
# No dead end across a restart (issue 29, 3): a blocking call is answered as cancelled
# when the daemon stops (its agent does not wait out its own timeout); a request
# cancelled by a restart, and one
# the agent gives up on, are on the page's history (Outcome filter: cancelled); a request
# restored by a restart and then rejected is told to the webhooks as request.decided,
# with the reviewer's reason; delivery ids are unique across restarts; a receiver that
# answers HTTP/1.0 (Python's http.server by default) has its 2xx counted as delivered.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
RECV=$ROOT/tests/integration/webhook_receiver.py
S=$T/state
export ASSENT_SINGLE_USER=1 # the agents and the reviewer run as the daemon's own uid
field() { $PY -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2" 2>/dev/null; }
cleanup() {
	p=$(field "$S/assentd.json" pid)
	[ -n "$p" ] && kill "$p" 2>/dev/null
	kill "$RP" 2>/dev/null
	[ -n "${HOLD:-}" ] && kill "$HOLD" 2>/dev/null
	sleep 0.2
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$S"
"$ASSENT" --state "$S" reviewer add alice --uid "$(id -u)" >/dev/null
TOKEN=$("$ASSENT" --state "$S" reviewer token alice | tail -1)
echo '{}' >"$T/secrets.json"
$PY "$RECV" "$T/recv.jsonl" "$T/secrets.json" --http10 >"$T/recv.port" 2>"$T/recv.err" &
RP=$!
for _ in $(seq 100); do [ -s "$T/recv.port" ] && break; sleep 0.05; done
KEY=$("$ASSENT" --state "$S" agent add ci | tail -1)
"$ASSENT" --state "$S" notify add ops --url "http://127.0.0.1:$(cat "$T/recv.port")/ok" >/dev/null
start_daemon() { # OLD_PID
	"$ASSENTD" --state "$S" >>"$T/daemon.log" 2>&1 </dev/null &
	for _ in $(seq 400); do
		p=$(field "$S/assentd.json" pid)
		[ -n "$p" ] && [ "$p" != "${1:-}" ] && "$ASSENT" --state "$S" status >/dev/null 2>&1 && break
		sleep 0.05
	done
}
stop_daemon() {
	p=$(field "$S/assentd.json" pid)
	kill "$p"
	for _ in $(seq 200); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
}
agent() { "$PY" "$ROOT/tests/integration/restart_agent.py" "$ROOT/build" "$S" "$@"; }
sid_of() { $PY -c 'import json,sys; print(json.loads(sys.stdin.readline()).get("session_id") or "")'; }
# events EVENT [SID]: the receiver's bodies of that event (for that request)
events() { $PY - "$T/recv.jsonl" "$@" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    b = json.loads(r["body"])
    if b["event"] == sys.argv[2] and (len(sys.argv) < 4 or b["request"]["id"] == sys.argv[3]):
        print(json.dumps({"delivery": r["headers"].get("x-assent-delivery"), "body": b}))
PY
}
waitfor() { for _ in $(seq 300); do [ "$(events "$@" | wc -l)" -ge 1 ] && return 0; sleep 0.05; done; return 1; }
history() { # OUTCOME: the history's decisions as JSON
	curl -s -H "Authorization: Bearer $TOKEN" "http://$(field "$S/assentd.json" review)/review/api/history?outcome=$1"
}

start_daemon
PID1=$(field "$S/assentd.json" pid)
A=$(agent call request_feedback '{"type":"approval","message":"restored, then rejected","wait":false}' | sid_of)
check "a request collected later is made ($A)" test -n "$A"
mkfifo "$T/hold.out"
agent hold request_feedback '{"type":"approval","message":"held over the restart"}' >"$T/hold.out" &
HOLD=$!
exec 3<"$T/hold.out"
read -r _ <&3
B=""
for _ in $(seq 200); do
	B=$("$ASSENT" --state "$S" pending --json | $PY -c 'import json,sys; print(next((r["session_id"] for r in json.load(sys.stdin) if r["message"] == "held over the restart"), ""))')
	[ -n "$B" ] && break
	sleep 0.05
done
check "a blocking request waits ($B)" test -n "$B"
# The same over HTTP (a blocking tools/call on its POST's stream).
ASSENT_TEST_HTTP=$(field "$S/assentd.json" http) ASSENT_TEST_KEY=$KEY agent call request_feedback \
	'{"type":"approval","message":"held over HTTP"}' >"$T/http.out" 2>&1 &
HTTPAG=$!
for _ in $(seq 200); do
	"$ASSENT" --state "$S" pending --json | grep -q '"held over HTTP"' && break
	sleep 0.05
done
check "the webhook hears of the first request (request.created)" waitfor request.created "$A"
check "... and of the second" waitfor request.created "$B"
for _ in $(seq 200); do [ "$(grep -c 'webhook ops: .*delivered: HTTP 200' "$T/daemon.log")" -ge 2 ] && break; sleep 0.05; done
check "the receiver answers HTTP/1.0 200: delivered at the first attempt" \
	test "$(grep -c 'webhook ops: .*(request.created) delivered: HTTP 200, attempt 1' "$T/daemon.log")" -ge 2
check "... no attempt failed" sh -c "! grep -q 'webhook ops: .*failed' '$T/daemon.log'"
events request.created | $PY -c 'import json,sys; print("\n".join(json.loads(l)["delivery"] for l in sys.stdin))' | sort >"$T/ids1"

stop_daemon
read -r HELD <&3
check "the blocking call is answered as cancelled when the daemon stops, not left to its own timeout ($HELD)" \
	sh -c "printf '%s' \"\$1\" | $PY -c 'import json,sys; r=json.load(sys.stdin); sys.exit(0 if r.get(\"status\") == \"cancelled\" and \"stopping\" in r.get(\"error\", \"\") else 1)'" _ "$HELD"
wait "$HOLD" 2>/dev/null
HOLD=""
wait "$HTTPAG"
check "... and over HTTP too ($(cat "$T/http.out"))" $PY -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r.get("status") == "cancelled" else 1)' "$T/http.out"
start_daemon "$PID1"
H=$(history cancelled)
check "the page's history lists the request the restart cancelled (Outcome cancelled)" \
	sh -c "printf '%s' \"\$1\" | $PY -c '
import json, sys
d = json.load(sys.stdin)[\"decisions\"]
sys.exit(0 if any(x[\"session_id\"] == sys.argv[1] and x[\"outcome\"] == \"cancelled\" and x[\"by\"] == \"restart\" and x[\"seq\"] > 0 for x in d) else 1)' '$B'" _ "$H"
expect_exit 0 "alice rejects the restored request" "$ASSENT" --state "$S" reject "$A" -m "not on a friday"
check "the webhook hears request.decided for the restored request" waitfor request.decided "$A"
D=$(events request.decided "$A" | head -1)
check "... rejected by alice, with her reason ($D)" sh -c "printf '%s' \"\$1\" | $PY -c '
import json, sys
b = json.load(sys.stdin)[\"body\"][\"decision\"]
sys.exit(0 if b == {\"outcome\": \"rejected\", \"by\": \"alice\", \"reason\": \"not on a friday\"} else 1)'" _ "$D"
ID2=$(printf '%s' "$D" | $PY -c 'import json,sys; print(json.load(sys.stdin)["delivery"])')
check "its delivery id ($ID2) is none of the previous run's ($(tr '\n' ' ' <"$T/ids1"))" sh -c "[ -n '$ID2' ] && ! grep -qx '$ID2' '$T/ids1'"

# An agent that gives up on a blocking call: cancelled, on the history with its seq.
agent hold request_feedback '{"type":"approval","message":"given up"}' >"$T/hold2.out" &
HOLD=$!
C=""
for _ in $(seq 200); do
	C=$("$ASSENT" --state "$S" pending --json | $PY -c 'import json,sys; print(next((r["session_id"] for r in json.load(sys.stdin) if r["message"] == "given up"), ""))')
	[ -n "$C" ] && break
	sleep 0.05
done
for c in $(ps -o pid= --ppid "$HOLD"); do kill "$c"; done # its bridge: the agent's connection goes
kill "$HOLD" 2>/dev/null
wait "$HOLD" 2>/dev/null
HOLD=""
for _ in $(seq 200); do history cancelled | grep -q "$C" && break; sleep 0.05; done
check "a request its agent gave up on is on the history as cancelled, by the agent" \
	sh -c "printf '%s' \"\$1\" | $PY -c '
import json, sys
d = json.load(sys.stdin)[\"decisions\"]
sys.exit(0 if any(x[\"session_id\"] == sys.argv[1] and x[\"by\"] == \"agent\" and x[\"seq\"] > 0 for x in d) else 1)' '$C'" _ "$(history cancelled)"
waitfor request.decided "$C"
check "... and told to the webhook as request.decided, cancelled" test "$(events request.decided "$C" | head -1 | $PY -c 'import json,sys; print(json.load(sys.stdin)["body"]["decision"]["outcome"])')" = cancelled
done_testing
