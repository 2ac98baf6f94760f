#!/usr/bin/env bash
# Events recorded inside a call get the call's id (event_call_id.py): the daemon in front of a
# small upstream (records_upstream.py), every call asked of a reviewer, records in SQLite.
. "$(dirname "$0")/../lib.sh"
daemon_state
records_upstreams
printf 'ask upstream up tool echo same-user ok\ndefault ask same-user ok\n' >"$T/p.policy"
FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off ASSENT_SINGLE_USER=1 \
	daemon_start --policy "$T/p.policy" --upstreams "$T/ups.json"
daemon_serves_up
py_tap "$ROOT/tests/integration/event_call_id.py" "$S" "$ROOT/build"
done_testing
