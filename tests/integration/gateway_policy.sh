#!/usr/bin/env bash
# The daemon with a policy (assentd --policy FILE): allowed at once with a token that
# cites the rule, denied with the reason, asked of the reviewers the rule names, a
# deadline that denies; reload on SIGHUP (a bad file keeps the old policy); a policy
# the daemon cannot enforce in full is refused at start. Through the official SDK.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$S/assentd.json" 2>/dev/null; }
cleanup() { p=$(daemon_pid); [ -n "$p" ] && kill "$p" 2>/dev/null; sleep 0.2; rm -rf "$T"; }
trap cleanup EXIT
if [ ! -d "$ROOT/tests/mcp/node_modules/@modelcontextprotocol/sdk" ]; then
	not_ok "the MCP SDK is not installed in tests/mcp (make deps runs npm ci there)"
	done_testing
	exit 1
fi
cat >"$T/p.policy" <<'POL'
# the test's policy
allow type confirmation context.readonly = true token-ttl 120
deny message ~ "drop" reason "no drops here"
ask audience tf-prod reviewers alice deadline 60
ask type input deadline 2 on-timeout deny
ask audience db-prod reviewers group:dba quorum 2 same-user ok
ask type selection channels web deadline 2 same-user ok
ask type confirmation deadline 2
default ask same-user ok
POL
printf 'allow colour red\ndefault ask\n' >"$T/bad.policy"
expect_exit 2 "a policy with errors stops the daemon at start" env FEEDBACK_SSE_PORT=off "$ASSENTD" --state "$T/b" --policy "$T/bad.policy"
check "... naming file:line:column" sh -c "printf '%s' \"\$1\" | grep -q 'bad.policy:1:7: unknown word'" _ "$ERR"

"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" --group dba >/dev/null
# The stdio agent asks for tf-prod and db-prod: registered by its uid (else the default audience only).
"$ASSENT" --state "$S" agent add local --uid "$(id -u)" --audience tf-prod --audience db-prod >/dev/null
# A second person for the quorum: uid 65534 (nobody), reached by setpriv when this runs as root.
"$ASSENT" --state "$S" reviewer add bob --uid 65534 --group dba >/dev/null
mkdir -p "$S"
cp "$T/p.policy" "$T/live.policy"
ASSENT_SINGLE_USER=1 "$ASSENTD" --state "$S" --policy "$T/live.policy" >"$T/daemon.log" 2>&1 &
for _ in $(seq 100); do [ -S "$S/agent.sock" ] && break; sleep 0.05; done
if [ "$(id -u)" -eq 0 ]; then # let the second reviewer reach the control socket (the test's own dirs only)
	chmod 0711 "$T" "$S"
	chmod 0666 "$S/control.sock"
fi
node "$ROOT/tests/mcp/sdk_policy.mjs" "$S" "$ROOT/build" >"$T/sdk.tap" 2>"$T/sdk.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "SDK/policy: ${line#ok * - }" ;;
	"not ok "*) not_ok "SDK/policy: ${line#not ok * - }" ;;
	esac
done <"$T/sdk.tap"
[ "$rc" -eq 0 ] || not_ok "the SDK policy flows exited $rc: $(tail -3 "$T/sdk.err")"
node "$ROOT/tests/mcp/sdk_done_ring.mjs" "$S" "$ROOT/build" >"$T/ring.tap" 2>"$T/ring.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "SDK/answers kept: ${line#ok * - }" ;;
	"not ok "*) not_ok "SDK/answers kept: ${line#not ok * - }" ;;
	esac
done <"$T/ring.tap"
[ "$rc" -eq 0 ] || not_ok "the SDK answers-kept check exited $rc: $(tail -3 "$T/ring.err")"
KEY=$(ls "$S"/keys/token-*.pub | head -1)
expect_exit 0 "the policy's approval token verifies offline, against the ledger" \
	"$VERIFY" token - --aud assent --key "$KEY" --ledger "$S/ledger" <"$S/policy-allow.token"
$PY - "$S/policy-allow.token" "$KEY" >"$T/claims" 2>&1 <<'PY'
import jwt, sys
c = jwt.decode(open(sys.argv[1]).read(), open(sys.argv[2]).read(), algorithms=["ES256"], audience="assent")
print(c["assurance"], c["policy"]["rule"], len(c["policy"]["digest"]), c["exp"] - c["iat"])
PY
check "Python's jwt module reads it: assurance policy, rule line 2, the policy's digest, a 120 s lifetime" \
	grep -qx "policy line 2 64 120" "$T/claims"

# SIGHUP: a bad file leaves the running policy in force; a good one replaces it.
printf 'allow colour red\ndefault ask\n' >"$T/live.policy"
kill -HUP "$(daemon_pid)"
for _ in $(seq 50); do grep -q 'stays in force' "$T/daemon.log" && break; sleep 0.1; done
check "SIGHUP with a bad policy: an error, and the policy loaded before stays in force" grep -q 'stays in force' "$T/daemon.log"
printf 'deny type approval reason "closed for the night"\ndefault ask\n' >"$T/live.policy"
kill -HUP "$(daemon_pid)"
for _ in $(seq 50); do [ "$(grep -c 'policy .* loaded' "$T/daemon.log")" -ge 2 ] && break; sleep 0.1; done
check "SIGHUP with a good policy loads it" test "$(grep -c 'policy .* loaded' "$T/daemon.log")" -ge 2
p=$(daemon_pid)
kill "$p"
for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
expect_exit 0 "the ledger verifies" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
"$VERIFY" export "$S/ledger" >"$T/export.jsonl"
$PY - "$T/export.jsonl" >"$T/kinds" <<'PY'
import json, sys
loads, cited, denied = 0, 0, 0
for line in open(sys.argv[1]):
    e = json.loads(line)["entry"]
    if e["kind"] == "policy_load":
        loads += 1
    if e["kind"] == "decision" and e.get("policy", {}).get("digest") and e["policy"].get("rule"):
        cited += 1
    if e["kind"] == "decision" and e.get("outcome") == "denied":
        denied += 1
print(loads, cited, denied)
PY
read -r loads cited denied <"$T/kinds"
check "each load is a policy_load entry with its source and digest ($loads)" test "$loads" -eq 2
check "decisions cite their rule and the policy's digest ($cited)" test "$cited" -ge 3
if [ "$(id -u)" -eq 0 ]; then
	check "the quorum's decision lists both approvers" grep -q '"approvers":\["tester","bob"\]' "$T/export.jsonl"
fi
check "the deny and the deadline that denies are denied decisions ($denied)" test "$denied" -eq 2
done_testing
