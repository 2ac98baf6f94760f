#!/usr/bin/env bash
# The upstream HTTP client (gateway/worker/upstream/uhttp.h) against a real HTTPS server:
# a throwaway CA and a server certificate for "localhost" made with the openssl CLI in a
# temp dir, tests/integration/uhttp_server.py (python3 http.server + ssl) on 127.0.0.1
# port 0, and build/tests/uhttp_probe, which connects the sockets itself as the signer
# will and drives the module. Shown: the pinned CA is trusted and the system store is
# not; a wrong host name or address, plain HTTP to a TLS port and a TLS 1.3-only server are refused
# with what failed; plain HTTP to loopback; JSON, batch and SSE answers; the session id
# kept and sent; a 404 to it reported as a lost session, then a new session; an
# oversized body and an endless SSE stream refused; a server's Connection: close as a closed connection and a new
# one for the next request, resuming the TLS session; the upstream's credential sent and
# never shown; and all of it inside the workers' seccomp jail.
. "$(dirname "$0")/../lib.sh"
PROBE=$ROOT/build/tests/uhttp_probe
SERVER=$ROOT/tests/integration/uhttp_server.py
SECRET="Bearer uhttp-secret-$$-credential"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT

check "build/tests/uhttp_probe is built" test -x "$PROBE"

# ---- a throwaway CA and a certificate for localhost, signed by it ----
mk_certs() {
	cd "$T" || return 1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 \
		-subj "/CN=assent uhttp test CA" &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key -out srv.csr \
			-subj "/CN=localhost" &&
		printf 'subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >ext &&
		openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile ext &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ip.key -out ip.csr -subj "/CN=ip" &&
		printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >extip &&
		openssl x509 -req -in ip.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out ip.pem -days 2 -extfile extip
}
(mk_certs) >"$T/openssl.log" 2>&1
check "openssl makes a CA and two server certificates (localhost, IP 127.0.0.1)" test -s "$T/srv.pem" -a -s "$T/ca.pem" -a -s "$T/ip.pem"

# start_server NAME ARGS...: the server's port in $PORT
start_server() {
	local name=$1
	shift
	$PY "$SERVER" --log "$T/$name.log" "$@" >"$T/$name.port" 2>"$T/$name.err" &
	pids+=($!)
	PORT=
	for _ in $(seq 100); do
		PORT=$(head -n 1 "$T/$name.port" 2>/dev/null)
		[ -n "$PORT" ] && break
		sleep 0.05
	done
}
start_server tls --cert "$T/srv.pem" --key "$T/srv.key" --auth "$SECRET"
TLS_PORT=$PORT
check "the HTTPS server listens on a free port ($TLS_PORT)" test -n "$TLS_PORT"
start_server plain --plain
PLAIN_PORT=$PORT
check "the plain HTTP server listens on a free port ($PLAIN_PORT)" test -n "$PLAIN_PORT"
start_server tls13 --cert "$T/srv.pem" --key "$T/srv.key" --tls13
TLS13_PORT=$PORT
start_server ip --cert "$T/ip.pem" --key "$T/ip.key"
IP_PORT=$PORT

INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
NOTE='{"jsonrpc":"2.0","method":"notifications/initialized"}'
msg() { printf '{"jsonrpc":"2.0","id":%s,"method":"%s"}' "$1" "$2"; }

# probe NAME ARGS...: runs the probe, its output (stdout and stderr) in $T/NAME.out
probe() {
	local name=$1
	shift
	"$PROBE" "$@" >"$T/$name.out" 2>&1
	echo $? >"$T/$name.rc"
}
has() { grep -qF -- "$2" "$T/$1.out"; }	     # NAME TEXT
rc_is() { test "$(cat "$T/$1.rc")" = "$2"; } # NAME CODE
TLS=(--connect "127.0.0.1:$TLS_PORT" --scheme https --header "Authorization: $SECRET")

# ---- pinned CA: trusted; JSON, 202, SSE, batch; the session kept ----
probe pinned "${TLS[@]}" --host localhost --ca "$T/ca.pem" --protocol 2025-06-18 "$INIT" "$NOTE" \
	"$(msg 2 sse)" "$(msg 3 batch)" "$(msg 4 tools/list)"
check "pinned CA: every request answered (exit 0)" rc_is pinned 0
check "... the CA file held one certificate" has pinned "cas 1"
check "... initialize's result delivered" has pinned 'msg {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}'
check "... the session the server gave is kept" has pinned "session sess-"
check "... a notification is answered 202 with no message" sh -c "grep -A1 -F 'session sess-' '$T/pinned.out' | grep -q '^done 202$'"
check "... SSE: the progress notification (split across writes) is delivered" has pinned '"method": "notifications/progress"'
check "... SSE: then the result" has pinned 'msg {"jsonrpc":"2.0","id":2,"result":{"sse":true}}'
check "... SSE: the priming event (an id, empty data) is no message" sh -c "! grep -q '^msg \$' '$T/pinned.out'"
check "... a batch: both of its messages" sh -c "grep -qF '\"id\":3,\"result\":{\"n\":1}' '$T/pinned.out' && grep -qF 'notifications/message' '$T/pinned.out'"
sid=$(sed -n 's/^session //p' "$T/pinned.out" | head -n 1)
check "... the next requests carried Mcp-Session-Id $sid" has pinned "\"session\":\"$sid\""
check "... and MCP-Protocol-Version once set" grep -q "request tools/list session $sid protocol 2025-06-18" "$T/tls.log"
check "... one connection served them all (keep-alive): no 'closed'" sh -c "! grep -q '^closed' '$T/pinned.out'"
check "... the server saw the credential on every request" sh -c "! grep -q unauthorized '$T/pinned.out' && grep -q 'auth ok' '$T/tls.log'"
check "... TLS 1.2 was negotiated" grep -q "tls TLSv1.2" "$T/tls.log"

# ---- the system store does not trust the throwaway CA ----
probe system "${TLS[@]}" --host localhost "$INIT"
check "system store: refused (exit 1)" rc_is system 1
check "... it loaded the system bundle (more than 10 CAs)" sh -c "n=\$(sed -n 's/^cas //p' '$T/system.out'); [ \"\$n\" -gt 10 ]"
check "... 'certificate not trusted'" has system "refused: not trusted"
check "... the request was never sent (lost unsent), the connection closed" sh -c "grep -q '^lost unsent' '$T/system.out' && grep -q '^closed' '$T/system.out'"

# ---- a wrong host name ----
probe wrongname "${TLS[@]}" --host wrong.example --ca "$T/ca.pem" "$INIT"
check "wrong host name: refused (exit 1)" rc_is wrongname 1
check "... 'name does not match' for wrong.example" has wrongname "certificate of wrong.example was refused: name does not match"

# ---- an address as the host: its certificate's iPAddress is checked (mbedTLS 2.28 matches
# names only; uhttp checks addresses itself) ----
probe ipok --connect "127.0.0.1:$IP_PORT" --scheme https --host 127.0.0.1 --ca "$T/ca.pem" "$INIT"
check "host 127.0.0.1, certificate for IP 127.0.0.1: accepted (exit 0)" rc_is ipok 0
probe ipwrong --connect "127.0.0.1:$IP_PORT" --scheme https --host 127.0.0.2 --ca "$T/ca.pem" "$INIT"
check "host 127.0.0.2, the same certificate: 'name does not match'" has ipwrong "certificate of 127.0.0.2 was refused: name does not match"
probe ipname --connect "127.0.0.1:$TLS_PORT" --scheme https --host 127.0.0.1 --ca "$T/ca.pem" "$INIT"
check "host 127.0.0.1, a certificate for localhost only: refused" has ipname "certificate of 127.0.0.1 was refused: name does not match"

# ---- a server that speaks TLS 1.3 only (mbedTLS 2.28 has none) ----
probe tls13 --connect "127.0.0.1:$TLS13_PORT" --scheme https --host localhost --ca "$T/ca.pem" "$INIT"
check "TLS 1.3-only server: refused (exit 1)" rc_is tls13 1
check "... with the server's handshake alert named" has tls13 "sent a fatal alert"

# ---- plain HTTP to a TLS port; plain HTTP to loopback ----
probe plain_to_tls --connect "127.0.0.1:$TLS_PORT" --scheme http --host localhost "$INIT"
check "plain HTTP to a TLS port: an error, no crash (exit 1)" rc_is plain_to_tls 1
check "... saying what went wrong" has plain_to_tls "error HTTP: "
probe plain --connect "127.0.0.1:$PLAIN_PORT" --scheme http --host 127.0.0.1 "$INIT" "$(msg 2 sse)" "$(msg 3 ping)"
check "plain HTTP to loopback: answered (exit 0)" rc_is plain 0
check "... JSON and SSE" sh -c "grep -qF '\"id\":1,\"result\"' '$T/plain.out' && grep -qF '\"sse\":true' '$T/plain.out'"
check "... no CA is read for plain HTTP" has plain "cas 0"

# ---- the session's GET stream: server-initiated messages ----
probe get "${TLS[@]}" --host localhost --ca "$T/ca.pem" "$INIT" GET
check "GET stream: answered (exit 0)" rc_is get 0
check "... the server's request (roots/list) and notification delivered" sh -c "grep -qF '\"method\": \"roots/list\"' '$T/get.out' && grep -qF 'notifications/tools/list_changed' '$T/get.out'"
check "... the GET carried the session and asked for SSE only" grep -q "GET session sess-[0-9]* accept text/event-stream$" "$T/tls.log"

# ---- a 404 to a request with the session: the session is lost; initialize again ----
probe lost "${TLS[@]}" --host localhost --ca "$T/ca.pem" "$INIT" "$(msg 2 forget)" "$(msg 3 tools/list)" "$INIT" \
	"$(msg 4 tools/list)"
check "session lost: the run goes on (exit 0)" rc_is lost 0
check "... the 404 is reported as session-lost, then done 404" sh -c "grep -A1 '^session-lost' '$T/lost.out' | grep -q '^done 404'"
first=$(sed -n 's/^session //p' "$T/lost.out" | head -n 1)
last=$(sed -n 's/^session //p' "$T/lost.out" | tail -n 1)
check "... the next initialize gets a new session ($first, then $last)" test -n "$last" -a "$first" != "$last"
check "... which the last request carried" has lost "\"session\":\"$last\""

# ---- an oversized body ----
probe big "${TLS[@]}" --host localhost --ca "$T/ca.pem" --max 1048576 "$(msg 1 big)"
check "a 5 MiB body over a 1 MiB maximum: refused (exit 1)" rc_is big 1
check "... saying so" has big "a body of 5242"
check "... the request lost, the connection dropped" sh -c "grep -q '^lost$' '$T/big.out' && grep -q '^closed' '$T/big.out'"

# ---- a flood: an SSE stream without end is cut at its bound (16 x the body maximum) ----
probe flood "${TLS[@]}" --host localhost --ca "$T/ca.pem" --max 4096 "$(msg 1 flood)"
check "an endless SSE stream: refused (exit 1)" rc_is flood 1
check "... at its bound, 64 KiB for a 4 KiB maximum" has flood "SSE: a stream of more than 65536 bytes"
check "... after delivering the events within it" sh -c "n=\$(grep -c '\"flood\"' '$T/flood.out'); [ \"\$n\" -gt 10 ] && [ \"\$n\" -lt 400 ]"

# ---- the server closes the connection: a new one for the next request ----
probe close "${TLS[@]}" --host localhost --ca "$T/ca.pem" "$INIT" "$(msg 2 close)" "$(msg 3 tools/list)"
check "Connection: close: the run goes on (exit 0)" rc_is close 0
check "... the answer, then 'closed' (a new fd is needed)" sh -c "grep -A2 -F '\"closing\":true' '$T/close.out' | grep -q '^closed'"
check "... the next request answered over a new connection" has close '"echo":"tools/list"'
check "... which resumed the TLS session (no second full handshake)" grep -q "reused True" "$T/tls.log"
check "... while the first connections made full handshakes" grep -q "reused False" "$T/tls.log"

# ---- the credential is never shown ----
check "the credential appears in no probe output" sh -c "! grep -qF 'uhttp-secret-$$' '$T'/*.out"

# ---- inside the workers' jail (seccomp, no files, no new sockets) ----
# Output to a pipe: the jail refuses a regular file among its descriptors.
"$PROBE" "${TLS[@]}" --host localhost --ca "$T/ca.pem" --jail --conns 2 "$INIT" "$(msg 2 sse)" "$(msg 3 close)" \
	"$(msg 4 tools/list)" 2>&1 | cat >"$T/jail.out"
rc=${PIPESTATUS[0]}
if grep -q "error jail:" "$T/jail.out" && [ "$(id -u)" -ne 0 ]; then
	ok "# SKIP the jail cannot be entered here as non-root: $(grep 'error jail' "$T/jail.out" | head -c 200)"
else
	check "jailed: handshake, SSE, close and a second connection work (exit $rc)" test "$rc" -eq 0
	check "... it ran in the jail" has jail "jailed"
	check "... every answer came" sh -c "grep -qF '\"sse\":true' '$T/jail.out' && grep -qF '\"echo\":\"tools/list\"' '$T/jail.out'"
fi

done_testing
