#!/usr/bin/env bash
# FEEDBACK_LOG_LEVEL=DEBUG (the seed's advice for a slow or puzzling session) says what the
# daemon does: each frame a worker sends by type, each policy decision with its rule and
# deadline, each dispatch to an upstream, each upstream's start; never a request's message,
# context or a call's arguments (a marker in all of them is nowhere in the log). At INFO,
# none of those lines.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
MARK="dbg-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
DPID=
stop() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	for _ in $(seq 100); do [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
	DPID=
}
trap 'stop; rm -rf "$T"' EXIT
cat >"$T/ups.json" <<JSON
{"mcpServers": {"up": {"command": "/usr/bin/python3", "args": ["$ROOT/tests/integration/records_upstream.py"]}}}
JSON
printf 'allow upstream up tool echo\ndeny upstream up tool forbidden reason "not here"\ndefault ask same-user ok\n' >"$T/p.policy"

run() { # STATE LEVEL LOG
	mkdir -p "$1"
	"$ASSENT" --state "$1" reviewer add tester --uid "$(id -u)" >/dev/null
	FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off FEEDBACK_LOG_LEVEL=$2 ASSENT_SINGLE_USER=1 \
		"$ASSENTD" --state "$1" --policy "$T/p.policy" --upstreams "$T/ups.json" >"$3" 2>&1 &
	DPID=$!
	for _ in $(seq 200); do grep -q 'upstream up: .* tools served' "$3" && break; sleep 0.05; done
	$PY "$ROOT/tests/integration/debug_log.py" "$1" "$ROOT/build" "$MARK" >"$3.agent" 2>&1
	stop
}
has() { grep -qE "\"level\":\"debug\".*$2" "$1"; }

run "$T/s1" DEBUG "$T/debug.log"
check "the gated echo was allowed and answered ($(head -c 200 "$T/debug.log.agent"))" grep -q "^echo:.*arguments" "$T/debug.log.agent"
check "DEBUG: the upstream's start (its name, never its command line)" has "$T/debug.log" 'upstream up: its worker started \(pid [0-9]+, stdio server\)'
check "DEBUG: frames by type from the mcp worker" has "$T/debug.log" 'frame F_REQUEST \([0-9]+, [0-9]+ bytes\) from the mcp worker'
check "DEBUG: frames by type from the upstream worker" has "$T/debug.log" 'frame F_[A-Z_]+ \([0-9]+, [0-9]+ bytes\) from the upstream'
check "DEBUG: the allowed call's policy decision names its rule" has "$T/debug.log" 'policy: [^ ]+ \(tools/call up__echo\): allow by rule 1'
check "DEBUG: the denied call's decision names its rule" has "$T/debug.log" 'policy: [^ ]+ \(tools/call up__forbidden\): deny by rule 2'
check "DEBUG: request_feedback's decision: the default line, and its deadline" has "$T/debug.log" 'policy: [^ ]+ \(request_feedback approval\): ask by the default, line 3, deadline 300 s'
check "DEBUG: the dispatch of the allowed call to its upstream" has "$T/debug.log" 'dispatch: [^ ]+ \(call [0-9]+, tools/call up__echo, rule 1\)'
check "DEBUG: no F_LOG frame is logged as a frame (a line per line)" sh -c "! grep -q 'frame F_LOG' '$T/debug.log'"
check "DEBUG: the message, context and arguments ($MARK) are nowhere in the log" sh -c "! grep -q '$MARK' '$T/debug.log'"

run "$T/s2" INFO "$T/info.log"
check "INFO: the same calls were answered" grep -q "^echo:.*arguments" "$T/info.log.agent"
check "INFO: no debug line at all" sh -c "! grep -q '\"level\":\"debug\"' '$T/info.log'"
check "INFO: the daemon still logged its start" grep -q 'serving' "$T/info.log"
done_testing
