#!/usr/bin/env bash
# A client configuration copied from the seed guide (its env block, FEEDBACK_TRANSPORT=stdio
# included) starts `assentd` with no daemon running: it answers, exactly one daemon runs
# afterwards, and nothing keeps starting processes. A bridge that cannot start its daemon
# says why and exits; an unknown FEEDBACK_TRANSPORT is refused with its name.
#
# Guarded against the fork loop this catches: every process the test starts carries a
# marker in its environment (a fresh XDG_STATE_HOME); a watchdog kills them all (by that
# marker, since daemons leave the process group) as soon as more than $BOUND exist, and
# the exit trap kills whatever remains. Each run is also under `timeout`.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
BOUND=12

# The seed guide's environment block, as documented (a copy with its comments dropped).
SEED_ENV=(FEEDBACK_TIMEOUT_SECONDS=300 FEEDBACK_TRANSPORT=stdio FEEDBACK_SSE_PORT=8765
	FEEDBACK_SSE_HOST=127.0.0.1 FEEDBACK_LOG_LEVEL=INFO FEEDBACK_SIGN_TOKENS=true
	FEEDBACK_TOKEN_SECRET=your-secret-here FEEDBACK_ALLOW_ANONYMOUS=false)
if $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 8765))' 2>/dev/null; then :; else
	# A real daemon holds 8765 here: the copy differs in the port only.
	echo "# 127.0.0.1:8765 is in use: FEEDBACK_SSE_PORT=0 instead of the seed's 8765"
	SEED_ENV[2]=FEEDBACK_SSE_PORT=0
fi

# procs.py: the assentd processes whose environment holds a marker (our runs only),
# counted, killed (again and again: a fork loop keeps adding), or watched.
cat >"$T/procs.py" <<'PY'
import os, signal, sys, time
exe, mode, mark = os.path.realpath(sys.argv[1]), sys.argv[2], sys.argv[3].encode()
def pids():
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{d}/exe") != exe:
                continue
            with open(f"/proc/{d}/environ", "rb") as f:
                if mark in f.read().split(b"\0"):
                    out.append(int(d))
        except OSError:
            pass
    return out
def kill_all():
    quiet = 0
    for _ in range(400):
        p = pids()
        quiet = quiet + 1 if not p else 0
        if quiet >= 5:
            return
        for x in p:
            try:
                os.kill(x, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)
if mode == "list":
    print(" ".join(map(str, pids())))
elif mode == "kill":
    kill_all()
else:  # watch DIR BOUND: log each count to DIR/counts, kill all past BOUND
    d, bound, parent = sys.argv[4], int(sys.argv[5]), os.getppid()
    while os.getppid() == parent:  # the test went (even killed): clean up and stop
        n = len(pids())
        with open(f"{d}/counts", "a") as f:
            f.write(f"{n}\n")
        if n > bound:
            open(f"{d}/runaway", "w").write(f"{n}\n")
            kill_all()
        time.sleep(0.05)
    kill_all()
PY
marked_pids() { $PY "$T/procs.py" "$ASSENTD" list "$1"; }
kill_marked() { $PY "$T/procs.py" "$ASSENTD" kill "$1"; }
MARKERS=()
WATCHDOGS=()
cleanup() {
	local m w
	for w in "${WATCHDOGS[@]}"; do kill "$w" 2>/dev/null; done
	for m in "${MARKERS[@]}"; do kill_marked "$m"; done
	rm -rf "$T"
}
trap cleanup EXIT

# A client's child: the seed's env and a fresh XDG_STATE_HOME=DIR/xdg (state
# DIR/xdg/assent), nothing else. EXTRA (VAR=VALUE...) then overrides.
client_env() { # DIR [EXTRA...]
	local d=$1
	shift
	echo "PATH=$PATH" "HOME=$d/home" "XDG_STATE_HOME=$d/xdg" "${SEED_ENV[@]}" "$@"
}
start_watchdog() { # DIR
	local mark="XDG_STATE_HOME=$1/xdg"
	MARKERS+=("$mark")
	$PY "$T/procs.py" "$ASSENTD" watch "$mark" "$1" "$BOUND" &
	WATCHDOGS+=($!)
	MARK=$mark
}
maxcount() { sort -n "$1/counts" 2>/dev/null | tail -1; }
# At most a bridge, its daemon, and one of the daemon's workers between fork and exec.
no_runaway() { [ ! -e "$1/runaway" ] && [ "$(maxcount "$1")" -le 3 ]; }

# client DIR [EXTRA...]: `assentd` with no argument, as the configuration runs it: an
# MCP initialize, then tools/list, then stdin closes. DIR/mcp.out has what came back.
cat >"$T/client.py" <<'PY'
import json, select, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(m):
    try:
        p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
    except BrokenPipeError:
        pass
def recv():
    if not select.select([p.stdout], [], [], 10)[0]:
        return None
    return p.stdout.readline().decode() or None
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
      "capabilities": {}, "clientInfo": {"name": "seed-copy", "version": "1"}}})
print("init", recv() or "(no answer)\n", end="")
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
print("tools", recv() or "(no answer)\n", end="")
try:
    p.stdin.close()
except BrokenPipeError:
    pass
try:
    print("bridge exit", p.wait(10))
except subprocess.TimeoutExpired:
    p.kill(); print("bridge exit (killed after 10 s)")
PY
CLIENT_ARGS=()
client() {
	local d=$1
	shift
	mkdir -p "$d/home"
	start_watchdog "$d"
	# shellcheck disable=SC2046
	timeout -s KILL 30 env -i $(client_env "$d" "$@") $PY "$T/client.py" "$ASSENTD" "${CLIENT_ARGS[@]}" >"$d/mcp.out" 2>"$d/mcp.err"
}
chmod 0755 "$T"

# ---- the seed's env block copied as is, no daemon running ----
# Its FEEDBACK_TOKEN_SECRET is the placeholder your-secret-here, too short to sign
# with: the daemon refuses it, and the bridge must say so once and stop.
A=$T/asis
client "$A"
check "the seed's env copied as is (FEEDBACK_TRANSPORT=stdio, placeholder secret), no daemon: the bridge exits ($(tail -1 "$A/mcp.out"))" \
	grep -q '^bridge exit [1-9]' "$A/mcp.out"
check "... saying why: $(tr "\n" " " <"$A/mcp.err" | head -c 400)" \
	sh -c "grep -q 'exited' '$A/mcp.err' && grep -q 'FEEDBACK_TOKEN_SECRET' '$A/mcp.err'"
sleep 2 # a loop would show itself by now
check "... no runaway: at most a bridge and one daemon ever ran for that state directory (most seen: $(maxcount "$A"))" \
	no_runaway "$A"
check "... and none is left running" test -z "$(marked_pids "$MARK")"
kill_marked "$MARK"

# ---- the same with the placeholder filled in, as the guide says to ----
C=$T/copy
client "$C" FEEDBACK_TOKEN_SECRET=0123456789abcdef0123456789abcdef-test
check "the seed's env with a real secret, no daemon: initialize is answered ($(head -c 120 "$C/mcp.out"))" \
	grep -q '^init .*"protocolVersion"' "$C/mcp.out"
check "... and tools/list lists request_feedback" grep -q '^tools .*request_feedback' "$C/mcp.out"
sleep 2
check "... no runaway: at most a bridge and one daemon ever ran for that state directory (most seen: $(maxcount "$C"))" \
	no_runaway "$C"
n=$(marked_pids "$MARK" | wc -w)
check "... after the client left, exactly one daemon runs for it (found $n processes)" test "$n" -eq 1
p=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$C/xdg/assent/assentd.json" 2>/dev/null)
check "... and it is the daemon of STATE/assentd.json (pid ${p:-none})" test "$(marked_pids "$MARK")" = "${p:-none}"
check "... started with an explicit role: assentd --daemon" sh -c "tr '\0' ' ' </proc/${p:-0}/cmdline | grep -q -- '--daemon'"
log_lines=$(wc -l <"$C/xdg/assent/assentd.log" 2>/dev/null || echo 0)
check "... its log stays short ($log_lines lines)" test "$log_lines" -lt 100
sleep 1
n2=$(marked_pids "$MARK" | wc -w)
check "... and a second later still one process ($n2)" test "$n2" -eq 1
kill_marked "$MARK"

# ---- an unknown FEEDBACK_TRANSPORT is refused with its name, in either role ----
U=$T/unknown
mkdir -p "$U/home"
start_watchdog "$U"
# shellcheck disable=SC2046
expect_exit 2 "FEEDBACK_TRANSPORT=grpc: assentd refuses to start" \
	timeout -s KILL 10 env -i $(client_env "$U") FEEDBACK_TRANSPORT=grpc "$ASSENTD" </dev/null
expect_err "FEEDBACK_TRANSPORT.*'grpc'" "... naming the value and what it expected"
# shellcheck disable=SC2046
expect_exit 2 "... and so does assentd --stdio" \
	timeout -s KILL 10 env -i $(client_env "$U") FEEDBACK_TRANSPORT=grpc "$ASSENTD" --stdio </dev/null
expect_err "'grpc'" "... naming it"
check "... having started no daemon" sh -c "[ -z \"\$1\" ] && [ ! -e '$U/xdg/assent/assentd.json' ]" _ "$(marked_pids "$MARK")"
kill_marked "$MARK"

# ---- a daemon that fails at once: the bridge says why, once, and exits ----
# (the seed's env with a real secret, and a policy the daemon cannot parse)
B=$T/badpolicy
mkdir -p "$B"
printf 'this is not a policy\n' >"$B/bad.policy"
t0=$(date +%s)
CLIENT_ARGS=(--policy "$B/bad.policy")
client "$B" FEEDBACK_TOKEN_SECRET=0123456789abcdef0123456789abcdef-test
CLIENT_ARGS=()
t1=$(date +%s)
check "a bridge whose daemon stops at once (a policy it cannot parse) exits 1 ($(tail -1 "$B/mcp.out"))" \
	grep -q '^bridge exit 1$' "$B/mcp.out"
check "... within seconds ($((t1 - t0)) s)" test $((t1 - t0)) -le 4
check "... saying the daemon exited and why (the policy's own error): $(tr "\n" " " <"$B/mcp.err" | head -c 400)" \
	sh -c "grep -q 'exited' '$B/mcp.err' && grep -qi 'policy' '$B/mcp.err'"
sleep 1
check "... having started one daemon at most (most processes seen: $(maxcount "$B"))" no_runaway "$B"
check "... and leaving none behind" test -z "$(marked_pids "$MARK")"
kill_marked "$MARK"

# ---- a state directory the bridge cannot write: it says so and exits ----
W=$T/unwritable
mkdir -p "$W/home" "$W/xdg/assent"
if [ "$(id -u)" -eq 0 ]; then
	chmod 0755 "$W" "$W/xdg" "$W/xdg/assent" # root's: another user may enter, not write
	RUN_AS=("${AGENT_PREFIX[@]}")
else
	chmod 0500 "$W/xdg/assent"
	RUN_AS=()
fi
start_watchdog "$W"
# shellcheck disable=SC2046
expect_exit 1 "a bridge that cannot write its state directory exits 1" \
	timeout -s KILL 20 env -i $(client_env "$W") "${RUN_AS[@]}" "$ASSENTD" </dev/null
check "... naming what it could not write: $(head -c 300 <<<"$ERR")" \
	bash -c "grep -q 'assentd.log' <<<\"\$1\" && grep -qi 'permission denied' <<<\"\$1\"" _ "$ERR"
check "... having started nothing that still runs" test -z "$(marked_pids "$MARK")"
check "... and no runaway (most processes seen: $(maxcount "$W"))" \
	no_runaway "$W"
chmod -R u+w "$W" 2>/dev/null
done_testing
