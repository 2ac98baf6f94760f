# Shared by cluster.sh and cluster_gate.sh (sourced after tests/lib.sh): a real PostgreSQL in
# $T/pg (tests/scripts/pg.sh) and replicas of assentd --cluster on it, each in $T/NAME.
ASSENTD=$ROOT/build/assentd
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
if [ ! -x "$PGBIN/initdb" ] || ! command -v psql >/dev/null; then
	not_ok "PostgreSQL 15 is not installed (make deps installs postgresql-15)"
	done_testing
	exit 1
fi
chmod 0711 "$T" # the PostgreSQL account and the cluster client's uid reach the socket below it
PG=$T/pg
URL=$(PG_SOCKET_OTHERS=1 bash "$ROOT/tests/scripts/pg.sh" start "$PG") || {
	not_ok "pg.sh start"
	done_testing
	exit 1
}
CONN="host=$PG/sock port=5432 dbname=postgres user=postgres"
pid_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$T/$1/assentd.json" 2>/dev/null; }
# ASSENT_TEST_KEEP=DIR: the replicas' logs and their lease rows are copied there at the end.
cleanup() {
	[ -n "${ASSENT_TEST_KEEP:-}" ] && cp "$T"/*.log "$ASSENT_TEST_KEEP"/ 2>/dev/null
	[ -n "${ASSENT_TEST_KEEP:-}" ] &&
		psql -X -At -d "$CONN" -c "SELECT name, seen, taken_by, now() FROM assent_replicas" >"$ASSENT_TEST_KEEP/replicas" 2>/dev/null
	for r in a b c d; do
		p=$(pid_of $r)
		[ -n "$p" ] && kill -9 "$p" 2>/dev/null
	done
	bash "$ROOT/tests/scripts/pg.sh" stop "$PG" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
export ASSENT_SINGLE_USER=1 # the tests' reviewer has the agents' uid
export ASSENT_CLUSTER_LEASE=3 # a dead replica is taken over 3 s after its last heartbeat

# start NAME [POLICY] [ENV=VALUE...]: a replica in $T/NAME with the first replica's keys (and the
# upstreams in $T/NAME.up.json when there is one).
start() {
	local r=$1 pol=${2:-$T/p.policy} up=()
	shift 2 2>/dev/null || shift
	mkdir -p "$T/$r"
	[ "$r" != a ] && [ ! -d "$T/$r/keys" ] && cp -a "$T/a/keys" "$T/$r/keys"
	[ -f "$T/$r.up.json" ] && up=(--upstreams "$T/$r.up.json")
	env ASSENT_REPLICA="$r" "$@" setsid "$ASSENTD" --daemon --state "$T/$r" --policy "$pol" --cluster "$URL" \
		"${up[@]}" >>"$T/$r.log" 2>&1 &
	local pid=$!
	disown $pid
	for _ in $(seq 200); do
		[ -S "$T/$r/agent.sock" ] && [ -s "$T/$r/assentd.json" ] && grep -q '"http"' "$T/$r/assentd.json" && return 0
		kill -0 $pid 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}
# REPLICA: the session id of the first request it lists, once it lists one
first_pending() {
	for _ in $(seq 100); do
		"$ASSENT" --state "$T/$1" pending --json 2>/dev/null | grep -o 'req-[0-9a-f]*' | head -1 | grep . && return 0
		sleep 0.05
	done
}
listed() { for _ in $(seq 100); do "$ASSENT" --state "$T/$1" pending --json 2>/dev/null | grep -q "$2" && return 0; sleep 0.05; done; return 1; }
gone() { for _ in $(seq "${3:-100}"); do "$ASSENT" --state "$T/$1" pending --json 2>/dev/null | grep -q "$2" || return 0; sleep 0.05; done; return 1; }
# KIND SID: how many entries of that kind name SID in PostgreSQL, and the replicas that wrote them
entries_of() {
	local hex
	hex=$(printf '%s' "$1" | od -An -tx1 | tr -d ' \n')
	psql -X -At -d "$CONN" -c "SELECT count(*) || ' ' || coalesce(string_agg(replica, ','), '') FROM assent_ledger
		WHERE position('$2'::bytea in entry) > 0 AND encode(entry, 'hex') LIKE '%646b696e64' || lpad(to_hex(96 + length('$1')), 2, '0') || '$hex%'"
}
