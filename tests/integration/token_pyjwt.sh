#!/usr/bin/env bash
# The seed's token check in Python, as docs/pipelines.md shows it (with audience=), against a token
# from a real approval by a daemon signing HS256 (FEEDBACK_SIGN_TOKENS=true): token_pyjwt.py.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
DPID=
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	for _ in $(seq 100); do [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$S"
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off FEEDBACK_SIGN_TOKENS=true FEEDBACK_TOKEN_SECRET=$SECRET \
	"$ASSENTD" --state "$S" --single-user >"$T/d.log" 2>&1 &
DPID=$!
for _ in $(seq 200); do [ -S "$S/agent.sock" ] && break; sleep 0.05; done
check "the daemon listens" test -S "$S/agent.sock"
FEEDBACK_SIGN_TOKENS=true FEEDBACK_TOKEN_SECRET=$SECRET $PY "$ROOT/tests/integration/token_pyjwt.py" "$S" "$ROOT/build" \
	"$ROOT/docs/pipelines.md" "$SECRET" >"$T/py.tap" 2>"$T/py.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	"#"*) echo "$line" ;;
	esac
done <"$T/py.tap"
[ "$rc" -eq 0 ] || not_ok "the Python driver exited $rc: $(tail -3 "$T/py.err")"
done_testing
