#!/usr/bin/env bash
# QA reports and events (issue 16) end to end: tests/integration/records_qa.py against a daemon
# with a CLI reviewer (root), a web reviewer, an admin and an agent key; once with the records
# in SQLite (the default), once in a real PostgreSQL (tests/scripts/pg.sh).
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
PG=$ROOT/tests/scripts/pg.sh
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
review_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("review") or "")' "$1/assentd.json" 2>/dev/null; }
cleanup() {
	for s in "$T/sqlite" "$T/pg-state"; do
		p=$(daemon_pid "$s")
		[ -n "$p" ] && kill "$p" 2>/dev/null
	done
	sleep 0.3
	"$PG" stop "$T/pg" >/dev/null 2>&1
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
	env ASSENT_SINGLE_USER=1 "$@" "$ASSENTD" --state "$S" >"$S.log" 2>&1 &
	for _ in $(seq 200); do [ -n "$(review_of "$S")" ] && [ -S "$S/control.sock" ] && break; sleep 0.05; done
	if [ -z "$(review_of "$S")" ]; then
		not_ok "[$label] the daemon did not start: $(tail -3 "$S.log")"
		return 1
	fi
	RECORDS_LABEL=$label $PY "$ROOT/tests/integration/records_qa.py" "$S" "$ASSENT" "$ASSENTD" "$key" "$rt" "$at"
	local rc=$?
	[ $rc -ne 0 ] && echo "# [$label] daemon log:" && sed 's/^/# /' "$S.log" | tail -20
	return $rc
}

run sqlite "$T/sqlite"
rc1=$?
if CONN=$(PG_SOCKET_OTHERS=1 "$PG" start "$T/pg" 2>"$T/pg.err"); then # the recorder has a uid of its own
	chmod 0711 "$T/pg"
	CI=${CONN#postgresql:}
	RECORDS_PSQL="/usr/lib/postgresql/15/bin/psql $CI" run postgresql "$T/pg-state" "ASSENT_RECORD_DATABASE=$CONN"
	rc2=$?
else
	not_ok "[postgresql] pg.sh start: $(head -c 300 "$T/pg.err")"
	rc2=1
fi
[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ]
