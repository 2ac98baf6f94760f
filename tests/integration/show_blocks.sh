#!/usr/bin/env bash
# `assent show` reads as a person reads (issue 17): multi-line strings of the message, the
# context and a gated call's arguments as blocks of their own lines (JSON would escape
# them as \n), a unified diff coloured when stdout is a terminal and never otherwise, the
# agent named by its key with the uid measured, and --json left as it was for machines.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
pid=""
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	sleep 0.2
	rm -rf "$T"
}
trap cleanup EXIT
S=$T/s
KEY=$("$ASSENT" --state "$S" agent add ci-bot | tail -1)
"$ASSENT" --state "$S" reviewer add rev --uid "$(id -u)" >/dev/null
"$ASSENTD" --state "$S" >"$T/d.log" 2>&1 &
pid=$!
for _ in $(seq 200); do grep -q '"http"' "$S/assentd.json" 2>/dev/null && break; sleep 0.05; done
H=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["http"])' "$S/assentd.json")
CTX='{"risk_level":"HIGH","migration":{"sql":"ALTER TABLE users\n  DROP COLUMN legacy;\nVACUUM users;"},
 "diff":"--- a/app.conf\n+++ b/app.conf\n@@ -1,2 +1,2 @@\n-port = 80\n+port = 8080\n keep = 1\n",
 "plan":["terraform plan:\n  # aws_instance.web will be destroyed\nPlan: 0 to add, 0 to change, 1 to destroy."]}'
OUT=$(ASSENT_TEST_CONTEXT=$CTX $PY "$ROOT/tests/integration/http_agent.py" "$H" "$KEY" $'Apply the migration\nthen restart')
SID=$(printf '%s' "$OUT" | $PY -c 'import json,sys; print(json.loads(sys.stdin.read()).get("session_id") or "")')
check "an agent asks with SQL, a diff and a plan in its context" test -n "$SID"
"$ASSENT" --state "$S" show "$SID" >"$T/show.out" 2>&1
check "the SQL is a block of its own lines, headed by its path" sh -c \
	"grep -qx -- '---- context.migration.sql ----' '$T/show.out' && grep -qx '  DROP COLUMN legacy;' '$T/show.out' && grep -qx 'VACUUM users;' '$T/show.out'"
check "... and the JSON says where it went, not an escaped one-liner" sh -c \
	"grep -qF '\"sql\": \"(3 lines: shown below as context.migration.sql)\"' '$T/show.out' && ! grep -qF 'users\\n' '$T/show.out'"
check "a string in an array is a block too (context.plan.0)" sh -c \
	"grep -qx -- '---- context.plan.0 ----' '$T/show.out' && grep -qx '  # aws_instance.web will be destroyed' '$T/show.out'"
check "the diff is a block, its lines as they are" sh -c "grep -qx -- '-port = 80' '$T/show.out' && grep -qx '+port = 8080' '$T/show.out'"
check "not a terminal: no colour at all" sh -c "! grep -q \$'\\033' '$T/show.out'"
check "the message's lines are lines" sh -c "grep -qx 'Apply the migration' '$T/show.out' && grep -qx 'then restart' '$T/show.out'"
check "the agent is named by its key, with the uid measured" \
	grep -qE '^from     agent ci-bot \(by its API key\), uid [0-9]+( \([a-z0-9._-]+\))? measured, client http-agent-test/1 \(declared\)$' "$T/show.out"
# A terminal: script(1) gives assent a pty.
script -qec "$ASSENT --state $S show $SID" /dev/null >"$T/tty.out" 2>&1
check "on a terminal, added lines are green" grep -qF $'\033[32m+port = 8080\033[0m' "$T/tty.out"
check "... removed lines red" grep -qF $'\033[31m-port = 80\033[0m' "$T/tty.out"
check "... the hunk header cyan" grep -qF $'\033[36m@@ -1,2 +1,2 @@\033[0m' "$T/tty.out"
check "... the file headers bold" grep -qF $'\033[1m+++ b/app.conf\033[0m' "$T/tty.out"
check "... and the SQL (not a diff) is not coloured" bash -c \
	"grep -q 'DROP COLUMN legacy;' '$T/tty.out' && ! grep 'DROP COLUMN legacy;' '$T/tty.out' | grep -q \$'\\033'"
"$ASSENT" --state "$S" show "$SID" --json >"$T/show.json"
check "--json keeps the strings whole for machines" $PY -c '
import json,sys; r=json.load(open(sys.argv[1])); r=r.get("request", r)
sys.exit(0 if r["context"]["migration"]["sql"] == "ALTER TABLE users\n  DROP COLUMN legacy;\nVACUUM users;" else 1)' "$T/show.json"
done_testing
