#!/usr/bin/env bash
# The Tasks extension's own client package (@modelcontextprotocol/ext-tasks 0.2.2) over the SDK
# 2.4 client against assentd over Streamable HTTP (issue 29, 1): request_feedback and a held
# gated call (tests/mcp/upstream_fs.mjs's echo behind the gate), each as a task in the
# 2026-07-28 and the 2025-11-25 era, approved after 70 s (tests/mcp/ext_tasks.mjs; ~75 s).
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
MCP=$ROOT/tests/mcp
S=$T/state
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
http_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("http") or "")' "$1/assentd.json" 2>/dev/null; }
cleanup() { p=$(daemon_pid "$S"); [ -n "$p" ] && kill "$p" 2>/dev/null; sleep 0.2; rm -rf "$T"; }
trap cleanup EXIT
[ -n "${KEEP_T:-}" ] && trap - EXIT

for need in "$MCP/node_modules/@modelcontextprotocol/client" "$MCP/node_modules/@modelcontextprotocol/ext-tasks"; do
	if [ ! -d "$need" ]; then
		not_ok "$(basename "$need") is not installed in tests/mcp (make deps runs npm ci there)"
		done_testing
		exit 1
	fi
done
mkdir -p "$S" "$T/root"
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
KEY=$("$ASSENT" --state "$S" agent add ext-tasks-agent | tail -1)
cat >"$T/up.json" <<JSON
{ "mcpServers": { "fs": { "command": "node", "args": ["$MCP/upstream_fs.mjs", "--root", "$T/root"],
  "env": { "UPSTREAM_SECRET": "ext-tasks-secret" } } } }
JSON
# One person decides everything, as the daemon's own uid (single-user mode).
printf 'default ask same-user ok\n' >"$T/ask.policy"
ASSENT_SINGLE_USER=1 "$ASSENTD" --state "$S" --policy "$T/ask.policy" --upstreams "$T/up.json" >"$S.log" 2>&1 &
for _ in $(seq 200); do [ -n "$(http_of "$S")" ] && break; sleep 0.05; done
if [ -z "$(http_of "$S")" ]; then
	not_ok "the daemon did not open its HTTP listener: $(tail -3 "$S.log")"
	done_testing
	exit 1
fi
timeout 300 node "$MCP/ext_tasks.mjs" "$S" "$ROOT/build" "http://$(http_of "$S")/mcp" "$KEY" fs__echo >"$T/ext.tap" 2>"$T/ext.err"
rc=$?
while IFS= read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	esac
done <"$T/ext.tap"
check "ext_tasks.mjs ran to its end (exit $rc; $(tail -c 300 "$T/ext.err" | tr '\n' ' '))" test "$rc" -eq 0
expect_exit 0 "the ledger verifies" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
done_testing
