#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests: Debian's postgresql-15 binaries, a cluster
# in DIR that listens on a unix socket only (DIR/sock, listen_addresses = ''), trust
# authentication on that socket, superuser "postgres".
#   pg.sh start DIR   initdb + start; prints the conninfo the recorder takes, e.g.
#                     postgresql:host=DIR/sock port=5432 dbname=postgres user=postgres
#   pg.sh stop DIR    stop it (fast shutdown); the files stay, for the caller to remove
#   pg.sh resume DIR  start a cluster that pg.sh stop stopped again (same conninfo)
# PG_DURABLE=1 at start: fsync and synchronous_commit on (benches); else off (tests).
# PG_SOCKET_OTHERS=1 at start: the socket is 0777 in a directory others may search (0711),
# so that a process of another uid connects (assent's recorder drops to a uid of its own);
# with trust authentication any local user can then, while the server runs.
# initdb and the server refuse to run as root, and CI runs as root: then they run as the
# `postgres` system account (Debian's package makes it), or as `assent-pg` created for
# the purpose when there is none, and DIR is handed to that account. DIR and every
# directory above it must be searchable by it (a mktemp -d directory is 0700: chmod it
# 0711 first). Run as another user, they run as that user.
set -euo pipefail
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}

die() {
	echo "pg.sh: $*" >&2
	exit 1
}

[ $# -eq 2 ] || die "usage: pg.sh start|stop|resume DIR"
cmd=$1
dir=$2
[ -x "$PGBIN/initdb" ] || die "no PostgreSQL at $PGBIN (apt-get install postgresql-15, or set PGBIN)"
case $dir in /*) ;; *) dir=$(pwd)/$dir ;; esac

. "$(dirname "$0")/owner.sh"
pick_owner postgres assent-pg PostgreSQL

case $cmd in
start)
	mkdir -p "$dir"
	[ -e "$dir/data" ] && die "$dir/data exists: stop and remove the old cluster first"
	echo "$owner" >"$dir/owner"
	mkdir -p "$dir/data" "$dir/sock"
	if [ "$(id -u)" -eq 0 ]; then
		chown "$owner" "$dir" "$dir/data" "$dir/sock"
		as test -x "$dir" || die "$owner cannot reach $dir (a directory above it is not searchable by others: chmod o+x it)"
	fi
	chmod 0700 "$dir/data" "$dir/sock"
	sockmode=0700
	if [ "${PG_SOCKET_OTHERS:-}" = 1 ]; then
		sockmode=0777
		chmod 0711 "$dir/sock"
	fi
	as "$PGBIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale --no-instructions >"$dir/initdb.log" 2>&1 ||
		die "initdb failed: $(tail -3 "$dir/initdb.log" | tr '\n' ' ')"
	cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$dir/sock'
unix_socket_permissions = $sockmode
port = 5432
max_connections = 20
shared_buffers = 16MB
EOF
	# Durable as a production server (benches that compare with LMDB's synced commits), or not
	# (tests: faster, and a crash of the test machine loses only a throwaway cluster).
	if [ "${PG_DURABLE:-}" = 1 ]; then
		printf 'fsync = on\nsynchronous_commit = on\nfull_page_writes = on\n' >>"$dir/data/postgresql.conf"
	else
		printf 'fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n' >>"$dir/data/postgresql.conf"
	fi
	as "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null ||
		die "the server did not start: $(tail -3 "$dir/server.log" 2>/dev/null | tr '\n' ' ')"
	echo "postgresql:host=$dir/sock port=5432 dbname=postgres user=postgres"
	;;
resume)
	[ -d "$dir/data" ] || die "no cluster in $dir"
	as "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null ||
		die "the server did not start again: $(tail -3 "$dir/server.log" 2>/dev/null | tr '\n' ' ')"
	echo "postgresql:host=$dir/sock port=5432 dbname=postgres user=postgres"
	;;
stop)
	[ -d "$dir/data" ] || die "no cluster in $dir"
	as "$PGBIN/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null
	;;
*)
	die "unknown command $cmd: start, stop or resume"
	;;
esac
