#!/usr/bin/env bash
# A program as the records' sink (the seed's CallbackSink): ASSENT_RECORD_JSONL=|PROGRAM gets
# every call record and event as JSON lines on its standard input ("record": "tool_call" |
# "event"), with an empty environment (never the daemon's secrets); a relative program or one
# that cannot run stops the daemon at start, naming it; so does a malformed MySQL / MariaDB URL.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
DPID=
stop() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	for _ in $(seq 100); do [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
	DPID=
}
trap 'stop; rm -rf "$T"' EXIT
mkdir -p "$S"
chmod o+x "$T"
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
cat >"$T/sink.py" <<PY
#!/usr/bin/python3
import json, os, sys
with open("$T/sink.env", "w") as f:
    json.dump(dict(os.environ), f)
with open("$T/sink.out", "a") as out:
    for line in sys.stdin:
        out.write(line)
        out.flush()
PY
chmod 0755 "$T/sink.py"
cat >"$T/ups.json" <<JSON
{"mcpServers": {"up": {"command": "/usr/bin/python3", "args": ["$ROOT/tests/integration/records_upstream.py"]}}}
JSON
printf 'allow upstream up tool echo\ndefault ask same-user ok\n' >"$T/p.policy"
SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off ASSENT_SINGLE_USER=1 ASSENT_RECORD_JSONL="|$T/sink.py" \
	FEEDBACK_SIGN_TOKENS=true FEEDBACK_TOKEN_SECRET=$SECRET \
	"$ASSENTD" --state "$S" --policy "$T/p.policy" --upstreams "$T/ups.json" >"$T/d.log" 2>&1 &
DPID=$!
for _ in $(seq 200); do grep -q 'upstream up: .* tools served' "$T/d.log" && break; sleep 0.05; done
check "the daemon says where the JSON lines go" grep -q "call records: JSON lines to the program $T/sink.py" "$T/d.log"
$PY - "$S" "$ROOT/build" <<'PY' >"$T/agent.out" 2>&1
import json, subprocess, sys
state, build = sys.argv[1:3]
p = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL)
msgs = [("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "s", "version": "1"}}),
        ("tools/call", {"name": "up__echo", "arguments": {"text": "to the sink"}}),
        ("tools/call", {"name": "qa_record_event", "arguments": {"kind": "deploy.finished", "key": "job-9"}})]
for i, (m, prm) in enumerate(msgs, 1):
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": prm}) + "\n").encode())
    p.stdin.flush()
    for line in p.stdout:
        if json.loads(line).get("id") == i:
            print(line.strip()[:200])
            break
p.stdin.close()
p.wait(timeout=20)
PY
has_lines() { grep -q '"record":"tool_call".*"up__echo"\|"up__echo".*"record":"tool_call"' "$T/sink.out" 2>/dev/null &&
	grep -q '"deploy.finished"' "$T/sink.out" 2>/dev/null; }
for _ in $(seq 400); do has_lines && break; sleep 0.05; done
check "the program read the call's record, \"record\": \"tool_call\" ($(head -c 200 "$T/sink.out" 2>/dev/null))" \
	sh -c "grep -q '\"up__echo\"' '$T/sink.out' && grep '\"up__echo\"' '$T/sink.out' | grep -q '\"record\":\"tool_call\"'"
check "and the event, \"record\": \"event\"" sh -c "grep '\"deploy.finished\"' '$T/sink.out' | grep -q '\"record\":\"event\"'"
check "its environment is empty: no FEEDBACK_TOKEN_SECRET ($(head -c 200 "$T/sink.env" 2>/dev/null))" \
	sh -c "test -f '$T/sink.env' && ! grep -q '$SECRET' '$T/sink.env' && ! grep -q FEEDBACK_ '$T/sink.env'"
stop

mkdir -p "$T/bad"
expect_exit 2 "a relative program stops the daemon" env FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off \
	ASSENT_RECORD_JSONL="|sink.py" timeout 20 "$ASSENTD" --state "$T/bad"
check "... naming it" grep -q "ASSENT_RECORD_JSONL=|PROGRAM: expected an absolute path, got 'sink.py'" <<<"$ERR"
expect_exit 2 "a program that cannot run stops the daemon" env FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off \
	ASSENT_RECORD_JSONL="|$T/missing" timeout 20 "$ASSENTD" --state "$T/bad"
check "... naming it and why" grep -q "ASSENT_RECORD_JSONL=|$T/missing: cannot run it" <<<"$ERR"
# MySQL / MariaDB (the seed's third database) is taken (records_mariadb.sh writes into it); a
# malformed URL stops the daemon naming what is wrong, never the password.
for url in "mysql://app:pw-Zq81@db/" "mariadb://app:pw-Zq81@db:70000/records"; do
	expect_exit 2 "ASSENT_RECORD_DATABASE=${url%%:*}://... malformed stops the daemon" env FEEDBACK_SSE_PORT=off \
		ASSENT_REVIEW_PORT=off ASSENT_RECORD_DATABASE="$url" timeout 20 "$ASSENTD" --state "$T/bad"
	check "... saying what is wrong and the form expected, never the password ($(head -c 160 <<<"$ERR"))" \
		bash -c "grep -qE 'records database URL: (names no database|port 70000 is not from 1 to 65535)' <<<'$ERR' && grep -q 'mysql://USER:PASSWORD@HOST' <<<'$ERR' && ! grep -q pw-Zq81 <<<'$ERR'"
done
done_testing
