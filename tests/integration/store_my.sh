#!/usr/bin/env bash
# The call store on a real MariaDB: tests/scripts/my.sh starts Debian's server (10.11) in a
# scratch directory (unix socket only; as root, the server runs as the mysql account), then
# every case of tests/unit/store_test runs again against it (ASSENT_TEST_MY), plain and under
# the sanitizers when that build is there; the server is stopped on exit.
. "$(dirname "$0")/../lib.sh"
MY=$ROOT/tests/scripts/my.sh
chmod 0711 "$T" # the server's owner must reach $T/my
trap '[ -f "$T/my/my.pid" ] && "$MY" stop "$T/my" >/dev/null 2>&1; rm -rf "$T"' EXIT

if URL=$("$MY" start "$T/my" 2>"$T/my.err"); then
	ok "my.sh starts a MariaDB server on a unix socket: ${URL/$(cat "$T/my/password")/***}"
else
	not_ok "my.sh start: $(head -c 300 "$T/my.err")"
	done_testing
	exit 1
fi
check "it listens on no TCP port (its log says port: 0)" grep -q "socket: '$T/my/sock/my.sock'  port: 0 " "$T/my/server.log"
check "its socket is in the scratch directory" test -S "$T/my/sock/my.sock"

. "$ROOT/tests/scripts/store_cases.sh"
run_cases() {
	store_cases "$1" ASSENT_TEST_MY "$URL" mysql MariaDB
	check "${1#$ROOT/build/}: the password is in none of its messages" \
		sh -c "! grep -qF '$(cat "$T/my/password")' '$T/cases.out' '$T/cases.err'"
}
run_cases "$ROOT/build/tests/store_test"
[ -x "$ROOT/build/san/tests/store_test" ] && run_cases "$ROOT/build/san/tests/store_test"

check "my.sh stop stops it" "$MY" stop "$T/my"
check "... and nothing answers on the socket" sh -c "! mariadb --no-defaults --socket='$T/my/sock/my.sock' -uroot -e 'SELECT 1' >/dev/null 2>&1"
done_testing
