#!/usr/bin/env bash
# The reviewer's page in headless Chromium (Debian's chromium, driven by npm
# playwright-core): reviewers log in with web tokens, requests from the official SDK
# client appear live and are approved, rejected, answered and selected in the browser,
# and a quorum of two is completed by two people in two browsers (tests/mcp/web_browser.mjs).
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
listener() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$1/assentd.json" "$2" 2>/dev/null; }
cleanup() { p=$(daemon_pid "$S"); [ -n "$p" ] && kill "$p" 2>/dev/null; sleep 0.2; rm -rf "$T"; }
trap cleanup EXIT
[ -n "${KEEP_T:-}" ] && trap - EXIT

for need in "$ROOT/tests/mcp/node_modules/@modelcontextprotocol/sdk" "$ROOT/tests/mcp/node_modules/playwright-core"; do
	if [ ! -d "$need" ]; then
		not_ok "$(basename "$need") is not installed in tests/mcp (make deps runs npm ci there)"
		done_testing
		exit 1
	fi
done
if [ ! -x "$CHROMIUM" ]; then
	not_ok "Debian's chromium is not installed ($CHROMIUM; make deps installs it)"
	done_testing
	exit 1
fi

# Two web reviewers (bob's token re-issued, so the first one printed is void), an
# HTTP agent, and a policy that asks two people for anything that says "quorum".
mkdir -p "$S"
ALICE=$("$ASSENT" --state "$S" reviewer add alice --web | tail -1)
BOB0=$("$ASSENT" --state "$S" reviewer add bob --web | tail -1)
BOB=$("$ASSENT" --state "$S" reviewer token bob | tail -1)
KEY=$("$ASSENT" --state "$S" agent add web-agent | tail -1)
"$ASSENT" --state "$S" agent add local --uid "$(id -u)" --audience tf-prod >/dev/null # the stdio agent asks for tf-prod
check "reviewer add --web prints a reviewer token (rt_...)" sh -c "case '$ALICE' in rt_?????*) exit 0;; esac; exit 1"
check "reviewer token re-issues one: a new token, the registry keeps neither" \
	sh -c "case '$BOB' in rt_?????*) ;; *) exit 1;; esac; [ '$BOB' != '$BOB0' ] && ! grep -qe '$BOB' -e '$BOB0' -e '$ALICE' '$S/identities.json'"
# One node process drives the browser and both agents, as the daemon's own uid: every
# request is then same-user (that uid could read the keys), so this test runs in
# single-user mode with rules that take same-user decisions. Separation of duties
# across real uids is tests/integration/separation.sh's.
cat >"$T/web.policy" <<'POL'
# the browser test's policy: two people for a quorum request, one for the rest
ask type approval message ~ "quorum" quorum 2 same-user ok
default ask same-user ok
POL
# 300 pending per agent: the history steps fill the queue with 200 to show the page at that size.
ASSENT_MAX_PENDING_PER_AGENT=300 ASSENT_SINGLE_USER=1 ASSENT_REVIEW_PORT=0 "$ASSENTD" --state "$S" --policy "$T/web.policy" >"$T/daemon.log" 2>&1 &
for _ in $(seq 200); do [ -n "$(listener "$S" review)" ] && [ -n "$(listener "$S" http)" ] && break; sleep 0.05; done
REVIEW=$(listener "$S" review)
HTTP=$(listener "$S" http)
if [ -z "$REVIEW" ] || [ -z "$HTTP" ]; then
	not_ok "the daemon did not open its listeners (review '$REVIEW', http '$HTTP'): $(tail -3 "$T/daemon.log")"
	done_testing
	exit 1
fi
ok "the daemon serves reviewers on $REVIEW and agents on $HTTP"

timeout 900 node "$ROOT/tests/mcp/web_browser.mjs" "$S" "$ROOT/build" "http://$REVIEW" "http://$HTTP/mcp" \
	"$KEY" "$ALICE" "$BOB" "$T/web.policy" >"$T/web.tap" 2>"$T/web.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "browser: ${line#ok * - }" ;;
	"not ok "*) not_ok "browser: ${line#not ok * - }" ;;
	esac
done <"$T/web.tap"
# A failed check exits 1 and has said why; anything else (a crash, no TAP plan) is its own failure.
[ "$rc" -eq 0 ] || { [ "$rc" -eq 1 ] && grep -q '^not ok' "$T/web.tap" && grep -q '^1\.\.' "$T/web.tap"; } ||
	not_ok "the browser flows exited $rc: $(grep -v '^\s*$' "$T/web.err" | tail -3 | tr '\n' ' ' | cut -c1-400)"
check "a login with bob's first, re-issued token is refused" \
	sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -H 'Origin: http://$REVIEW' \
		--data '{\"token\": \"$BOB0\"}' 'http://$REVIEW/review/api/login')\" = 401 ]"

p=$(daemon_pid "$S")
kill "$p"
for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
expect_exit 0 "the ledger verifies after the browser's decisions" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
"$VERIFY" export "$S/ledger" >"$T/export.jsonl"
who=$($PY - "$T/export.jsonl" <<'PY'
import json, sys
names = set()
for line in open(sys.argv[1]):
    e = json.loads(line)["entry"]
    if e.get("kind") == "decision":
        names.update(n for n in ("alice", "bob") if n in json.dumps(e.get("reviewer")))
print(" ".join(sorted(names)))
PY
)
check "the ledger records the browser's decisions under the reviewers' names ($who)" test "$who" = "alice bob"
done_testing
