#!/usr/bin/env bash
# Cluster mode (issue 32, docs/cluster.md): three replicas of assentd --cluster on one real
# PostgreSQL (tests/scripts/pg.sh) append to one shared ledger. Requests on all three at once
# make one chain; a replica killed with -9 mid-run loses nothing that was answered and catches
# up when it comes back; PostgreSQL stopped mid-run makes requests fail closed with a clear
# error and work again when it returns; a replica with another policy or another lock mode is
# refused; /health names the replica. The shared ledger is checked three ways: each replica's
# mirror and an `assent ledger export` with assent-verify, and the rows in PostgreSQL by an
# independent Python checker (cluster_check.py) that shares no code with assent.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/cluster_lib.bash"
printf 'allow type confirmation\ndefault ask same-user ok\n' >"$T/p.policy"
printf 'allow type confirmation\ndeny type input reason "no"\ndefault ask\n' >"$T/other.policy"

req() { "$ASSENT" --state "$T/$1" request --type confirmation --message "$2" --json; }
health() {
	curl -s "http://$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["http"])' "$T/$1/assentd.json")/health"
}

check "replica a starts on an empty cluster" start a
check "... and says it joined" grep -q 'cluster: replica a joined (1 replicas known; the shared ledger has 0 entries)' "$T/a.log"
check "replica b starts with a's keys" start b
check "replica c starts with a's keys" start c
check "... c imported what a and b wrote" grep -qE 'cluster: replica c joined \(3 replicas known; the shared ledger has [0-9]+ entries\)' "$T/c.log"
health b >"$T/health.b"
check "/health names the replica that answered and its link to the cluster" \
	$PY -c 'import json,sys; c=json.load(open(sys.argv[1]))["cluster"]; assert c["replica"]=="b" and c["connected"] and c["lock"]=="row" and c["lease_seconds"]==3, c' "$T/health.b"

# Three replicas at once: every request is answered, all in one chain.
loads=""
for r in a b c; do
	(for i in $(seq 15); do req $r "$r load $i" || echo FAILED; done >"$T/load.$r" 2>&1) &
	loads="$loads $!"
done
wait $loads # (a plain wait would wait for the daemons too)
approved=$(cat "$T"/load.? | grep -c '"approved":true')
check "45 requests on three replicas at once: all approved ($approved)" test "$approved" -eq 45
$PY "$ROOT/tests/integration/cluster_check.py" "$CONN" "$T/a/keys/checkpoint.pub" >"$T/check1" 2>&1
check "PostgreSQL's rows, read by an independent checker: one chain, signed, written by all three ($(cat "$T/check1"))" \
	grep -qE '^[0-9]+ 3$' "$T/check1"
decisions=$(psql -X -At -d "$CONN" -c "SELECT count(*) FROM assent_ledger WHERE encode(entry, 'hex') LIKE '%' || encode('decision', 'hex') || '%'")
check "... with a decision entry for each of them ($decisions)" test "$decisions" -ge 45

# A token a replica issued verifies against another replica's mirror.
sleep 0.5 # NOTIFY: c's mirror follows b's commits
req b "token for c's mirror" >"$T/tok.json"
$PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["approval_token"])' "$T/tok.json" >"$T/tok"
for _ in $(seq 40); do
	"$VERIFY" token - --aud assent --key "$(ls "$T"/a/keys/token-*.pub | head -1)" --ledger "$T/c/ledger" <"$T/tok" >/dev/null 2>&1 && break
	sleep 0.1
done
expect_exit 0 "b's approval token verifies against c's mirror of the shared ledger (c imported it on NOTIFY)" \
	"$VERIFY" token - --aud assent --key "$(ls "$T"/a/keys/token-*.pub | head -1)" --ledger "$T/c/ledger" <"$T/tok"

# Any replica, any reviewer (docs/cluster.md): a request waits on every replica's list; alice
# decides a's request on b, and a's agent is answered at once, with a token that verifies.
# The CLI records a reviewer's registration on the shared ledger, never on a mirror alone.
expect_exit 2 "reviewer add on a replica without the cluster's URL is refused" env -u ASSENT_CLUSTER \
	"$ASSENT" --state "$T/a" reviewer add alice --uid "$(id -u)"
check "... saying why ($(printf '%s' "$ERR" | head -c 140))" sh -c 'printf "%s" "$1" | grep -q "set ASSENT_CLUSTER to its --cluster URL"' _ "$ERR"
# Three operators add a reviewer each on three replicas, one right after the other: every
# replica's registry has all three (a change made on an older version is merged, not lost).
check "reviewer alice registered on a, recorded on the shared ledger" \
	env ASSENT_CLUSTER="$URL" "$ASSENT" --state "$T/a" reviewer add alice --uid "$(id -u)"
check "reviewer carol registered on b, recorded on the shared ledger" \
	env ASSENT_CLUSTER="$URL" "$ASSENT" --state "$T/b" reviewer add carol --uid 4343
check "reviewer dave registered on c, recorded on the shared ledger" \
	env ASSENT_CLUSTER="$URL" "$ASSENT" --state "$T/c" reviewer add dave --uid 4444
$PY "$ROOT/tests/integration/cluster_check.py" "$CONN" "$T/a/keys/checkpoint.pub" >"$T/check0" 2>&1
check "... one signed chain still ($(cat "$T/check0"))" grep -qE '^[0-9]+ 3$' "$T/check0"
until_ok() { for _ in $(seq 100); do "$@" && return 0; sleep 0.05; done; return 1; }
knows() { for _ in $(seq 100); do grep -q "\"$2\"" "$T/$1/identities.json" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
every() { for r in a b c; do for n in alice carol dave; do knows $r $n || return 1; done; done; }
check "... and, merged, each replica knows all three (none lost to another's change)" every
sleep 1.2 # each replica re-reads its registry every second
# One registry (docs/cluster.md): bob, registered on a only, is every replica's reviewer.
ASSENT_CLUSTER="$URL" "$ASSENT" --state "$T/a" reviewer add bob --uid 4242 >/dev/null
check "bob, registered on a, is in c's registry (the cluster's, MAC'd with its secret)" knows c bob
check "... and in b's" knows b bob
check "... c says where it came from" grep -q 'the identity registry from the cluster (version [0-9]*' "$T/c.log"
# Whoever writes to PostgreSQL adds a reviewer eve: no replica takes the registry.
psql -X -At -d "$CONN" -c "UPDATE assent_registry SET body = replace(body, '\"bob\"', '\"eve\"'), version = version + 1;
	SELECT pg_notify('assent_registry', 'mallory')" >/dev/null
sleep 1
check "a registry changed in PostgreSQL is refused: eve is nobody's reviewer" sh -c '! grep -q "\"eve\"" "$1"/a/identities.json "$1"/b/identities.json "$1"/c/identities.json' _ "$T"
check "... and the replicas say why" grep -q 'the identity registry in PostgreSQL does not verify with the cluster' "$T/a.log" "$T/b.log" "$T/c.log"
restored() { psql -X -At -d "$CONN" -c "SELECT position('\"bob\"' in body) > 0 AND position('\"eve\"' in body) = 0 FROM assent_registry" | grep -qx t; }
check "... and one of them puts the registry that verifies back in its place" until_ok restored
# Web sessions (docs/cluster.md): alice logs in on a's page; b and c know her session (the
# browser's secret never leaves it: the cluster keeps its hash, MAC'd); she logs out on b, and
# a and c end it too. A session row changed in PostgreSQL is refused.
ASSENT_CLUSTER="$URL" "$ASSENT" --state "$T/a" reviewer token alice | tail -1 >"$T/alice.web"
sleep 1.2 # the new token reaches every replica's registry
web() { $PY "$ROOT/tests/integration/cluster_web.py" "$T" "$@"; }
until_not() { for _ in $(seq 100); do "$@" || return 0; sleep 0.05; done; return 1; }
check "alice logs in on a's page" sh -c "$PY $ROOT/tests/integration/cluster_web.py $T login a \$(cat $T/alice.web) >$T/ws.a"
wss=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["session"])' "$T/ws.a" 2>/dev/null)
wsc=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["csrf"])' "$T/ws.a" 2>/dev/null)
check "... her session is alice's on a" web me a "${wss:-none}" "${wsc:-none}"
check "... on b (with the same CSRF token)" until_ok web me b "${wss:-none}" "${wsc:-none}"
check "... and on c" until_ok web me c "${wss:-none}" "${wsc:-none}"
check "... PostgreSQL holds its hash, never its secret" test "$(psql -X -At -d "$CONN" -c "SELECT count(*) FROM assent_websessions
	WHERE position('${wss:-none}' in body) > 0 OR position('${wss:-none}' in hash) > 0")" = 0
check "she logs out on b" web logout b "${wss:-none}" "${wsc:-none}"
check "... and her session ends on a" until_not web me a "${wss:-none}" "${wsc:-none}"
check "... and on c" until_not web me c "${wss:-none}" "${wsc:-none}"
web login c "$(cat "$T/alice.web")" >"$T/ws.c"
wss=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["session"])' "$T/ws.c" 2>/dev/null)
wsc=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["csrf"])' "$T/ws.c" 2>/dev/null)
check "a session made on c is b's" until_ok web me b "${wss:-none}" "${wsc:-none}"
# Whoever writes to PostgreSQL plants a session (a hash of their own secret, as alice's): refused.
planted=ws_$($PY -c 'import secrets; print(secrets.token_urlsafe(32))')
ph=$(printf '%s' "$planted" | sha256sum | cut -c1-64)
psql -X -At -d "$CONN" -c "INSERT INTO assent_websessions SELECT '$ph', nextval('assent_websessions_seq'),
	replace(body, hash, '$ph'), mac, false, 'mallory' FROM assent_websessions WHERE NOT ended LIMIT 1;
	SELECT pg_notify('assent_websessions', 'mallory')" >/dev/null
sleep 0.5
check "a session planted in PostgreSQL is nobody's: not on a" until_not web me a "$planted" "$wsc"
check "... nor on b" until_not web me b "$planted" "$wsc"
check "... and the replicas say why" grep -q 'a web session in PostgreSQL does not verify with the cluster' "$T/a.log"
ledger_ends() { # SID: the entries in PostgreSQL that end it (kind decision, timeout, cancelled)
	psql -X -At -d "$CONN" -c "SELECT count(*) FROM assent_ledger WHERE position('$1'::bytea in entry) > 0 AND
		(encode(entry, 'hex') LIKE '%646b696e6468' || encode('decision', 'hex') || '%' OR
		 encode(entry, 'hex') LIKE '%646b696e6467' || encode('timeout', 'hex') || '%' OR
		 encode(entry, 'hex') LIKE '%646b696e6469' || encode('cancelled', 'hex') || '%')"
}
"$ASSENT" --state "$T/a" request --type approval --message "a's agent, b's reviewer" --timeout 60 --json \
	>"$T/x.a" 2>/dev/null &
xa=$!
sid=$(first_pending a)
check "a's pending request $sid is listed on b" listed b "${sid:-none}"
check "... and on c" listed c "${sid:-none}"
show_of() { "$ASSENT" --state "$T/$1" show "$2" --json 2>/dev/null; }
show_of a "${sid:-none}" >"$T/show.a"
show_of b "${sid:-none}" >"$T/show.b"
check "... b shows its reviewers exactly what a shows (the view, the deadline, the terms)" \
	sh -c 'test -s "$1" && cmp -s "$1" "$2"' _ "$T/show.a" "$T/show.b"
expect_exit 0 "alice approves it on b" "$ASSENT" --state "$T/b" approve "$sid"
wait $xa
check "a's agent is answered: approved by alice, with a token ($(head -c 160 "$T/x.a"))" $PY -c '
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if r["status"] == "approved" and r["reviewer"] == "alice" and r.get("approval_token") else 1)' "$T/x.a"
$PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["approval_token"])' "$T/x.a" >"$T/xtok" 2>/dev/null
expect_exit 0 "... a token minted again on a from b's decision entry, which verifies against a's mirror" \
	"$VERIFY" token - --aud assent --key "$(ls "$T"/a/keys/token-*.pub | head -1)" --ledger "$T/a/ledger" <"$T/xtok"
jti=$($PY -c 'import base64,json,sys; p=open(sys.argv[1]).read().split(".")[1]; print(json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))["jti"])' "$T/xtok" 2>/dev/null)
by_b=$(psql -X -At -d "$CONN" -c "SELECT count(*) FROM assent_ledger WHERE replica = 'b' AND position('${jti:-none}'::bytea in entry) > 0")
check "... naming the jti that b's decision entry names ($jti)" test "$by_b" = 1
check "... it left c's list" gone c "$sid"
check "... one entry ended it ($(ledger_ends "$sid"))" test "$(ledger_ends "$sid")" = 1

# Two reviewers decide one request at once, on two replicas: one decision, one entry.
"$ASSENT" --state "$T/a" request --type approval --message "two reviewers at once" --timeout 60 --json \
	>"$T/y.a" 2>/dev/null &
ya=$!
sid2=$(first_pending a)
listed b "${sid2:-none}" && listed c "${sid2:-none}"
"$ASSENT" --state "$T/b" approve "$sid2" >"$T/y.b" 2>&1 &
pb=$!
"$ASSENT" --state "$T/c" reject "$sid2" -m "no, from c" >"$T/y.c" 2>&1 &
pc=$!
wait $pb && rb=0 || rb=$?
wait $pc && rc=0 || rc=$?
wait $ya
check "exactly one of the two decisions is taken (b: $rb, c: $rc)" test $((rb == 0 ? 1 : 0)) -ne $((rc == 0 ? 1 : 0))
check "... the other is told why ($(cat "$T/y.b" "$T/y.c" | tr '\n' ' ' | head -c 200))" \
	grep -qE 'another replica took it first|no pending request' "$T/y.b" "$T/y.c"
want=$([ "$rb" = 0 ] && echo approved || echo rejected)
check "... a's agent hears the one that was taken ($want)" grep -q "\"status\": *\"$want\"" "$T/y.a"
check "... and the shared ledger has one entry that ends it" test "$(ledger_ends "$sid2")" = 1

# A poll request (wait false) on a, decided on c: get_feedback answers on b and on a.
agent() { ASSENT_TEST_POLICY="$T/p.policy" $PY "$ROOT/tests/integration/restart_agent.py" "$ROOT/build" "$T/$1" call "$2" "$3"; }
sid3=$(agent a request_feedback '{"type":"approval","message":"collected later","wait":false}' |
	$PY -c 'import json,sys; print(json.loads(sys.stdin.readline()).get("session_id") or "")')
check "a poll request $sid3 on a is listed on c" listed c "${sid3:-none}"
expect_exit 0 "alice rejects it on c" "$ASSENT" --state "$T/c" reject "$sid3" -m "not now"
for r in b a; do
	for _ in $(seq 40); do
		agent $r get_feedback "{\"session_id\":\"$sid3\",\"wait_seconds\":0}" >"$T/g.$r"
		grep -q '"pending"' "$T/g.$r" || break
		sleep 0.05
	done
	check "get_feedback on $r: rejected by alice, not now ($(head -c 160 "$T/g.$r"))" $PY -c '
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if r.get("status") == "rejected" and r.get("reviewer") == "alice" and r.get("response") == "not now" else 1)' "$T/g.$r"
done

# A replica dies (kill -9) with a caller waiting and a poll request pending: once its lease
# expires, one live replica takes it over. The waiting request is cancelled on the ledger once
# and leaves every list; the poll request lives on, is decided on b and collected on a.
# (an MCP agent's request_feedback waits on its connection; `assent request` collects by polling)
ASSENT_TEST_POLICY="$T/p.policy" $PY "$ROOT/tests/integration/restart_agent.py" "$ROOT/build" "$T/c" hold \
	request_feedback '{"type":"approval","message":"c'"'"'s caller waits, c dies"}' >"$T/z.c" 2>/dev/null &
zc=$!
sid4=$(first_pending c)
sid5=$(agent c request_feedback '{"type":"approval","message":"c dies, collected elsewhere","wait":false}' |
	$PY -c 'import json,sys; print(json.loads(sys.stdin.readline()).get("session_id") or "")')
on_a_and_b() { listed a "$1" && listed b "$1"; }
gone_from_a_and_b() { gone a "$1" 400 && gone b "$1" 100; }
check "c's two requests are listed on a and b ($sid4, $sid5)" on_a_and_b "${sid4:-none}"
on_a_and_b "${sid5:-none}"
kill -9 "$(pid_of c)"
wait $zc 2>/dev/null
check "c killed: its blocking request leaves a's and b's lists once its lease expires" \
	gone_from_a_and_b "${sid4:-none}"
cancels=$(psql -X -At -d "$CONN" -c "SELECT string_agg(replica, ',') FROM assent_ledger WHERE position('${sid4:-none}'::bytea in entry) > 0 AND
	encode(entry, 'hex') LIKE '%646b696e6469' || encode('cancelled', 'hex') || '%'")
check "... cancelled on the shared ledger once, by the replica that took c over ($cancels)" \
	sh -c 'test "$1" = a || test "$1" = b' _ "$cancels"
check "... saying why" sh -c 'psql -X -At -d "$1" -c "SELECT count(*) FROM assent_ledger WHERE position('"'"'replica c (its lease expired) stopped'"'"'::bytea in entry) > 0" | grep -qx 1' _ "$CONN"
check "c's poll request still waits on a and b" on_a_and_b "${sid5:-none}"
expect_exit 0 "alice approves it on b" "$ASSENT" --state "$T/b" approve "$sid5"
for _ in $(seq 40); do
	agent a get_feedback "{\"session_id\":\"$sid5\",\"wait_seconds\":0}" >"$T/g5"
	grep -q '"pending"' "$T/g5" || break
	sleep 0.05
done
check "... and its caller collects the approval on a ($(head -c 120 "$T/g5"))" grep -q '"status": "approved"' "$T/g5"
rm -f "$T/c/agent.sock"
check "c comes back" start c
check "... and restores nothing another replica ended" sh -c '! grep -q "left pending by a previous run" "$1"' _ "$T/c.log"

# Refused replicas: another policy, another lock mode.
mkdir -p "$T/d" && cp -a "$T/a/keys" "$T/d/keys"
expect_exit 2 "a replica with another policy is refused" env ASSENT_REPLICA=d "$ASSENTD" --daemon --state "$T/d" \
	--policy "$T/other.policy" --cluster "$URL"
check "... saying the policies differ" sh -c 'printf "%s" "$1" | grep -q "is not the cluster.s"' _ "$ERR"
expect_exit 2 "a replica taking the lock another way is refused" env ASSENT_REPLICA=d ASSENT_CLUSTER_LOCK=advisory \
	"$ASSENTD" --daemon --state "$T/d" --policy "$T/p.policy" --cluster "$URL"
check "... naming the cluster's way" sh -c 'printf "%s" "$1" | grep -q "set ASSENT_CLUSTER_LOCK=row"' _ "$ERR"
mkdir -p "$T/a2" && cp -a "$T/a/keys" "$T/a2/keys"
expect_exit 2 "a second replica named a (another state directory) is refused while a runs" env ASSENT_REPLICA=a \
	"$ASSENTD" --daemon --state "$T/a2" --policy "$T/p.policy" --cluster "$URL"
check "... saying the name is taken" sh -c 'printf "%s" "$1" | grep -q "another replica named a is connected"' _ "$ERR"
# Without ASSENT_REPLICA a replica is named by its host and its state directory (unique on one
# machine, the same at every start); the refused start above registered d, this one its default.
expect_exit 2 "a replica without ASSENT_REPLICA (refused for its policy)" env -u ASSENT_REPLICA "$ASSENTD" --daemon \
	--state "$T/d" --policy "$T/other.policy" --cluster "$URL"
want="$(hostname)-$(printf '%s' "$T/d" | sha256sum | cut -c1-8)"
check "... is named $want" sh -c 'psql -X -At -d "$1" -c "SELECT name FROM assent_replicas" | grep -qx "$2"' _ "$CONN" "$want"

# A replica's restart restores its own pending requests, never another's: a's request waits
# (default ask, 4 s) while b restarts; b must not cancel it (the ledger's request entry names
# the replica whose caller waits); a times it out itself.
"$ASSENT" --state "$T/a" request --type input --message "a waits while b restarts" --timeout 4 --json \
	>"$T/wait.a" 2>&1 &
wa=$!
for _ in $(seq 50); do
	psql -X -At -d "$CONN" -c "SELECT count(*) FROM assent_ledger WHERE position('a waits while b restarts'::bytea in entry) > 0" | grep -qx 1 && break
	sleep 0.1
done
kill "$(pid_of b)"
for _ in $(seq 100); do kill -0 "$(pid_of b)" 2>/dev/null || break; sleep 0.05; done
rm -f "$T/b/agent.sock"
check "b restarts while a's request waits" start b
wait $wa
sid=$(grep -o "req-[0-9a-f]*" "$T/wait.a" | head -1)
check "a's request ended by its own deadline ($(head -c 120 "$T/wait.a"))" grep -q '"status":"timeout"\|"status": "timeout"' "$T/wait.a"
by_b=$(psql -X -At -d "$CONN" -c "SELECT count(*) FROM assent_ledger WHERE replica = 'b' AND position('$sid'::bytea in entry) > 0")
check "b's restart wrote nothing for a's pending request $sid ($by_b entries)" test -n "$sid" -a "$by_b" = 0

# kill -9 one replica mid-run: the others go on; it comes back and catches up.
(for i in $(seq 40); do req a "a during b's death $i" || echo FAILED; done >"$T/load2.a" 2>&1) &
la=$!
(for i in $(seq 200); do req b "b until killed $i" || echo FAILED; done >"$T/load2.b" 2>&1) &
lb=$!
sleep 0.7
kill -9 "$(pid_of b)"
wait $la
wait $lb 2>/dev/null
check "a answered all 40 while b was killed" test "$(grep -c '"approved":true' "$T/load2.a")" -eq 40
b_ok=$(grep -c '"approved":true' "$T/load2.b")
rm -f "$T/b/agent.sock"
check "b restarts after kill -9" start b
req b "b is back" >"$T/back.b"
check "... and answers again" grep -q '"approved":true' "$T/back.b"
$PY "$ROOT/tests/integration/cluster_check.py" "$CONN" "$T/a/keys/checkpoint.pub" >"$T/check2" 2>&1
check "the shared ledger is one signed chain after the kill ($(cat "$T/check2"))" grep -qE '^[0-9]+ 3$' "$T/check2"
answered=$(psql -X -At -d "$CONN" -c "SELECT count(*) FROM assent_ledger WHERE replica = 'b' AND encode(entry, 'hex') LIKE '%' || encode('b until killed', 'hex') || '%'")
check "every request b answered before it died is in the shared ledger (b answered $b_ok; the ledger has $answered of its requests)" \
	test "$answered" -ge "$b_ok"

# PostgreSQL stopped mid-run: fail closed, with the reason; back when it returns.
bash "$ROOT/tests/scripts/pg.sh" stop "$PG"
expect_exit 2 "with PostgreSQL stopped, a request is refused (fail closed)" req a "while PostgreSQL is down"
check "... saying the cluster's shared ledger cannot be reached" sh -c 'printf "%s" "$1" | grep -q "shared ledger cannot be reached"' _ "$ERR"
for _ in $(seq 30); do # /health is at most a second old
	health a >"$T/health.a"
	grep -q '"connected":false' "$T/health.a" && break
	sleep 0.1
done
check "... and /health says so: $(head -c 300 "$T/health.a")" grep -q '"connected":false' "$T/health.a"
bash "$ROOT/tests/scripts/pg.sh" resume "$PG" >/dev/null
req a "after PostgreSQL came back" >"$T/after.a"
check "PostgreSQL back: the next request is approved" grep -q '"approved":true' "$T/after.a"
$PY "$ROOT/tests/integration/cluster_check.py" "$CONN" "$T/a/keys/checkpoint.pub" >"$T/check3" 2>&1
check "the shared ledger is one signed chain after the outage ($(cat "$T/check3"))" grep -qE '^[0-9]+ 3$' "$T/check3"

# Every mirror and an export verify with assent-verify.
sleep 0.5
size=$(psql -X -At -d "$CONN" -c "SELECT size FROM assent_head")
for r in a b c; do
	p=$(pid_of $r)
	kill "$p"
	for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
	expect_exit 0 "replica $r's mirror verifies" "$VERIFY" ledger "$T/$r/ledger" --key "$T/a/keys/checkpoint.pub"
done
expect_exit 0 "assent ledger export copies the shared ledger" "$ASSENT" ledger export --cluster "$URL" "$T/export"
check "... all $size entries ($OUT)" sh -c 'printf "%s" "$1" | grep -q "^exported $2 entries"' _ "$OUT" "$size"
expect_exit 0 "... and the export verifies with assent-verify" "$VERIFY" ledger "$T/export" --key "$T/a/keys/checkpoint.pub"
check "... as the same tree as PostgreSQL's rows" sh -c 'printf "%s" "$1" | grep -q "ledger intact: $2 entries"' _ "$OUT" "$size"
expect_exit 1 "an export into a directory that holds a ledger is refused" "$ASSENT" ledger export --cluster "$URL" "$T/export"
done_testing
