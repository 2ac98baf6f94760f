#!/usr/bin/env bash
# Agents over HTTP: the official SDK client over Streamable HTTP with an agent key
# (every flow, a long wait on SSE, stdio and HTTP agents in one queue, refusals),
# anonymous access, and the older HTTP+SSE transport (the conformance suite against /mcp
# is tests/integration/conformance.sh).
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
http_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("http") or "")' "$1/assentd.json" 2>/dev/null; }
cleanup() { for d in "$S" "$T/anon"; do p=$(daemon_pid "$d"); [ -n "$p" ] && kill "$p" 2>/dev/null; done; sleep 0.2; rm -rf "$T"; }
trap cleanup EXIT
[ -n "${KEEP_T:-}" ] && trap - EXIT
start_daemon() { # DIR [ENV=VALUE...]: start assentd on DIR, wait for its HTTP listener
	local d=$1
	shift
	mkdir -p "$d"
	env "$@" "$ASSENTD" --state "$d" >"$d.log" 2>&1 &
	for _ in $(seq 100); do [ -n "$(http_of "$d")" ] && return 0; sleep 0.05; done
	return 1
}

if [ ! -d "$ROOT/tests/mcp/node_modules/@modelcontextprotocol/sdk" ]; then
	not_ok "the MCP SDK is not installed in tests/mcp (make deps runs npm ci there)"
	done_testing
	exit 1
fi
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
KEY=$("$ASSENT" --state "$S" agent add ci-agent --audience tf-prod | tail -1)
GONE=$("$ASSENT" --state "$S" agent add gone-agent | tail -1)
"$ASSENT" --state "$S" agent remove gone-agent >/dev/null
check "agent add prints an API key once" test "${#KEY}" -ge 40
check "the registry keeps only its hash" sh -c "! grep -q '$KEY' '$S/identities.json'"
if ! start_daemon "$S" ASSENT_SINGLE_USER=1; then # the stdio agent and the reviewer are one uid here
	not_ok "the daemon did not open its HTTP listener: $(tail -3 "$S.log")"
	done_testing
	exit 1
fi
URL="http://$(http_of "$S")/mcp"
node "$ROOT/tests/mcp/sdk_http_flows.mjs" "$S" "$ROOT/build" "$URL" "$KEY" "$GONE" >"$T/sdk.tap" 2>"$T/sdk.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "SDK/HTTP: ${line#ok * - }" ;;
	"not ok "*) not_ok "SDK/HTTP: ${line#not ok * - }" ;;
	esac
done <"$T/sdk.tap"
[ "$rc" -eq 0 ] || not_ok "the SDK HTTP flows exited $rc: $(tail -3 "$T/sdk.err")"
# ask URL [KEY]: a non-blocking request over HTTP (initialize, then request_feedback); prints nothing.
ask() {
	$PY - "$@" <<'PY'
import json, sys, urllib.request
url, key = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")
h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
if key: h["Authorization"] = "Bearer " + key
def post(body, extra={}):
    r = urllib.request.urlopen(urllib.request.Request(url, json.dumps(body).encode(), {**h, **extra}), timeout=30)
    return r.headers.get("Mcp-Session-Id"), r.read()
sid, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "sh-http", "version": "2"}}})
post({"jsonrpc": "2.0", "method": "notifications/initialized"}, {"Mcp-Session-Id": sid})
post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "request_feedback", "arguments": {"type": "approval", "message": "who asks?", "wait": False}}}, {"Mcp-Session-Id": sid})
PY
}
# show_first STATE: assent show of the first pending request.
show_first() {
	id=$("$ASSENT" --state "$1" pending --json | $PY -c 'import json,sys; print([r for r in json.load(sys.stdin) if r["message"] == "who asks?"][0]["session_id"])')
	"$ASSENT" --state "$1" show "$id"
}
ask "$URL" "$KEY" 2>"$T/ask.err"
show_first "$S" >"$T/show-agent.out" 2>&1
check "assent show names an HTTP agent by its key, not as uid 0" \
	grep -qE '^from     agent ci-agent \(by its API key\), uid [0-9]+( \([a-z0-9._-]+\))? measured, client sh-http/2 \(declared\)$' "$T/show-agent.out"
KEYPUB=$(ls "$S"/keys/token-*.pub | head -1)
expect_exit 0 "the token an HTTP agent received verifies, bound to the plan bytes and the ledger" \
	"$VERIFY" token - --aud tf-prod --key "$KEYPUB" --subject "$S/http-plan.bin" --ledger "$S/ledger" <"$S/http-approve.token"
p=$(daemon_pid "$S")
kill "$p"
for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
expect_exit 0 "the ledger verifies" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
"$VERIFY" export "$S/ledger" >"$T/export.jsonl"
check "HTTP requests are recorded with the agent's name as requester" grep -q '"agent":"ci-agent"' "$T/export.jsonl"

# Anonymous access on (loopback only), with the older HTTP+SSE endpoints. The conformance
# suite against anonymous /mcp is tests/integration/conformance.sh.
if [ -d "$ROOT/tests/mcp/node_modules/@modelcontextprotocol/sdk" ]; then
	if start_daemon "$T/anon" FEEDBACK_ALLOW_ANONYMOUS=true FEEDBACK_TRANSPORT=sse ASSENT_SINGLE_USER=1; then
		port=$(http_of "$T/anon")
		port=${port##*:}
		# FEEDBACK_TRANSPORT=sse: the older HTTP+SSE endpoints too, for clients configured with a /sse URL.
		"$ASSENT" --state "$T/anon" reviewer add tester --uid "$(id -u)" >/dev/null
		ask "http://127.0.0.1:$port/mcp" 2>"$T/ask-anon.err"
		show_first "$T/anon" >"$T/show-anon.out" 2>&1
		check "assent show names an anonymous HTTP client as such, not as uid 0" \
			grep -qE '^from     an anonymous HTTP client, uid [0-9]+( \([a-z0-9._-]+\))? measured, client sh-http/2 \(declared\)$' "$T/show-anon.out"
		node "$ROOT/tests/mcp/sdk_sse_legacy.mjs" "$T/anon" "$ROOT/build" "http://127.0.0.1:$port" >"$T/sse.tap" 2>"$T/sse.err"
		rc=$?
		while read -r line; do
			case "$line" in
			"ok "*) ok "SDK/SSE: ${line#ok * - }" ;;
			"not ok "*) not_ok "SDK/SSE: ${line#not ok * - }" ;;
			esac
		done <"$T/sse.tap"
		[ "$rc" -eq 0 ] || not_ok "the SDK SSE flows exited $rc: $(tail -3 "$T/sse.err")"
	else
		not_ok "the anonymous daemon did not start: $(tail -3 "$T/anon.log")"
	fi
else
	not_ok "the MCP SDK is not installed in tests/mcp (make deps runs npm ci there)"
fi
done_testing
