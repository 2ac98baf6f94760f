#!/usr/bin/env bash
# A throwaway MariaDB server for the tests: Debian's mariadb-server (10.11) binaries, a data
# directory in DIR, a unix socket (DIR/sock/my.sock) and no TCP unless MY_PORT is set (then
# 127.0.0.1:MY_PORT as well), database "records" and user "assent" with a random password.
#   my.sh start DIR   install the data directory + start; prints the URL the recorder takes,
#                     mysql://assent:PASSWORD@/records?socket=DIR/sock/my.sock
#                     (with MY_PORT: mysql://assent:PASSWORD@127.0.0.1:PORT/records)
#   my.sh stop DIR    stop it; the files stay, for the caller to remove
#   my.sh resume DIR  start a server that my.sh stop stopped again (same URL)
#   my.sh sql DIR SQL run SQL as the server's root (over the socket), tab-separated rows out
# MY_SOCKET_OTHERS=1 at start: the socket's directory is searchable by others (0711) and the
# socket 0777, so that a process of another uid connects (assent's recorder drops to a uid of
# its own); the password still guards the database.
# The server refuses to run as root, and CI runs as root: then it runs as the `mysql` system
# account (Debian's package makes it), or as `assent-my` created for the purpose when there is
# none, and DIR is handed to that account. DIR and every directory above it must be
# searchable by it (chmod a mktemp -d directory 0711 first).
set -euo pipefail
MYBIN=${MYBIN:-/usr/sbin}

die() {
	echo "my.sh: $*" >&2
	exit 1
}

[ $# -ge 2 ] || die "usage: my.sh start|stop|resume DIR, or my.sh sql DIR SQL"
cmd=$1
dir=$2
[ -x "$MYBIN/mariadbd" ] || die "no MariaDB server at $MYBIN/mariadbd (apt-get install mariadb-server: make deps)"
command -v mariadb-install-db >/dev/null || die "no mariadb-install-db (apt-get install mariadb-server: make deps)"
case $dir in /*) ;; *) dir=$(pwd)/$dir ;; esac

. "$(dirname "$0")/owner.sh"
pick_owner mysql assent-my MariaDB

sock() { echo "$dir/sock/my.sock"; }
client() { mariadb --no-defaults --socket="$(sock)" -uroot --batch --skip-column-names "$@"; }

url() {
	local pw
	pw=$(cat "$dir/password")
	if [ -f "$dir/port" ]; then
		echo "mysql://assent:$pw@127.0.0.1:$(cat "$dir/port")/records"
	else
		echo "mysql://assent:$pw@/records?socket=$(sock)"
	fi
}

serve() {
	local net=(--skip-networking)
	[ -f "$dir/port" ] && net=(--bind-address=127.0.0.1 --port="$(cat "$dir/port")")
	# root has no password (--auth-root-authentication-method=normal) and is reached over the
# socket alone, as pg.sh's trust authentication is; the recorder connects as assent.
# Durability off (a throwaway server), small buffers, no host names looked up.
	as "$MYBIN/mariadbd" --no-defaults --datadir="$dir/data" --socket="$(sock)" --pid-file="$dir/my.pid" \
		--log-error="$dir/server.log" "${net[@]}" --skip-name-resolve --innodb-flush-log-at-trx-commit=0 \
		--innodb-doublewrite=0 --innodb-buffer-pool-size=32M --innodb-log-file-size=16M \
		--character-set-server=utf8mb4 --max-connections=30 >/dev/null 2>&1 &
	for _ in $(seq 600); do
		client -e 'SELECT 1' >/dev/null 2>&1 && break
		kill -0 $! 2>/dev/null || die "the server did not start: $(tail -3 "$dir/server.log" 2>/dev/null | tr '\n' ' ')"
		sleep 0.1
	done
	client -e 'SELECT 1' >/dev/null 2>&1 || die "the server did not answer in 60 s: $(tail -3 "$dir/server.log" | tr '\n' ' ')"
	[ "${MY_SOCKET_OTHERS:-$(cat "$dir/others" 2>/dev/null || echo 0)}" = 1 ] && chmod 0777 "$(sock)"
	return 0
}

case $cmd in
start)
	mkdir -p "$dir"
	[ -e "$dir/data" ] && die "$dir/data exists: stop and remove the old server first"
	echo "$owner" >"$dir/owner"
	mkdir -p "$dir/data" "$dir/sock"
	[ -n "${MY_PORT:-}" ] && echo "$MY_PORT" >"$dir/port"
	echo "${MY_SOCKET_OTHERS:-0}" >"$dir/others"
	head -c 18 /dev/urandom | base64 | tr '+/' 'xy' >"$dir/password"
	chmod 0600 "$dir/password"
	if [ "$(id -u)" -eq 0 ]; then
		chown "$owner" "$dir" "$dir/data" "$dir/sock"
		as test -x "$dir" || die "$owner cannot reach $dir (a directory above it is not searchable by others: chmod o+x it)"
	fi
	chmod 0700 "$dir/data" "$dir/sock"
	[ "${MY_SOCKET_OTHERS:-}" = 1 ] && chmod 0711 "$dir/sock"
	as mariadb-install-db --no-defaults --datadir="$dir/data" --auth-root-authentication-method=normal \
		--skip-test-db >"$dir/install.log" 2>&1 ||
		die "mariadb-install-db failed: $(tail -3 "$dir/install.log" | tr '\n' ' ')"
	serve
	pw=$(cat "$dir/password")
	cat >"$dir/init.sql" <<EOF
CREATE DATABASE records CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER 'assent'@'localhost' IDENTIFIED BY '$pw';
CREATE USER 'assent'@'127.0.0.1' IDENTIFIED BY '$pw';
GRANT ALL ON records.* TO 'assent'@'localhost', 'assent'@'127.0.0.1';
EOF
	client <"$dir/init.sql" >"$dir/init.log" 2>&1 ||
		die "cannot create the database and user: $(tail -3 "$dir/init.log" | tr '\n' ' ')"
	rm -f "$dir/init.sql"
	url
	;;
resume)
	[ -d "$dir/data" ] || die "no server in $dir"
	serve
	url
	;;
stop)
	[ -f "$dir/my.pid" ] || die "no server running in $dir (no my.pid)"
	pid=$(cat "$dir/my.pid")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 600); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && die "the server (pid $pid) did not stop in 60 s"
	rm -f "$dir/my.pid"
	;;
sql)
	[ $# -eq 3 ] || die "usage: my.sh sql DIR SQL"
	client -e "$3"
	;;
*)
	die "unknown command $cmd: start, stop, resume or sql"
	;;
esac
