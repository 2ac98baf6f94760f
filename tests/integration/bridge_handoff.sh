#!/usr/bin/env bash
# The stdio bridge's hand-off of stdin and stdout to the mcp worker, and what the worker
# refuses (tests/integration/bridge_handoff.py).
. "$(dirname "$0")/../lib.sh"
daemon_state
ASSENT_SINGLE_USER=1 daemon_start
daemon_listens "the daemon listens"
open_agent_sock "$S"
py_tap "$ROOT/tests/integration/bridge_handoff.py" "$S" "$ROOT/build"
done_testing
