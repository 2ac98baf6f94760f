#!/usr/bin/env bash
# The seed's env block sets FEEDBACK_TIMEOUT_SECONDS per client: with a daemon already
# running (started with another default), each `assentd --stdio` bridge's value is its
# own connection's default deadline, capped like a timeout_override (bridge_timeout.py).
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
DPID=
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	for _ in $(seq 100); do [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$S"
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off FEEDBACK_TIMEOUT_SECONDS=300 ASSENT_MAX_TIMEOUT_SECONDS=1000 \
	ASSENT_MAX_PENDING_PER_AGENT=50 "$ASSENTD" --state "$S" --single-user >"$T/d.log" 2>&1 &
DPID=$!
for _ in $(seq 200); do [ -S "$S/agent.sock" ] && break; sleep 0.05; done
check "the daemon listens on STATE/agent.sock" test -S "$S/agent.sock"
$PY "$ROOT/tests/integration/bridge_timeout.py" "$S" "$ROOT/build" >"$T/py.tap" 2>"$T/py.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	"#"*) echo "$line" ;;
	esac
done <"$T/py.tap"
[ "$rc" -eq 0 ] || not_ok "the Python driver exited $rc: $(tail -3 "$T/py.err")"
check "the daemon logged no worker restart" sh -c "! grep -q 'restart' '$T/d.log'"
done_testing
