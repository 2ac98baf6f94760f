#!/usr/bin/env bash
# MySQL / MariaDB as the records database (issue 29, 2: the seed's third database), end to end:
# tests/scripts/my.sh starts Debian's MariaDB 10.11 in a scratch directory; assentd records
# into it through its confined recorder (its own uid, seccomp, Landlock), once over the unix
# socket (?socket=PATH) and once over TCP on 127.0.0.1 (in the seed's SQLAlchemy form,
# mysql+pymysql://...?charset=utf8mb4); a call and an event are read back with
# the seed's columns; the server stopped mid-run queues the records, which are written once it
# is back; the password is never in the daemon's log.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
MY=$ROOT/tests/scripts/my.sh
DPID=
stop() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	for _ in $(seq 100); do [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
	DPID=
}
trap 'stop; for d in "$T"/my-*; do [ -f "$d/my.pid" ] && "$MY" stop "$d" >/dev/null 2>&1; done; rm -rf "$T"' EXIT
[ -n "${KEEP_T:-}" ] && trap - EXIT
chmod 0711 "$T" # the server's owner and the recorder's uid must reach their directories
cat >"$T/ups.json" <<JSON
{"mcpServers": {"up": {"command": "/usr/bin/python3", "args": ["$ROOT/tests/integration/records_upstream.py"]}}}
JSON
printf 'allow upstream up tool echo\ndefault ask same-user ok\n' >"$T/p.policy"

# agent STATE TEXT: one echo call and one event over stdio, each answered before it ends.
agent() {
	local init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"my","version":"1"}}}'
	local call='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"'$2'"}}}'
	local event='{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"qa_record_event","arguments":{"kind":"deploy.finished","key":"'$2'"}}}'
	printf '%s\n' "$init" "$call" "$event" | (cat; for _ in $(seq 100); do [ "$(grep -c '"id":[23]' "$1.agent")" -ge 2 ] && break; sleep 0.1; done) |
		"$ASSENTD" --stdio --state "$1" >"$1.agent" 2>/dev/null
}

# until_sql DIR SQL WANT: waits (bounded) until SQL answers WANT; the last answer in GOT.
until_sql() {
	GOT=
	for _ in $(seq 300); do
		GOT=$("$MY" sql "$1" "$2" 2>/dev/null)
		[ "$GOT" = "$3" ] && return 0
		sleep 0.1
	done
	return 1
}

run() { # LABEL [MY_PORT]
	local label=$1 port=${2:-} D=$T/my-$1 S=$T/state-$1 URL
	if ! URL=$(MY_SOCKET_OTHERS=1 MY_PORT=$port "$MY" start "$D" 2>"$T/my.err"); then
		not_ok "[$label] my.sh start: $(head -c 300 "$T/my.err")"
		return
	fi
	chmod 0711 "$D"
	# over TCP, the seed's SQLAlchemy form of the URL (a driver, charset=utf8mb4)
	[ -n "$port" ] && URL="mysql+pymysql://${URL#mysql://}?charset=utf8mb4"
	local PW
	PW=$(cat "$D/password")
	ok "[$label] my.sh starts MariaDB: ${URL/$PW/***}"
	mkdir -p "$S"
	"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
	FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off ASSENT_SINGLE_USER=1 ASSENT_RECORD_DATABASE="$URL" \
		FEEDBACK_INSTRUMENTATION_MODE=full \
		"$ASSENTD" --state "$S" --policy "$T/p.policy" --upstreams "$T/ups.json" >"$S.log" 2>&1 &
	DPID=$!
	for _ in $(seq 200); do grep -q 'upstream up: .* tools served' "$S.log" && break; sleep 0.05; done
	# The recorder says hello once its database is open; records before that are dropped (counted).
	for _ in $(seq 300); do grep -q "recorder: the records' tables were brought up to date" "$S.log" && break; sleep 0.1; done
	check "[$label] the recorder created the tables in MariaDB, and says so" \
		grep -q "recorder: the records' tables were brought up to date: .*CREATE TABLE ffb_tool_calls" "$S.log"
	agent "$S" "first-$label"
	local R="records.ffb_tool_calls"
	check "[$label] the call is in MariaDB's ffb_tool_calls, with the seed's columns" \
		until_sql "$D" "SELECT tool, upstream, outcome, ok, decision, caller_kind FROM $R WHERE tool = 'up__echo' AND arguments LIKE '%first-$label%'" \
		"$(printf 'up__echo\tup\tok\t1\tforwarded\tuid')"
	check "[$label] ... and the event in ffb_events" \
		until_sql "$D" "SELECT kind FROM records.ffb_events WHERE \`key\` = 'first-$label'" "deploy.finished"
	check "[$label] the times are UTC with milliseconds (DATETIME(3))" \
		until_sql "$D" "SELECT COUNT(*) FROM $R WHERE tool = 'up__echo' AND ABS(TIMESTAMPDIFF(SECOND, started_at, UTC_TIMESTAMP(3))) < 3600" 1
	# The server goes away: calls still answered, records wait; written once it is back.
	"$MY" stop "$D"
	agent "$S" "second-$label"
	check "[$label] with the server stopped, the daemon still runs" kill -0 "$DPID"
	for _ in $(seq 100); do grep -q 'recorder: .*MariaDB' "$S.log" && break; sleep 0.1; done
	check "[$label] ... and logs the database's failure" grep -q 'recorder: .*MariaDB' "$S.log"
	"$MY" resume "$D" >/dev/null 2>"$T/my.err" || not_ok "[$label] my.sh resume: $(head -c 200 "$T/my.err")"
	check "[$label] once it is back, the queued call is written (reconnected)" \
		until_sql "$D" "SELECT COUNT(*) FROM $R WHERE tool = 'up__echo' AND arguments LIKE '%second-$label%'" 1
	check "[$label] the recorder is the one that wrote it: still alive under its seccomp filter" \
		sh -c "! grep -q 'recorder.*\\(exited\\|killed\\|signal\\)' '$S.log'"
	check "[$label] the password is nowhere in the daemon's log" sh -c "! grep -qF '$PW' '$S.log'"
	stop
	"$MY" stop "$D" >/dev/null 2>&1
}

if [ ! -x /usr/sbin/mariadbd ]; then
	not_ok "MariaDB is not installed (mariadb-server: make deps)"
	done_testing
	exit 1
fi
run socket
run tcp "$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
done_testing
