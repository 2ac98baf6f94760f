#!/usr/bin/env bash
# A page on another port of the same host plants session cookies (cookies are not
# isolated by port) in headless Chromium: the reviewer is neither switched into another
# reviewer's session (their decision recorded as that reviewer's) nor locked out
# (tests/mcp/web_plant.mjs).
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
S=$T/state
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
listener() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$1/assentd.json" "$2" 2>/dev/null; }
cleanup() { p=$(daemon_pid "$S"); [ -n "$p" ] && kill "$p" 2>/dev/null; sleep 0.2; rm -rf "$T"; }
trap cleanup EXIT
if [ ! -d "$ROOT/tests/mcp/node_modules/playwright-core" ] || [ ! -x "$CHROMIUM" ]; then
	not_ok "playwright-core (tests/mcp, make deps) or Debian's chromium ($CHROMIUM) is not installed"
	done_testing
	exit 1
fi
mkdir -p "$S"
ALICE=$("$ASSENT" --state "$S" reviewer add alice --web | tail -1)
BOB=$("$ASSENT" --state "$S" reviewer add bob --web | tail -1)
ASSENT_REVIEW_PORT=0 "$ASSENTD" --state "$S" >"$T/daemon.log" 2>&1 &
for _ in $(seq 200); do [ -n "$(listener "$S" review)" ] && break; sleep 0.05; done
REVIEW=$(listener "$S" review)
if [ -z "$REVIEW" ]; then
	not_ok "the daemon did not open its reviewer listener: $(tail -3 "$T/daemon.log")"
	done_testing
	exit 1
fi
timeout 600 node "$ROOT/tests/mcp/web_plant.mjs" "$S" "$ROOT/build" "http://$REVIEW" "$ALICE" "$BOB" >"$T/plant.tap" 2>"$T/plant.err"
rc=$?
while read -r line; do
	case "$line" in
	"ok "*) ok "browser: ${line#ok * - }" ;;
	"not ok "*) not_ok "browser: ${line#not ok * - }" ;;
	esac
done <"$T/plant.tap"
[ "$rc" -eq 0 ] || { [ "$rc" -eq 1 ] && grep -q '^not ok' "$T/plant.tap" && grep -q '^1\.\.' "$T/plant.tap"; } ||
	not_ok "the browser flows exited $rc: $(grep -v '^\s*$' "$T/plant.err" | tail -3 | tr '\n' ' ' | cut -c1-400)"
done_testing
