#!/usr/bin/env bash
# Pending requests survive a restart of the whole daemon (kill -9 of the signer and its
# workers): a wait:false request is still pending after it and its caller collects the
# decision with get_feedback, with a token assent-verify accepts; a quorum keeps the
# approval it had (an `approval` entry) and the same reviewer cannot approve twice; a
# deadline that passed while the daemon was down is a `timeout`; a blocking call whose
# connection went with the old process is `cancelled`; the ledger verifies after it all.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
export ASSENT_SINGLE_USER=1 # the agents and the first reviewer run as the daemon's own uid
AGENT=(env ASSENT_SINGLE_USER=1 ASSENT_TEST_POLICY="$T/p.policy" "$PY" "$ROOT/tests/integration/restart_agent.py" "$ROOT/build" "$S")
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$S/assentd.json" 2>/dev/null; }
pgid_of() { ps -o pgid= -p "$1" 2>/dev/null | tr -d ' '; }
in_group() { ps -eo pgid= | tr -d ' ' | grep -cx "$1"; }
cleanup() {
	p=$(daemon_pid)
	[ -n "$p" ] && kill "$p" 2>/dev/null
	[ -n "${HOLD:-}" ] && kill "$HOLD" 2>/dev/null
	sleep 0.2
	rm -rf "$T"
}
trap cleanup EXIT

# The daemon in a process group (and session) of its own, so that one kill reaches
# the signer and every worker it forked; it is up once it answers on its control socket.
start_daemon() { # OLD_PID (the run before, or empty)
	FEEDBACK_ALLOW_ANONYMOUS=true setsid "$ASSENTD" --state "$S" --policy "$T/p.policy" >>"$T/daemon.log" 2>&1 </dev/null &
	disown # its kill -9 is the test's, not a job's failure to report
	for _ in $(seq 400); do
		p=$(daemon_pid)
		[ -n "$p" ] && [ "$p" != "${1:-}" ] && "$ASSENT" --state "$S" status >/dev/null 2>&1 && break
		sleep 0.05
	done
	if [ "$(id -u)" -eq 0 ]; then # the second reviewer (uid 65534) reaches the control socket
		chmod 0711 "$T" "$S"
		chmod 0666 "$S/control.sock"
		open_agent_sock "$S"
	fi
}
json_field() { # FILE KEY: one field of a JSON line
	$PY -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2"
}
entries() { # KIND SID: how many entries of that kind the ledger holds for the request
	"$VERIFY" export "$S/ledger" | $PY -c '
import json, sys
print(sum(1 for l in sys.stdin if (e := json.loads(l)["entry"]).get("kind") == sys.argv[1] and e.get("session_id") == sys.argv[2]))' "$1" "$2"
}

cat >"$T/p.policy" <<'POL'
# the test's policy: a quorum of two people of group dba for one message, a person for the rest
ask message ~ "quorum" reviewers group:dba quorum 2 same-user ok
default ask same-user ok
POL
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" --group dba >/dev/null
"$ASSENT" --state "$S" reviewer add bob --uid 65534 --group dba >/dev/null
KEY=$("$ASSENT" --state "$S" agent add ci | tail -1) # an agent over HTTP, by its API key
KEY2=$("$ASSENT" --state "$S" agent add ci-other | tail -1) # another one
http_agent() { # KEY ("": anonymous) then restart_agent.py's arguments, over HTTP
	local k=$1
	shift
	ASSENT_TEST_HTTP=$(json_field "$S/assentd.json" http) ASSENT_TEST_KEY=$k "$PY" "$ROOT/tests/integration/restart_agent.py" "$ROOT/build" "$S" "$@"
}
review_mcp_pending() { # the same list over /review/mcp (list_pending_feedback, her token)
	$PY - "$(json_field "$S/assentd.json" review)" "$CAROL" <<'PY'
import http.client, json, sys
host, port = sys.argv[1].rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port), timeout=30)
c.request("POST", "/review/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
          "params": {"name": "list_pending_feedback", "arguments": {}}}),
          {"Authorization": f"Bearer {sys.argv[2]}", "Content-Type": "application/json",
           "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
r = c.getresponse()
data = r.read()
if "text/event-stream" in (r.getheader("Content-Type") or ""):
    data = [l[5:] for l in data.decode().splitlines() if l.startswith("data:")][-1].encode()
sc = ((json.loads(data or b"{}").get("result") or {}).get("structuredContent") or {})
print(r.status, " ".join(x.get("session_id", "") for x in sc.get("requests") or []))
PY
}
# A web reviewer outside group dba: the quorum's rule does not name her.
CAROL=$("$ASSENT" --state "$S" reviewer add carol --web | grep -o 'rt_[A-Za-z0-9_-]*' | head -1)
web_pending() { # the session ids on the web reviewer's pending list (/review/api/pending, her token)
	$PY - "$(json_field "$S/assentd.json" review)" "$CAROL" <<'PY'
import http.client, json, sys
host, port = sys.argv[1].rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port), timeout=30)
c.request("GET", "/review/api/pending", headers={"Authorization": f"Bearer {sys.argv[2]}"})
r = c.getresponse()
j = json.loads(r.read() or b"{}")
items = j.get("requests", [])
print(r.status, " ".join(x.get("session_id", "") for x in items if isinstance(x, dict)))
PY
}
start_daemon ""
P1=$(daemon_pid)

# ---- before the kill: four requests, one approval ----
"${AGENT[@]}" call request_feedback '{"type":"approval","message":"deploy after the restart","wait":false}' >"$T/a1.json"
SID1=$(json_field "$T/a1.json" session_id)
check "a wait:false request is pending (${SID1:-none})" test "$(json_field "$T/a1.json" status)" = pending
"${AGENT[@]}" call request_feedback '{"type":"approval","message":"a quorum of two","wait":false}' >"$T/a2.json"
SID2=$(json_field "$T/a2.json" session_id)
expect_exit 0 "the first of two approvals of the quorum is accepted" "$ASSENT" --state "$S" approve "$SID2"
check "... as approval 1 of 2 ($OUT)" sh -c "printf '%s' \"\$1\" | grep -q 'approval 1 of 2'" _ "$OUT"
check "the approval short of the quorum is an approval entry on the ledger" test "$(entries approval "$SID2")" -eq 1
"$VERIFY" export "$S/ledger" | grep "\"$SID2\"" | grep '"kind":"approval"' >"$T/approval.json"
check "... naming the reviewer, n 1 and quorum 2" grep -q '"n":1.*"quorum":2.*"name":"tester"\|"name":"tester".*"n":1.*"quorum":2' "$T/approval.json"
http_agent "$KEY" call request_feedback '{"type":"approval","message":"over HTTP, by key","wait":false}' >"$T/h1.json"
SIDH=$(json_field "$T/h1.json" session_id)
http_agent "" call request_feedback '{"type":"approval","message":"anonymous","wait":false}' >"$T/h2.json"
SIDA=$(json_field "$T/h2.json" session_id)
check "over HTTP, a wait:false request by API key and one by an anonymous client are pending (${SIDH:-none}, ${SIDA:-none})" \
	test "$(json_field "$T/h1.json" status)/$(json_field "$T/h2.json" status)" = pending/pending
"${AGENT[@]}" hold request_feedback '{"type":"approval","message":"a blocking call"}' >"$T/a4.json" &
HOLD=$!
for _ in $(seq 400); do
	"$ASSENT" --state "$S" pending --json >"$T/pending0.json" 2>/dev/null
	grep -q '"a blocking call"' "$T/pending0.json" && break
	sleep 0.05
done
SID4=$($PY -c 'import json,sys; print(next((r["session_id"] for r in json.load(open(sys.argv[1])) if r["message"] == "a blocking call"), ""))' "$T/pending0.json")
web_pending >"$T/web0.txt"
check "before the kill the web reviewer sees the first request, not the quorum's ($(cat "$T/web0.txt" | cut -c1-20)...)" \
	sh -c "grep -q '^200 .*$SID1' \"\$1\" && ! grep -q '$SID2' \"\$1\"" _ "$T/web0.txt"
# Two tasks: the 2025-11-25 kind through the SDK 1.x client over stdio, and the 2026-07-28
# extension's over HTTP by key.
SDKT=(env ASSENT_SINGLE_USER=1 node "$ROOT/tests/mcp/sdk_task_restart.mjs" "$S" "$ROOT/build" "$T/p.policy")
(cd "$ROOT/tests/mcp" && "${SDKT[@]}" create) >"$T/t5.json" 2>"$T/t5.err"
TID5=$(json_field "$T/t5.json" taskId)
check "an SDK client's request_feedback became a task, working (${TID5:-none} $(head -c 200 "$T/t5.err"))" \
	test "$(json_field "$T/t5.json" status)" = working
$PY "$ROOT/tests/integration/task26.py" "$(json_field "$S/assentd.json" http)" "$KEY" create >"$T/t6.json"
TID6=$(json_field "$T/t6.json" taskId)
check "a 2026-07-28 client's became a task of the extension, working (${TID6:-none})" test "$(json_field "$T/t6.json" status)" = working
# Last before the kill, so that its deadline (3 s) passes while the daemon is down.
"${AGENT[@]}" call request_feedback '{"type":"approval","message":"short deadline","wait":false,"timeout_override":3}' >"$T/a3.json"
SID3=$(json_field "$T/a3.json" session_id)
D3=$(json_field "$T/a3.json" deadline)
check "four requests pending before the kill (a blocking one: ${SID4:-none})" test -n "$SID1" -a -n "$SID2" -a -n "$SID3" -a -n "$SID4"

# ---- kill -9 of the whole daemon: the signer and its workers ----
G=$(pgid_of "$P1")
NPROC=$(in_group "$G")
kill -9 -- "-$G"
for _ in $(seq 200); do [ "$(in_group "$G")" -eq 0 ] && break; sleep 0.05; done
check "kill -9 took the signer and its workers ($NPROC processes in its group, none left)" test "$NPROC" -ge 3 -a "$(in_group "$G")" -eq 0
wait "$HOLD" 2>/dev/null
HOLD=
# The short deadline passes while no daemon runs, and the operator changes the policy:
# the pending requests keep the terms they were asked under (no quorum rule any more).
printf '# no quorum now\ndefault ask same-user ok\n' >"$T/p.policy"
for _ in $(seq 200); do [ "$(date +%s)" -gt "$((D3 + 1))" ] && break; sleep 0.1; done
start_daemon "$P1"
P2=$(daemon_pid)
check "a new daemon serves the state directory (pid $P2, was $P1)" test -n "$P2" -a "$P2" != "$P1"

# ---- after the restart ----
"$ASSENT" --state "$S" pending --json >"$T/pending1.json"
$PY - "$T/pending1.json" "$SID1" "$SID2" "$SID3" "$SID4" >"$T/pend.txt" <<'PY'
import json, sys
p = {r["session_id"]: r for r in json.load(open(sys.argv[1]))}
s1, s2, s3, s4 = sys.argv[2:]
print(int(s1 in p), int(s2 in p), int(s3 in p), int(s4 in p))
PY
read -r has1 has2 has3 has4 <"$T/pend.txt"
check "the wait:false request is pending again after the restart" test "$has1" -eq 1
check "the quorum's request is pending again" test "$has2" -eq 1
check "neither the request whose deadline passed nor the blocking call is pending" test "$has3$has4" = 00
expect_exit 0 "assent show finds the restored request" "$ASSENT" --state "$S" show "$SID1" --json
check "... with its message and its original deadline" sh -c "printf '%s' \"\$1\" | grep -q '\"deploy after the restart\"'" _ "$OUT"
"$ASSENT" --state "$S" show "$SID2" --json >"$T/show2.json"
APPROVALS=$($PY -c 'import json,sys; j=json.load(open(sys.argv[1])); print(",".join(j.get("request", j).get("approvals", [])))' "$T/show2.json")
check "the quorum's request shows the approval it had before the kill (approvals: $APPROVALS)" test "$APPROVALS" = tester
web_pending >"$T/web1.txt"
check "the web reviewer sees the restored request after the restart, and still not the quorum's (its terms kept)" \
	sh -c "grep -q '^200 .*$SID1' \"\$1\" && ! grep -q '$SID2' \"\$1\"" _ "$T/web1.txt"
review_mcp_pending >"$T/rmcp1.txt"
check "... and so over /review/mcp (list_pending_feedback: $(cut -c1-60 "$T/rmcp1.txt"))" \
	sh -c "grep -q '^200 .*$SID1' \"\$1\" && ! grep -q '$SID2' \"\$1\"" _ "$T/rmcp1.txt"

check "the request whose deadline passed while the daemon was down is ledgered timeout" test "$(entries timeout "$SID3")" -eq 1
"$VERIFY" export "$S/ledger" >"$T/export1.jsonl"
check "... saying so" grep -q "\"reason\":\"the deadline passed while the daemon was down\",\"session_id\":\"$SID3\"" "$T/export1.jsonl"
check "the blocking call pending at the kill is ledgered cancelled" test "$(entries cancelled "$SID4")" -eq 1
check "... because its caller's connection went with the previous run" grep -q "\"reason\":\"the daemon restarted: the caller's connection went with the previous run\",\"session_id\":\"$SID4\"" "$T/export1.jsonl"
check "the anonymous HTTP client's request is cancelled: its session was its only credential" \
	grep -q "\"reason\":\"the daemon restarted: an anonymous caller's session went with the previous run\",\"session_id\":\"$SIDA\"" "$T/export1.jsonl"
check "nothing is ledgered abandoned" test "$(grep -c '"kind":"abandoned"' "$T/export1.jsonl")" -eq 0
"${AGENT[@]}" call get_feedback "{\"session_id\":\"$SID3\",\"wait_seconds\":0}" >"$T/g3.json"
check "get_feedback on the timed-out request says timeout" test "$(json_field "$T/g3.json" status)" = timeout

if [ "$(id -u)" -eq 0 ]; then
	setpriv --reuid=65534 --regid=65534 --clear-groups env ASSENT_SINGLE_USER=1 ASSENT_TEST_POLICY="$T/p.policy" "$PY" "$ROOT/tests/integration/restart_agent.py" \
		"$ROOT/build" "$S" call get_feedback "{\"session_id\":\"$SID1\",\"wait_seconds\":0}" >"$T/other.json"
	check "another uid cannot collect the restored request ($(head -c 120 "$T/other.json"))" \
		sh -c "grep -q 'no request of yours' \"\$1\" && ! grep -q '\"status\"' \"\$1\"" _ "$T/other.json"
else
	ok "# SKIP another uid needs root (setpriv)"
fi
"${AGENT[@]}" call get_feedback "{\"session_id\":\"$SID1\",\"wait_seconds\":0}" >"$T/g1p.json"
check "its requester's get_feedback finds it still pending" test "$(json_field "$T/g1p.json" status)" = pending
expect_exit 0 "the reviewer approves the restored request" "$ASSENT" --state "$S" approve "$SID1" -m "after the restart"
"${AGENT[@]}" call get_feedback "{\"session_id\":\"$SID1\",\"wait_seconds\":5}" >"$T/g1.json"
check "get_feedback returns it approved" test "$(json_field "$T/g1.json" approved)" = True
json_field "$T/g1.json" approval_token >"$T/t1.jwt"
KEYS=$(ls "$S"/keys/token-*.pub)
expect_exit 0 "its token verifies offline against the ledger (assent-verify token --ledger)" \
	"$VERIFY" token - --aud assent --key $KEYS --ledger "$S/ledger" <"$T/t1.jwt"

# The tasks: still theirs after the restart, decided, collected with tasks/get.
(cd "$ROOT/tests/mcp" && "${SDKT[@]}" get "$TID5") >"$T/t5b.json" 2>>"$T/t5.err"
check "after the restart the SDK client's tasks/get on its task says working ($(head -c 120 "$T/t5b.json"))" \
	test "$(json_field "$T/t5b.json" status)" = working
expect_exit 0 "the reviewer approves the task's request" "$ASSENT" --state "$S" approve "$TID5" -m "task after restart"
(cd "$ROOT/tests/mcp" && "${SDKT[@]}" get "$TID5") >"$T/t5c.json" 2>>"$T/t5.err"
$PY -c 'import json,sys; r=json.load(open(sys.argv[1])).get("result") or {}; print(r.get("approval_token",""))' "$T/t5c.json" >"$T/t5.jwt"
check "the SDK client's tasks/get then says completed, tasks/result approved with a token ($(head -c 160 "$T/t5c.json"))" \
	sh -c "grep -q '\"status\":\"completed\"' '$T/t5c.json' && grep -q '\"approved\":true' '$T/t5c.json' && test -s '$T/t5.jwt'"
expect_exit 0 "the task's token verifies offline against the ledger (assent-verify token --ledger)" \
	"$VERIFY" token - --aud assent --key $KEYS --ledger "$S/ledger" <"$T/t5.jwt"
expect_exit 0 "the reviewer approves the 2026-07-28 task's request" "$ASSENT" --state "$S" approve "$TID6"
$PY "$ROOT/tests/integration/task26.py" "$(json_field "$S/assentd.json" http)" "$KEY" get "$TID6" >"$T/t6b.json"
check "its client's tasks/get after the restart: completed, the approval inlined ($(head -c 120 "$T/t6b.json"))" \
	sh -c "grep -q '\"status\": \"completed\"' '$T/t6b.json' && grep -q '\"approved\": true' '$T/t6b.json'"
$PY "$ROOT/tests/integration/task26.py" "$(json_field "$S/assentd.json" http)" "$KEY2" get "$TID6" >"$T/t6c.json"
check "another agent's tasks/get on it after the restart: not found ($(head -c 120 "$T/t6c.json"))" grep -q 'no task of yours' "$T/t6c.json"

expect_exit 1 "the first reviewer approving the quorum's request again after the restart is refused (its quorum kept under the new policy)" \
	"$ASSENT" --state "$S" approve "$SID2"
check "... as approved already" sh -c "printf '%s' \"\$1\" | grep -q 'approved' && printf '%s' \"\$1\" | grep -q already" _ "$ERR"
check "... and no decision was recorded" test "$(entries decision "$SID2")" -eq 0
if [ "$(id -u)" -eq 0 ]; then
	expect_exit 0 "a second reviewer's approval completes the quorum" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$ASSENT" --state "$S" approve "$SID2"
	"${AGENT[@]}" call get_feedback "{\"session_id\":\"$SID2\",\"wait_seconds\":5}" >"$T/g2.json"
	check "get_feedback returns the quorum's request approved by bob" \
		test "$(json_field "$T/g2.json" approved)/$(json_field "$T/g2.json" reviewer)" = True/bob
	json_field "$T/g2.json" approval_token >"$T/t2.jwt"
	expect_exit 0 "its token verifies against the ledger" \
		"$VERIFY" token - --aud assent --key $KEYS --ledger "$S/ledger" <"$T/t2.jwt"
	"$VERIFY" export "$S/ledger" | grep "\"$SID2\"" | grep '"kind":"decision"' >"$T/dec2.json"
	check "the decision lists both approvers, the one from before the kill first" grep -q '"approvers":\["tester","bob"\]' "$T/dec2.json"
else
	ok "# SKIP the second reviewer needs another uid (run as root)"
fi

http_agent "" call get_feedback "{\"session_id\":\"$SIDH\",\"wait_seconds\":0}" >"$T/gh0.json"
check "an anonymous client cannot collect the agent's restored request" grep -q 'no request of yours' "$T/gh0.json"
expect_exit 0 "the reviewer approves the HTTP agent's restored request" "$ASSENT" --state "$S" approve "$SIDH"
http_agent "$KEY" call get_feedback "{\"session_id\":\"$SIDH\",\"wait_seconds\":5}" >"$T/gh.json"
check "the agent collects it approved over a new HTTP session, by its key" test "$(json_field "$T/gh.json" approved)" = True
json_field "$T/gh.json" approval_token >"$T/th.jwt"
expect_exit 0 "... with a token that verifies against the ledger" \
	"$VERIFY" token - --aud assent --key $KEYS --ledger "$S/ledger" <"$T/th.jwt"

p=$(daemon_pid)
kill "$p"
for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
expect_exit 0 "assent-verify ledger holds on the whole ledger after it all" \
	"$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
done_testing
