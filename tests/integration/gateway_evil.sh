#!/usr/bin/env bash
# A compromised mcp worker (and, web-*, a compromised review worker) against the real signer: each hostile frame is refused,
# logged as a security event, the worker is killed and restarted, nothing is
# decided, and the ledger still verifies.
. "$(dirname "$0")/../lib.sh"
EVIL=$ROOT/build/tests/evil_worker
for sc in hello-twice request-before-hello review-frame review-web-frame other-conn unknown-type over-max truncated bad-cbor \
	forged-digest computed-no-bytes web-no-fd web-unix-fd web-other-port web-agent-frame \
	web-before-hello web-old-cmd web-extra-field web-ctl-fd web-decide-no-sid \
	text-message-esc text-message-bidi text-audience text-option text-default text-subject text-client; do
	S=$T/$sc
	mkdir -p "$S"
	printf '#!/bin/sh\nexec %s %s "$@"\n' "$EVIL" "$sc" >"$T/wrap-$sc"
	chmod +x "$T/wrap-$sc"
	"$EVIL" signer "$S" "$T/wrap-$sc" 2>"$T/$sc.log" &
	pid=$!
	case $sc in
	forged-digest | computed-no-bytes | text-*) # these wait for an agent to connect
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
	text-*)
		check "$sc: the request was not recorded" sh -c "! '$VERIFY' export '$S/ledger' 2>/dev/null | grep -q '\"request\"'"
		check "$sc: the log names the character" grep -qE 'character U\+(001B|202E|2066) at byte [0-9]+ is not allowed' "$T/$sc.log" ;;
	esac
	case $sc in
	web-no-fd) check "$sc: the log says why" grep -q 'without its connection' "$T/$sc.log" ;;
	web-unix-fd) check "$sc: the log says why" grep -q "not the proxy's" "$T/$sc.log" ;;
	web-other-port) check "$sc: the log says why" grep -q "not the reviewer listener's" "$T/$sc.log" ;;
	review-frame) check "$sc: the log says why" grep -q "frame type 44 is not a known type" "$T/$sc.log" ;;
	review-web-frame) check "$sc: the log says why" grep -q "frame type 60 is not a known type" "$T/$sc.log" ;;
	web-before-hello) check "$sc: the log says why" grep -q "frame type 40 is not allowed in state" "$T/$sc.log" ;;
	web-old-cmd) check "$sc: the log says why" grep -q "frame type 20 is not a known type" "$T/$sc.log" ;;
	web-extra-field) check "$sc: the log says why" grep -q 'IPC F_CTL_SHOW: field \\"outcome\\" is not one of its fields' "$T/$sc.log" ;;
	web-ctl-fd) check "$sc: the log says why" grep -q "frame type 41 may not carry descriptors" "$T/$sc.log" ;;
	web-decide-no-sid) check "$sc: the log says why" grep -q 'IPC F_WEB_DECIDE: missing field \\"sid\\"' "$T/$sc.log" ;;
	esac
	check "$sc: nothing was decided" sh -c "! '$VERIFY' export '$S/ledger' 2>/dev/null | grep -q '\"decision\"'"
	expect_exit 0 "$sc: the ledger verifies" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
done

# Every reviewer command's frame type (gateway/proto/proto.h's F_CTL_* and F_WEB_* a worker
# sends), sent by the mcp worker: none is in its table, each is a security event.
types=$(sed -n 's/^[[:space:]]*F_\(CTL\|WEB\)_[A-Z_]* = \([0-9]*\),.*/\2/p' "$ROOT/gateway/proto/proto.h" | awk '$1 < 100')
check "proto.h names the 25 reviewer command types ($(echo $types))" test "$(echo "$types" | wc -w)" -eq 25
for ty in $types; do
	sc=mcp-sends:$ty
	S=$T/mcp-sends-$ty
	mkdir -p "$S"
	printf '#!/bin/sh\nexec %s %s "$@"\n' "$EVIL" "$sc" >"$T/wrap-$ty"
	chmod +x "$T/wrap-$ty"
	"$EVIL" signer "$S" "$T/wrap-$ty" 2>"$T/$ty.log" &
	pid=$!
	for _ in $(seq 60); do grep -q '"security"' "$T/$ty.log" 2>/dev/null && break; sleep 0.05; done
	kill "$pid" 2>/dev/null
	wait "$pid"
	check "$sc: a security event, the type not in the mcp worker's table" grep -q "security.*frame type $ty is not a known type" "$T/$ty.log"
done

# Start the evil signer for scenario $1 in $2 (default $T/$1; a reviewer "tester" for this uid), wait until it serves.
start_evil() {
	S=${2:-$T/$1}
	mkdir -p "$S"
	"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null 2>&1
	printf '#!/bin/sh\nexec %s %s "$@"\n' "$EVIL" "$1" >"$T/wrap-$1"
	chmod +x "$T/wrap-$1"
	"$EVIL" signer "$S" "$T/wrap-$1" 2>"$T/$1.log" &
	pid=$!
	for _ in $(seq 100); do [ -S "$S/agent.sock" ] && grep -q 'serving' "$T/$1.log" && break; sleep 0.05; done
}
first_pending() {
	for _ in $(seq 100); do
		id=$("$ASSENT" --state "$S" pending --json 2>/dev/null | $PY -c 'import json,sys; r=json.load(sys.stdin); print(r[0]["session_id"] if r else "")')
		[ -n "$id" ] && break
		sleep 0.05
	done
}

# text-context: what a compromised worker may still send (a context is the exact operation,
# any text) reaches the reviewer only neutralised, in every field `assent show` prints.
start_evil text-context
$PY -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); time.sleep(20)' "$S/agent.sock" &
agent=$!
first_pending
check "text-context: the request is pending" test -n "$id"
"$ASSENT" --state "$S" show "$id" >"$T/show.out" 2>&1
"$ASSENT" --state "$S" pending >"$T/pending.out" 2>&1
"$ASSENT" --state "$S" show "$id" --json >"$T/show-json.out" 2>&1
"$ASSENT" --state "$S" pending --json >"$T/pending-json.out" 2>&1
check "text-context: assent show --json is ASCII, and the same strings once parsed" \
	$PY -c 'import json,sys; t=open(sys.argv[1],"rb").read(); t.decode("ascii"); sys.exit(0 if "\u202e" in json.loads(t)["context"]["command"] else 1)' "$T/show-json.out"
for f in show pending show-json pending-json; do
	check "text-context: assent $f prints no ESC, C1, bidirectional or invisible character" \
		$PY -c 'import sys,re; t=open(sys.argv[1],encoding="utf-8").read(); sys.exit(1 if re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]", t) else 0)' "$T/$f.out"
done
for want in '\\u001[bB]\[8m; rm -rf \\u202e/tsil \\u2066x' 'deploy\\u200e to\\u200b prod' 'keep\\ufeff it' 'plan\\u2060\.tf' \
	'^from     uid [0-9]+( \([a-z0-9._-]+\))?, measured on its socket; no agent is registered for it \(assent agent add NAME --uid [0-9]+ names it\), client evil/1' 'note: 7 control, bidirectional or invisible characters'; do
	check "text-context: assent show marks it: $want" grep -qE "$want" "$T/show.out"
done
check "text-context: assent pending marks the message" grep -qF 'deploy\u200e to\u200b prod' "$T/pending.out"
kill "$agent" "$pid" 2>/dev/null
wait "$pid"

ask_ended() { # MESSAGE OUT: a non-blocking request from a stdio agent on $S/agent.sock; its answers in OUT
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"request_feedback\",\"arguments\":{\"type\":\"approval\",\"message\":\"$1\",\"wait\":false}}}" |
		(cat; sleep 8) | $PY -c '
import socket,sys,threading
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
threading.Thread(target=lambda: [s.sendall(l.encode()) for l in sys.stdin], daemon=True).start()
f=s.makefile("rb")
for _ in range(2): sys.stdout.write(f.readline().decode())
' "$S/agent.sock" >"$2" &
	agent=$!
}

# web-ctl-ended: the review worker decides over a CLI reviewer's connection after they hung up.
start_evil web-ctl-ended
ask_ended ended "$T/ended-agent.out"
for _ in $(seq 100); do grep -q '"pending"' "$T/ended-agent.out" 2>/dev/null && break; sleep 0.05; done
check "web-ctl-ended: the request is pending" grep -q '"pending"' "$T/ended-agent.out"
$PY -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.makefile("rb").readline(); s.close()' "$S/control.sock"
want='whose reviewer has left: refused|connection [0-9]+, which has ended: dropped'
for _ in $(seq 100); do grep -qE "$want" "$T/web-ctl-ended.log" && break; sleep 0.05; done
check "web-ctl-ended: the signer refuses the decision, saying why" grep -qE "$want" "$T/web-ctl-ended.log"
kill "$agent" "$pid" 2>/dev/null
wait "$pid"
check "web-ctl-ended: nothing was decided" sh -c "! '$VERIFY' export '$S/ledger' 2>/dev/null | grep -q '\"decision\"'"
check "web-ctl-ended: the request was recorded" sh -c "'$VERIFY' export '$S/ledger' 2>/dev/null | grep -q '\"request\"'"

# web-replay: a review worker that saw a reviewer's login replays the session secret after logout.
S=$T/web-replay
mkdir -p "$S"
TOKEN=$("$ASSENT" --state "$S" reviewer add alice --web | tail -1)
start_evil "web-replay:$TOKEN" "$S"
ask_ended replayed "$T/replay-agent.out"
for _ in $(seq 200); do grep -q 'replay after logout' "$T/web-replay:$TOKEN.log" 2>/dev/null && break; sleep 0.05; done
L="$T/web-replay:$TOKEN.log"
check "web-replay: the review worker logged in and saw the request" grep -q 'replay after logout: pending=seen logout=200' "$L"
check "web-replay: the session secret after logout is refused (401)" grep -q 'replay after logout: .* me=401 ' "$L"
check "web-replay: ... and so is a decision with it (401 or 403)" grep -qE 'replay after logout: .* decide=40[13]' "$L"
kill "$agent" "$pid" 2>/dev/null
wait "$pid"
check "web-replay: nothing was decided" sh -c "! '$VERIFY' export '$S/ledger' 2>/dev/null | grep -q '\"decision\"'"

# http-unmeasured / http-replay: an mcp worker that authenticated one real HTTP connection
# (whose owner the signer measured) names another HTTP request, or the same one twice.
for sc in http-unmeasured http-replay; do
	S=$T/$sc
	KEY=$("$ASSENT" --state "$S" agent add evil-agent | tail -1)
	start_evil "$sc:$KEY" "$S"
	H=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["http"])' "$S/assentd.json")
	$PY -c 'import socket,sys,time; h,p=sys.argv[1].rsplit(":",1); s=socket.create_connection((h,int(p))); time.sleep(15)' "$H" &
	client=$!
	L="$T/$sc:$KEY.log"
	for _ in $(seq 200); do grep -q 'security' "$L" 2>/dev/null && break; sleep 0.05; done
	check "$sc: a security event naming an HTTP request the signer never authenticated" \
		grep -q 'security.*a request over HTTP (hreq [0-9]*) that the signer never authenticated for that session' "$L"
	kill "$client" "$pid" 2>/dev/null
	wait "$pid"
	n=$("$VERIFY" export "$S/ledger" 2>/dev/null | grep -c '"kind":"request"')
	if [ "$sc" = http-replay ]; then
		check "$sc: the measured request is recorded once, the replay not at all ($n)" test "$n" -eq 1
		check "$sc: ... with the uid the signer measured" sh -c "'$VERIFY' export '$S/ledger' | grep '\"kind\":\"request\"' | grep -q '\"uid\":$(id -u)'"
	else
		check "$sc: nothing was recorded ($n requests)" test "$n" -eq 0
	fi
done
# The gate: a hostile upstream worker (up-*) or a hostile mcp worker (gate-*), against a signer
# serving one upstream ("up", a server that never speaks: its worker is the one on trial).
printf '{"mcpServers": {"up": {"command": "sleep", "args": ["1000"]}}}\n' >"$T/ups.json"
for sc in up-result-never-dispatched up-agent-frame up-list-frame up-review-frame up-tools-not-cbor up-result-empty \
	up-hello-as-mcp gate-call-not-a-call gate-upstream-frame; do
	S=$T/$sc
	mkdir -p "$S"
	printf '#!/bin/sh\nexec %s %s "$@"\n' "$EVIL" "$sc" >"$T/wrap-$sc"
	chmod +x "$T/wrap-$sc"
	# the server never speaks: the signer must not wait for its tools before serving (ASSENT_UPSTREAM_START_SECONDS)
	ASSENT_UPSTREAM_START_SECONDS=0 "$EVIL" signer "$S" "$T/wrap-$sc" "$T/ups.json" 2>"$T/$sc.log" &
	pid=$!
	case $sc in
	gate-call-not-a-call) # it waits for an agent to connect
		for _ in $(seq 100); do [ -S "$S/agent.sock" ] && grep -q 'serving' "$T/$sc.log" && break; sleep 0.05; done
		$PY -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); time.sleep(1.5)' "$S/agent.sock" & ;;
	esac
	for _ in $(seq 100); do grep -q '"security"' "$T/$sc.log" 2>/dev/null && break; sleep 0.05; done
	sleep 0.3
	kill "$pid" 2>/dev/null
	wait "$pid"
	case $sc in
	up-result-never-dispatched) why='a result for call 1, which was never dispatched to it' ;;
	up-agent-frame) why='frame type 16 is not a known type' ;;
	up-list-frame) why='frame type 12 is not a known type' ;;
	up-review-frame) why='frame type 44 is not a known type' ;;
	up-tools-not-cbor) why='F_UP_TOOLS: tools is not a canonical CBOR array' ;;
	up-result-empty) why='F_UP_RESULT: exactly one of result and error' ;;
	up-hello-as-mcp) why="hello from the upstream worker says it is 'mcp'" ;;
	gate-call-not-a-call) why='F_CALL: call: tools/call: expected method, upstream, tool, arguments' ;;
	gate-upstream-frame) why='frame type 18 is not a known type' ;;
	esac
	check "$sc: a security event saying why ($why)" grep -qF "$why" "$T/$sc.log"
	check "$sc: ... the worker is killed and restarted" grep -q 'restarting in' "$T/$sc.log"
	check "$sc: nothing was recorded or decided" sh -c "! '$VERIFY' export '$S/ledger' 2>/dev/null | grep -qE '\"(request|decision|dispatch)\"'"
	expect_exit 0 "$sc: the ledger verifies" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
done
done_testing
