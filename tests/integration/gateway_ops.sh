#!/usr/bin/env bash
# Operating the daemon (issue 12, 8): the control socket opened to a reviewers' group
# (ASSENT_CONTROL_GROUP) at every start; a refused socket reported as such, not as a
# missing daemon; `assent` never dies of SIGPIPE on a daemon that hangs up; what a
# reviewer types reaches the ledger with secrets replaced; FEEDBACK_LOG_LEVEL is
# honoured and refusals are logged with who and why.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
info() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$1/assentd.json" "$2" 2>/dev/null; }
daemons=()
cleanup() {
	for p in "${daemons[@]}"; do kill "$p" 2>/dev/null; done
	sleep 0.2
	[ "$(id -u)" -eq 0 ] && groupdel assent-revtest 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
start() { # STATE [env...]
	local st=$1
	shift
	mkdir -p "$st"
	rm -f "$st/assentd.json" # the last daemon's: its port is not this one's
	env "$@" "$ASSENTD" --state "$st" >"$st.log" 2>&1 &
	daemons+=($!)
	for _ in $(seq 200); do [ -n "$(info "$st" http)" ] && break; sleep 0.05; done
}
stop_last() {
	local p=${daemons[-1]}
	kill "$p"
	for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
}

# ---- FEEDBACK_LOG_LEVEL ----
expect_exit 2 "FEEDBACK_LOG_LEVEL=loud is refused at start" env FEEDBACK_LOG_LEVEL=loud "$ASSENTD" --state "$T/bad"
check "... naming the variable and what it takes" sh -c "printf '%s' \"\$1\" | grep -q 'FEEDBACK_LOG_LEVEL: expected DEBUG, INFO, WARNING or ERROR'" _ "$ERR"
S=$T/s
KEY=$("$ASSENT" --state "$S" agent add ci | tail -1)
"$ASSENT" --state "$S" reviewer add rev --uid "$(id -u)" >/dev/null
start "$S" FEEDBACK_LOG_LEVEL=warning
H=$(info "$S" http)
$PY "$ROOT/tests/integration/http_agent.py" "$H" "ak_not-a-key-of-ours" "x" >/dev/null 2>&1
check "FEEDBACK_LOG_LEVEL=warning: no info lines in the log" sh -c "! grep -q '\"level\":\"info\"' '$S.log'"
check "a bad API key is logged with what was measured" grep -q 'an HTTP agent refused (loopback, uid [0-9]*): invalid or revoked API key' "$S.log"
stop_last
start "$S"
H=$(info "$S" http)
check "the default level (INFO) writes info lines" sh -c "sleep 0.3; grep -q '\"level\":\"info\"' '$S.log'"

# ---- a refused decision is logged; what a reviewer types is redacted in the ledger ----
if [ "$(id -u)" -eq 0 ]; then
	open_agent_sock "$S"
	OUT=$("${AGENT_PREFIX[@]}" $PY "$ROOT/tests/integration/http_agent.py" "$H" "$KEY" "rotate the database password")
	SID=$(printf '%s' "$OUT" | $PY -c 'import json,sys; print(json.loads(sys.stdin.read()).get("session_id") or "")')
	check "an agent (uid $AGENT_UID) asks" test -n "$SID"
	expect_exit 1 "selecting an option of an approval is refused" "$ASSENT" --state "$S" select "$SID" 1
	check "... and the refusal is logged with who, the channel and why" \
		grep -q "decision selected on $SID by rev (cli, uid 0) refused: a approval request cannot be selected" "$S.log"
	expect_exit 0 "rev rejects with a comment that quotes secrets" "$ASSENT" --state "$S" reject "$SID" \
		-m "no: password=hunter2 and token ghp_abcdefghijklmnopqrstuvwxyz0123456789 are in the diff"
	stop_last
	"$VERIFY" export "$S/ledger" >"$T/export.jsonl"
	check "the ledger's response has the secrets replaced" \
		$PY "$ROOT/tests/integration/entry_check.py" "$T/export.jsonl" decision "$SID" "'hunter2' not in e['response'] and 'ghp_abc' not in e['response'] and '[REDACTED]' in e['response'] and e['response'].startswith('no: ')"
	check "no secret anywhere in the ledger" sh -c "! grep -q 'hunter2\|ghp_abcdef' '$T/export.jsonl'"
else
	ok "# SKIP not root: no second Unix user for the agent"
fi

# ---- ASSENT_CONTROL_GROUP; a refused socket is not a missing daemon ----
if [ "$(id -u)" -eq 0 ]; then
	groupadd assent-revtest
	GID=$(getent group assent-revtest | cut -d: -f3)
	S2=$T/g
	"$ASSENT" --state "$S2" reviewer add nob --uid 65534 >/dev/null
	start "$S2" ASSENT_CONTROL_GROUP=assent-revtest
	chmod o+x "$T"
	check "ASSENT_CONTROL_GROUP: control.sock is mode 0660, group assent-revtest, at start" \
		sh -c "[ \"\$(stat -c '%a %G' '$S2/control.sock')\" = '660 assent-revtest' ]"
	check "... and the state directory lets the group reach it, no more (0710)" \
		sh -c "[ \"\$(stat -c '%a %G' '$S2')\" = '710 assent-revtest' ]"
	expect_exit 0 "a reviewer in the group runs assent pending" \
		setpriv --reuid=65534 --regid=65534 --groups="$GID" "$ASSENT" --state "$S2" pending
	expect_exit 2 "a user outside the group is refused" setpriv --reuid=65534 --regid=65534 --clear-groups "$ASSENT" --state "$S2" pending
	expect_err "permission denied on .*control.sock: uid 65534 may not reach this daemon" "... told permission denied, not that no daemon answers"
	stop_last
	start "$S2" ASSENT_CONTROL_GROUP=assent-revtest
	check "after a restart the socket is the group's again" \
		sh -c "[ \"\$(stat -c '%a %G' '$S2/control.sock')\" = '660 assent-revtest' ]"
	stop_last
	expect_exit 2 "ASSENT_CONTROL_GROUP naming no group stops the daemon at start" \
		env ASSENT_CONTROL_GROUP=no-such-group-here "$ASSENTD" --state "$T/g2"
	check "... naming the variable" sh -c "printf '%s' \"\$1\" | grep -q \"ASSENT_CONTROL_GROUP 'no-such-group-here': no such group\"" _ "$ERR"
else
	ok "# SKIP not root: cannot make a group and a second user"
fi

# ---- a client that pipelines thousands of calls and reads nothing ----
S3=$T/flood
"$ASSENT" --state "$S3" reviewer add rev --uid "$(id -u)" >/dev/null
start "$S3" ASSENT_SINGLE_USER=1
timeout 120 $PY "$ROOT/tests/integration/pipeline_flood.py" "$ASSENTD" "$S3" >"$T/flood.out" 2>&1
check "a stdio agent pipelining 3,000 calls without reading them does not get the mcp worker killed" \
	sh -c "! grep -q 'socket is stuck' '$S3.log' && ! grep -q 'bridge closed' '$T/flood.out'"
expect_exit 0 "... and the daemon still serves: assent pending lists the 90 requests" "$ASSENT" --state "$S3" pending --json
check "... all of them" sh -c "printf '%s' \"\$1\" | $PY -c 'import json,sys; sys.exit(0 if len(json.load(sys.stdin)) == 90 else 1)'" _ "$OUT"
stop_last

# ---- a daemon that hangs up: an error, never a death by SIGPIPE ----
F=$T/fake
mkdir -p "$F"
$PY -c '
import socket, sys, os
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1] + "/control.sock"); s.listen(64)
print("ready", flush=True)
while True:
    c, _ = s.accept(); c.close()
' "$F" >"$T/fake.out" &
FAKE=$!
for _ in $(seq 100); do [ -S "$F/control.sock" ] && break; sleep 0.05; done
bad=0
for _ in $(seq 30); do
	"$ASSENT" --state "$F" status >/dev/null 2>&1
	rc=$?
	[ "$rc" -eq 2 ] || bad=$((bad + 1))
done
kill "$FAKE" 2>/dev/null
check "assent status against a daemon that hangs up at once: exit 2 every time, never SIGPIPE ($bad of 30 other)" test "$bad" -eq 0
# A state directory with no reviewer says so, loudly: on the bridge's stderr, in the log, and in
# request_feedback's answer (a first run that starts a second daemon elsewhere must not look slow).
NR=$T/noreviewer
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"request_feedback","arguments":{"type":"approval","message":"anyone?","wait":false}}}' |
	(cat; sleep 1.5) | "$ASSENTD" --stdio --state "$NR" >"$T/nr.out" 2>"$T/nr.err"
check "no reviewer: the bridge warns on its stderr, naming the command that adds one" \
	grep -q "WARNING: no reviewer is registered for $NR.*reviewer add NAME" "$T/nr.err"
check "... request_feedback's answer says so" grep -q 'no reviewer is registered for this state directory' "$T/nr.out"
check "... and the daemon's log" grep -q 'no reviewer is registered for this state directory' "$NR/assentd.log"
p=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$NR/assentd.json" 2>/dev/null)
[ -n "$p" ] && kill "$p" 2>/dev/null

# Every line of the daemon's log is one JSON object with a level; a worker's carry its name, and
# a worker's own word is never a security event (gateway_evil checks those the signer writes).
for l in "$S.log" "$S3.log"; do
	check "every line of $(basename "$l") is JSON with a level (debug, info, warning, error, security)" \
		$PY -c 'import json,sys
for n, line in enumerate(open(sys.argv[1]), 1):
    if not line.strip(): continue
    j = json.loads(line)
    assert j.get("level") in ("debug", "info", "warning", "error", "security"), (n, line)
    assert "worker" not in j or j["level"] != "security", (n, line)' "$l"
done
check "a worker's line names its worker" grep -q '"worker":"recorder"' "$S3.log"
done_testing
