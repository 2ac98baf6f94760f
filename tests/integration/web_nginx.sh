#!/usr/bin/env bash
# A real nginx (Debian's) in front of assentd, with docs/deploy.md's example configuration and
# environment ("Behind nginx"): TLS with a throwaway CA, the reviewer's identity from an
# auth_request sign-in service passed as X-Reviewer-Email over the proxy's own unix socket,
# agents on /mcp with their key. An agent's blocking request goes through nginx, the reviewer
# sees it (and its live event) through nginx as alice, approves it, and the agent gets its
# token; the ledger says alice. Refused: the identity header on the TCP reviewer listener, a
# client's own X-Reviewer-Email through nginx, anything without a sign-in.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
S=$T/state
TLS=$T/tls
NG=$T/nginx
RUN=$T/run
SOCK=$RUN/review-proxy.sock
HOSTNAME_=review.example.test
MSG="nginx: deploy the release?"
BG=()
state_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$S/assentd.json" "$1" 2>/dev/null; }
cleanup() {
	[ -f "$NG/nginx.pid" ] && kill "$(cat "$NG/nginx.pid")" 2>/dev/null
	local p
	p=$(state_of pid)
	[ -n "$p" ] && kill "$p" 2>/dev/null
	for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done
	sleep 0.2
	[ -n "${KEEP_T:-}" ] || rm -rf "$T" # KEEP_T=1 keeps the logs and configurations
}
trap cleanup EXIT

if [ ! -x "$NGINX" ] || ! command -v openssl >/dev/null; then
	ok "# SKIP nginx or openssl is not installed"
	done_testing
	exit 0
fi
bail() { not_ok "$*"; done_testing; exit 1; }

# docs/deploy.md's fenced block between <!-- NAME:begin --> and <!-- NAME:end -->, without the fences.
extract() { awk -v b="<!-- $1:begin -->" -v e="<!-- $1:end -->" '$0==b{on=1;next} $0==e{on=0} on && !/^```/' "$ROOT/docs/deploy.md"; }
# jq-less JSON: jget FILE EXPR evaluates a Python expression over the JSON in FILE as `d`.
jget() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); v=eval(sys.argv[2]); print(json.dumps(v) if isinstance(v,(dict,list,bool)) or v is None else v)' "$1" "$2" 2>/dev/null; }

# ---- a throwaway CA and a server certificate for review.example.test ----
mkdir -p "$TLS"
{
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj "/CN=assent test CA" -addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign -keyout "$TLS/ca.key" -out "$TLS/ca.pem" &&
		openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-subj "/CN=$HOSTNAME_" -keyout "$TLS/key.pem" -out "$TLS/server.csr" &&
		printf 'subjectAltName=DNS:%s\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' \
			"$HOSTNAME_" >"$TLS/ext.cnf" &&
		openssl x509 -req -days 2 -in "$TLS/server.csr" -CA "$TLS/ca.pem" -CAkey "$TLS/ca.key" \
			-CAcreateserial -extfile "$TLS/ext.cnf" -out "$TLS/cert.pem"
} >"$TLS/openssl.log" 2>&1
check "openssl made a test CA and a certificate for $HOSTNAME_ that it signed" \
	sh -c "openssl verify -CAfile '$TLS/ca.pem' -verify_hostname '$HOSTNAME_' '$TLS/cert.pem' >>'$TLS/openssl.log' 2>&1"

# ---- docs/deploy.md's configuration and environment ----
extract nginx-example >"$T/readme-nginx.conf"
extract nginx-env >"$T/readme-assentd.env"
check "docs/deploy.md has the nginx example between its markers (auth_request, the proxy socket, /mcp)" \
	sh -c "grep -q 'auth_request /' '$T/readme-nginx.conf' && grep -q 'X-Reviewer-Email' '$T/readme-nginx.conf' && grep -q 'unix:' '$T/readme-nginx.conf' && grep -q 'location = /mcp' '$T/readme-nginx.conf'"
check "docs/deploy.md has the matching assentd environment between its markers" \
	grep -q '^ASSENT_REVIEW_PROXY_SOCKET=' "$T/readme-assentd.env"

# Free ports for nginx's TLS listener and the stand-in sign-in service.
read -r PORT AUTH_PORT < <($PY -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in ss))')
B=https://$HOSTNAME_:$PORT
# curl as a browser on another machine would: the name resolves to nginx, the test CA is trusted.
C() { curl -sS --cacert "$TLS/ca.pem" --resolve "$HOSTNAME_:$PORT:127.0.0.1" "$@"; }

# nginx's workers run as nobody:nogroup when we are root; they reach the socket by its group.
mkdir -p "$RUN" "$NG/tmp" "$S"
if [ "$(id -u)" -eq 0 ]; then
	chmod 711 "$T"
	chmod 755 "$RUN"
	USER_LINE="user nobody nogroup;"
	GROUP=nogroup
else
	USER_LINE=""
	GROUP=""
fi

# assentd with docs/deploy.md's environment: our socket path, any free ports, the test's host name
# (Host carries the port, as clients send it when it is not 443).
mapfile -t ENVS < <(grep -E '^[A-Z_]+=' "$T/readme-assentd.env" | sed \
	-e "s#^FEEDBACK_SSE_PORT=.*#FEEDBACK_SSE_PORT=0#" \
	-e "s#^ASSENT_REVIEW_PORT=.*#ASSENT_REVIEW_PORT=0#" \
	-e "s#^ASSENT_REVIEW_PROXY_SOCKET=.*#ASSENT_REVIEW_PROXY_SOCKET=$SOCK#" \
	-e "s#^ASSENT_REVIEW_PROXY_GROUP=.*#ASSENT_REVIEW_PROXY_GROUP=$GROUP#" \
	-e "s#$HOSTNAME_#$HOSTNAME_:$PORT#g" | grep -v '^ASSENT_REVIEW_PROXY_GROUP=$')

"$ASSENT" --state "$S" reviewer add alice --proxy-id alice@example.com >"$T/alice.out" 2>&1 ||
	bail "assent reviewer add alice --proxy-id failed: $(head -c 300 "$T/alice.out")"
# mallory is a reviewer too: a forged header naming her would be taken if it got through.
"$ASSENT" --state "$S" reviewer add mallory --proxy-id mallory@example.com >/dev/null 2>&1
KEY=$("$ASSENT" --state "$S" agent add release-bot --audience deploy | tail -1)
env "${ENVS[@]}" "$ASSENTD" --state "$S" >"$T/assentd.log" 2>&1 &
for _ in $(seq 200); do
	[ -n "$(state_of review_proxy)" ] && [ -n "$(state_of http)" ] && [ -n "$(state_of review)" ] && break
	sleep 0.05
done
[ -n "$(state_of review_proxy)" ] && [ -n "$(state_of http)" ] && [ -n "$(state_of review)" ] ||
	bail "assentd did not write review, review_proxy and http to assentd.json: $(tail -3 "$T/assentd.log")"
AGENTS=$(state_of http)
REVIEW=$(state_of review)
check "assentd opened the proxy's socket where the environment says ($(state_of review_proxy))" \
	sh -c "[ '$(state_of review_proxy)' = '$SOCK' ] && [ -S '$SOCK' ]"
if [ -n "$GROUP" ]; then
	check "the proxy's socket is 0660, group $GROUP (ASSENT_REVIEW_PROXY_GROUP): $(stat -c '%a %G' "$SOCK")" \
		test "$(stat -c '%a %G' "$SOCK")" = "660 $GROUP"
else
	check "without ASSENT_REVIEW_PROXY_GROUP the proxy's socket is its owner's alone: $(stat -c '%a' "$SOCK")" \
		test $((0$(stat -c '%a' "$SOCK") & 077)) -eq 0
fi

# nginx: docs/deploy.md's server block with our paths and ports, in an http {} of our own that also
# holds the stand-in sign-in service (the sso cookie names the person; none: 401).
sed -e "s#/etc/ssl/assent/cert.pem#$TLS/cert.pem#g" \
	-e "s#/etc/ssl/assent/key.pem#$TLS/key.pem#g" \
	-e "s#unix:/run/assent/review-proxy.sock#unix:$SOCK#g" \
	-e "s#127.0.0.1:8765#$AGENTS#g" \
	-e "s#http://127.0.0.1:9091/#http://127.0.0.1:$AUTH_PORT/#g" \
	-e "s#listen 443 ssl#listen 127.0.0.1:$PORT ssl#" \
	"$T/readme-nginx.conf" >"$NG/assent.conf"
check "every path and port of the example was replaced (certificates, socket, agents, sign-in, listen)" \
	sh -c "! grep -qE '/etc/ssl/assent|/run/assent|:8765|:9091|listen 443' '$NG/assent.conf' &&
		grep -q 'unix:$SOCK' '$NG/assent.conf' && grep -q '$AGENTS' '$NG/assent.conf' &&
		grep -q 'listen 127.0.0.1:$PORT ssl' '$NG/assent.conf' && grep -q '127.0.0.1:$AUTH_PORT/' '$NG/assent.conf'"
cat >"$NG/nginx.conf" <<EOF
$USER_LINE
worker_processes 1;
error_log $NG/error.log info;
events { worker_connections 256; }
http {
    access_log $NG/access.log;
    client_body_temp_path $NG/tmp/body;
    proxy_temp_path $NG/tmp/proxy;
    fastcgi_temp_path $NG/tmp/fastcgi;
    uwsgi_temp_path $NG/tmp/uwsgi;
    scgi_temp_path $NG/tmp/scgi;

    # The stand-in sign-in service that auth_request asks.
    # alice-session: alice; anon-session: signed in, but the service names no email.
    map \$cookie_sso \$sso_ok { default 0; alice-session 1; anon-session 1; }
    map \$cookie_sso \$sso_email { default ""; alice-session alice@example.com; }
    server {
        listen 127.0.0.1:$AUTH_PORT;
        location = /validate {
            if (\$sso_ok = 0) { return 401; }
            add_header X-Auth-Email \$sso_email;
            return 204;
        }
        location / { return 404; }
    }

    include $NG/assent.conf;
}
EOF
expect_exit 0 "nginx -t accepts docs/deploy.md's example" "$NGINX" -p "$NG/" -c nginx.conf -t -g "pid $NG/nginx.pid;"
"$NGINX" -p "$NG/" -c nginx.conf -g "daemon off; pid $NG/nginx.pid;" >"$NG/stderr" 2>&1 &
BG+=($!)
up=""
for _ in $(seq 200); do
	[ "$(C -o /dev/null -w '%{http_code}' "$B/health" 2>/dev/null)" = 200 ] && up=1 && break
	kill -0 "${BG[0]}" 2>/dev/null || break
	sleep 0.05
done
[ -n "$up" ] || bail "nginx did not answer /health on port $PORT: $(grep -vE '\[(notice|info)\]' "$NG/error.log" "$NG/stderr" 2>/dev/null | tail -3)"

# ---- what anyone may see ----
C -o "$T/health.json" -w '%{http_code}' "$B/health" >"$T/health.code" 2>"$T/health.err"
check "GET /health through nginx over TLS (the test CA, $HOSTNAME_): $(cat "$T/health.code") $(head -c 120 "$T/health.json")" \
	test "$(jget "$T/health.json" 'd["status"]')" = ok
C -o "$T/jwks.json" "$B/.well-known/jwks.json" 2>/dev/null
check "GET /.well-known/jwks.json through nginx without a sign-in: the token keys" \
	test "$(jget "$T/jwks.json" 'len(d["keys"]) > 0')" = true
check "a request for another host name (other.example.test) is refused by nginx: 421" \
	test "$(curl -sS -k --resolve "other.example.test:$PORT:127.0.0.1" -b "sso=alice-session" -o /dev/null -w '%{http_code}' \
		"https://other.example.test:$PORT/review/api/me")" = 421
check "a path the example does not list (/admin/clear-stale-sessions) is not proxied: 404" \
	test "$(C -o /dev/null -w '%{http_code}' -X POST "$B/admin/clear-stale-sessions")" = 404

# ---- who the reviewer is ----
JAR=$T/jar # alice's browser: the sign-in service's cookie (assentd sets none)
printf '%s\tFALSE\t/\tTRUE\t0\tsso\talice-session\n' "$HOSTNAME_" >"$JAR"
check "not signed in: /review/api/me through nginx is refused by the sign-in service (401)" \
	test "$(C -o /dev/null -w '%{http_code}' "$B/review/api/me")" = 401
check "not signed in, with X-Reviewer-Email: alice@example.com of its own: still 401" \
	test "$(C -o /dev/null -w '%{http_code}' -H 'X-Reviewer-Email: alice@example.com' "$B/review/api/me")" = 401
C -b "$JAR" -c "$JAR" -D "$T/me.h" -o "$T/me.json" -w '%{http_code}' "$B/review/api/me" >"$T/me.code" 2>&1
check "signed in: /review/api/me through nginx is alice, via the proxy ($(cat "$T/me.code") $(head -c 160 "$T/me.json"))" \
	test "$(jget "$T/me.json" 'd["reviewer"] + "/" + d["via"]')" = alice/proxy
CSRF=$(jget "$T/me.json" 'd["csrf"]')
SESSION=$(jget "$T/me.json" 'd["session"]') # the page holds it and sends it in the Authorization header
check "the page's session comes in the body (ws_...), and no cookie is set: $(grep -ci '^set-cookie:' "$T/me.h") Set-Cookie" \
	sh -c "case '$SESSION' in ws_?*) ! grep -qi '^set-cookie:' '$T/me.h';; *) false;; esac"
C -b "$JAR" -D "$T/page.h" -o "$T/page.html" "$B/review" 2>/dev/null
check "the page (/review) through nginx, with its Content-Security-Policy and X-Frame-Options intact" \
	sh -c "grep -q '^HTTP/[0-9.]* 200' '$T/page.h' && grep -qi '^content-security-policy: default-src .none.' '$T/page.h' &&
		grep -qi '^x-frame-options: DENY' '$T/page.h' && grep -qi '<html' '$T/page.html'"
C -b "$JAR" -o "$T/mallory.json" -H 'X-Reviewer-Email: mallory@example.com' -H 'X-Assent-Proxy-Secret: guessed' \
	"$B/review/api/me" 2>/dev/null
check "a client's own X-Reviewer-Email: mallory@... (and X-Assent-Proxy-Secret) through nginx is overwritten: $(head -c 120 "$T/mallory.json")" \
	test "$(jget "$T/mallory.json" 'd["reviewer"]')" = alice
code=$(C -b 'sso=anon-session' -o "$T/anon.json" -w '%{http_code}' -H 'X-Reviewer-Email: mallory@example.com' "$B/review/api/me")
check "signed in but without an email from the sign-in service, a client's X-Reviewer-Email: mallory@... is dropped, not passed: $code $(head -c 100 "$T/anon.json")" \
	test "$code" = 401
curl -sS -o "$T/direct.json" -w '%{http_code}' -H 'X-Reviewer-Email: alice@example.com' \
	"http://$REVIEW/review/api/me" >"$T/direct.code" 2>&1
check "X-Reviewer-Email sent straight to the TCP reviewer listener ($REVIEW) is refused: $(cat "$T/direct.code") $(head -c 120 "$T/direct.json")" \
	test "$(cat "$T/direct.code")" = 403
curl -sS -o "$T/direct2.json" -w '%{http_code}' -H 'X-Reviewer-Email: alice@example.com' \
	-H "Host: $HOSTNAME_:$PORT" -H 'X-Forwarded-Proto: https' "http://$REVIEW/review/api/pending" >"$T/direct2.code" 2>&1
check "... and so is it with the proxy's Host and X-Forwarded-Proto, on /review/api/pending: $(cat "$T/direct2.code")" \
	test "$(cat "$T/direct2.code")" = 403

# ---- an agent's blocking request, through nginx ----
check "/mcp through nginx without an agent key: 401" \
	test "$(C -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' \
		-d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}' \
		"$B/mcp")" = 401
cat >"$T/agent.py" <<'EOF'
# An MCP client over Streamable HTTP: initialize, then one blocking request_feedback; prints
# {"server": ..., "result": structuredContent}. Usage: agent.py PORT CA KEY MESSAGE
import http.client, json, socket, ssl, sys
port, ca, key, message = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ctx = ssl.create_default_context(cafile=ca)

class Conn(http.client.HTTPSConnection):
    def connect(self):  # review.example.test is nginx on 127.0.0.1 here (curl's --resolve)
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)

session = None
def call(msg_id, method, params, timeout=30):
    global session
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Authorization": "Bearer " + key}
    if session:
        headers["Mcp-Session-Id"] = session
        headers["MCP-Protocol-Version"] = "2025-06-18"
    body = {"jsonrpc": "2.0", "method": method, "params": params}
    if msg_id is not None:
        body["id"] = msg_id
    c = Conn("review.example.test", port, context=ctx, timeout=timeout)
    c.request("POST", "/mcp", body=json.dumps(body), headers=headers)
    r = c.getresponse()
    text = r.read().decode()
    session = r.getheader("Mcp-Session-Id") or session
    if msg_id is None:
        return r.status
    if r.status != 200:
        raise SystemExit(f"{method}: HTTP {r.status}: {text[:300]}")
    if (r.getheader("Content-Type") or "").startswith("text/event-stream"):
        for line in text.splitlines():
            if line.startswith("data:"):
                m = json.loads(line[5:])
                if m.get("id") == msg_id:
                    return m
        raise SystemExit(f"{method}: no answer in the event stream: {text[:300]}")
    return json.loads(text)

init = call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "web-nginx-agent", "version": "1.0"}})
call(None, "notifications/initialized", {})
res = call(2, "tools/call", {"name": "request_feedback", "arguments": {
    "type": "approval", "message": message, "audience": "deploy",
    "context": {"release": "v1.2.3"}}}, timeout=600)
print(json.dumps({"server": init["result"]["serverInfo"]["name"], "session": session,
                  "result": res.get("result", {}).get("structuredContent"), "error": res.get("error")}))
EOF
# alice's page holds the event stream open through nginx (proxy_buffering off).
C -N -b "$JAR" -H "Accept: text/event-stream" "$B/review/events" >"$T/events.txt" 2>"$T/events.err" &
EVENTS_PID=$!
BG+=("$EVENTS_PID")
for _ in $(seq 200); do grep -q '^data:' "$T/events.txt" && break; sleep 0.05; done
check "the event stream through nginx says at once how many are pending: $(grep -m1 '^data:' "$T/events.txt" | cut -c1-100)" \
	grep -q '^event: pending' "$T/events.txt"
$PY "$T/agent.py" "$PORT" "$TLS/ca.pem" "$KEY" "$MSG" >"$T/agent.out" 2>"$T/agent.err" &
AGENT_PID=$!
BG+=("$AGENT_PID")
SID=""
for _ in $(seq 400); do
	[ "$(C -b "$JAR" -o "$T/pending.json" -w '%{http_code}' "$B/review/api/pending" 2>/dev/null)" = 200 ] || break
	SID=$(jget "$T/pending.json" "[r['session_id'] for r in d['requests'] if r['message'] == '$MSG'][0]")
	[ -n "$SID" ] && break
	kill -0 "$AGENT_PID" 2>/dev/null || break
	sleep 0.05
done
check "the agent's request (through nginx, with its key) is in /review/api/pending through nginx: ${SID:-(absent; agent: $(head -c 200 "$T/agent.err"))}" \
	test -n "$SID"
check "... with its requester, the agent its key names: $(jget "$T/pending.json" "[r.get('requester') for r in d['requests'] if r['message'] == '$MSG'][0]")" \
	test "$(jget "$T/pending.json" "[r['requester']['agent'] for r in d['requests'] if r['message'] == '$MSG'][0]")" = release-bot
for _ in $(seq 200); do grep -qE '"pending": ?1[,}]' "$T/events.txt" && break; sleep 0.05; done
check "the event stream through nginx announced it live: $(grep '^data:' "$T/events.txt" | tail -1 | cut -c1-100)" \
	grep -qE '"pending": ?1[,}]' "$T/events.txt"

# ---- the decision ----
decide() { # ORIGIN CSRF OUTFILE: POST /review/api/decide approving $SID as alice's page would; prints the status
	C -b "$JAR" -c "$JAR" -o "$3" -w '%{http_code}' -X POST -H "Origin: $1" -H "X-CSRF-Token: $2" \
		-H "Authorization: Bearer $SESSION" \
		-H 'Content-Type: application/json' \
		-d "{\"session_id\": \"$SID\", \"outcome\": \"approved\", \"text\": \"ship it\"}" "$B/review/api/decide"
}
check "a decision POST through nginx from another origin (https://evil.example.test) is refused: 403" \
	test "$(decide https://evil.example.test "$CSRF" "$T/evil.json")" = 403
check "a decision POST through nginx without the CSRF token is refused: 403" \
	test "$(decide "$B" "" "$T/nocsrf.json")" = 403
code=$(decide "$B" "$CSRF" "$T/decide.json")
check "alice approves through nginx (Origin $B, the csrf from me): $code $(head -c 160 "$T/decide.json")" \
	test "$(jget "$T/decide.json" 'd["ok"] is True and d["outcome"] == "approved" and isinstance(d["seq"], int)')" = true
SEQ=$(jget "$T/decide.json" 'd["seq"]')
[ -n "$SEQ" ] || kill "$AGENT_PID" 2>/dev/null # no decision: the agent would wait out its deadline
wait "$AGENT_PID"
rc=$?
check "the agent's blocking call through nginx returns (exit $rc)$([ "$rc" -ne 0 ] && echo ": $(head -c 200 "$T/agent.err")")" test "$rc" -eq 0
check "its server is assent, reached through nginx's /mcp" test "$(jget "$T/agent.out" 'd["server"]')" = assent
check "the agent's answer: approved, for its request, with a token ($(jget "$T/agent.out" 'd["result"]' | cut -c1-160))" \
	test "$(jget "$T/agent.out" "d['result']['approved'] is True and d['result']['session_id'] == '$SID' and len(d['result']['approval_token']) > 0")" = true
jget "$T/agent.out" 'd["result"]["approval_token"]' >"$T/token"
KEYPUB=$(ls "$S"/keys/token-*.pub 2>/dev/null | head -1)
expect_exit 0 "the token verifies (assent-verify token --aud deploy --ledger)" \
	"$VERIFY" token - --aud deploy --key "$KEYPUB" --ledger "$S/ledger" <"$T/token"
$PY -c 'import base64,json,sys; p=open(sys.argv[1]).read().strip().split(".")[1]; print(json.dumps(json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))))' \
	"$T/token" >"$T/claims.json" 2>/dev/null
check "the token names alice as the reviewer: $(jget "$T/claims.json" 'd.get("reviewer")')" \
	test "$(jget "$T/claims.json" 'd["reviewer"]["name"]')" = alice
C -b "$JAR" -o "$T/pending2.json" "$B/review/api/pending" 2>/dev/null
check "/review/api/pending through nginx lists it among recent decisions, by alice, seq $SEQ" \
	test "$(jget "$T/pending2.json" "[(r['by'], r['seq']) for r in d['recent'] if r['session_id'] == '$SID'][0] == ('alice', $SEQ)")" = true

check "nginx logged no warning or error (upstreams reached, nothing buffered to disk): $(grep -E '\[(warn|error|crit|alert|emerg)\]' "$NG/error.log" | head -1 | cut -c1-200)" \
	sh -c "! grep -qE '\\[(warn|error|crit|alert|emerg)\\]' '$NG/error.log'"

# ---- the ledger ----
kill "$EVENTS_PID" 2>/dev/null
p=$(state_of pid)
[ -n "$p" ] && kill "$p"
for _ in $(seq 200); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
expect_exit 0 "the ledger verifies" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
"$VERIFY" export "$S/ledger" >"$T/export.jsonl" 2>/dev/null
$PY - "$T/export.jsonl" "$SID" >"$T/ledger-decision.json" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)["entry"]
    if e.get("kind") == "decision" and e.get("session_id") == sys.argv[2]:
        print(json.dumps(e))
EOF
check "the ledger records the decision as approved by reviewer alice, on the web, via the proxy: $(jget "$T/ledger-decision.json" 'd.get("reviewer")')" \
	test "$(jget "$T/ledger-decision.json" 'd["outcome"] == "approved" and d["reviewer"]["name"] == "alice" and d["reviewer"]["channel"] == "web" and d["reviewer"]["via"] == "proxy"')" = true
check "... and the request as the agent's: release-bot" \
	grep -q '"agent":"release-bot"' "$T/export.jsonl"
done_testing
