# Helpers for integration tests: source it, call the checks, end with `done_testing`.
# Each check prints one TAP line; tests/scripts/run.sh counts them.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VERIFY=${VERIFY:-$ROOT/build/assent-verify}
ASSENT=${ASSENT:-$ROOT/build/assent}
PY=/usr/bin/python3 # Debian's interpreter: it sees python3-lmdb and python3-jwt
# Daemons started by tests take any free port for agents over HTTP (their
# assentd.json says which), never the 8765 a real daemon may hold.
export FEEDBACK_SSE_PORT=${FEEDBACK_SSE_PORT:-0}
export ASSENT_REVIEW_PORT=${ASSENT_REVIEW_PORT:-0} # and the same for reviewers (8766)
T=$(mktemp -d /tmp/assent-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
_n=0 _fail=0

ok() { _n=$((_n + 1)); echo "ok $_n - $*"; }
not_ok() { _n=$((_n + 1)); _fail=$((_fail + 1)); echo "not ok $_n - $*"; }

# check DESC CMD...: passes when CMD exits 0.
check() {
	local d=$1; shift
	if "$@"; then ok "$d"; else not_ok "$d (command: $*)"; fi
}

# expect_exit CODE DESC CMD...: runs CMD, keeps its stdout in $OUT and stderr in $ERR,
# passes when it exits with CODE (never by a signal).
expect_exit() {
	local want=$1 d=$2; shift 2
	"$@" >"$T/.out" 2>"$T/.err"
	local rc=$? line
	OUT=$(cat "$T/.out"); ERR=$(cat "$T/.err")
	if [ "$rc" -eq "$want" ]; then ok "$d"; else not_ok "$d: exit $rc, wanted $want; stderr: $(head -c 300 "$T/.err")"; fi
}

# The stderr of the last expect_exit matches a pattern and is exactly one line.
expect_err() {
	local pat=$1 d=$2
	local lines
	lines=$(printf '%s\n' "$ERR" | grep -c .)
	if printf '%s' "$ERR" | grep -qE -- "$pat" && [ "$lines" -eq 1 ]; then ok "$d"
	else not_ok "$d: stderr was: $(printf '%s' "$ERR" | head -c 300)"; fi
}

done_testing() {
	echo "1..$_n"
	[ "$_fail" -eq 0 ]
}

# Agents as another Unix user than the daemon's, as in a real install: a request from
# the daemon's own uid is same-user for every reviewer (that uid reads the keys and
# writes the registry). As root: uid 65534 through setpriv, and the daemon's state
# directory opened just enough for it to reach STATE/agent.sock (call once the daemon
# listens). Not root there is no second user: the daemon then needs ASSENT_SINGLE_USER=1,
# which agent_single_user says.
AGENT_UID=$(id -u)
AGENT_PREFIX=()
if [ "$(id -u)" -eq 0 ]; then
	AGENT_UID=65534
	AGENT_PREFIX=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	# Those other users run the checkout's programs and scripts: a checkout below a
	# directory only root may enter (mktemp -d makes them 0700) gets search permission
	# added on the way down (o+x only: nothing becomes listable or readable that was not).
	_d=$ROOT
	while [ "$_d" != / ]; do
		[ -n "$(find "$_d" -maxdepth 0 ! -perm -o+x)" ] && chmod o+x "$_d"
		_d=$(dirname "$_d")
	done
fi
export ASSENT_TEST_AGENT_PREFIX="${AGENT_PREFIX[*]}"
agent_single_user() { [ "$(id -u)" -eq 0 ] && echo 0 || echo 1; }
open_agent_sock() { # STATE
	[ "$(id -u)" -eq 0 ] || return 0
	local d=$1
	while [ "$d" != / ] && [ "$d" != /tmp ]; do chmod o+x "$d"; d=$(dirname "$d"); done
	chmod 0666 "$1/agent.sock"
}


# ---- a daemon for one test: the prologue tests that start build/assentd share ----
ASSENTD=${ASSENTD:-$ROOT/build/assentd}
# daemon_state: the state directory $S ($T/state) with reviewer "tester" (this uid), and an
# EXIT trap that stops the daemon daemon_start started ($DPID) before $T goes.
daemon_state() {
	S=$T/state
	DPID=
	trap _daemon_cleanup EXIT
	mkdir -p "$S"
	"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
}
_daemon_cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	for _ in $(seq 100); do [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
	rm -rf "$T"
}
# records_upstreams: $T/ups.json, one upstream "up": tests/integration/records_upstream.py.
records_upstreams() {
	cat >"$T/ups.json" <<JSON
{"mcpServers": {"up": {"command": "/usr/bin/python3", "args": ["$ROOT/tests/integration/records_upstream.py"]}}}
JSON
}
# daemon_start ARGS...: assentd --state $S ARGS in the background, in the environment the
# caller gives (VAR=value daemon_start ...); its output in $T/d.log, its pid in $DPID.
daemon_start() {
	"$ASSENTD" --state "$S" "$@" >"$T/d.log" 2>&1 &
	DPID=$!
}
# daemon_serves_up: waits (10 s at most) until the daemon serves upstream up's tools, and says so.
daemon_serves_up() {
	for _ in $(seq 200); do grep -q 'upstream up: .* tools served' "$T/d.log" && break; sleep 0.05; done
	check "the daemon serves the upstream's tools" grep -q 'upstream up: .* tools served' "$T/d.log"
}
# daemon_listens DESC: waits (30 s at most) for the daemon of daemon_start ($DPID) to have
# bound STATE/agent.sock, and checks it as DESC. The socket alone is not enough: a daemon that
# failed to start before leaves one behind, and a client would be refused until this one binds
# it; assentd.json names the daemon that serves once its sockets are bound (after its keys).
daemon_listens() {
	for _ in $(seq 600); do
		[ -S "$S/agent.sock" ] && { [ -z "${DPID:-}" ] || grep -q "\"pid\": $DPID," "$S/assentd.json" 2>/dev/null; } &&
			break
		kill -0 "${DPID:-$$}" 2>/dev/null || break
		sleep 0.05
	done
	check "$1" test -S "$S/agent.sock"
}
# py_tap ARGS...: $PY ARGS (a driver that speaks TAP), each of its results one of ours, its
# comments passed on; a driver that exits non-zero is one failure more.
py_tap() {
	$PY "$@" >"$T/py.tap" 2>"$T/py.err"
	local rc=$? line
	while read -r line; do
		case "$line" in
		"ok "*) ok "${line#ok * - }" ;;
		"not ok "*) not_ok "${line#not ok * - }" ;;
		"#"*) echo "$line" ;;
		esac
	done <"$T/py.tap"
	[ "$rc" -eq 0 ] || not_ok "the Python driver exited $rc: $(tail -3 "$T/py.err")"
}
# A daemon of state directory DIR: its pid and its agent listener (HOST:PORT), from assentd.json.
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
http_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("http") or "")' "$1/assentd.json" 2>/dev/null; }
relay_tap() { # FILE RC WHAT: a driver's TAP lines as this script's checks, and its exit status
	while read -r line; do
		case "$line" in
		"ok "*) ok "${line#ok * - }" ;;
		"not ok "*) not_ok "${line#not ok * - }" ;;
		esac
	done <"$1"
	[ "$2" -eq 0 ] || not_ok "$3 exited $2"
}
