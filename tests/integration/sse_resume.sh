#!/usr/bin/env bash
# Resumable SSE answers on the agent listener (MCP 2025-11-25, SEP-1699): sse_resume.py
# against a daemon with an agent key (priming event, retry:, a hangup parked and resumed with
# Last-Event-ID, foreign and unknown ids refused, a call never resumed cancelled on the ledger).
. "$(dirname "$0")/../lib.sh"
S=$T/state
trap 'p=$(daemon_pid "$S"); [ -n "$p" ] && kill "$p" 2>/dev/null; sleep 0.2; rm -rf "$T"' EXIT
mkdir -p "$S"
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
KEY=$("$ASSENT" --state "$S" agent add resumer | tail -1)
# single-user: the reviewer who approves is the agent's uid here
ASSENT_SINGLE_USER=1 "$ROOT/build/assentd" --state "$S" >"$S.log" 2>&1 &
for _ in $(seq 200); do [ -n "$(http_of "$S")" ] && break; sleep 0.05; done
check "the daemon opens its HTTP listener" test -n "$(http_of "$S")"
timeout 300 $PY "$ROOT/tests/integration/sse_resume.py" "$(http_of "$S")" "$KEY" "$S" "$ASSENT" "$VERIFY" \
	"$S.log" >"$T/py.tap" 2>"$T/py.err"
relay_tap "$T/py.tap" $? "sse_resume.py ($(tail -3 "$T/py.err"))"
check "assentd is still running" kill -0 "$(daemon_pid "$S")"
# ASSENT_HTTP_SSE_POLL_SECONDS: assent ends a held call's stream itself (SEP-1699 polling)
P=$(daemon_pid "$S")
kill "$P"
for _ in $(seq 200); do kill -0 "$P" 2>/dev/null || break; sleep 0.05; done
rm -f "$S/assentd.json"
ASSENT_SINGLE_USER=1 ASSENT_HTTP_SSE_POLL_SECONDS=5 "$ROOT/build/assentd" --state "$S" >"$S.poll.log" 2>&1 &
for _ in $(seq 200); do [ -n "$(http_of "$S")" ] && break; sleep 0.05; done
check "the daemon restarts with ASSENT_HTTP_SSE_POLL_SECONDS=5" test -n "$(http_of "$S")"
timeout 300 $PY "$ROOT/tests/integration/sse_resume.py" "$(http_of "$S")" "$KEY" "$S" "$ASSENT" "$VERIFY" \
	"$S.poll.log" poll >"$T/poll.tap" 2>"$T/poll.err"
relay_tap "$T/poll.tap" $? "sse_resume.py poll ($(tail -3 "$T/poll.err"))"
check "assentd is still running" kill -0 "$(daemon_pid "$S")"
done_testing
