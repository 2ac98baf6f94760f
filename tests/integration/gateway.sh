#!/usr/bin/env bash
# The gateway end to end: the official MCP SDK client starts `assentd --stdio`, a
# reviewer decides with the real `assent` CLI, tokens verify offline, the ledger
# verifies; the running workers are jailed; a same-uid decision needs the opt-in.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
cleanup() { for d in "$S" "$T/solo"; do p=$(daemon_pid "$d"); [ -n "$p" ] && kill "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT

if [ ! -d "$ROOT/tests/mcp/node_modules/@modelcontextprotocol/sdk" ]; then
	not_ok "the MCP SDK is not installed in tests/mcp (make deps runs npm ci there)"
	done_testing
	exit 1
fi
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
# The stdio agent asks for tf-prod: registered by its uid (unregistered, the default audience only).
"$ASSENT" --state "$S" agent add local --uid "$(id -u)" --audience tf-prod >/dev/null
# The SDK flows print their own TAP lines; renumber them into ours.
node "$ROOT/tests/mcp/sdk_flows.mjs" "$S" "$ROOT/build" >"$T/sdk.tap" 2>"$T/sdk.err"
sdk_rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "SDK: ${line#ok * - }" ;;
	"not ok "*) not_ok "SDK: ${line#not ok * - }" ;;
	esac
done <"$T/sdk.tap"
[ "$sdk_rc" -eq 0 ] || not_ok "the SDK flows exited $sdk_rc: $(tail -3 "$T/sdk.err")"

KEY=$(ls "$S"/keys/token-*.pub | head -1)
expect_exit 0 "the approval token verifies offline, bound to the approved plan bytes and to the ledger" \
	"$VERIFY" token - --aud tf-prod --key "$KEY" --subject "$S/plan.tfplan" --ledger "$S/ledger" <"$S/approve.token"
printf 'other bytes\n' >"$T/other.tfplan"
expect_exit 1 "... and is refused for other bytes" \
	"$VERIFY" token - --aud tf-prod --key "$KEY" --subject "$T/other.tfplan" <"$S/approve.token"
$PY - "$S/approve.token" "$KEY" >"$T/py.out" 2>&1 <<'PY'
import jwt, sys
print(jwt.decode(open(sys.argv[1]).read(), open(sys.argv[2]).read(), algorithms=["ES256"], audience="tf-prod")["session_id"])
PY
check "Python's jwt module accepts the token the gateway issued" grep -q '^req-' "$T/py.out"

# The daemon outlived the bridge; its workers are jailed.
PID=$(daemon_pid "$S")
check "the daemon outlives the bridge that started it" kill -0 "$PID"
workers=$(pgrep -P "$PID" | tr '\n' ' ')
check "the daemon runs two workers and the recorder" test "$(echo $workers | wc -w)" -eq 3
for w in $workers; do
	st=/proc/$w/status
	check "worker $w: Seccomp: 2 (filter)" grep -qP '^Seccomp:\t2$' "$st"
	check "worker $w: NoNewPrivs: 1" grep -qP '^NoNewPrivs:\t1$' "$st"
	if [ "$(id -u)" -eq 0 ]; then
		check "worker $w: not running as root" sh -c "! grep -qP '^Uid:\t0' $st"
	fi
	check "worker $w: empty environment" test ! -s "/proc/$w/environ"
	check "worker $w: no key file open" sh -c "! ls -l /proc/$w/fd 2>/dev/null | grep -q keys/"
done

# Single-user: refused without the opt-in, accepted and recorded as same-user with it.
SOLO=$T/solo
"$ASSENT" --state "$SOLO" reviewer add tester --uid "$(id -u)" >/dev/null
"$ASSENTD" --state "$SOLO" >/dev/null 2>"$T/solo.log" &
for _ in $(seq 100); do [ -S "$SOLO/control.sock" ] && break; sleep 0.05; done
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"request_feedback","arguments":{"type":"approval","message":"solo","timeout_override":5}}}' |
	(cat; sleep 7) | "$ASSENTD" --stdio --state "$SOLO" >"$T/solo.out" &
BRIDGE=$!
for _ in $(seq 100); do id=$("$ASSENT" --state "$SOLO" pending --json 2>/dev/null | $PY -c 'import json,sys; r=json.load(sys.stdin); print(r[0]["session_id"] if r else "")'); [ -n "$id" ] && break; sleep 0.05; done
expect_exit 1 "a decision from the requester's own uid is refused without single-user mode" "$ASSENT" --state "$SOLO" approve "$id"
expect_err "single-user|itself" "... saying why"
wait "$BRIDGE"
check "the refused request then timed out for the agent" grep -q '"status":"timeout"' "$T/solo.out"

kill "$PID" 2>/dev/null
for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done
expect_exit 0 "after a clean stop the ledger verifies" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
done_testing
