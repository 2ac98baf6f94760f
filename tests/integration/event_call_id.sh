#!/usr/bin/env bash
# Events recorded inside a call get the call's id (event_call_id.py): the daemon in front of a
# small upstream (records_upstream.py), every call asked of a reviewer, records in SQLite.
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
cat >"$T/ups.json" <<JSON
{"mcpServers": {"up": {"command": "/usr/bin/python3", "args": ["$ROOT/tests/integration/records_upstream.py"]}}}
JSON
printf 'ask upstream up tool echo same-user ok\ndefault ask same-user ok\n' >"$T/p.policy"
FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off ASSENT_SINGLE_USER=1 \
	"$ASSENTD" --state "$S" --policy "$T/p.policy" --upstreams "$T/ups.json" >"$T/d.log" 2>&1 &
DPID=$!
for _ in $(seq 200); do grep -q 'upstream up: .* tools served' "$T/d.log" && break; sleep 0.05; done
check "the daemon serves the upstream's tools" grep -q 'upstream up: .* tools served' "$T/d.log"
$PY "$ROOT/tests/integration/event_call_id.py" "$S" "$ROOT/build" >"$T/py.tap" 2>"$T/py.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	"#"*) echo "$line" ;;
	esac
done <"$T/py.tap"
[ "$rc" -eq 0 ] || not_ok "the Python driver exited $rc: $(tail -3 "$T/py.err")"
done_testing
