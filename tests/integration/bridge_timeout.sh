#!/usr/bin/env bash
# The seed's env block sets FEEDBACK_TIMEOUT_SECONDS per client: with a daemon already
# running (started with another default), each `assentd --stdio` bridge's value is its
# own connection's default deadline, capped like a timeout_override (bridge_timeout.py).
. "$(dirname "$0")/../lib.sh"
daemon_state
FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off FEEDBACK_TIMEOUT_SECONDS=300 ASSENT_MAX_TIMEOUT_SECONDS=1000 \
	ASSENT_MAX_PENDING_PER_AGENT=50 daemon_start --single-user
daemon_listens "the daemon listens on STATE/agent.sock"
py_tap "$ROOT/tests/integration/bridge_timeout.py" "$S" "$ROOT/build"
check "the daemon logged no worker restart" sh -c "! grep -q 'restart' '$T/d.log'"
done_testing
