#!/usr/bin/env bash
# Web sessions end when their credential ends, and no one uses up what reviewers need
# (issue 12, sections 3 and 4), against real daemons (tests/integration/web_sessions.py):
# rotating a reviewer's token or removing the reviewer ends every session made with it
# and its event streams at once; a session's secret planted as a cookie counts for
# nothing; failed logins from other processes and other 127.0.0.0/8 addresses never
# keep a right token out; one reviewer's event streams are bounded (429, Retry-After);
# and a stream ends after its lifetime.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
review_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("review") or "")' "$1/assentd.json" 2>/dev/null; }
stop() {
	local p
	p=$(daemon_pid "$S")
	[ -n "$p" ] || return 0
	kill "$p" 2>/dev/null
	for _ in $(seq 200); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
	rm -f "$S/assentd.json"
}
cleanup() { stop; rm -rf "$T"; }
trap cleanup EXIT
start() { # start ENV=VALUE...: a daemon with these settings; its reviewer listener's address
	env "$@" "$ASSENTD" --state "$S" >>"$T/daemon.log" 2>&1 &
	for _ in $(seq 200); do [ -n "$(review_of "$S")" ] && break; sleep 0.05; done
	[ -n "$(review_of "$S")" ] || { not_ok "the daemon did not start: $(tail -3 "$T/daemon.log")"; done_testing; exit 1; }
}
mkdir -p "$S"
for who in alice bob carol dave erin; do
	"$ASSENT" --state "$S" reviewer add "$who" --web | tail -1 >"$T/$who.token"
done
# the first part: streams that live long, three a reviewer
start ASSENT_REVIEW_PORT=0 ASSENT_REVIEW_STREAMS_PER_REVIEWER=3 ASSENT_REVIEW_STREAM_SECONDS=3600
$PY "$ROOT/tests/integration/web_sessions.py" main "$S" "$ROOT/build" "$T" >"$T/py.tap" 2>"$T/py.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	esac
done <"$T/py.tap"
[ "$rc" -eq 0 ] || not_ok "web_sessions.py main exited $rc: $(tail -3 "$T/py.err")"
check "the daemon logged the sessions it ended for a changed credential" grep -q "ended: the credential" "$T/daemon.log"
check "the daemon logged the spread-out failed logins (all sources together)" grep -q "failed logins in the last minute from all sources" "$T/daemon.log"
stop
# the second part: a stream's lifetime, short
start ASSENT_REVIEW_PORT=0 ASSENT_REVIEW_STREAM_SECONDS=2
$PY "$ROOT/tests/integration/web_sessions.py" lifetime "$S" "$ROOT/build" "$T" >"$T/py2.tap" 2>"$T/py2.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	esac
done <"$T/py2.tap"
[ "$rc" -eq 0 ] || not_ok "web_sessions.py lifetime exited $rc: $(tail -3 "$T/py2.err")"
check "no security event in the log" sh -c "! grep -q 'security' '$T/daemon.log'"
stop
done_testing
