#!/usr/bin/env bash
# The call store on a real PostgreSQL: tests/scripts/pg.sh starts Debian's server in a
# scratch directory (unix socket only; as root, the cluster runs as the postgres account),
# then every case of tests/unit/store_test runs again against it (ASSENT_TEST_PG), plain
# and under the sanitizers when that build is there; the server is stopped on exit.
. "$(dirname "$0")/../lib.sh"
PG=$ROOT/tests/scripts/pg.sh
chmod 0711 "$T" # the cluster's owner must reach $T/pg
trap '"$PG" stop "$T/pg" >/dev/null 2>&1; rm -rf "$T"' EXIT

if CONN=$("$PG" start "$T/pg" 2>"$T/pg.err"); then
	ok "pg.sh starts a PostgreSQL server on a unix socket: $CONN"
else
	not_ok "pg.sh start: $(head -c 300 "$T/pg.err")"
	done_testing
	exit 1
fi
check "it listens on no TCP port" sh -c "! grep -qE 'listening on IPv[46]' '$T/pg/server.log'"
check "its socket is in the scratch directory" test -S "$T/pg/sock/.s.PGSQL.5432"

. "$ROOT/tests/scripts/store_cases.sh"
run_cases() { store_cases "$1" ASSENT_TEST_PG "$CONN" postgresql PostgreSQL; }
run_cases "$ROOT/build/tests/store_test"
[ -x "$ROOT/build/san/tests/store_test" ] && run_cases "$ROOT/build/san/tests/store_test"

PSQL=/usr/lib/postgresql/15/bin/psql
check "pg.sh stop stops it" "$PG" stop "$T/pg"
check "... and nothing answers on the socket" sh -c "! $PSQL '${CONN#postgresql:}' -Atc 'SELECT 1' >/dev/null 2>&1"
done_testing
