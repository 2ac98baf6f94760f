#!/usr/bin/env bash
# QA reports and events (issue 16) end to end: tests/integration/records_qa.py against a daemon
# with a CLI reviewer (root), a web reviewer, an admin and two agent keys; once with the records
# in SQLite (the default), once in a real PostgreSQL (tests/scripts/pg.sh), once in a real MariaDB
# (tests/scripts/my.sh).
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
PG=$ROOT/tests/scripts/pg.sh
MY=$ROOT/tests/scripts/my.sh
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
review_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("review") or "")' "$1/assentd.json" 2>/dev/null; }
cleanup() {
	for s in "$T/sqlite" "$T/pg-state" "$T/my-state"; do
		p=$(daemon_pid "$s")
		[ -n "$p" ] && kill "$p" 2>/dev/null
	done
	sleep 0.3
	"$PG" stop "$T/pg" >/dev/null 2>&1
	[ -f "$T/my/my.pid" ] && "$MY" stop "$T/my" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
chmod 0711 "$T" # PostgreSQL's owner, and the recorder's uid, must reach their directories

run() { # LABEL STATE [ENV=VALUE...]
	local label=$1 S=$2
	shift 2
	"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
	local rt at key
	rt=$("$ASSENT" --state "$S" reviewer add webby --web | tail -1)
	at=$("$ASSENT" --state "$S" admin add ops | tail -1)
	key=$("$ASSENT" --state "$S" agent add ci | tail -1)
	mal=$("$ASSENT" --state "$S" agent add mallory | tail -1) # a second agent key: events.py's intruder
	env ASSENT_SINGLE_USER=1 "$@" "$ASSENTD" --state "$S" >"$S.log" 2>&1 &
	for _ in $(seq 200); do [ -n "$(review_of "$S")" ] && [ -S "$S/control.sock" ] && break; sleep 0.05; done
	if [ -z "$(review_of "$S")" ]; then
		not_ok "[$label] the daemon did not start: $(tail -3 "$S.log")"
		return 1
	fi
	open_agent_sock "$S" # records_qa.py's second Unix user (nobody) asks over stdio
	RECORDS_LABEL=$label $PY "$ROOT/tests/integration/records_qa.py" "$S" "$ASSENT" "$ASSENTD" "$key" "$rt" "$at" "$mal"
	local rc=$?
	[ $rc -ne 0 ] && echo "# [$label] daemon log:" && sed 's/^/# /' "$S.log" | tail -20
	return $rc
}

run sqlite "$T/sqlite"
rc1=$?

# Retention: the first write after a start prunes (ASSENT_RECORD_RETENTION), never a linked call.
S=$T/sqlite
p=$(daemon_pid "$S")
[ -n "$p" ] && kill "$p" && for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
sqlite3 "$S/calls.db" "INSERT INTO ffb_tool_calls (call_id, tool, started_at, duration_ms, outcome, ok) VALUES ('old1', 'stale', '2020-01-01 00:00:00.000', 1, 'ok', 1); INSERT INTO ffb_events (occurred_at, kind, key, attrs) VALUES ('2020-01-01 00:00:00.000', 'old.event', 'old', '{}');"
linked_before=$(sqlite3 "$S/calls.db" "SELECT COUNT(*) FROM ffb_tool_calls WHERE call_id IN (SELECT call_id FROM ffb_feedback_call_links)")
ASSENT_SINGLE_USER=1 ASSENT_RECORD_RETENTION=30d "$ASSENTD" --state "$S" >>"$S.log" 2>&1 &
for _ in $(seq 200); do [ -S "$S/control.sock" ] && [ -n "$(daemon_pid "$S")" ] && break; sleep 0.05; done
sleep 0.5
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"ret","version":"1"}}}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_pending_feedback","arguments":{}}}' |
	(cat; sleep 1) | "$ASSENTD" --stdio --state "$S" >/dev/null 2>&1
for _ in $(seq 100); do [ "$(sqlite3 "$S/calls.db" "SELECT COUNT(*) FROM ffb_tool_calls WHERE call_id = 'old1'")" = 0 ] && break; sleep 0.05; done
check "[sqlite] retention: the first write after a start prunes a call older than ASSENT_RECORD_RETENTION" \
	test "$(sqlite3 "$S/calls.db" "SELECT COUNT(*) FROM ffb_tool_calls WHERE call_id = 'old1'")" = 0
check "[sqlite] ... and an old event" test "$(sqlite3 "$S/calls.db" "SELECT COUNT(*) FROM ffb_events WHERE kind = 'old.event'")" = 0
check "[sqlite] ... never a call linked to a report ($linked_before linked)" \
	test "$(sqlite3 "$S/calls.db" "SELECT COUNT(*) FROM ffb_tool_calls WHERE call_id IN (SELECT call_id FROM ffb_feedback_call_links)")" = "$linked_before"
check "[sqlite] ... and the new call is written" \
	test "$(sqlite3 "$S/calls.db" "SELECT COUNT(*) FROM ffb_tool_calls WHERE client_id LIKE 'ret%'")" -ge 1
check "[sqlite] ... the log says what was pruned" grep -q 'pruned 1 calls and 1 events' "$S.log"
if CONN=$(PG_SOCKET_OTHERS=1 "$PG" start "$T/pg" 2>"$T/pg.err"); then # the recorder has a uid of its own
	chmod 0711 "$T/pg"
	CI=${CONN#postgresql:}
	RECORDS_PSQL="/usr/lib/postgresql/15/bin/psql $CI" run postgresql "$T/pg-state" "ASSENT_RECORD_DATABASE=$CONN"
	rc2=$?
else
	not_ok "[postgresql] pg.sh start: $(head -c 300 "$T/pg.err")"
	rc2=1
fi
if URL=$(MY_SOCKET_OTHERS=1 "$MY" start "$T/my" 2>"$T/my.err"); then
	chmod 0711 "$T/my"
	RECORDS_MYSQL="$MY $T/my" run mariadb "$T/my-state" "ASSENT_RECORD_DATABASE=$URL"
	rc3=$?
else
	not_ok "[mariadb] my.sh start: $(head -c 300 "$T/my.err")"
	rc3=1
fi
[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ]
