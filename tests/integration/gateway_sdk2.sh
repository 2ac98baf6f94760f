#!/usr/bin/env bash
# The official SDK 2.x client (@modelcontextprotocol/client 2.4, tests/mcp/sdk2_flows.mjs)
# against one running assentd: pinned to 2026-07-28, legacy (2025 initialize) and auto,
# each over stdio (the assentd --stdio bridge) and Streamable HTTP (an agent key); a task
# approved after 90 s reaches a client at the SDK's default 60 s timeout (2025-11-25 tasks
# through the SDK client, the 2026-07-28 extension through raw JSON-RPC: the test takes about
# 95 s for them) and is "not found" for another agent; every approval's token verifies
# offline against the ledger.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
http_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("http") or "")' "$1/assentd.json" 2>/dev/null; }
cleanup() { p=$(daemon_pid "$S"); [ -n "$p" ] && kill "$p" 2>/dev/null; sleep 0.2; rm -rf "$T"; }
trap cleanup EXIT
[ -n "${KEEP_T:-}" ] && trap - EXIT

if [ ! -d "$ROOT/tests/mcp/node_modules/@modelcontextprotocol/client" ]; then
	not_ok "the SDK 2.x client is not installed in tests/mcp (make deps runs npm ci there)"
	done_testing
	exit 1
fi
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
KEY=$("$ASSENT" --state "$S" agent add sdk2-agent | tail -1)
OTHER=$("$ASSENT" --state "$S" agent add sdk2-other | tail -1)
check "agent add prints an API key" test "${#KEY}" -ge 40
mkdir -p "$S"
ASSENT_SINGLE_USER=1 "$ASSENTD" --state "$S" >"$S.log" 2>&1 & # the agents and the reviewer are one uid here
for _ in $(seq 100); do [ -n "$(http_of "$S")" ] && break; sleep 0.05; done
if [ -z "$(http_of "$S")" ]; then
	not_ok "the daemon did not open its HTTP listener: $(tail -3 "$S.log")"
	done_testing
	exit 1
fi
URL="http://$(http_of "$S")/mcp"
# The 2.x client declares Node >= 20: the system's node runs it, as it runs the 1.x flows.
node "$ROOT/tests/mcp/sdk2_flows.mjs" "$S" "$ROOT/build" "$URL" "$KEY" "$OTHER" >"$T/sdk2.tap" 2>"$T/sdk2.err"
rc=$?
while IFS= read -r line; do
	case "$line" in
	"ok "*) ok "SDK 2.4: ${line#ok * - }" ;;
	"not ok "*) not_ok "SDK 2.4: ${line#not ok * - }" ;;
	esac
done <"$T/sdk2.tap"
grep -q '^1\.\.' "$T/sdk2.tap" || not_ok "sdk2_flows.mjs stopped before its plan (exit $rc): $(tail -3 "$T/sdk2.err")"

KEYPUB=$(ls "$S"/keys/token-*.pub | head -1)
for tr in stdio http; do
	for mode in legacy auto pin-2026-07-28 task $([ $tr = http ] && echo modern-task); do
		f=$S/sdk2-$tr-$mode.token
		if [ -s "$f" ]; then
			expect_exit 0 "SDK 2.4 $tr $mode: the approval token verifies offline, against the ledger" \
				"$VERIFY" token - --aud assent --key "$KEYPUB" --ledger "$S/ledger" <"$f"
		else
			not_ok "SDK 2.4 $tr $mode: no approval token to verify (the approval flow failed)"
		fi
	done
done
done_testing
