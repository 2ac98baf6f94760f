#!/usr/bin/env bash
# No dead end for a held request (issue 29, 3): whoever the same-user rule keeps from
# approving a request may still reject it, and the waiting agent hears the rejection at
# once instead of waiting out the deadline. The agent runs as uid 65534 when the test
# is root (its reviewer alice is registered with that uid); not root, the agent, the
# reviewer and the daemon share one uid, which single-user mode off refuses to approve.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
json_field() { $PY -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2" 2>/dev/null; }
cleanup() {
	[ -n "${AG:-}" ] && kill "$AG" 2>/dev/null
	p=$(json_field "$S/assentd.json" pid)
	[ -n "$p" ] && kill "$p" 2>/dev/null
	sleep 0.2
	rm -rf "$T"
}
trap cleanup EXIT
"$ASSENT" --state "$S" reviewer add alice --uid "$AGENT_UID" >/dev/null
TOKEN=$("$ASSENT" --state "$S" reviewer token alice | tail -1)
"$ASSENTD" --state "$S" >"$T/daemon.log" 2>&1 &
for _ in $(seq 400); do "$ASSENT" --state "$S" status >/dev/null 2>&1 && break; sleep 0.05; done
open_agent_sock "$S"
[ "$(id -u)" -eq 0 ] && chmod 0666 "$S/control.sock"
as_agent() { "${AGENT_PREFIX[@]}" "$@"; }

R=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["review"])' "$S/assentd.json")
check "GET /favicon.ico on the reviewer listener: 204, not a 404 on every page load" \
	test "$(curl -s -o /dev/null -w '%{http_code}' "http://$R/favicon.ico")" = 204
# The agent asks and waits (a deadline far beyond the test).
mkfifo "$T/agent.out"
as_agent "$PY" "$ROOT/tests/integration/restart_agent.py" "$ROOT/build" "$S" hold request_feedback \
	'{"type":"approval","message":"drop the staging database","timeout_override":3000}' >"$T/agent.out" &
AG=$!
exec 3<"$T/agent.out"
read -r SENT <&3
check "the agent's call is sent ($SENT)" test "$SENT" = '{"sent": true}'
SID=""
for _ in $(seq 200); do
	SID=$(as_agent "$ASSENT" --state "$S" pending --json 2>/dev/null | $PY -c 'import json,sys; r=json.load(sys.stdin); print(r[0]["session_id"] if r else "")' 2>/dev/null)
	[ -n "$SID" ] && break
	sleep 0.05
done
check "alice sees the request pending ($SID)" test -n "$SID"
curl -s -H "Authorization: Bearer $TOKEN" "http://$R/review/api/pending" >"$T/pending.json"
check "the page's list tells alice why she may not approve it, and that she may reject it (no live Approve)" \
	$PY -c 'import json,sys; r=[x for x in json.load(open(sys.argv[1]))["requests"] if x["session_id"] == sys.argv[2]][0]
sys.exit(0 if "cannot decide it" in r.get("may_not_decide", "") and r.get("may_reject", True) else 1)' "$T/pending.json" "$SID"
expect_exit 1 "alice (the requester's uid) cannot approve it" as_agent "$ASSENT" --state "$S" approve "$SID"
check "... told that it is her own request" sh -c "printf '%s' \"\$1\" | grep -q 'asked for $SID itself'" _ "$ERR"
check "the daemon logs the refusal saying refused once" sh -c "grep -q 'decision approved on $SID by alice .* refused: uid' '$S/assentd.log' '$T/daemon.log' 2>/dev/null && ! grep -q 'refused: refused' '$S/assentd.log' '$T/daemon.log' 2>/dev/null"
expect_exit 1 "a rejection still needs its reason" as_agent "$ASSENT" --state "$S" reject "$SID" -m ""
expect_exit 0 "alice may reject her own request" as_agent "$ASSENT" --state "$S" reject "$SID" -m "not today"
# With the rejection refused the agent would wait out its deadline: stop it then.
if ! as_agent "$ASSENT" --state "$S" pending --json 2>/dev/null | grep -q "$SID"; then
	read -r ANS <&3
else
	kill "$AG"
	ANS=""
fi
check "the waiting agent hears the rejection at once ($ANS)" sh -c "printf '%s' \"\$1\" | $PY -c '
import json, sys
r = json.load(sys.stdin)
sys.exit(0 if r.get(\"status\") == \"rejected\" and r.get(\"response\") == \"not today\" else 1)'" _ "$ANS"
wait "$AG" 2>/dev/null
AG=""
p=$(json_field "$S/assentd.json" pid)
kill "$p"
for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
"$VERIFY" export "$S/ledger" >"$T/export.jsonl"
check "the rejection is recorded as alice's, with assurance same-user" \
	$PY "$ROOT/tests/integration/entry_check.py" "$T/export.jsonl" decision "$SID" \
	"e['reviewer']['name'] == 'alice' and e['assurance'] == 'same-user' and e['outcome'] == 'rejected'"
check "the ledger verifies" sh -c "\"$VERIFY\" ledger --key-from-state \"$S/ledger\" >/dev/null 2>&1"
done_testing
