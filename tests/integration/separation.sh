#!/usr/bin/env bash
# Separation of duties on every channel (issue 12, 1): whoever made a request never
# decides it. An HTTP agent on loopback is measured by the signer (the kernel's owner
# of its connection), recorded as requester.uid, and held to the same-person rule as a
# stdio agent: a reviewer whose uid it runs as is refused in the terminal and on the
# web; a reviewer registered without a uid decides a request from a uid that is no
# reviewer's; a request from the daemon's own uid is same-user for everybody, refused
# without single-user mode and recorded as such with it. Needs a second Unix user
# (uid 65534 through setpriv): as root only.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
if [ "$(id -u)" -ne 0 ]; then
	ok "# SKIP not root: no second Unix user to run an agent as"
	done_testing
	exit 0
fi
info() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$1/assentd.json" "$2" 2>/dev/null; }
daemons=()
cleanup() { for p in "${daemons[@]}"; do kill "$p" 2>/dev/null; done; sleep 0.2; rm -rf "$T"; }
trap cleanup EXIT
start() { # STATE [env...]: a daemon as root, the agents' socket and control socket open to uid 65534
	local st=$1
	shift
	mkdir -p "$st"
	env "$@" "$ASSENTD" --state "$st" >"$st.log" 2>&1 &
	daemons+=($!)
	for _ in $(seq 200); do [ -n "$(info "$st" review)" ] && [ -n "$(info "$st" http)" ] && break; sleep 0.05; done
	open_agent_sock "$st"
	chmod 0666 "$st/control.sock"
}
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
web_submit() { # STATE TOKEN SID: a web decision with a reviewer token; prints HTTP status and body
	curl -s -w ' %{http_code}' -X POST -H "Authorization: Bearer $2" -H 'Content-Type: application/json' \
		-d "{\"session_id\":\"$3\",\"approved\":true,\"response\":\"ok\"}" "http://$(info "$1" review)/feedback/submit"
}
answered() { # STATUS PATTERN REPLY: the reply ends with the HTTP status and matches the pattern
	case "$3" in *" $1") printf '%s' "$3" | grep -q -- "$2" ;; *) false ;; esac
}
sid_of() { $PY -c 'import json,sys; print(json.loads(sys.stdin.read()).get("session_id") or "")'; }

S=$T/s
# alice is a person with a Unix account (uid 65534) and a web token; bob reviews on the web only.
"$ASSENT" --state "$S" reviewer add alice --uid 65534 >/dev/null
ALICE=$("$ASSENT" --state "$S" reviewer token alice | tail -1)
BOB=$("$ASSENT" --state "$S" reviewer add bob --web | tail -1)
KEY=$("$ASSENT" --state "$S" agent add ci | tail -1)
start "$S"
H=$(info "$S" http)

# An agent with an API key that runs as alice's uid asks over HTTP.
OUT=$(as_nobody $PY "$ROOT/tests/integration/http_agent.py" "$H" "$KEY" "deploy as alice's own agent")
SID=$(printf '%s' "$OUT" | sid_of)
check "an HTTP agent running as uid 65534 makes a request ($OUT)" test -n "$SID"
expect_exit 1 "alice (uid 65534) cannot approve it in the terminal" as_nobody "$ASSENT" --state "$S" approve "$SID"
check "... told that it is her own request" sh -c "printf '%s' \"\$1\" | grep -q 'asked for $SID itself'" _ "$ERR"
R=$(web_submit "$S" "$ALICE" "$SID")
check "alice cannot approve it on the web either ($R)" answered 403 'cannot decide it' "$R"
R=$(web_submit "$S" "$BOB" "$SID")
check "bob (web, no uid) approves it: its uid is no reviewer of his ($R)" answered 200 '"ok":true' "$R"

# The same agent connecting to 127.0.0.1 from one of the host's other addresses (it binds
# its source address): still a local process, still measured, still refused to alice.
SRC=$(ip -4 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -1)
if [ -n "$SRC" ]; then
	OUT=$(ASSENT_TEST_SOURCE_ADDR=$SRC as_nobody $PY "$ROOT/tests/integration/http_agent.py" "$H" "$KEY" "from $SRC")
	SID5=$(printf '%s' "$OUT" | sid_of)
	check "an HTTP agent as uid 65534 connecting from $SRC makes a request" test -n "$SID5"
	expect_exit 1 "... which alice cannot approve: measured as uid 65534, not taken for a remote peer" \
		as_nobody "$ASSENT" --state "$S" approve "$SID5"
	check "... told that it is her own request" sh -c "printf '%s' \"\$1\" | grep -q 'asked for $SID5 itself'" _ "$ERR"
else
	ok "# SKIP this host has no address but loopback to connect from"
fi

# An agent running as the daemon's own uid (root here): it could read the keys and
# register any reviewer, so nobody decides its requests as another person.
OUT=$($PY "$ROOT/tests/integration/http_agent.py" "$H" "$KEY" "deploy as the daemon's own user")
SID2=$(printf '%s' "$OUT" | sid_of)
check "an HTTP agent running as the daemon's uid makes a request" test -n "$SID2"
R=$(web_submit "$S" "$BOB" "$SID2")
check "bob cannot approve a request from the daemon's own uid ($R)" answered 403 "daemon's own" "$R"
expect_exit 1 "nor alice in the terminal" as_nobody "$ASSENT" --state "$S" approve "$SID2"
check "... told why (the daemon's own uid)" sh -c "printf '%s' \"\$1\" | grep -q \"daemon's own\"" _ "$ERR"

# A stdio agent registered by uid (assent agent add NAME --uid UID) is named as that agent.
"$ASSENT" --state "$S" agent add localbot --uid 65534 --owner bob >/dev/null
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"request_feedback","arguments":{"type":"approval","message":"from localbot","wait":false}}}' |
	(cat; sleep 3) | as_nobody "$ROOT/build/assentd" --stdio --state "$S" >"$T/stdio.out" 2>"$T/stdio.err"
SID4=$($PY -c 'import json,sys
for l in open(sys.argv[1]):
    m = json.loads(l)
    if m.get("id") == 2: print(m["result"]["structuredContent"]["session_id"])' "$T/stdio.out" 2>/dev/null)
check "a stdio agent as uid 65534 asks ($SID4)" test -n "$SID4"
as_nobody "$ASSENT" --state "$S" show "$SID4" >"$T/show4.out" 2>&1
check "assent show names it as the agent registered for its uid, with the uid measured" \
	grep -qE '^from     agent localbot \(by its registered uid\), uid 65534 \(nobody\) measured, client sh/1 \(declared\)$' "$T/show4.out"

# bob owns the agent registered for uid 65534: a request of that uid is that agent's,
# whatever key it came with, so bob does not decide it.
OUT=$(as_nobody $PY "$ROOT/tests/integration/http_agent.py" "$H" "$KEY" "uid 65534 with key ci")
SID6=$(printf '%s' "$OUT" | sid_of)
R=$(web_submit "$S" "$BOB" "$SID6")
check "bob, owner of the agent registered for uid 65534, cannot decide its request made with another key ($R)" \
	answered 403 'is the owner of agent localbot' "$R"

# The ledger records what was measured: requester.uid beside the agent's key name.
"$ASSENT" --state "$S" reject "$SID2" -m "not from the daemon's user" >/dev/null 2>&1
kill "${daemons[0]}"
for _ in $(seq 100); do kill -0 "${daemons[0]}" 2>/dev/null || break; sleep 0.05; done
"$VERIFY" export "$S/ledger" >"$T/export.jsonl"
check "the request entry records requester.uid 65534, measured, beside agent ci" \
	$PY "$ROOT/tests/integration/entry_check.py" "$T/export.jsonl" request "$SID" "e['requester'].get('uid') == 65534 and e['requester'].get('agent') == 'ci'"
check "the stdio agent's request entry names agent localbot beside uid 65534" \
	$PY "$ROOT/tests/integration/entry_check.py" "$T/export.jsonl" request "$SID4" "e['requester'].get('uid') == 65534 and e['requester'].get('agent') == 'localbot'"
check "bob's decision is recorded with assurance reviewer" \
	$PY "$ROOT/tests/integration/entry_check.py" "$T/export.jsonl" decision "$SID" "e['reviewer']['name'] == 'bob' and e['assurance'] == 'reviewer'"

# Single-user mode: a request from the daemon's own uid may be decided, as same-user.
S2=$T/s2
BOB2=$("$ASSENT" --state "$S2" reviewer add bob --web | tail -1)
KEY2=$("$ASSENT" --state "$S2" agent add ci | tail -1)
start "$S2" ASSENT_SINGLE_USER=1
OUT=$($PY "$ROOT/tests/integration/http_agent.py" "$(info "$S2" http)" "$KEY2" "single-user deploy")
SID3=$(printf '%s' "$OUT" | sid_of)
R=$(web_submit "$S2" "$BOB2" "$SID3")
check "single-user mode: bob approves the daemon's own uid's request ($R)" answered 200 '"ok":true' "$R"
kill "${daemons[1]}"
for _ in $(seq 100); do kill -0 "${daemons[1]}" 2>/dev/null || break; sleep 0.05; done
"$VERIFY" export "$S2/ledger" >"$T/export2.jsonl"
check "... recorded as assurance same-user" \
	$PY "$ROOT/tests/integration/entry_check.py" "$T/export2.jsonl" decision "$SID3" "e['assurance'] == 'same-user'"
done_testing
