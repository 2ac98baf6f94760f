#!/usr/bin/env bash
# qa_link_feedback (link_feedback.py): an agent's recent calls linked to a report kept elsewhere,
# under its id there, in ffb_feedback_call_links; the daemon in front of records_upstream.py.
. "$(dirname "$0")/../lib.sh"
daemon_state
records_upstreams
printf 'allow upstream up tool echo\ndefault ask same-user ok\n' >"$T/p.policy"
FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off ASSENT_SINGLE_USER=1 \
	daemon_start --policy "$T/p.policy" --upstreams "$T/ups.json"
daemon_serves_up
py_tap "$ROOT/tests/integration/link_feedback.py" "$S" "$ROOT/build"
done_testing
