#!/usr/bin/env bash
# Webhooks (issue 17): `assent notify add|list|remove`; on a new request, a decision and a
# deadline approaching the daemon POSTs a short summary with the review link (never the
# context, never a secret), signed X-Assent-Signature: t=T,v1=HMAC-SHA256(secret, "T.body"),
# which a local receiver checks as assent.notify(5) tells receivers to; a Slack-compatible body;
# a receiver that fails is retried with backoff, then given up and logged; https with --ca;
# sent by the notify worker, jailed (seccomp), which connects nowhere itself.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
RECV=$ROOT/tests/integration/webhook_receiver.py
S=$T/state
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
cleanup() {
	p=$(daemon_pid "$S")
	[ -n "$p" ] && kill "$p" 2>/dev/null
	kill "$RP" "$TP" 2>/dev/null
	sleep 0.2
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$S"
"$ASSENT" --state "$S" reviewer add alice --uid "$(id -u)" >/dev/null
"$ASSENT" --state "$S" agent add pipeline --uid "$AGENT_UID" >/dev/null
chmod 0755 "$T"
echo '{}' >"$T/secrets.json"
$PY "$RECV" "$T/recv.jsonl" "$T/secrets.json" >"$T/recv.port" 2>"$T/recv.err" &
RP=$!
(cd "$T" && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 \
	-subj "/CN=assent webhook test CA" 2>/dev/null &&
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key -out srv.csr -subj "/CN=127.0.0.1" 2>/dev/null &&
	printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >srv.ext &&
	openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile srv.ext 2>/dev/null)
$PY "$RECV" "$T/recv.jsonl" "$T/secrets.json" --cert "$T/srv.pem" --key "$T/srv.key" >"$T/tls.port" 2>"$T/tls.err" &
TP=$!
for _ in $(seq 100); do [ -s "$T/recv.port" ] && [ -s "$T/tls.port" ] && break; sleep 0.05; done
PORT=$(cat "$T/recv.port")
TPORT=$(cat "$T/tls.port")

# ---- the command ----
expect_exit 0 "notify add: a json webhook" "$ASSENT" --state "$S" notify add ops --url "http://127.0.0.1:$PORT/ok"
SEC_OK=$(printf '%s\n' "$OUT" | tail -1)
check "notify add prints the secret once (whsec_ and 64 hex digits)" sh -c "printf '%s' '$SEC_OK' | grep -Eq '^whsec_[0-9a-f]{64}$'"
"$ASSENT" --state "$S" notify add chat --url "http://127.0.0.1:$PORT/slack" --format slack --events request | tail -1 >"$T/sec.chat"
"$ASSENT" --state "$S" notify add down --url "http://127.0.0.1:$PORT/fail" --events request | tail -1 >"$T/sec.down"
"$ASSENT" --state "$S" notify add flaky --url "http://127.0.0.1:$PORT/flaky" --events request | tail -1 >"$T/sec.flaky"
"$ASSENT" --state "$S" notify add tls --url "https://127.0.0.1:$TPORT/tls" --ca "$T/ca.pem" --events decision | tail -1 >"$T/sec.tls"
$PY - "$T" "$SEC_OK" <<'PY'
import json, sys
t, ok = sys.argv[1], sys.argv[2]
d = {"/ok": ok, "/slack": open(t + "/sec.chat").read().strip(), "/fail": open(t + "/sec.down").read().strip(),
     "/flaky": open(t + "/sec.flaky").read().strip(), "/tls": open(t + "/sec.tls").read().strip()}
json.dump(d, open(t + "/secrets.json", "w"))
PY
check "notify.json is mode 0600" test "$(stat -c %a "$S/notify.json")" = 600
expect_exit 0 "notify list" "$ASSENT" --state "$S" notify list
check "notify list names each webhook, its format, events and scope" sh -c "printf '%s' \"\$1\" | grep -q '^chat	http://127.0.0.1:$PORT/...	slack	request	unscoped$'" _ "$OUT"
check "notify list shows no secret and no URL path (a Slack URL's path is its credential)" \
	sh -c "! printf '%s' \"\$1\" | grep -Eq 'whsec_|/ok|/slack'" _ "$OUT"
expect_exit 1 "notify add: a name that exists is refused" "$ASSENT" --state "$S" notify add ops --url "http://127.0.0.1:$PORT/ok"
check "... saying so" sh -c "printf '%s' \"\$1\" | grep -q 'a webhook named ops exists'" _ "$ERR"
expect_exit 2 "notify add: plain http to another host is refused" "$ASSENT" --state "$S" notify add x --url http://example.com/h
check "... naming why" sh -c "printf '%s' \"\$1\" | grep -q 'plain http:// only to a loopback address'" _ "$ERR"
expect_exit 2 "notify add: an unknown event is refused" "$ASSENT" --state "$S" notify add x --url "https://h/" --events request,lunch
check "... naming it" sh -c "printf '%s' \"\$1\" | grep -q \"'lunch' is not an event\"" _ "$ERR"
expect_exit 2 "notify add: an unknown format is refused" "$ASSENT" --state "$S" notify add x --url "https://h/" --format xml
expect_exit 1 "notify remove: an unknown name is refused" "$ASSENT" --state "$S" notify remove nobody
check "the ledger names the webhooks added, never their secrets" sh -c \
	"grep -aq 'webhook' '$S/ledger/data.mdb' && ! grep -aq 'whsec_' '$S/ledger/data.mdb' && ! grep -aq '/slack' '$S/ledger/data.mdb'"

# ---- deliveries ----
ASSENT_SINGLE_USER=$(agent_single_user) ASSENT_NOTIFY_RETRIES=2 ASSENT_NOTIFY_BACKOFF_MS=200 ASSENT_HTTP_PORT=0 \
	"$ASSENTD" --state "$S" >"$T/daemon.log" 2>&1 &
for _ in $(seq 200); do [ -S "$S/agent.sock" ] && [ -n "$(daemon_pid "$S")" ] && break; sleep 0.05; done
open_agent_sock "$S"
REVIEW=http://$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["review"])' "$S/assentd.json" 2>/dev/null)
printf '{"db_password": "CONTEXT-SECRET-123", "risk": "high"}\n' >"$T/ctx.json"
chmod 0644 "$T/ctx.json"
ask() { "${AGENT_PREFIX[@]}" "$ASSENT" --state "$S" request "$@"; }
( ask --message "drop the <!channel> staging table & more?" --context-file "$T/ctx.json" \
	>"$T/r1.out" 2>"$T/r1.err"; echo $? >"$T/r1.rc" ) &
# lines PATH EVENT: the receiver's records for that path and event
lines() { $PY - "$T/recv.jsonl" "$1" "$2" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["path"] == sys.argv[2] and r["headers"].get("x-assent-event") == sys.argv[3]:
        print(l.strip())
PY
}
waitfor() { for _ in $(seq 300); do [ "$(lines "$1" "$2" | wc -l)" -ge "${3:-1}" ] && return 0; sleep 0.05; done; return 1; }
check "a new request: the json webhook receives request.created" waitfor /ok request.created
L=$(lines /ok request.created | head -1)
field() { printf '%s' "$L" | $PY -c "import json,sys; r=json.load(sys.stdin); b=json.loads(r['body']); print($1)"; }
ID=$(field 'b["request"]["id"]')
check "... signed: the receiver verifies X-Assent-Signature with the secret" test "$(field 'r["verified"]')" = True
check "... the signature is t=UNIX,v1=64 hex digits" sh -c "printf '%s' '$(field 'r["headers"]["x-assent-signature"]')' | grep -Eq '^t=[0-9]{10},v1=[0-9a-f]{64}$'"
check "... with a delivery id (X-Assent-Delivery whd_...)" sh -c "printf '%s' '$(field 'r["headers"]["x-assent-delivery"]')' | grep -Eq '^whd_[0-9a-f]{16}$'"
check "... the body names the request, its type, summary and requester" \
	test "$(field 'b["event"], b["request"]["type"], b["request"]["summary"][:9], bool(b["request"]["requester"])')" = "request.created approval drop the  True"
check "... and the review page's link to it" test "$(field 'b["request"]["url"]')" = "$REVIEW/review#$ID"
check "... the context's risk, never its other fields" test "$(field 'b["request"].get("risk"), "db_password" in r["body"]')" = "high False"
check "no body anywhere carries the context's secret" sh -c "! grep -q 'CONTEXT-SECRET-123' '$T/recv.jsonl'"
check "the slack webhook receives a {\"text\"} body with the link" waitfor /slack request.created
SL=$(lines /slack request.created | head -1 | $PY -c 'import json,sys; r=json.load(sys.stdin); b=json.loads(r["body"]); print(list(b) == ["text"], r["verified"]); print(b["text"])')
check "... only text, signed too" test "$(printf '%s\n' "$SL" | head -1)" = "True True"
check "... a Slack link to the request" sh -c "printf '%s' \"\$1\" | grep -qF '<$REVIEW/review#$ID|approval $ID>'" _ "$SL"
check "... the agent's words escaped for Slack (no <!channel> mention, & as &amp;)" \
	sh -c "printf '%s' \"\$1\" | grep -qF 'drop the &lt;!channel&gt; staging table &amp; more?'" _ "$SL"
check "a receiver that fails once is retried, with the same delivery id, and then delivered" waitfor /flaky request.created 2
check "... same X-Assent-Delivery both times" test "$(lines /flaky request.created | $PY -c 'import json,sys; print(len({json.loads(l)["headers"]["x-assent-delivery"] for l in sys.stdin}))')" = 1
for _ in $(seq 100); do grep -q 'webhook flaky: .*delivered: HTTP 200, attempt 2' "$T/daemon.log" && break; sleep 0.05; done
check "... the log says it was delivered at attempt 2" grep -q 'webhook flaky: .*delivered: HTTP 200, attempt 2' "$T/daemon.log"
check "a receiver that always fails gets 1 + ASSENT_NOTIFY_RETRIES (2) attempts" waitfor /fail request.created 3
for _ in $(seq 200); do grep -q 'webhook down: gave up' "$T/daemon.log" && break; sleep 0.05; done
check "... then the daemon gives up and logs it (with the last status)" grep -q 'webhook down: gave up on delivery whd_[0-9a-f]* (request.created) after 3 attempts: HTTP 500' "$T/daemon.log"
sleep 1
check "... and tries no more" test "$(lines /fail request.created | wc -l)" = 3
check "... each retry waits longer: at least 200 ms, then at least 400 ms (ASSENT_NOTIFY_BACKOFF_MS doubling)" \
	$PY -c 'import json,sys; t=[json.loads(l)["t"] for l in sys.stdin]; sys.exit(not (t[1]-t[0] >= 0.2 and t[2]-t[1] >= 0.4))' < <(lines /fail request.created | head -3)
check "the failed attempts were logged as warnings with their backoff" grep -q 'webhook down: delivery whd_[0-9a-f]* (request.created) attempt 1 failed: HTTP 500; again in 200 ms' "$T/daemon.log"
NPID=$(pgrep -f "assent-worker notify" | head -1)
check "the sender is the notify worker, confined by seccomp" sh -c "[ -n '$NPID' ] && grep -q '^Seccomp:[[:space:]]*2' /proc/$NPID/status"

"$ASSENT" --state "$S" approve "$ID" -m "fine" >/dev/null
check "a decision: request.decided, approved by alice" waitfor /ok request.decided
L=$(lines /ok request.decided | head -1)
check "... its body says the outcome and who" test "$(field 'b["decision"]["outcome"], b["decision"]["by"], b["request"]["id"] == "'"$ID"'", r["verified"]')" = "approved alice True True"
check "... over https with --ca to the webhook that wants decisions, signed with its own secret" waitfor /tls request.decided
check "... (verified)" test "$(lines /tls request.decided | head -1 | $PY -c 'import json,sys; print(json.load(sys.stdin)["verified"])')" = True
check "... (the https one came through TLS: the daemon logged it delivered)" grep -q 'webhook tls: .*(request.decided) delivered: HTTP 200' "$T/daemon.log"
check "the slack webhook (--events request) heard no decision" test "$(lines /slack request.decided | wc -l)" = 0

( ask --message "restart?" --timeout 6 >/dev/null 2>&1 ) &
check "a deadline approaching: request.deadline before the timeout" waitfor /ok request.deadline
L=$(lines /ok request.deadline | head -1)
check "... naming the request and its deadline" test "$(field 'b["request"]["summary"], b["request"]["deadline"] >= b["time"]')" = "restart? True"

cp "$S/notify.json" "$T/notify.good"
printf '{"webhooks": [{"name": "x"' >"$S/notify.json" # a hand edit gone wrong
for _ in $(seq 60); do grep -q 'not a webhooks file' "$T/daemon.log" && break; sleep 0.05; done
check "a broken notify.json is refused, naming the file, and the webhooks read before stay" \
	grep -q "notify.json: not a webhooks file (.*): the webhooks read before stay" "$T/daemon.log"
n=$(lines /ok request.created | wc -l)
( ask --message "while the file is broken" --timeout 2 >/dev/null 2>&1 ) &
check "... so a request still reaches them" waitfor /ok request.created $((n + 1))
cp "$T/notify.good" "$S/notify.json"
expect_exit 0 "notify remove" "$ASSENT" --state "$S" notify remove chat
sleep 1.5
n=$(lines /slack request.created | wc -l)
( ask --message "after the remove" --timeout 2 >/dev/null 2>&1 ) &
waitfor /ok request.created 3
sleep 0.5
check "a removed webhook is sent nothing more (the daemon reads the file within a second)" test "$(lines /slack request.created | wc -l)" = "$n"
check "the daemon logged the webhooks it read" grep -q 'webhooks: 4 from' "$T/daemon.log"
done_testing
