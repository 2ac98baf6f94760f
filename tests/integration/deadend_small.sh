#!/usr/bin/env bash
# Small dead ends of a first week (issue 29, 3), each as a new user met it: the identity
# lists are tables (--json for machines); `agent add --uid` says that every stdio agent of
# that uid becomes that agent.
. "$(dirname "$0")/../lib.sh"
S=$T/state
"$ASSENT" --state "$S" reviewer add alice --uid 1000 --group dba --web >/dev/null
"$ASSENT" --state "$S" agent add ci --audience tf-prod >/dev/null
expect_exit 0 "agent add --uid" "$ASSENT" --state "$S" agent add localbot --uid 1001 --owner alice
check "... says every stdio agent of uid 1001 is that agent from now on" \
	sh -c "printf '%s' \"\$1\" | grep -q 'Every stdio agent running as uid 1001, whatever client it is, is agent localbot from now on, with its audiences'" _ "$OUT"
expect_exit 0 "agent list" "$ASSENT" --state "$S" agent list
check "... is a table with a header" sh -c "printf '%s\n' \"\$1\" | head -1 | grep -Eq '^NAME +AUDIENCES +UIDS +OWNER$'" _ "$OUT"
check "... a row per agent" sh -c "printf '%s\n' \"\$1\" | grep -Eq '^ci +tf-prod +- +-$' && printf '%s\n' \"\$1\" | grep -Eq '^localbot +- +1001 +alice$'" _ "$OUT"
expect_exit 0 "agent list --json" "$ASSENT" --state "$S" agent list --json
check "... is the JSON" sh -c "printf '%s' \"\$1\" | $PY -c 'import json,sys; a=json.load(sys.stdin); sys.exit(0 if [x[\"name\"] for x in a] == [\"ci\", \"localbot\"] else 1)'" _ "$OUT"
expect_exit 0 "reviewer list" "$ASSENT" --state "$S" reviewer list
check "... is a table too" sh -c "printf '%s\n' \"\$1\" | grep -Eq '^alice +1000 +dba +yes +-$'" _ "$OUT"

# The upstreams parser: a missing comma is said as such, and the input it quotes keeps its quotes.
printf '{"mcpServers": {"a": {"command": "x" "args": []}}}' >"$T/u1.json"
expect_exit 1 "upstreams check: a missing comma" "$ASSENT" upstreams check "$T/u1.json"
expect_err "not JSON: a comma is missing before '\"args\"' \(line 1, column 43: a ',' or '\}' was expected\)" "... is said as a missing comma, the member quoted as written"
printf '{"mcpServers": {"a": {"command": "x\377"}}}' >"$T/u2.json"
expect_exit 1 "upstreams check: a byte that is not UTF-8" "$ASSENT" upstreams check "$T/u2.json"
expect_err "unable to decode byte 0xff near '\"x' " "... quotes the input with its quote, not '?'"

# A policy error's list of the words a rule may hold is whole.
printf 'ask message ~ "x" quorum 2 bogus\n' >"$T/p.policy"
expect_exit 1 "policy check: an unknown word" "$ASSENT" policy check "$T/p.policy"
check "... lists every word a rule may hold, to the last (token)" \
	sh -c "printf '%s' \"\$1\" | grep -q \"same-user, assurance, record, token): 'bogus'\$\"" _ "$ERR"

# A port given explicitly and taken by another program: the daemon stops naming the variable.
mkfifo "$T/port"
$PY -c 'import socket,sys; s=socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print(s.getsockname()[1], flush=True); sys.stdin.read()' <"$T/port" >"$T/port.out" &
HOLDER=$!
exec 4>"$T/port"
for _ in $(seq 200); do [ -s "$T/port.out" ] && break; sleep 0.05; done
P=$(cat "$T/port.out")
FEEDBACK_SSE_PORT=$P expect_exit 2 "assentd with FEEDBACK_SSE_PORT=$P, which another program holds, stops" "$ROOT/build/assentd" --state "$T/s2"
check "... naming the listener and its variable" sh -c "printf '%s' \"\$1\" | grep -q 'for the agent HTTP listener (FEEDBACK_SSE_PORT=$P): Address already in use; another program listens there'" _ "$ERR"
ASSENT_REVIEW_PORT=$P expect_exit 2 "the same for the reviewer listener" "$ROOT/build/assentd" --state "$T/s2"
check "... naming ASSENT_REVIEW_PORT" sh -c "printf '%s' \"\$1\" | grep -q 'for the reviewer listener (ASSENT_REVIEW_PORT=$P)'" _ "$ERR"
exec 4>&-
wait "$HOLDER"

# A state directory this user cannot write is said as such, not as "another assentd".
if [ "$(id -u)" -eq 0 ]; then
	mkdir -p "$T/ro" && chmod 0755 "$T/ro" && chmod o+x "$T"
	expect_exit 2 "assentd on a state directory uid 65534 cannot write stops" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$ROOT/build/assentd" --state "$T/ro"
	check "... saying it cannot open its lock file and must be writable, not 'another assentd'" \
		sh -c "printf '%s' \"\$1\" | grep -q 'assentd.lock: Permission denied (the state directory must be writable by the user assentd runs as, uid 65534)' && ! printf '%s' \"\$1\" | grep -q 'another assentd'" _ "$ERR"
else
	ok "# SKIP not root: no other user to be refused the directory"
	ok "# SKIP not root"
fi

# A bridge that starts the daemon does not compare its options with the previous run's
# stale assentd.json, nor tells the user to kill a pid that is gone.
mkdir -p "$T/st" && chmod 0755 "$T/st"
printf '{"pid": 2147483000, "policy": "/nonexistent/old.policy", "token_mode": "ES256"}\n' >"$T/st/assentd.json"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' |
	ASSENT_SINGLE_USER=1 "$ROOT/build/assentd" --stdio --state "$T/st" >"$T/bridge.out" 2>"$T/bridge.err"
check "... and said nothing of the stale file's policy or pid ($(head -c 200 "$T/bridge.err"))" sh -c "! grep -Eq 'kill 2147483000|old.policy' '$T/bridge.err'"
kill "$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$T/st/assentd.json")" 2>/dev/null

# The verifier's manual reads as words, not "DIR.Thatissafe...".
if command -v man >/dev/null; then
	MANWIDTH=200 man -l "$ROOT/verify/assent-verify.1" 2>/dev/null >"$T/verify.man"
	check "assent-verify(1): 'in DIR. That is safe on a stopped ledger'" grep -Eq 'in DIR\. +That is safe on a stopped ledger' "$T/verify.man"
else
	ok "# SKIP no man to render assent-verify(1)"
fi
done_testing
