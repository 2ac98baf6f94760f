#!/usr/bin/env bash
# Webhooks respect who may see a request (issue 28, item 4): a request whose rule names its
# reviewers is told with its summary and requester only to webhooks scoped to one of them
# (`assent notify add ... --reviewers` or `--groups`); an unscoped webhook, or one scoped to
# others, learns its id, the event and that it is restricted. Unrestricted requests reach
# every webhook in full. The scope is on the ledger's webhook entry; the secret is not.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
RECV=$ROOT/tests/integration/webhook_receiver.py
S=$T/state
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
cleanup() {
	p=$(daemon_pid "$S")
	[ -n "$p" ] && kill "$p" 2>/dev/null
	kill "$RP" 2>/dev/null
	sleep 0.2
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$S"
"$ASSENT" --state "$S" reviewer add alice --uid "$(id -u)" >/dev/null
"$ASSENT" --state "$S" reviewer add bob --uid 65533 --group ops >/dev/null
"$ASSENT" --state "$S" agent add pipeline --uid "$AGENT_UID" --audience secret-aud --audience ops-aud >/dev/null
chmod 0755 "$T"
echo '{}' >"$T/secrets.json"
$PY "$RECV" "$T/recv.jsonl" "$T/secrets.json" >"$T/recv.port" 2>"$T/recv.err" &
RP=$!
for _ in $(seq 100); do [ -s "$T/recv.port" ] && break; sleep 0.05; done
PORT=$(cat "$T/recv.port")

# ---- the command ----
add() { # NAME PATH ARGS...: adds the webhook and keeps its secret for the receiver
	local n=$1 p=$2
	shift 2
	"$ASSENT" --state "$S" notify add "$n" --url "http://127.0.0.1:$PORT$p" "$@" >"$T/add.$n" 2>&1 || return 1
	tail -1 "$T/add.$n" >"$T/sec.$n"
}
check "notify add: an unscoped webhook" add all /all
check "notify add --reviewers bob: a webhook bob's requests may reach" add bobs /bobs --reviewers bob
check "notify add --groups ops: one for the ops group's requests" add opsg /opsg --groups ops
check "notify add --reviewers alice --format slack: scoped to someone else" add alices /alices --reviewers alice --format slack
check "notify add --format slack, unscoped" add chat /chat --format slack
$PY - "$T" <<'PY'
import json, sys
t = sys.argv[1]
json.dump({"/" + n: open(f"{t}/sec.{n}").read().strip() for n in ["all", "bobs", "opsg", "alices", "chat"]},
          open(t + "/secrets.json", "w"))
PY
check "... notify add says the scope" grep -q 'reviewers bob' "$T/add.bobs"
expect_exit 2 "notify add --reviewers with a name that is not one is refused" \
	"$ASSENT" --state "$S" notify add x --url "http://127.0.0.1:$PORT/x" --reviewers 'bob,<b>'
check "... naming it" sh -c "printf '%s' \"\$1\" | grep -q \"'<b>' is not a name\"" _ "$ERR"
expect_exit 0 "notify list" "$ASSENT" --state "$S" notify list
check "... shows each webhook's scope" sh -c "printf '%s\n' \"\$1\" | grep -q '^opsg	.*	groups ops$' && printf '%s\n' \"\$1\" | grep -q '^all	.*	unscoped$'" _ "$OUT"
expect_exit 0 "notify list --json" "$ASSENT" --state "$S" notify list --json
check "... with reviewers and groups" sh -c "printf '%s' \"\$1\" | $PY -c 'import json,sys; d={h[\"name\"]: h for h in json.load(sys.stdin)}; sys.exit(not (d[\"bobs\"][\"reviewers\"] == \"bob\" and d[\"opsg\"][\"groups\"] == \"ops\"))'" _ "$OUT"
check "notify.json keeps the scope as lists" $PY -c 'import json,sys; d={h["name"]: h for h in json.load(open(sys.argv[1]))["webhooks"]}; sys.exit(not (d["bobs"]["reviewers"] == ["bob"] and d["opsg"]["groups"] == ["ops"] and "reviewers" not in d["all"]))' "$S/notify.json"
"$VERIFY" export "$S/ledger" >"$T/ledger.jsonl" 2>/dev/null
check "the ledger's webhook entries record the scope" $PY -c '
import json, sys
e = [json.loads(l) for l in open(sys.argv[1])]
w = {x.get("name"): x for x in (y.get("entry", y) for y in e) if x.get("kind") == "webhook"}
sys.exit(not (w["bobs"]["reviewers"] == "bob" and w["opsg"]["groups"] == "ops" and w["all"]["reviewers"] == ""))' "$T/ledger.jsonl"
check "... and no secret" sh -c "! grep -q 'whsec_' '$T/ledger.jsonl'"

# ---- deliveries ----
cat >"$T/p.policy" <<'POL'
ask audience secret-aud reviewers bob deadline 3
ask audience ops-aud reviewers group:ops deadline 3
default ask deadline 3
POL
ASSENT_SINGLE_USER=$(agent_single_user) "$ASSENTD" --state "$S" --policy "$T/p.policy" >"$T/daemon.log" 2>&1 &
for _ in $(seq 200); do [ -S "$S/agent.sock" ] && [ -n "$(daemon_pid "$S")" ] && break; sleep 0.05; done
open_agent_sock "$S"
ask() { "${AGENT_PREFIX[@]}" "$ASSENT" --state "$S" request "$@"; }
(ask --audience secret-aud --message "RESTRICTED-SUMMARY rotate the vault key" --timeout 3 >/dev/null 2>&1) &
(ask --audience ops-aud --message "GROUP-SUMMARY restart the ops cluster" --timeout 3 >/dev/null 2>&1) &
(ask --message "OPEN-SUMMARY tidy the wiki" --timeout 3 >/dev/null 2>&1) &
# bodies PATH EVENT WORD: the bodies at PATH for EVENT whose request is the one whose
# full body (at the webhook that may see it) carries WORD, as JSON lines
cat >"$T/bodies.py" <<'PY'
import json, sys
log, path, event, word = sys.argv[1:5]
recs = [json.loads(l) for l in open(log)]
ids = set()
for r in recs:  # the request: the one whose full json body carries WORD
    b = json.loads(r["body"])
    if word in r["body"] and "request" in b:
        ids.add(b["request"]["id"])
for r in recs:
    if r["path"] == path and r["headers"].get("x-assent-event") == event and any(i in r["body"] for i in ids):
        print(json.dumps({"verified": r["verified"], "body": json.loads(r["body"])}))
PY
bodies() { $PY "$T/bodies.py" "$T/recv.jsonl" "$@"; }
waitfor() { for _ in $(seq 200); do [ "$(bodies "$@" | wc -l)" -ge 1 ] && return 0; sleep 0.05; done; return 1; }
# every webhook's delivery of both restricted requests, before any is read (a slow delivery of
# one was read as missing)
for p in /all /bobs /opsg /alices /chat; do
	waitfor $p request.created RESTRICTED-SUMMARY
	waitfor $p request.created GROUP-SUMMARY
done
B=$(bodies /all request.created RESTRICTED-SUMMARY | head -1)
q() { printf '%s' "$1" | $PY -c "import json,sys; x=json.load(sys.stdin); b=x['body']; print($2)"; }
check "a request restricted to bob reaches the unscoped webhook, signed ($(head -c 300 <<<"$B"))" test "$(q "$B" 'x["verified"]')" = True
check "... as restricted, with its id and event" test "$(q "$B" 'b["event"], b["request"].get("restricted"), b["request"]["id"].startswith("req-")')" = "request.created True True"
check "... without its summary, requester or type" test "$(q "$B" '[k for k in ("summary", "requester", "type", "audience") if k in b["request"]]')" = "[]"
R=$(bodies /all request.created RESTRICTED-SUMMARY)
check "... no body at an unscoped hook carries its words" sh -c "[ -n \"\$1\" ] && ! printf '%s' \"\$1\" | grep -q 'RESTRICTED-SUMMARY'" _ "$R"
B=$(bodies /bobs request.created RESTRICTED-SUMMARY | head -1)
check "the webhook scoped to bob gets it in full: summary and requester" \
	test "$(q "$B" 'b["request"]["summary"][:18], bool(b["request"]["requester"]), b["request"].get("restricted"), x["verified"]')" = "RESTRICTED-SUMMARY True True True"
B=$(bodies /opsg request.created RESTRICTED-SUMMARY | head -1)
check "the webhook scoped to the ops group (bob's) does not: the rule names bob, not group:ops" \
	test "$(q "$B" '"summary" in b["request"], "requester" in b["request"]')" = "False False"
B=$(bodies /opsg request.created GROUP-SUMMARY | head -1)
check "a request restricted to group:ops reaches the ops webhook in full" \
	test "$(q "$B" 'b["request"]["summary"][:13], bool(b["request"].get("requester"))')" = "GROUP-SUMMARY True"
B=$(bodies /bobs request.created GROUP-SUMMARY | head -1)
check "... and the webhook scoped to bob, a member of ops, in full too" test "$(q "$B" 'b["request"]["summary"][:13]')" = "GROUP-SUMMARY"
B=$(bodies /all request.created GROUP-SUMMARY | head -1)
check "... and the unscoped one without summary or requester" test "$(q "$B" '"summary" in b["request"], "requester" in b["request"], b["request"].get("restricted")')" = "False False True"
R=$(bodies /alices request.created RESTRICTED-SUMMARY; bodies /alices request.created GROUP-SUMMARY)
check "slack, scoped to alice: both restricted requests without their words or requester ($(head -c 240 <<<"$R"))" \
	sh -c "[ \"\$(printf '%s\n' \"\$1\" | grep -c .)\" = 2 ] && ! printf '%s' \"\$1\" | grep -q 'SUMMARY\\| from '" _ "$R"
check "... saying they are restricted" sh -c "printf '%s' \"\$1\" | grep -q 'restricted to its reviewers'" _ "$R"
check "slack, unscoped: neither" sh -c "! grep -h '\"path\": \"/chat\"' '$T/recv.jsonl' | grep -q 'RESTRICTED-SUMMARY\\|GROUP-SUMMARY'"
for p in /all /bobs /opsg /alices /chat; do waitfor $p request.created OPEN-SUMMARY; done
ok_all=1
for p in /all /bobs /opsg; do
	B=$(bodies $p request.created OPEN-SUMMARY | head -1)
	[ "$(q "$B" 'b["request"]["summary"][:12], bool(b["request"]["requester"]), "restricted" in b["request"]' 2>/dev/null)" = "OPEN-SUMMARY True False" ] || ok_all=0
done
check "an unrestricted request reaches every json webhook in full (summary, requester), scoped or not" test "$ok_all" = 1
check "... and both slack webhooks with its words" sh -c "grep -h '\"path\": \"/alices\"' '$T/recv.jsonl' | grep -q OPEN-SUMMARY && grep -h '\"path\": \"/chat\"' '$T/recv.jsonl' | grep -q OPEN-SUMMARY"

# The requests time out (deadline 3): request.decided, likewise.
for p in /all /bobs; do waitfor $p request.decided RESTRICTED-SUMMARY; done
B=$(bodies /all request.decided RESTRICTED-SUMMARY | head -1)
check "its decision reaches the unscoped webhook as restricted, with the outcome only ($(head -c 200 <<<"$B"))" \
	test "$(q "$B" 'b["request"].get("restricted"), "summary" in b["request"], "requester" in b["request"], sorted(b.get("decision", {}))')" = "True False False ['outcome']"
B=$(bodies /bobs request.decided RESTRICTED-SUMMARY | head -1)
check "... and the scoped one in full" test "$(q "$B" 'b["request"]["summary"][:18], "by" in b["decision"]')" = "RESTRICTED-SUMMARY True"
check "no unscoped webhook ever received a restricted request's words" \
	sh -c "! grep -h '\"path\": \"/all\"\\|\"path\": \"/chat\"' '$T/recv.jsonl' | grep -q 'RESTRICTED-SUMMARY\\|GROUP-SUMMARY'"
done_testing
