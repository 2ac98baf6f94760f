# Helpers for integration tests: source it, call the checks, end with `done_testing`.
# Each check prints one TAP line; tests/run.sh counts them.
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
