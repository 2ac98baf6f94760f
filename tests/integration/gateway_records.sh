#!/usr/bin/env bash
# The call records end to end (issue 16, "What must be shown"): assentd --upstreams in front of a
# small upstream (records_upstream.py), agents over stdio and HTTP, and what the recorder wrote read
# back, on SQLite (the default STATE/calls.db), on a real PostgreSQL (tests/scripts/pg.sh) and on a
# real MariaDB (tests/scripts/my.sh), a database per daemon so the seed's table names and queries
# are used unchanged. gateway_records.py
# does each run; its TAP lines are this script's:
#  - meta: one row per tools/call, gated (allowed, denied, soft errors) and assent's own
#    (request_feedback, list_pending_feedback, a refused call, an unknown tool), with the exact
#    columns: tool, upstream, outcome, ok, error_type/message, session_id ("stdio:N" or the
#    Mcp-Session-Id), request_id, user_sub ("uid:N", "agent:NAME"), caller_kind, client_id, sizes,
#    decision, rule, ledger_seq, server_version; soft errors never change what the client gets (the
#    upstream asked directly answers the same); the JSON lines: a line per call, "record": "tool_call"
#  - full: arguments and results redacted at any depth (keys, secret-shaped values, an operator key
#    and an operator pattern); no secret in the database's files or the JSON lines, which do hold the
#    stored markers; a meta-only tool keeps no payload
#  - off: no rows; sampling: rates on ok calls, the seed's estimate query, failures always kept,
#    excluded tools never recorded; a bad rate refuses to start naming its variable
#  - PostgreSQL and MariaDB: a queue of 5 with the server stopped mid-run: 50 calls answered, drops and sink
#    failures on /metrics, the daemon alive, records written again once the server is back
. "$(dirname "$0")/../lib.sh"
PG=$ROOT/tests/scripts/pg.sh
MY=$ROOT/tests/scripts/my.sh
chmod 0711 "$T" # the cluster's owner must reach $T/pg
cleanup() {
	# daemons the driver left (it stops its own; these only when it was killed)
	for j in "$T"/*/assentd.json; do
		[ -f "$j" ] || continue
		p=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$j" 2>/dev/null)
		[ -n "$p" ] && kill "$p" 2>/dev/null
	done
	[ -d "$T/pg/data" ] && "$PG" stop "$T/pg" >/dev/null 2>&1
	[ -f "$T/my/my.pid" ] && "$MY" stop "$T/my" >/dev/null 2>&1
	sleep 0.3
	rm -rf "$T"
}
trap cleanup EXIT
[ -n "${KEEP_T:-}" ] && trap - EXIT

for b in assentd assent assent-recorder; do
	if [ ! -x "$ROOT/build/$b" ]; then
		not_ok "build/$b is not built (make all)"
		done_testing
		exit 1
	fi
done

# relay TAP WHAT RC: another program's TAP lines as this script's
relay() {
	while IFS= read -r line; do
		case "$line" in
		"ok "*) ok "${line#ok [0-9]* - }" ;;
		"not ok "*) not_ok "${line#not ok [0-9]* - }" ;;
		esac
	done <"$1"
	grep -q '^1\.\.' "$1" || not_ok "$2 stopped before its plan (exit $3): $(tail -c 400 "${1%.tap}.err")"
}

mkdir -p "$T/sqlite"
printf '{"build": "%s", "t": "%s", "backend": "sqlite", "refusals": true}\n' "$ROOT/build" "$T/sqlite" >"$T/sqlite.json"
timeout 300 "$PY" "$ROOT/tests/integration/gateway_records.py" "$T/sqlite.json" >"$T/sqlite.tap" 2>"$T/sqlite.err"
relay "$T/sqlite.tap" "gateway_records.py (sqlite)" $?

if CONN=$(PG_SOCKET_OTHERS=1 "$PG" start "$T/pg" 2>"$T/pg.err"); then
	ok "pg.sh starts a PostgreSQL server, its socket open to the recorder's uid: $CONN"
	mkdir -p "$T/postgresql"
	printf '{"build": "%s", "t": "%s", "backend": "postgresql", "pg": {"conninfo": "%s", "dir": "%s", "pgsh": "%s"}}\n' \
		"$ROOT/build" "$T/postgresql" "${CONN#postgresql:}" "$T/pg" "$PG" >"$T/postgresql.json"
	timeout 300 "$PY" "$ROOT/tests/integration/gateway_records.py" "$T/postgresql.json" >"$T/postgresql.tap" 2>"$T/postgresql.err"
	relay "$T/postgresql.tap" "gateway_records.py (postgresql)" $?
else
	not_ok "pg.sh start: $(head -c 300 "$T/pg.err")"
fi

if MY_SOCKET_OTHERS=1 "$MY" start "$T/my" >/dev/null 2>"$T/my.err"; then
	chmod 0711 "$T/my"
	ok "my.sh starts a MariaDB server, its socket open to the recorder's uid"
	mkdir -p "$T/mariadb"
	printf '{"build": "%s", "t": "%s", "backend": "mariadb", "my": {"dir": "%s", "mysh": "%s"}}\n' \
		"$ROOT/build" "$T/mariadb" "$T/my" "$MY" >"$T/mariadb.json"
	timeout 300 "$PY" "$ROOT/tests/integration/gateway_records.py" "$T/mariadb.json" >"$T/mariadb.tap" 2>"$T/mariadb.err"
	relay "$T/mariadb.tap" "gateway_records.py (mariadb)" $?
else
	not_ok "my.sh start: $(head -c 300 "$T/my.err")"
fi
done_testing
