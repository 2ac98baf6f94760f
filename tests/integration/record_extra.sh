#!/usr/bin/env bash
# The enricher of the records' extra column (the seed's enricher=, declared in the daemon's
# terms): ASSENT_RECORD_EXTRA_KEYS names keys of a result's structuredContent that each call's
# row keeps in extra, redacted like a result (a secret-named key's value never stored), also
# in mode meta; a call whose result has none of them has extra NULL.
. "$(dirname "$0")/../lib.sh"
daemon_state
records_upstreams
printf 'allow upstream up tool echo\nallow upstream up tool reply\ndefault ask same-user ok\n' >"$T/p.policy"
FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off ASSENT_SINGLE_USER=1 ASSENT_RECORD_EXTRA_KEYS=job_id,api_token,missing \
	daemon_start --policy "$T/p.policy" --upstreams "$T/ups.json"
daemon_serves_up
SECRET="sk-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
$PY - "$S" "$ROOT/build" "$SECRET" <<'PY' >"$T/py.tap" 2>"$T/py.err"
import base64, json, os, sqlite3, subprocess, sys, time
state, build, secret = sys.argv[1:4]
p = subprocess.Popen([f"{build}/assentd", "--stdio", "--state", state], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL)
result = {"content": [{"type": "text", "text": "started"}],
          "structuredContent": {"job_id": "J-77", "api_token": secret, "status": "running", "n": 3}}
msgs = [("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
        ("tools/call", {"name": "up__reply", "arguments": {"b64": base64.b64encode(json.dumps(result).encode()).decode()}}),
        ("tools/call", {"name": "up__echo", "arguments": {"text": "no structured content"}})]
for i, (m, prm) in enumerate(msgs, 1):
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": prm}) + "\n").encode())
    p.stdin.flush()
    for line in p.stdout:
        if json.loads(line).get("id") == i:
            break
p.stdin.close()
p.wait(timeout=20)
rows = []
for _ in range(400):
    try:
        c = sqlite3.connect(f"file:{state}/calls.db?mode=ro", uri=True, timeout=10)
        rows = {r[0]: r[1] for r in c.execute("SELECT tool, extra FROM ffb_tool_calls")}
        c.close()
    except sqlite3.OperationalError:
        rows = {}
    if len(rows) >= 2:
        break
    time.sleep(0.05)
def ok(cond, d):
    print(("ok" if cond else "not ok") + " - " + d)
x = json.loads(rows.get("up__reply") or "null")
ok(isinstance(x, dict) and x.get("job_id") == "J-77" and set(x) == {"job_id", "api_token"},
   f"the reply's row keeps job_id and api_token in extra, nothing else ({x})")
ok(secret not in json.dumps(rows), f"the secret-named key's value is redacted there ({x and x.get('api_token')})")
ok(rows.get("up__echo") is None, f"a result without those keys has extra NULL ({rows.get('up__echo')})")
PY
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok - }" ;;
	"not ok "*) not_ok "${line#not ok - }" ;;
	esac
done <"$T/py.tap"
[ "$rc" -eq 0 ] || not_ok "the Python driver exited $rc: $(tail -3 "$T/py.err")"
done_testing
