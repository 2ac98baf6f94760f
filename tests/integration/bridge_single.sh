#!/usr/bin/env bash
# The daemon a bridge starts runs in the bridge's mode (issue 29, 3): `assentd --stdio
# --single-user` (or ASSENT_SINGLE_USER=1 in the client's env) starts a single-user daemon,
# as `make run` does; one started without it says on the bridge's stderr that a reviewer
# with the agent's own uid cannot approve, and how a one-person trial turns it on.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
single_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("single_user"))' "$1/assentd.json" 2>/dev/null; }
cleanup() {
	for s in "$T"/s-*; do p=$(daemon_pid "$s"); [ -n "$p" ] && kill "$p" 2>/dev/null; done
	sleep 0.2
	rm -rf "$T"
}
trap cleanup EXIT
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bridge-single","version":"1"}}}'
# single NAME: the started daemon's single_user, once its assentd.json says (True/False)
single() {
	for _ in $(seq 200); do
		v=$(single_of "$T/s-$1")
		[ -n "$v" ] && [ "$v" != None ] && { echo "$v"; return; }
		sleep 0.05
	done
}
# bridge NAME ENV... -- ARGS...: an initialize through a bridge that starts its daemon (state $T/s-NAME)
bridge() {
	local name=$1 env=()
	shift
	while [ "$1" != -- ]; do env+=("$1"); shift; done
	shift
	mkdir -p "$T/s-$name"
	printf '%s\n' "$INIT" | timeout 30 env -u ASSENT_SINGLE_USER FEEDBACK_SSE_PORT=0 "${env[@]}" "$ASSENTD" --stdio "$@" \
		--state "$T/s-$name" >"$T/$name.out" 2>"$T/$name.err"
}
bridge flag -- --single-user
check "assentd --stdio --single-user: the daemon it starts is single-user" test "$(single flag)" = True
check "  ... and the bridge says nothing of multi-user mode" sh -c "! grep -q 'multi-user' '$T/flag.err'"
bridge env ASSENT_SINGLE_USER=1 --
check "ASSENT_SINGLE_USER=1 in the client's env: the daemon it starts is single-user" test "$(single env)" = True
bridge multi --
check "without either the daemon it starts is multi-user" test "$(single multi)" = False
check "  ... and the bridge says so, with how a one-person trial turns it on" \
	grep -q 'multi-user mode: a reviewer with this agent.s own uid cannot approve.*ASSENT_SINGLE_USER=1' "$T/multi.err"
done_testing
