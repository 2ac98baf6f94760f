#!/usr/bin/env bash
# assent request (issue 17): a pipeline step asks over STATE/agent.sock as the agent its
# uid is registered as, waits with the review link on stderr, and ends with the token on
# stdout and exit 0 when approved (the token verifies against the subject's bytes),
# 1 rejected, 3 timed out, 2 on a usage or I/O error; input answers on stdout, --json.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
cleanup() { p=$(daemon_pid "$S"); [ -n "$p" ] && kill "$p" 2>/dev/null; sleep 0.2; rm -rf "$T"; }
trap cleanup EXIT
mkdir -p "$S"
chmod 0755 "$T"
"$ASSENT" --state "$S" reviewer add alice --uid "$(id -u)" >/dev/null
"$ASSENT" --state "$S" agent add pipeline --uid "$AGENT_UID" --audience tf-prod >/dev/null
KEY=$("$ASSENT" --state "$S" agent add remote-ci --audience tf-prod | tail -1) # for --url
printf 'default ask same-user ok\n' >"$T/p.policy"
start_daemon() {
	rm -f "$S/assentd.json"
	ASSENT_SINGLE_USER=$(agent_single_user) ASSENT_HTTP_PORT=0 "$ASSENTD" --state "$S" --policy "$T/p.policy" >>"$T/daemon.log" 2>&1 &
	for _ in $(seq 200); do [ -S "$S/agent.sock" ] && [ -n "$(daemon_pid "$S")" ] && break; sleep 0.05; done
	open_agent_sock "$S"
}
stop_daemon() {
	local p
	p=$(daemon_pid "$S")
	kill "$p"
	for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
}
start_daemon
printf 'resource "x" { size = 2 }\n' >"$T/plan.tfplan"
printf '{"workspace": "prod", "risk_level": "HIGH"}\n' >"$T/ctx.json"
chmod 0644 "$T/plan.tfplan" "$T/ctx.json"
ask() { "${AGENT_PREFIX[@]}" "$ASSENT" --state "$S" request "$@"; }
# The id of the newest pending request, once it is there.
pending_id() {
	for _ in $(seq 200); do
		id=$("$ASSENT" --state "$S" pending --json 2>/dev/null | $PY -c '
import json, sys
d = json.load(sys.stdin)
r = d["requests"] if isinstance(d, dict) else d
print(r[-1]["session_id"] if r else "")' 2>/dev/null)
		[ -n "$id" ] && { echo "$id"; return; }
		sleep 0.05
	done
}
# bg NAME ARGS...: a request in the background; its stdout, stderr and exit in $T/NAME.*
bg() { local n=$1; shift; (ask "$@" >"$T/$n.out" 2>"$T/$n.err"; echo $? >"$T/$n.rc") & }
waitrc() { for _ in $(seq 600); do [ -s "$T/$1.rc" ] && { cat "$T/$1.rc"; return; }; sleep 0.05; done; echo none; }

bg ok --message "apply the plan to prod?" --audience tf-prod --subject "$T/plan.tfplan" --context-file "$T/ctx.json"
id=$(pending_id)
check "the request waits in the queue ($id), with the context file's fields" \
	sh -c "'$ASSENT' --state '$S' show '$id' --json | grep -q '\"risk_level\": *\"HIGH\"'"
for _ in $(seq 100); do grep -q "review#" "$T/ok.err" && break; sleep 0.05; done
check "while it waits stderr gives the review page's link to it" grep -q "waiting for a reviewer: http://.*/review#$id" "$T/ok.err"
"$ASSENT" --state "$S" approve "$id" -m "ship it" >/dev/null
check "approved: exit 0" test "$(waitrc ok)" = 0
expect_exit 0 "stdout is the token, and it verifies against the plan's bytes and the ledger" \
	"$VERIFY" token "$(cat "$T/ok.out")" --aud tf-prod --key "$(ls "$S"/keys/token-*.pub | head -1)" --subject "$T/plan.tfplan"
check "stdout is the token alone (one line)" test "$(wc -l <"$T/ok.out")" = 1
check "stderr says who approved" grep -q "approved by alice" "$T/ok.err"

bg no --message "drop the users table?"
id=$(pending_id)
"$ASSENT" --state "$S" reject "$id" -m "not on a Friday" >/dev/null
check "rejected: exit 1" test "$(waitrc no)" = 1
check "rejected: no token on stdout, the reason on stderr" sh -c "[ ! -s '$T/no.out' ] && grep -q 'rejected: not on a Friday' '$T/no.err'"

bg late --message "restart the worker?" --timeout 1
check "timed out: exit 3" test "$(waitrc late)" = 3
check "timed out: stderr says so" grep -q "timeout" "$T/late.err"

bg in --type input --message "which branch?" --default main --json
id=$(pending_id)
"$ASSENT" --state "$S" answer "$id" "release-2" >/dev/null
check "input answered: exit 0" test "$(waitrc in)" = 0
check "--json: stdout is the decision as JSON (status answered, the answer)" \
	$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["status"] == "answered" and d["response"] == "release-2"))' "$T/in.out"

bg sel --type selection --message "which size?" --option small --option large
id=$(pending_id)
"$ASSENT" --state "$S" select "$id" 2 >/dev/null
check "selection: exit 0" test "$(waitrc sel)" = 0
check "selection: stdout is the chosen option" test "$(cat "$T/sel.out")" = large

bg rs --message "survive a restart?"
id=$(pending_id)
stop_daemon
start_daemon
for _ in $(seq 200); do grep -q reconnecting "$T/rs.err" && break; sleep 0.05; done
check "the daemon restarts while a request waits: it says it reconnects" grep -q "reconnecting" "$T/rs.err"
"$ASSENT" --state "$S" approve "$id" >/dev/null
check "and the same request, approved after the restart, ends it with exit 0" test "$(waitrc rs)" = 0

# ---- from another machine: --url, the HTTP listener, the agent's key ----
HTTP=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["http"])' "$S/assentd.json")
(ASSENT_AGENT_KEY=$KEY ASSENT_REVIEW_URL=https://review.example/ "${AGENT_PREFIX[@]}" "$ASSENT" request --url "http://$HTTP/mcp" \
	--message "remote: apply?" --audience tf-prod --subject "$T/plan.tfplan" >"$T/h1.out" 2>"$T/h1.err"; echo $? >"$T/h1.rc") &
id=$(pending_id)
check "--url: the request reaches the queue as the key's agent" sh -c "'$ASSENT' --state '$S' show '$id' | grep -q 'remote-ci'"
for _ in $(seq 100); do grep -q "review#" "$T/h1.err" && break; sleep 0.05; done
check "--url: the link is ASSENT_REVIEW_URL's page" grep -q "waiting for a reviewer: https://review.example/review#$id" "$T/h1.err"
"$ASSENT" --state "$S" approve "$id" >/dev/null
check "--url approved: exit 0" test "$(waitrc h1)" = 0
expect_exit 0 "--url: the token verifies against the plan's bytes" \
	"$VERIFY" token "$(cat "$T/h1.out")" --aud tf-prod --key "$(ls "$S"/keys/token-*.pub | head -1)" --subject "$T/plan.tfplan" --require-computed
(ASSENT_AGENT_KEY=$KEY "${AGENT_PREFIX[@]}" "$ASSENT" request --url "http://$HTTP" --message "remote: drop it?" >"$T/h2.out" 2>"$T/h2.err"; echo $? >"$T/h2.rc") &
id=$(pending_id)
REV=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["review"])' "$S/assentd.json")
for _ in $(seq 100); do grep -q "review#" "$T/h2.err" && break; sleep 0.05; done
check "--url without ASSENT_REVIEW_URL: the link is the one the daemon's answer gave (review_url)" \
	grep -q "waiting for a reviewer: http://$REV/review#$id" "$T/h2.err"
"$ASSENT" --state "$S" reject "$id" -m "no" >/dev/null
check "--url rejected: exit 1 (the path defaults to /mcp)" test "$(waitrc h2)" = 1
(ASSENT_AGENT_KEY=$KEY "${AGENT_PREFIX[@]}" "$ASSENT" request --url "http://$HTTP/mcp" --message "remote: soon?" --timeout 1 \
	>"$T/h3.out" 2>"$T/h3.err"; echo $? >"$T/h3.rc") &
check "--url timed out: exit 3" test "$(waitrc h3)" = 3
check "--url timed out: stderr says so, stdout is empty" sh -c "grep -q timeout '$T/h3.err' && [ ! -s '$T/h3.out' ]"
expect_exit 2 "--url with a wrong key: exit 2" env ASSENT_AGENT_KEY=ak_not-a-key "$ASSENT" request --url "http://$HTTP/mcp" --message m
check "--url with a wrong key: the error says the key was refused" sh -c "printf '%s' \"\$1\" | grep -q 'refused the agent key (HTTP 401)'" _ "$ERR"
expect_exit 2 "--url without ASSENT_AGENT_KEY: exit 2, naming it" env -u ASSENT_AGENT_KEY "$ASSENT" request --url "http://$HTTP/mcp" --message m
check "--url without ASSENT_AGENT_KEY: the error names it" sh -c "printf '%s' \"\$1\" | grep -q 'ASSENT_AGENT_KEY'" _ "$ERR"
expect_exit 2 "--url with no scheme: exit 2" env ASSENT_AGENT_KEY=$KEY "$ASSENT" request --url "$HTTP" --message m
check "--url with no scheme: the error shows the form" sh -c "printf '%s' \"\$1\" | grep -q 'expected http://HOST'" _ "$ERR"
expect_exit 2 "--url to a port nobody listens on: exit 2" env ASSENT_AGENT_KEY=$KEY "$ASSENT" request --url "http://127.0.0.1:1/mcp" --message m
check "--url to a closed port: the error says it cannot connect" sh -c "printf '%s' \"\$1\" | grep -q 'cannot connect to 127.0.0.1 port 1'" _ "$ERR"

expect_exit 2 "no --message: exit 2" ask --audience tf-prod
check "no --message: the error names it" sh -c "printf '%s' \"\$1\" | grep -q -- '--message is required'" _ "$ERR"
expect_exit 2 "a bad --timeout: exit 2, naming it" ask --message m --timeout soon
check "a bad --timeout: the error names it" sh -c "printf '%s' \"\$1\" | grep -q -- \"--timeout: expected 1 to\"" _ "$ERR"
expect_exit 2 "a missing --subject file: exit 2" ask --message m --subject "$T/nope"
check "a missing --subject file: the error names the file" sh -c "printf '%s' \"\$1\" | grep -q \"$T/nope\"" _ "$ERR"
expect_exit 2 "a request the daemon refuses (selection without options): exit 2" ask --type selection --message m
check "the daemon's reason is shown" sh -c "printf '%s' \"\$1\" | grep -qi 'option'" _ "$ERR"
expect_exit 2 "no daemon for the state directory: exit 2" "$ASSENT" --state "$T/none" request --message m
check "no daemon: the error says how to start one" sh -c "printf '%s' \"\$1\" | grep -q 'no daemon answers at .*start it'" _ "$ERR"

# ---- docs/pipelines.md's pipeline examples, run as they are written ----
# A terraform that records what it was asked to apply; assent and assent-verify on PATH;
# the page's /etc/assent/jwks.json is this daemon's; the job's files are the agent's.
W=$T/job
mkdir -p "$T/bin" "$W/.assent"
ln -s "$ASSENT" "$T/bin/assent"
ln -s "$VERIFY" "$T/bin/assent-verify"
# (`terraform show` prints the plan as text, as the real one does)
printf '#!/bin/sh\nif [ "$1" = show ]; then cat "%s/plan.tfplan.txt"; exit; fi\necho "terraform $*" >"%s/applied"\n' "$W" "$W" >"$T/bin/terraform"
chmod 0755 "$T/bin/terraform"
cp "$S/keys/jwks.json" "$W/.assent/jwks.json"
cp "$T/plan.tfplan" "$W/plan.tfplan"
printf 'Plan: 0 to add, 1 to change, 0 to destroy.\n  ~ size = 1 -> 2\n' >"$W/plan.tfplan.txt"
$PY - "$ROOT/docs/pipelines.md" "$W" <<'PY2'
import re, sys
text = open(sys.argv[1]).read()
for name, lang, out in (("pipeline-apply", "sh", "ask-verify-apply"), ("pipeline-actions", "yaml", "workflow.yml")):
    m = re.search(r"<!-- %s:begin -->\n```%s\n(.*?)```\n<!-- %s:end -->" % (name, lang, name), text, re.S)
    open(f"{sys.argv[2]}/{out}", "w").write(m.group(1) if m else "")
PY2
sed -i "s|/etc/assent/jwks.json|$W/.assent/jwks.json|" "$W/ask-verify-apply"
chmod -R a+rwX "$W"
check "docs/pipelines.md has the ask, verify, apply script and the Actions job" test -s "$W/ask-verify-apply" -a -s "$W/workflow.yml"
job() { (cd "$W" && "${AGENT_PREFIX[@]}" env PATH="$T/bin:$PATH" ASSENT_STATE_DIR="$S" "$@"); }
(job sh ./ask-verify-apply plan.tfplan >"$T/p1.out" 2>"$T/p1.err"; echo $? >"$T/p1.rc") &
id=$(pending_id)
check "the script's request carries the plan's text as its context" \
	sh -c "'$ASSENT' --state '$S' show '$id' --json | grep -q 'to change'"
"$ASSENT" --state "$S" approve "$id" >/dev/null
check "approved: the script verifies the token and applies the plan (exit 0)" test "$(waitrc p1)" = 0
check "terraform applied exactly that plan" test "$(cat "$W/applied" 2>/dev/null)" = "terraform apply plan.tfplan"
rm -f "$W/applied"
(job sh ./ask-verify-apply plan.tfplan >"$T/p2.out" 2>"$T/p2.err"; echo $? >"$T/p2.rc") &
id=$(pending_id)
"$ASSENT" --state "$S" reject "$id" -m "wait for the freeze to end" >/dev/null
check "rejected: the script stops with exit 1" test "$(waitrc p2)" = 1
check "rejected: nothing is applied" test ! -e "$W/applied"
check "rejected: the reason reaches the job's log" grep -q "wait for the freeze to end" "$T/p2.err"

# The Actions job: each step's run block in bash (GitHub's shell), its env with the
# steps' outputs filled in, as a runner does.
cat >"$T/actions.py" <<'PY3'
import os, re, subprocess, sys
wf, wd = sys.argv[1], sys.argv[2]
steps, cur, key = [], None, None
for line in open(wf).read().splitlines():
    if line.startswith("- name:"):
        cur = {"name": line[7:].strip(), "env": {}, "run": ""}; steps.append(cur); key = None
    elif re.match(r"^  id: ", line): cur["id"] = line.split(":", 1)[1].strip()
    elif line == "  env:": key = "env"
    elif line == "  run: |": key = "run"
    elif line.startswith("  run: "): cur["run"] = line[7:] + "\n"; key = None
    elif key == "env" and line.startswith("    "):
        k, v = line.strip().split(":", 1); cur["env"][k] = v.strip()
    elif key == "run" and line.startswith("    "): cur["run"] += line[4:] + "\n"
outputs = {}
for i, st in enumerate(steps):
    out = f"{wd}/.out{i}"; open(out, "w").close(); os.chmod(out, 0o666)
    env = dict(os.environ, GITHUB_OUTPUT=out, GITHUB_RUN_ID="4242")
    for k, v in st["env"].items():
        env[k] = re.sub(r"\$\{\{ steps\.(\w+)\.outputs\.(\w+) \}\}", lambda m: outputs.get(m[1], {}).get(m[2], ""), v)
    rc = subprocess.run(os.environ.get("ASSENT_TEST_AGENT_PREFIX", "").split() + ["bash", "-e", "-c", st["run"]],
                        cwd=wd, env=env).returncode
    outputs[st.get("id", str(i))] = dict(l.split("=", 1) for l in open(out).read().splitlines() if "=" in l)
    print(f"step {st['name']}: exit {rc}", file=sys.stderr)
    if rc: sys.exit(rc)
PY3
(cd "$W" && env PATH="$T/bin:$PATH" ASSENT_STATE_DIR="$S" $PY "$T/actions.py" "$W/workflow.yml" "$W" >"$T/a1.out" 2>"$T/a1.err"; echo $? >"$T/a1.rc") &
id=$(pending_id)
check "the Actions job's request names the run" sh -c "'$ASSENT' --state '$S' show '$id' --json | grep -q 'run 4242'"
check "  ... and carries terraform show's text as its context (not a hex dump of the plan)" \
	sh -c "'$ASSENT' --state '$S' show '$id' --json | grep -q 'to change'"
"$ASSENT" --state "$S" approve "$id" >/dev/null
check "the Actions job: ask, verify and apply pass (exit 0)" test "$(waitrc a1)" = 0
check "the Actions job applied the plan" test "$(cat "$W/applied" 2>/dev/null)" = "terraform apply -input=false plan.tfplan"

stop_daemon
expect_exit 0 "the ledger verifies after the requests" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
done_testing
