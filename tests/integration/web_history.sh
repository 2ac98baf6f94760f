#!/usr/bin/env bash
# The page's history (issue 17): GET /review/api/history lists the decisions a reviewer may
# see, newest first, filtered by who, outcome, audience, rule and time, with per-hour
# figures for the chart; GET /review/api/proof?seq=N downloads a decision's inclusion
# proof, which `assent-verify proof --check` accepts. Bad queries are 400 naming the
# parameter; a decision whose rule names other reviewers is neither listed nor proven; a
# restart rebuilds the same history from the ledger's tail.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
listener() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$1/assentd.json" "$2" 2>/dev/null; }
cleanup() { p=$(daemon_pid "$S"); [ -n "$p" ] && kill "$p" 2>/dev/null; sleep 0.2; rm -rf "$T"; }
trap cleanup EXIT
mkdir -p "$S"
chmod 0755 "$T"
ALICE=$("$ASSENT" --state "$S" reviewer add alice --web | tail -1)
BOB=$("$ASSENT" --state "$S" reviewer add bob --web | tail -1)
"$ASSENT" --state "$S" agent add pipeline --uid "$AGENT_UID" --audience tf-prod >/dev/null
# line 2 decides at once, line 3 is bob's alone, line 4 anyone's
cat >"$T/p.policy" <<'POL'
# the history test's policy
allow message ~ "^auto"
ask audience tf-prod reviewers bob same-user ok
default ask same-user ok
POL
ASSENT_SINGLE_USER=$(agent_single_user) "$ASSENTD" --state "$S" --policy "$T/p.policy" >"$T/daemon.log" 2>&1 &
for _ in $(seq 200); do [ -S "$S/agent.sock" ] && [ -n "$(listener "$S" review)" ] && break; sleep 0.05; done
open_agent_sock "$S"
R=http://$(listener "$S" review)
ask() { "${AGENT_PREFIX[@]}" "$ASSENT" --state "$S" request "$@"; }
bg() { local n=$1; shift; (ask "$@" >"$T/$n.out" 2>"$T/$n.err"; echo $? >"$T/$n.rc") & }
waitrc() { for _ in $(seq 600); do [ -s "$T/$1.rc" ] && { cat "$T/$1.rc"; return; }; sleep 0.05; done; echo none; }
# get TOKEN PATH: the body in $T/body, the status printed
get() { curl -s -o "$T/body" -D "$T/head" -w '%{http_code}' -H "Authorization: Bearer $1" "$R$2"; }
# The id of the pending request whose message is $1, once it waits.
id_of() {
	for _ in $(seq 200); do
		id=$(curl -s -H "Authorization: Bearer $BOB" "$R/review/api/pending" | $PY -c '
import json, sys
print(next((r["session_id"] for r in json.load(sys.stdin)["requests"] if r["message"] == sys.argv[1]), ""))' "$1")
		[ -n "$id" ] && { echo "$id"; return; }
		sleep 0.05
	done
}
decide() { # TOKEN ID OUTCOME TEXT
	curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
		--data "{\"session_id\": \"$2\", \"outcome\": \"$3\", \"text\": \"$4\"}" "$R/review/api/decide"
}
# jq-like checks on $T/body: py 'EXPR' passes when EXPR (over d, the body) is true
py() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$T/body" "$1"; }

bg auto --message "auto: rotate the staging logs"
check "a request the policy allows is decided at once" test "$(waitrc auto)" = 0
bg prod --message "apply the prod plan" --audience tf-prod
bg logs --message "delete old logs"
bg late --message "nobody answers this" --timeout 1
P=$(id_of "apply the prod plan")
L=$(id_of "delete old logs")
check "bob approves the tf-prod request (his rule)" test "$(decide "$BOB" "$P" approved "ship it")" = 200
check "alice rejects the other one" test "$(decide "$ALICE" "$L" rejected "keep them a week")" = 200
check "prod: exit 0" test "$(waitrc prod)" = 0
check "logs: exit 1" test "$(waitrc logs)" = 1
check "late: exit 3 (timed out)" test "$(waitrc late)" = 3

check "no credential: 401" test "$(get "" /review/api/history)" = 401
check "alice's history: 200" test "$(get "$ALICE" /review/api/history)" = 200
check "  ... three decisions, newest first, without bob's tf-prod one" \
	py '[x["outcome"] for x in d["decisions"]] == ["timeout", "rejected", "approved"] and d["matched"] == 3 and d["kept"] == 3'
check "  ... each with its sequence number, who, requester, rule and times" \
	py 'all(isinstance(x["seq"], int) and x["seq"] > 0 and x["requester"] and x["rule"] in (2, 4) and x["decided_at"] >= x["requested_at"] > 1700000000 for x in d["decisions"])'
check "  ... the requester named as the card names it: the uid's registered agent (agent:pipeline, not uid:N)" \
	py 'd["decisions"] and all(x["requester"] == "agent:pipeline" for x in d["decisions"])'
check "  ... decided by the deadline, alice and the policy (rule 2)" \
	py '[(x["by"], x["rule"]) for x in d["decisions"]] == [("deadline", 4), ("alice", 4), ("policy", 2)]'
check "  ... 24 hours of figures: the current hour has 4 requests (bob's is not hers: 3), 3 decisions, 1 timeout" \
	py 'len(d["hours"]) == 24 and d["hours"][-1]["requests"] == 3 and d["hours"][-1]["decisions"] == 3 and d["hours"][-1]["timeouts"] == 1'
check "  ... and the reviewers' time to decision (alice's only: the policy and the deadline are not reviewers)" \
	py 'd["hours"][-1]["p50_ms"] == d["hours"][-1]["p90_ms"] == [x for x in d["decisions"] if x["by"] == "alice"][0]["decision_ms"]'
check "  ... earlier hours are empty and start an hour apart" \
	py 'all(h["requests"] == h["decisions"] == 0 and "p50_ms" not in h for h in d["hours"][:-1]) and all(b["hour"] - a["hour"] == 3600 for a, b in zip(d["hours"], d["hours"][1:]))'
check "bob's history has all four, his tf-prod approval with its audience" \
	sh -c "[ \"\$(curl -s -o '$T/body' -w '%{http_code}' -H 'Authorization: Bearer $BOB' '$R/review/api/history')\" = 200 ]"
check "  ... (tf-prod, rule 3, by bob)" \
	py 'len(d["decisions"]) == 4 and [(x["audience"], x["rule"], x["by"]) for x in d["decisions"] if x.get("audience")] == [("tf-prod", 3, "bob")]'
BOBSEQ=$($PY -c 'import json,sys; print([x["seq"] for x in json.load(open(sys.argv[1]))["decisions"] if x.get("audience")][0])' "$T/body")

# Filters, one at a time and together.
filter() { # DESC QUERY EXPECTED-OUTCOMES (space-separated, newest first)
	local code
	code=$(get "$ALICE" "/review/api/history?$2")
	check "$1 ($2)" py "'$code' == '200' and ' '.join(x['outcome'] for x in d['decisions']) == '$3'"
}
filter "outcome filter" "outcome=rejected" "rejected"
filter "who filter: a reviewer" "who=alice" "rejected"
filter "who filter: the policy" "who=policy" "approved"
filter "who filter: the deadline" "who=deadline" "timeout"
filter "rule filter" "rule=4" "timeout rejected"
filter "audience filter: bob's audience is not alice's to see" "audience=tf-prod" ""
filter "empty values are no filter (an empty form)" "who=&outcome=&audience=&rule=&since=&until=&limit=" "timeout rejected approved"
filter "since: nothing is decided in the future" "since=99999999999" ""
filter "until: nothing was decided before 1970" "until=0" ""
filter "a time range around now" "since=1700000000&until=99999999999" "timeout rejected approved"
filter "limit: the newest" "limit=1" "timeout"
filter "filters together" "who=alice&outcome=rejected&rule=4" "rejected"
filter "filters that exclude each other" "who=policy&outcome=rejected" ""
get "$ALICE" "/review/api/history?limit=1" >/dev/null
check "  ... limit says how many matched in all" py 'd["matched"] == 3 and len(d["decisions"]) == 1'

# Bad queries: 400 naming the parameter.
bad() { # QUERY PATTERN
	local code
	code=$(get "$ALICE" "/review/api/history?$1")
	check "bad query $1: 400 naming it" sh -c "[ '$code' = 400 ] && grep -q '$2' '$T/body'"
}
bad "outcome=maybe" '"outcome must be one of approved'
bad "limit=0" '"limit must be a whole number from 1 to 1000'
bad "limit=1001" '"limit must be a whole number from 1 to 1000'
bad "rule=-1" '"rule must be a whole number'
bad "since=soon" '"since must be a whole number'
bad "since=200&until=100" '"since is after until'
bad "who=a%20b" '"who must be 1 to 64 characters'
bad "who=alice&who=bob" '"who is given twice'
bad "audience=$(printf 'x%.0s' $(seq 129))" '"audience must be 1 to 128'
bad "colour=red" 'unknown parameter \\"colour\\"'

# Proofs.
SEQ=$($PY -c 'import json,sys; print([x["seq"] for x in json.load(open(sys.argv[1]))["decisions"] if x["by"] == "alice"][0])' <(curl -s -H "Authorization: Bearer $ALICE" "$R/review/api/history"))
check "the proof of alice's rejection (entry $SEQ): 200" test "$(get "$ALICE" "/review/api/proof?seq=$SEQ")" = 200
check "  ... a download (Content-Disposition: attachment)" grep -qi "^content-disposition: attachment; filename=\"assent-entry-$SEQ.proof\"" "$T/head"
cp "$T/body" "$T/entry.proof"
expect_exit 0 "  ... assent-verify proof --check holds with the checkpoint key" \
	"$VERIFY" proof --check "$T/entry.proof" --key "$S/keys/checkpoint.pub"
check "  ... for that entry, a decision of that request" $PY -c '
import json, sys, base64
p = json.load(open(sys.argv[1]))
assert p["index"] == int(sys.argv[2]), p["index"]
assert sys.argv[3].encode() in base64.b64decode(p["entry"]) and b"decision" in base64.b64decode(p["entry"])' "$T/entry.proof" "$SEQ" "$L"
$PY -c '
import json, sys
p = json.load(open(sys.argv[1]))
p["index"] = p["index"] - 1
json.dump(p, open(sys.argv[2], "w"))' "$T/entry.proof" "$T/bad.proof"
expect_exit 1 "  ... and a proof with another index does not hold" \
	"$VERIFY" proof --check "$T/bad.proof" --key "$S/keys/checkpoint.pub"
check "the proof of bob's tf-prod decision is not alice's: 404" test "$(get "$ALICE" "/review/api/proof?seq=$BOBSEQ")" = 404
check "  ... and bob's to download" test "$(get "$BOB" "/review/api/proof?seq=$BOBSEQ")" = 200
expect_exit 0 "  ... which holds" "$VERIFY" proof --check "$T/body" --key "$S/keys/checkpoint.pub"
check "an entry that is no decision of the history (0: the first key entry): 404" \
	sh -c "[ \"\$(curl -s -o '$T/body' -w '%{http_code}' -H 'Authorization: Bearer $ALICE' '$R/review/api/proof?seq=0')\" = 404 ] && grep -q 'assent-verify proof' '$T/body'"
check "a proof without credential: 401" test "$(get "" "/review/api/proof?seq=$SEQ")" = 401
check "a proof without seq: 400 naming it" sh -c "[ \"\$(curl -s -o '$T/body' -w '%{http_code}' -H 'Authorization: Bearer $ALICE' '$R/review/api/proof')\" = 400 ] && grep -q '\"seq is required' '$T/body'"
check "a proof with seq=x: 400 naming it" sh -c "[ \"\$(curl -s -o '$T/body' -w '%{http_code}' -H 'Authorization: Bearer $ALICE' '$R/review/api/proof?seq=x')\" = 400 ] && grep -q '\"seq must be a whole number' '$T/body'"
check "a proof with another parameter: 400" test "$(get "$ALICE" "/review/api/proof?seq=$SEQ&size=3")" = 400
check "POST to the history: 405" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Origin: $R" -H 'Content-Type: application/json' --data '{}' "$R/review/api/history")" = 405
check "the daemon is still up (no worker was killed)" sh -c "! grep -q 'security' '$T/daemon.log'"

# A restart rebuilds the history from the ledger's tail: the same decisions, for the same people.
hist() { curl -s -H "Authorization: Bearer $1" "$R/review/api/history" >"$2"; }
hist "$ALICE" "$T/alice.before"
hist "$BOB" "$T/bob.before"
p=$(daemon_pid "$S")
kill "$p"
for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
rm -f "$S/assentd.json"
ASSENT_SINGLE_USER=$(agent_single_user) "$ASSENTD" --state "$S" --policy "$T/p.policy" >>"$T/daemon.log" 2>&1 &
for _ in $(seq 200); do [ -n "$(listener "$S" review)" ] && break; sleep 0.05; done
R=http://$(listener "$S" review)
hist "$ALICE" "$T/alice.after"
hist "$BOB" "$T/bob.after"
# The same fields; the times are the ledger entries' (stamped as each entry was written), which
# may differ from the live ones by the moment between the decision and its entry: compared to the second.
same() { $PY - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(f))["decisions"] for f in sys.argv[1:3])
keys = ("session_id", "seq", "outcome", "by", "requester", "audience", "rule", "message")
assert [[x.get(k) for k in keys] for x in a] == [[x.get(k) for k in keys] for x in b], (a, b)
for x, y in zip(a, b):
    for k in ("requested_at", "decided_at"):
        assert abs(x[k] - y[k]) <= 1, (k, x, y)
PY
}
check "after a restart alice's history is the same three decisions (bob's restricted one still hidden from her)" same "$T/alice.before" "$T/alice.after"
check "  ... and bob's the same four" same "$T/bob.before" "$T/bob.after"
check "  ... the daemon says how many it rebuilt" grep -q 'the history of decisions holds the ledger.s last 4' "$T/daemon.log"
check "  ... and a proof of one of them still downloads" test "$(get "$ALICE" "/review/api/proof?seq=$SEQ")" = 200
expect_exit 0 "  ... and holds" "$VERIFY" proof --check "$T/body" --key "$S/keys/checkpoint.pub"
done_testing
