#!/usr/bin/env bash
# A compromised mcp worker (and, web-*, a compromised review worker) against the real signer: each hostile frame is refused,
# logged as a security event, the worker is killed and restarted, nothing is
# decided, and the ledger still verifies.
. "$(dirname "$0")/../lib.sh"
EVIL=$ROOT/build/tests/evil_worker
for sc in hello-twice request-before-hello review-frame other-conn unknown-type over-max truncated bad-cbor \
	forged-digest computed-no-bytes web-no-fd web-unix-fd web-other-port web-agent-frame; do
	S=$T/$sc
	mkdir -p "$S"
	printf '#!/bin/sh\nexec %s %s "$@"\n' "$EVIL" "$sc" >"$T/wrap-$sc"
	chmod +x "$T/wrap-$sc"
	"$EVIL" signer "$S" "$T/wrap-$sc" 2>"$T/$sc.log" &
	pid=$!
	case $sc in
	forged-digest | computed-no-bytes) # these wait for an agent to connect
		for _ in $(seq 100); do [ -S "$S/agent.sock" ] && grep -q 'serving' "$T/$sc.log" && break; sleep 0.05; done
		$PY -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); time.sleep(1.5)' "$S/agent.sock" & ;;
	esac
	for _ in $(seq 60); do grep -q '"security"\|worker down' "$T/$sc.log" 2>/dev/null && break; sleep 0.05; done
	sleep 0.3
	kill "$pid" 2>/dev/null
	wait "$pid"
	case $sc in
	truncated) want='worker down|security' ;; # a frame cut by the worker's exit
	*) want='"level":"security"' ;;
	esac
	check "$sc: the signer logs a security event (or a dead worker) and kills the worker" grep -qE "$want" "$T/$sc.log"
	check "$sc: ... and restarts it" grep -q 'restarting in' "$T/$sc.log"
	case $sc in
	forged-digest | computed-no-bytes)
		check "$sc: the request was not recorded" sh -c "! '$VERIFY' export '$S/ledger' 2>/dev/null | grep -q '\"request\"'"
		check "$sc: the log names the subject's bytes" grep -qE 'bytes do not hash|bytes are missing' "$T/$sc.log" ;;
	esac
	case $sc in
	web-no-fd) check "$sc: the log says why" grep -q 'without its connection' "$T/$sc.log" ;;
	web-unix-fd) check "$sc: the log says why" grep -q "not the proxy's" "$T/$sc.log" ;;
	web-other-port) check "$sc: the log says why" grep -q "not the reviewer listener's" "$T/$sc.log" ;;
	esac
	check "$sc: nothing was decided" sh -c "! '$VERIFY' export '$S/ledger' 2>/dev/null | grep -q '\"decision\"'"
	expect_exit 0 "$sc: the ledger verifies" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
done
done_testing
