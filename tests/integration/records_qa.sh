#!/usr/bin/env bash
# QA reports and events (issue 16) end to end: tests/integration/records_qa.py against a daemon
# with a CLI reviewer (root), a web reviewer, an admin and an agent key.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
review_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("review") or "")' "$1/assentd.json" 2>/dev/null; }
cleanup() { p=$(daemon_pid "$S"); [ -n "$p" ] && kill "$p" 2>/dev/null; sleep 0.3; rm -rf "$T"; }
trap cleanup EXIT
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
RT=$("$ASSENT" --state "$S" reviewer add webby --web | tail -1)
AT=$("$ASSENT" --state "$S" admin add ops | tail -1)
KEY=$("$ASSENT" --state "$S" agent add ci | tail -1)
ASSENT_SINGLE_USER=1 "$ASSENTD" --state "$S" >"$T/d.log" 2>&1 &
for _ in $(seq 200); do [ -n "$(review_of "$S")" ] && [ -S "$S/control.sock" ] && break; sleep 0.05; done
if [ -z "$(review_of "$S")" ]; then
	not_ok "the daemon did not start: $(tail -3 "$T/d.log")"
	done_testing
	exit 1
fi
$PY "$ROOT/tests/integration/records_qa.py" "$S" "$ASSENT" "$ASSENTD" "$KEY" "$RT" "$AT"
rc=$?
[ $rc -ne 0 ] && echo "# daemon log:" && sed 's/^/# /' "$T/d.log" | tail -20
exit $rc
