#!/usr/bin/env bash
# Multi-round input (MCP 2026-07-28): the policy lets the client channel answer inputs
# and selections (and names it for approvals too, which must still never go that way).
. "$(dirname "$0")/../lib.sh"
S=$T/state
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$S/assentd.json" 2>/dev/null; }
http_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("http") or "")' "$S/assentd.json" 2>/dev/null; }
trap 'p=$(daemon_pid); [ -n "$p" ] && kill "$p" 2>/dev/null; sleep 0.2; rm -rf "$T"' EXIT
cat >"$T/mrtr.policy" <<'POL'
ask type input channels terminal,web,client same-user ok
ask type selection channels terminal,web,client
ask type approval channels terminal,web,client
default ask
POL
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
KEY_A=$("$ASSENT" --state "$S" agent add mrtr-a | tail -1)
KEY_B=$("$ASSENT" --state "$S" agent add mrtr-b | tail -1)
ASSENT_SINGLE_USER=1 "$ROOT/build/assentd" --state "$S" --policy "$T/mrtr.policy" >"$T/daemon.log" 2>&1 &
for _ in $(seq 100); do [ -n "$(http_of)" ] && break; sleep 0.05; done
if [ -z "$(http_of)" ]; then
	not_ok "the daemon did not open its HTTP listener: $(tail -3 "$T/daemon.log")"
	done_testing
	exit 1
fi
$PY "$ROOT/tests/integration/gateway_mrtr.py" "$S" "$(http_of)" "$KEY_A" "$KEY_B" "$ROOT/build" >"$T/py.tap" 2>"$T/py.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	esac
done <"$T/py.tap"
[ "$rc" -eq 0 ] || not_ok "the multi-round driver exited $rc: $(tail -3 "$T/py.err")"
check "the refused states were logged as refused" grep -q "multi-round input refused" "$T/daemon.log"
expect_exit 0 "the ledger verifies with self-attested answers in it" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
done_testing
