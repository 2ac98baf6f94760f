#!/usr/bin/env bash
# subscriptions/listen through the gate (MCP 2026-07-28, issue 29 section 1): assentd in front of
# an upstream whose tool list changes on a call (tests/mcp/upstream_listen.mjs), an allow-all
# policy, three agent keys; tests/mcp/sdk2_listen.mjs drives the official SDK 2.4 client and raw
# JSON-RPC over HTTP and over the stdio bridge (see its header for what is checked).
. "$(dirname "$0")/../lib.sh"
S=$T/state
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$S/assentd.json" 2>/dev/null; }
http_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("http") or "")' "$S/assentd.json" 2>/dev/null; }
trap 'p=$(daemon_pid); [ -n "$p" ] && kill "$p" 2>/dev/null; sleep 0.2; rm -rf "$T"' EXIT
[ -n "${KEEP_T:-}" ] && trap - EXIT
if [ ! -d "$ROOT/tests/mcp/node_modules/@modelcontextprotocol/client" ]; then
	not_ok "the SDK 2.x client is not installed in tests/mcp (make deps runs npm ci there)"
	done_testing
	exit 1
fi
NODE=$(command -v node)
cat >"$T/upstreams.json" <<-JSON
	{"mcpServers": {"lu": {"command": "$NODE", "args": ["$ROOT/tests/mcp/upstream_listen.mjs"]}}}
JSON
printf 'allow upstream "*"\ndefault allow\n' >"$T/policy"
KEY_A=$("$ASSENT" --state "$S" agent add listen-a | tail -1)
KEY_B=$("$ASSENT" --state "$S" agent add listen-b | tail -1)
KEY_C=$("$ASSENT" --state "$S" agent add listen-c | tail -1)
"$ROOT/build/assentd" --state "$S" --policy "$T/policy" --upstreams "$T/upstreams.json" >"$T/daemon.log" 2>&1 &
for _ in $(seq 600); do [ -n "$(http_of)" ] && grep -q "tools served" "$T/daemon.log" && break; sleep 0.05; done
if [ -z "$(http_of)" ]; then
	not_ok "the daemon did not open its HTTP listener: $(tail -3 "$T/daemon.log")"
	done_testing
	exit 1
fi
node "$ROOT/tests/mcp/sdk2_listen.mjs" "$ROOT/build" "$S" "http://$(http_of)/mcp" "$KEY_A" "$KEY_B" "$KEY_C" \
	>"$T/listen.tap" 2>"$T/listen.err"
rc=$?
while IFS= read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	esac
done <"$T/listen.tap"
grep -q '^1\.\.' "$T/listen.tap" || not_ok "sdk2_listen.mjs stopped before its plan (exit $rc): $(tail -3 "$T/listen.err")"
check "no worker was restarted or killed meanwhile" sh -c "! grep -Eq 'SIGSYS|worker .* (died|exited)' '$T/daemon.log'"
done_testing
