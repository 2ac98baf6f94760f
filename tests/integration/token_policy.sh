#!/usr/bin/env bash
# A token says no more than the policy allowed (issue 12, section 5): an allow rule that
# names no audience issues tokens for the default audience only; a stdio agent asks for
# the default audience unless registered by uid (assent agent add NAME --uid UID
# --audience A); with policy/examples.policy and with a tiny policy. And an agent's
# owner (assent agent add NAME --owner REVIEWER) never decides its requests, in the
# terminal or on the web. Real daemons, real bridges: token_policy.py drives them.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
pid_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
DIRS=()
cleanup() { for d in "${DIRS[@]}"; do p=$(pid_of "$d"); [ -n "$p" ] && kill "$p" 2>/dev/null; done; sleep 0.2; rm -rf "$T"; }
trap cleanup EXIT
start() { # DIR POLICY [ENV=V...]: a daemon on DIR with POLICY, up when its agent socket is
	local d=$1 pol=$2
	shift 2
	DIRS+=("$d")
	mkdir -p "$d"
	env "$@" "$ASSENTD" --state "$d" --policy "$pol" >"$d.log" 2>&1 &
	for _ in $(seq 200); do [ -S "$d/agent.sock" ] && [ -f "$d/assentd.json" ] && return 0; sleep 0.05; done
	not_ok "the daemon on $d did not start: $(tail -3 "$d.log")"
	return 1
}
stop() { local p; p=$(pid_of "$1"); [ -n "$p" ] && kill "$p"; for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done; }
run_py() { # SUBCOMMAND DIR ARGS...: the driver's TAP lines become ours
	local sub=$1 d=$2
	shift 2
	TEST_POLICY=$(sed -n 's/.*"policy": "\(.*\)".*/\1/p' "$d/assentd.json") \
		$PY "$ROOT/tests/integration/token_policy.py" "$sub" "$d" "$ROOT/build" "$@" >"$T/$sub.tap" 2>"$T/$sub.err"
	local rc=$?
	while read -r line; do
		case "$line" in
		"ok "*) ok "$sub: ${line#ok * - }" ;;
		"not ok "*) not_ok "$sub: ${line#not ok * - }" ;;
		esac
	done <"$T/$sub.tap"
	[ "$rc" -eq 0 ] || not_ok "token_policy.py $sub exited $rc: $(tail -3 "$T/$sub.err")"
}

E=$T/examples
# tester lists the queue: in group release, it may see what the ci-bot production rule asks
# (a reviewer sees only what they may decide).
"$ASSENT" --state "$E" reviewer add tester --uid "$(id -u)" --group release >/dev/null
start "$E" "$ROOT/policy/examples.policy" && run_py examples "$E"
stop "$E"
expect_exit 0 "the examples' ledger verifies" "$VERIFY" ledger "$E/ledger" --key "$E/keys/checkpoint.pub"

Y=$T/tiny
printf 'allow type approval\ndefault deny reason "nothing else"\n' >"$T/tiny.policy"
start "$Y" "$T/tiny.policy" && run_py tiny "$Y"

O=$T/owner
"$ASSENT" --state "$O" reviewer add tester --uid "$(id -u)" >/dev/null
TW=$("$ASSENT" --state "$O" reviewer token tester | tail -1)
BW=$("$ASSENT" --state "$O" reviewer add bob --web | tail -1)
expect_exit 1 "--owner must name a registered reviewer" "$ASSENT" --state "$O" agent add x --uid 4242 --owner nobody-here
expect_exit 0 "assent agent add mine --uid UID --owner tester" "$ASSENT" --state "$O" agent add mine --uid "$(id -u)" --owner tester
check "assent agent list shows the owner" sh -c "'$ASSENT' --state '$O' agent list --json | grep -q '\"owner\": \"tester\"'"
expect_exit 1 "one uid is one stdio agent" "$ASSENT" --state "$O" agent add other --uid "$(id -u)"
HK=$("$ASSENT" --state "$O" agent add http-bot --owner tester --audience deploy | tail -1)
printf 'default ask same-user ok\n' >"$T/owner.policy"
start "$O" "$T/owner.policy" ASSENT_SINGLE_USER=1 FEEDBACK_ALLOW_ANONYMOUS=true && run_py owner "$O" "$TW" "$BW" "$HK"
stop "$O"
"$VERIFY" export "$O/ledger" >"$T/owner.jsonl"
check "the decision on the ledger is bob's, not the owner's" sh -c "grep '\"kind\":\"decision\"' '$T/owner.jsonl' | grep -q '\"name\":\"bob\"' && ! grep '\"kind\":\"decision\"' '$T/owner.jsonl' | grep -q '\"name\":\"tester\"'"
done_testing
