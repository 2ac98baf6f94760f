#!/usr/bin/env bash
# FEEDBACK_INSIGHTS_ENABLED (insights.py): on, QA tool use and report metadata are counted in
# /metrics and recorded as events, never a report's text; off (unset), nothing of it; a value
# that is neither true nor false stops the daemon, naming the variable; on with the call
# records off, the daemon says what it cannot record.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
DPID=
stop() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	for _ in $(seq 100); do [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
	DPID=
}
trap 'stop; rm -rf "$T"' EXIT
run() { # STATE on|off ENV...
	local st=$1 mode=$2
	shift 2
	mkdir -p "$st"
	"$ASSENT" --state "$st" reviewer add tester --uid "$(id -u)" >/dev/null
	env FEEDBACK_SSE_PORT=off ASSENT_SINGLE_USER=1 "$@" "$ASSENTD" --state "$st" >"$st.log" 2>&1 &
	DPID=$!
	for _ in $(seq 200); do [ -S "$st/agent.sock" ] && grep -q '"review"' "$st/assentd.json" 2>/dev/null && break; sleep 0.05; done
	$PY "$ROOT/tests/integration/insights.py" "$st" "$ROOT/build" "$mode" >"$st.tap" 2>"$st.err"
	local rc=$?
	# A client whose env block says otherwise hears it from its bridge (the daemon's setting holds).
	local other=true
	[ "$mode" = on ] && other=false
	echo '{"jsonrpc":"2.0","id":1,"method":"ping"}' | FEEDBACK_INSIGHTS_ENABLED=$other timeout 20 \
		"$ROOT/build/assentd" --stdio --state "$st" >/dev/null 2>"$st.bridge"
	echo '{"jsonrpc":"2.0","id":1,"method":"ping"}' | FEEDBACK_INSIGHTS_ENABLED=$([ "$mode" = on ] && echo true || echo false) \
		timeout 20 "$ROOT/build/assentd" --stdio --state "$st" >/dev/null 2>"$st.bridge-same"
	while read -r line; do
		case "$line" in
		"ok "*) ok "$mode: ${line#ok * - }" ;;
		"not ok "*) not_ok "$mode: ${line#not ok * - }" ;;
		esac
	done <"$st.tap"
	[ "$rc" -eq 0 ] || not_ok "$mode: the Python driver exited $rc: $(tail -3 "$st.err")"
	check "$mode: a bridge with FEEDBACK_INSIGHTS_ENABLED=$other says the daemon's are $mode ($(head -c 200 "$st.bridge"))" \
		grep -q "has usage insights $mode, not .* FEEDBACK_INSIGHTS_ENABLED says" "$st.bridge"
	check "$mode: a bridge that agrees says nothing of it" sh -c "! grep -q 'usage insights' '$st.bridge-same'"
	stop
}
run "$T/on" on FEEDBACK_INSIGHTS_ENABLED=true
check "on: the daemon says insights are on, and what they hold" grep -q 'usage insights on (FEEDBACK_INSIGHTS_ENABLED)' "$T/on.log"
run "$T/off" off

mkdir -p "$T/bad"
expect_exit 2 "FEEDBACK_INSIGHTS_ENABLED=maybe stops the daemon" env FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off \
	FEEDBACK_INSIGHTS_ENABLED=maybe timeout 20 "$ASSENTD" --state "$T/bad"
check "... naming the variable and the value" grep -q "FEEDBACK_INSIGHTS_ENABLED: expected true or false, got 'maybe'" <<<"$ERR"

mkdir -p "$T/norec"
env FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off FEEDBACK_INSIGHTS_ENABLED=true FEEDBACK_INSTRUMENTATION_MODE=off \
	"$ASSENTD" --state "$T/norec" >"$T/norec.log" 2>&1 &
DPID=$!
for _ in $(seq 200); do [ -S "$T/norec/agent.sock" ] && break; sleep 0.05; done
check "on with the call records off: a warning says events cannot be recorded" \
	grep -q 'FEEDBACK_INSIGHTS_ENABLED=true with the call records off' "$T/norec.log"
stop
done_testing
