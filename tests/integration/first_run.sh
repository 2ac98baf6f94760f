#!/usr/bin/env bash
# First runs never mislead (issue 17): `make run` (gateway/cli/run.sh) on a port someone
# else holds exits before it makes or prints a key, a token or a URL, and names the
# variable that moves it; on free ports it prints every command with its --state; the
# README's client lines carry --state; `assent agent add` on a default state directory
# that no daemon serves warns that the running daemon will not know the key.
. "$(dirname "$0")/../lib.sh"
RUN=$ROOT/gateway/cli/run.sh
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	sleep 0.2
	rm -rf "$T"
}
trap cleanup EXIT
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
listen_on() { # PORT: a listener that holds it until the test ends
	$PY -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); print("up", flush=True); time.sleep(600)' "$1" >"$T/listen.$1" &
	pids+=($!)
	for _ in $(seq 100); do grep -q up "$T/listen.$1" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}
no_secret() { # FILE: nothing key- or token-shaped, no URL
	! grep -qE 'ak_|rt_|http://' "$1"
}

# ---- the agents' port is taken ----
P1=$(free_port)
P2=$(free_port)
check "a listener holds 127.0.0.1:$P1" listen_on "$P1"
S=$T/run1
expect_exit 1 "make run with the agents' port taken exits 1" env FEEDBACK_SSE_PORT="$P1" ASSENT_REVIEW_PORT="$P2" bash "$RUN" "$S"
printf '%s' "$OUT" >"$T/run1.out"
printf '%s' "$ERR" >"$T/run1.err"
check "... saying which port and which variable moves it" grep -q "127.0.0.1:$P1 .*already in use.*" "$T/run1.err"
check "... FEEDBACK_SSE_PORT named with an example" grep -q "FEEDBACK_SSE_PORT=$((P1 + 10)) make run" "$T/run1.err"
check "... nothing on stdout (no key, token or URL)" test ! -s "$T/run1.out"
check "... and no key or token anywhere in its output" no_secret "$T/run1.err"
check "... no reviewer or agent was registered" test ! -e "$S/identities.json"

# ---- the review page's port is taken ----
P3=$(free_port)
expect_exit 1 "make run with the review page's port taken exits 1" env FEEDBACK_SSE_PORT="$P3" ASSENT_REVIEW_PORT="$P1" bash "$RUN" "$T/run2"
printf '%s' "$ERR" >"$T/run2.err"
check "... naming ASSENT_REVIEW_PORT" grep -q "ASSENT_REVIEW_PORT=$((P1 + 10)) make run" "$T/run2.err"
check "... and printing no secret" sh -c "test -z \"\$1\"" _ "$OUT"

# ---- free ports: it starts, and prints every command with its --state ----
S3=$T/run3
P4=$(free_port)
P5=$(free_port)
env FEEDBACK_SSE_PORT="$P4" ASSENT_REVIEW_PORT="$P5" bash "$RUN" "$S3" >"$T/run3.out" 2>"$T/run3.err" &
pids+=($!)
for _ in $(seq 200); do [ -s "$S3/assentd.json" ] && grep -q '"http"' "$S3/assentd.json" && break; sleep 0.05; done
check "make run on free ports starts the daemon" grep -q '"http"' "$S3/assentd.json"
check "... the stdio line has --state $S3" grep -q "assentd --stdio --state $S3\$" "$T/run3.out"
check "... the review line has --state $S3" grep -q "assent --state $S3 pending" "$T/run3.out"
check "... and its health URL answers from this daemon" sh -c "curl -sf http://127.0.0.1:$P4/health | grep -q ok"
kill "${pids[-1]}" 2>/dev/null
pkill -f "assentd --state $S3" 2>/dev/null
sleep 0.3

# ---- the README's (and docs/'s) client lines name the state directory ----
readme_code() { awk '/^```/{c=!c; next} c' "$ROOT/README.md" "$ROOT"/docs/*.md | grep -v "^MCP client --stdio-->"; } # not the diagram
n_stdio=$(readme_code | grep -cE 'assentd --stdio|"--stdio"')
bad=$(readme_code | grep -E 'assentd --stdio|"--stdio"' | grep -v -- '--state')
check "the README's and docs/'s code has $n_stdio assentd --stdio lines" test "$n_stdio" -ge 2
check "... and every one of them names --state${bad:+ (not: $bad)}" test -z "$bad"

# ---- assent agent add on a default state directory no daemon serves ----
H=$T/home
mkdir -p "$H"
expect_exit 0 "agent add without --state still makes the key" env -u ASSENT_STATE_DIR -u XDG_STATE_HOME HOME="$H" "$ASSENT" agent add ci
check "... and warns on stderr that no daemon serves that directory" sh -c \
	"printf '%s' \"\$1\" | grep -q 'WARNING: no daemon serves $H/.local/state/assent, the state directory found by default'" _ "$ERR"
check "... saying to pass the daemon's --state" sh -c "printf '%s' \"\$1\" | grep -q -- '--state DIR'" _ "$ERR"
check "... while stdout is the key alone on its last line" sh -c "printf '%s' \"\$1\" | tail -1 | grep -qE '^ak_'" _ "$OUT"
expect_exit 0 "reviewer add without --state" env -u ASSENT_STATE_DIR -u XDG_STATE_HOME HOME="$H" "$ASSENT" reviewer add r --uid 4242
check "... warns too" sh -c "printf '%s' \"\$1\" | grep -q 'WARNING: no daemon serves'" _ "$ERR"
expect_exit 0 "agent add with --state names the directory: no warning" "$ASSENT" --state "$T/named" agent add ci
check "... stderr is empty" test -z "$ERR"
expect_exit 0 "agent list without --state is not warned about (it makes nothing)" env -u ASSENT_STATE_DIR -u XDG_STATE_HOME HOME="$H" "$ASSENT" agent list
check "... stderr is empty" test -z "$ERR"
D=$H/.local/state/assent
"$ROOT/build/assentd" --state "$D" >"$T/d.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do [ -S "$D/control.sock" ] && break; sleep 0.05; done
expect_exit 0 "agent add without --state while a daemon serves the default directory" env -u ASSENT_STATE_DIR -u XDG_STATE_HOME HOME="$H" "$ASSENT" agent add ci2
check "... warns nothing" test -z "$ERR"
done_testing
