#!/usr/bin/env bash
# An upstream whose command does not exist (issue 29, 3): `assent upstreams check` warns
# that it is not found on the server's PATH (the file stays valid), and the daemon starts
# it again with the documented backoff (1, 2, 4 ... 30 s), not every second for ever.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
field() { $PY -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2" 2>/dev/null; }
cleanup() {
	p=$(field "$S/assentd.json" pid)
	[ -n "$p" ] && kill "$p" 2>/dev/null
	sleep 0.2
	rm -rf "$T"
}
trap cleanup EXIT
printf '{"mcpServers":{"ghost":{"command":"assent-no-such-mcp-server","args":["stdio"]},"sh":{"command":"sh"},"rel":{"command":"./nope.sh"}}}' >"$T/up.json"
expect_exit 0 "upstreams check: a command not on PATH leaves the file valid" "$ASSENT" upstreams check "$T/up.json"
check "... and warns about it, naming the server and the command" \
	sh -c "printf '%s' \"\$1\" | grep -q \"ghost: command 'assent-no-such-mcp-server' is not found on the server's PATH\"" _ "$ERR"
check "... and a relative path that is not there" sh -c "printf '%s' \"\$1\" | grep -q \"rel: command './nope.sh' is not found\"" _ "$ERR"
check "... but not about sh, which is there" sh -c "! printf '%s' \"\$1\" | grep -q \"sh: command 'sh'\"" _ "$ERR"
check "... and counts the warnings" sh -c "printf '%s' \"\$1\" | grep -q '^2 warnings (see above): the file is valid$'" _ "$OUT"
printf '{"mcpServers":{"sh":{"command":"sh","env":{"PATH":"/nonexistent"}}}}' >"$T/up2.json"
expect_exit 0 "a PATH of the server's own (its env) is where it looks" "$ASSENT" upstreams check "$T/up2.json"
check "... sh is not in /nonexistent: warned" sh -c "printf '%s' \"\$1\" | grep -q \"sh: command 'sh' is not found\"" _ "$ERR"

printf '{"mcpServers":{"ghost":{"command":"assent-no-such-mcp-server"}}}' >"$T/ghost.json"
ASSENT_SINGLE_USER=1 "$ASSENTD" --state "$S" --upstreams "$T/ghost.json" >"$T/daemon.log" 2>&1 &
# The third start comes 2 s after the second and the fourth 4 s after the third: wait for
# the log to say so (never for a time).
for _ in $(seq 400); do grep -q 'restarting in 4000 ms' "$S/assentd.log" "$T/daemon.log" 2>/dev/null && break; sleep 0.05; done
cat "$S/assentd.log" "$T/daemon.log" 2>/dev/null | grep -o 'upstream[^ ]* worker down.*restarting in [0-9]* ms' >"$T/restarts"
check "the daemon restarts it after 1 s, then 2 s, then 4 s ($(grep -o '[0-9]* ms' "$T/restarts" | tr '\n' ' '))" \
	sh -c "grep -o 'restarting in [0-9]* ms' '$T/restarts' | head -3 | tr '\n' ' ' | grep -q '^restarting in 1000 ms restarting in 2000 ms restarting in 4000 ms $'"
done_testing
