#!/usr/bin/env bash
# The reviewer listener's refusals and a reviewer's rights (tests/integration/web_security.py),
# then the ledger: the web decision is recorded with channel web, and the token verifies.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
export ASSENT_REVIEW_PORT=0
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
review_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("review") or "")' "$1/assentd.json" 2>/dev/null; }
cleanup() { p=$(daemon_pid "$S"); [ -n "$p" ] && kill "$p" 2>/dev/null; sleep 0.2; rm -rf "$T"; }
trap cleanup EXIT
TOKEN_ALICE=$("$ASSENT" --state "$S" reviewer add alice --web --proxy-id alice@example.com | tail -1)
TOKEN_BOB=$("$ASSENT" --state "$S" reviewer add bob --web --proxy-id bob@example.com | tail -1)
OLD=$TOKEN_ALICE
TOKEN_ALICE=$("$ASSENT" --state "$S" reviewer token alice | tail -1) # a new token replaces the first
"$ASSENT" --state "$S" reviewer add carol --proxy-id alice@example.com >"$T/dup.out" 2>&1
check "a proxy identity belongs to one reviewer" grep -q "already belongs to reviewer alice" "$T/dup.out"
check "... and the refused reviewer is not added" sh -c "! '$ASSENT' --state '$S' reviewer list | grep -q carol"
ADMIN=$("$ASSENT" --state "$S" admin add ops | tail -1)
AGENT_KEY=$("$ASSENT" --state "$S" agent add ci | tail -1)
check "reviewer tokens start rt_, admin tokens at_" sh -c "case '$TOKEN_ALICE$ADMIN' in rt_*at_*) true;; *) false;; esac"
check "admin list names the admin, not its token" sh -c "'$ASSENT' --state '$S' admin list | grep -qx ops && ! grep -q '$ADMIN' '$S/identities.json'"
PROXY_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
mkdir -p "$S"
export ASSENT_HTTP_REQUEST_SECONDS=3 # the whole-request deadline, short for the trickling client
ASSENT_SINGLE_USER=$(agent_single_user) ASSENT_REVIEW_PROXY_SECRET=$PROXY_SECRET "$ASSENTD" --state "$S" >"$S.log" 2>&1 &
for _ in $(seq 100); do [ -n "$(review_of "$S")" ] && break; sleep 0.05; done
open_agent_sock "$S"
if [ -z "$(review_of "$S")" ]; then
	not_ok "the daemon did not open its reviewer listener: $(tail -3 "$S.log")"
	done_testing
	exit 1
fi
R="http://$(review_of "$S")"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Origin: $R" -H 'Content-Type: application/json' \
	-d "{\"token\":\"$OLD\"}" "$R/review/api/login")
check "a replaced web token no longer logs in ($code)" test "$code" = 401
TOKEN_ALICE=$TOKEN_ALICE TOKEN_BOB=$TOKEN_BOB ADMIN=$ADMIN AGENT_KEY=$AGENT_KEY PROXY_SECRET=$PROXY_SECRET \
	$PY "$ROOT/tests/integration/web_security.py" "$S" "$ROOT/build" >"$T/py.tap" 2>"$T/py.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	esac
done <"$T/py.tap"
[ "$rc" -eq 0 ] || not_ok "web_security.py exited $rc: $(tail -3 "$T/py.err")"
# A reviewer token is no session: logging out with one is refused, and the daemon stays up (the
# signer followed a NULL session here before and died).
code=$(curl -s -o "$T/logout.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN_BOB" \
	-H 'Content-Type: application/json' -d '{}' "$R/review/api/logout")
check "logout with a reviewer token is refused: no session to end ($code)" sh -c "test '$code' = 400 && grep -q 'no web session to end' '$T/logout.out'"
check "... and the daemon still serves" sh -c "kill -0 $(daemon_pid "$S") && curl -sf '$R/health' >/dev/null"
node "$ROOT/tests/mcp/sdk_review_mcp.mjs" "$S" "$ROOT/build" "$R/review/mcp" "$TOKEN_ALICE" "$AGENT_KEY" >"$T/sdk.tap" 2>"$T/sdk.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "reviewer MCP (SDK): ${line#ok * - }" ;;
	"not ok "*) not_ok "reviewer MCP (SDK): ${line#not ok * - }" ;;
	esac
done <"$T/sdk.tap"
[ "$rc" -eq 0 ] || not_ok "sdk_review_mcp.mjs exited $rc: $(tail -3 "$T/sdk.err")"
check "no security event in the log" sh -c "! grep -q 'security' '$S.log'"
p=$(daemon_pid "$S")
kill "$p"
for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
expect_exit 0 "the web-approved token verifies" "$VERIFY" token - --aud assent --key "$(ls "$S"/keys/token-*.pub | head -1)" --ledger "$S/ledger" <"$S/web-approve.token"
expect_exit 0 "the ledger verifies" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
"$VERIFY" export "$S/ledger" >"$T/export.jsonl"
check "the web decision is recorded with channel web and via session" grep -q '"channel":"web","name":"alice","via":"session"\|"name":"alice","channel":"web","via":"session"\|"via":"session"' "$T/export.jsonl"
check "the /feedback/submit decision is recorded as bob's, via token" grep -q '"name":"bob".*"via":"token"\|"via":"token".*"name":"bob"' "$T/export.jsonl"
done_testing
