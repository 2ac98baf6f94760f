#!/usr/bin/env bash
# MCP 2026-07-28 (stateless, over HTTP and stdio) and pending approvals as tasks: the
# extension's tasks through a raw client with two agent keys (gateway_stateless.py),
# then the 2025-11-25 tasks through the official SDK 1.x client, approved after 90 s
# (ASSENT_TASK_DELAY) while the client keeps its default 60 s request timeout.
. "$(dirname "$0")/../lib.sh"
S=$T/state
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$S/assentd.json" 2>/dev/null; }
http_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("http") or "")' "$S/assentd.json" 2>/dev/null; }
trap 'p=$(daemon_pid); [ -n "$p" ] && kill "$p" 2>/dev/null; sleep 0.2; rm -rf "$T"' EXIT
relay() { # FILE: a driver's TAP lines as ours
	while read -r line; do
		case "$line" in
		"ok "*) ok "$2${line#ok * - }" ;;
		"not ok "*) not_ok "$2${line#not ok * - }" ;;
		esac
	done <"$1"
}
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
KEY_A=$("$ASSENT" --state "$S" agent add task-a | tail -1)
KEY_B=$("$ASSENT" --state "$S" agent add task-b | tail -1)
mkdir -p "$S"
ASSENT_SINGLE_USER=1 "$ROOT/build/assentd" --state "$S" >"$T/daemon.log" 2>&1 &
for _ in $(seq 100); do [ -n "$(http_of)" ] && break; sleep 0.05; done
if [ -z "$(http_of)" ]; then
	not_ok "the daemon did not open its HTTP listener: $(tail -3 "$T/daemon.log")"
	done_testing
	exit 1
fi
$PY "$ROOT/tests/integration/gateway_stateless.py" "$S" "$(http_of)" "$KEY_A" "$KEY_B" "$ROOT/build" >"$T/py.tap" 2>"$T/py.err"
rc=$?
relay "$T/py.tap" ""
[ "$rc" -eq 0 ] || not_ok "the stateless driver exited $rc: $(tail -3 "$T/py.err")"
check "the task's approval token verifies against the ledger (assent-verify token --ledger)" \
	sh -c "'$VERIFY' token - --aud assent --jwks '$S/keys/jwks.json' --ledger '$S/ledger' <'$S/task.token' >/dev/null"
if [ -d "$ROOT/tests/mcp/node_modules/@modelcontextprotocol/sdk" ]; then
	(cd "$ROOT/tests/mcp" && node sdk_tasks.mjs "$S" "$ROOT/build" "${ASSENT_TASK_DELAY:-90}") >"$T/sdk.tap" 2>"$T/sdk.err"
	rc=$?
	relay "$T/sdk.tap" "SDK 1.x tasks: "
	[ "$rc" -eq 0 ] || not_ok "the SDK tasks flows exited $rc: $(tail -3 "$T/sdk.err")"
else
	not_ok "the MCP SDK is not installed in tests/mcp (make deps runs npm ci there)"
fi
expect_exit 0 "the ledger verifies after tasks made, decided and cancelled" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
done_testing
