#!/usr/bin/env bash
# Bad input on the agent HTTP listener (see gateway_http_badinput.py): one daemon
# with small limits; bad requests, oversized headers, slow, silent and crowding
# clients, too many sessions, a kill -9 of the mcp worker; a request queued first
# is still pending at the end, approved, collected; the ledger verifies.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
LOG=$T/state.log
DPID=
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$S/assentd.json" 2>/dev/null; }
http_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("http") or "")' "$S/assentd.json" 2>/dev/null; }
stop_daemon() { # TERM, wait up to 5 s, then KILL: never leave a daemon behind
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
[ -n "${KEEP_T:-}" ] && trap stop_daemon EXIT

IDLE=3 REQUEST=4 SESSIONS=8 BODY=65536
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
KEY1=$("$ASSENT" --state "$S" agent add bad-agent | tail -1)
KEY2=$("$ASSENT" --state "$S" agent add other-agent | tail -1)
mkdir -p "$S"
# Its crowd of 100 silent connections from loopback is about the global limit: the per-address
# one (gateway_limits.sh) is raised out of its way.
env ASSENT_SINGLE_USER=1 ASSENT_HTTP_MAX_UNAUTH_PER_ADDRESS=1000 ASSENT_HTTP_MAX_BODY=$BODY ASSENT_HTTP_MAX_HEADER=16384 ASSENT_HTTP_MAX_CONNECTIONS=32 \
	ASSENT_HTTP_MAX_SESSIONS=$SESSIONS ASSENT_HTTP_IDLE_SECONDS=$IDLE ASSENT_HTTP_REQUEST_SECONDS=$REQUEST "$ASSENTD" --state "$S" >"$LOG" 2>&1 &
DPID=$!
for _ in $(seq 100); do [ -n "$(http_of)" ] && break; sleep 0.05; done
if [ -z "$(http_of)" ]; then
	not_ok "the daemon did not open its HTTP listener: $(tail -3 "$LOG")"
	done_testing
	exit 1
fi

ASSENT_TEST_KEY1=$KEY1 ASSENT_TEST_KEY2=$KEY2 ASSENT_TEST_IDLE=$IDLE ASSENT_TEST_REQUEST=$REQUEST ASSENT_TEST_SESSIONS=$SESSIONS ASSENT_TEST_BODY=$BODY \
	timeout 120 "$PY" "$ROOT/tests/integration/gateway_http_badinput.py" "$S" "$ROOT/build" "$LOG" >"$T/py.tap" 2>"$T/py.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	"#"*) echo "$line" ;;
	esac
done <"$T/py.tap"
[ "$rc" -eq 0 ] || not_ok "the Python client exited $rc: $(tail -3 "$T/py.err")"

p=$(daemon_pid)
check "the daemon is still running after all of it" kill -0 "$p"
stop_daemon
check "the daemon stopped" sh -c "! kill -0 $p 2>/dev/null"
check "the daemon never logged a security event" sh -c "! grep -qi 'security' '$LOG'"
expect_exit 0 "the ledger verifies" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
if [ -s "$S/survivor.token" ]; then
	KEYPUB=$(ls "$S"/keys/token-*.pub | head -1)
	expect_exit 0 "the survivor's approval token verifies against the ledger" \
		"$VERIFY" token - --aud assent --key "$KEYPUB" --ledger "$S/ledger" <"$S/survivor.token"
fi
done_testing
