#!/usr/bin/env bash
# The seed's token check in Python, as docs/pipelines.md shows it (with audience=), against a token
# from a real approval by a daemon signing HS256 (FEEDBACK_SIGN_TOKENS=true): token_pyjwt.py.
. "$(dirname "$0")/../lib.sh"
daemon_state
SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off FEEDBACK_SIGN_TOKENS=true FEEDBACK_TOKEN_SECRET=$SECRET \
	daemon_start --single-user
daemon_listens "the daemon listens"
FEEDBACK_SIGN_TOKENS=true FEEDBACK_TOKEN_SECRET=$SECRET py_tap "$ROOT/tests/integration/token_pyjwt.py" "$S" "$ROOT/build" \
	"$ROOT/docs/pipelines.md" "$SECRET"
done_testing
