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
	local rc=$?
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
