#!/usr/bin/env bash
# A page on another port of the same host plants session cookies (cookies are not
# isolated by port) in headless Chromium: the reviewer is neither switched into another
# reviewer's session (their decision recorded as that reviewer's) nor locked out; and
# the page reopens its event stream after each lifetime (2 s here) by itself, and past
# the streams a reviewer may hold (2 here) it waits and tries again (tests/mcp/web_plant.mjs).
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
run() { # run PART ENV=VALUE...: a daemon with these settings, and that part of the browser flows
	local part=$1
	shift
	# The node process that drives the browser is the agent too, as the daemon's own
	# uid: single-user mode (separation of duties across uids is separation.sh's).
	env ASSENT_SINGLE_USER=1 ASSENT_REVIEW_PORT=0 "$@" "$ASSENTD" --state "$S" >>"$T/daemon.log" 2>&1 &
	local REVIEW=
	for _ in $(seq 200); do REVIEW=$(listener "$S" review); [ -n "$REVIEW" ] && break; sleep 0.05; done
	if [ -z "$REVIEW" ]; then
		not_ok "the daemon did not open its reviewer listener: $(tail -3 "$T/daemon.log")"
		return
	fi
	timeout 600 node "$ROOT/tests/mcp/web_plant.mjs" "$S" "$ROOT/build" "http://$REVIEW" "$ALICE" "$BOB" "$part" \
		>"$T/$part.tap" 2>"$T/$part.err"
	local rc=$?
	while read -r line; do
		case "$line" in
		"ok "*) ok "browser ($part): ${line#ok * - }" ;;
		"not ok "*) not_ok "browser ($part): ${line#not ok * - }" ;;
		esac
	done <"$T/$part.tap"
	[ "$rc" -eq 0 ] || { [ "$rc" -eq 1 ] && grep -q '^not ok' "$T/$part.tap" && grep -q '^1\.\.' "$T/$part.tap"; } ||
		not_ok "the browser flows ($part) exited $rc: $(grep -v '^\s*$' "$T/$part.err" | tail -3 | tr '\n' ' ' | cut -c1-400)"
	local p
	p=$(daemon_pid "$S")
	kill "$p"
	for _ in $(seq 200); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
	rm -f "$S/assentd.json"
}
run plant ASSENT_REVIEW_STREAM_SECONDS=2
run streams ASSENT_REVIEW_STREAMS_PER_REVIEWER=2
done_testing
