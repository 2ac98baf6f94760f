#!/usr/bin/env bash
# What a reviewer approves is exactly what runs (issue 28, item 1): view_exact.py against a
# daemon gating tests/integration/view_exact_upstream.py (a stdio server that logs the exact
# arguments it receives), every call asked of a person; the page's Reveal in headless Chromium
# (tests/mcp/web_reveal.mjs).
. "$(dirname "$0")/../lib.sh"
S=$T/state
cleanup() {
	p=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$S/assentd.json" 2>/dev/null)
	[ -n "$p" ] && kill "$p" 2>/dev/null
	sleep 0.3
	rm -rf "$T"
}
trap cleanup EXIT
cat >"$T/up.json" <<JSON
{ "mcpServers": { "sh": { "command": "$PY", "args": ["$ROOT/tests/integration/view_exact_upstream.py", "$T/ran.jsonl"] } } }
JSON
printf 'ask upstream sh same-user ok\ndefault ask\n' >"$T/gate.policy"
"$ASSENT" --state "$S" reviewer add rev --uid "$(id -u)" >/dev/null
# The bridge's daemon opens the reviewer page on a free port (assentd.json says which).
export ASSENT_REVIEW_PORT=0
cd "$ROOT/tests/integration" && $PY view_exact.py "$S" "$ROOT/build" "$T/gate.policy" "$T/up.json" "$T/ran.jsonl"
