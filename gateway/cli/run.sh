#!/usr/bin/env bash
# `make run`: the daemon on its embedded defaults, in the foreground (Ctrl-C stops
# it). State in ./var (or $1), agents over HTTP on 127.0.0.1:8765 (FEEDBACK_SSE_*),
# agents on this machine over `assentd --stdio`, reviewers with `assent` or in a
# browser on 127.0.0.1:8766/review (ASSENT_REVIEW_*). The first run registers you
# as a reviewer (terminal and web token) and creates a first agent key, shown once.
# POLICY=FILE and UPSTREAMS=FILE (make run POLICY=... UPSTREAMS=...) pass --policy and --upstreams.
set -euo pipefail
STATE=${1:-./var}
B=$(cd "$(dirname "$0")/../.." && pwd)/build
mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)
A=("$B/assent" --state "$STATE")
export FEEDBACK_SSE_HOST=${FEEDBACK_SSE_HOST:-127.0.0.1}
export FEEDBACK_SSE_PORT=${FEEDBACK_SSE_PORT:-8765}
export ASSENT_REVIEW_HOST=${ASSENT_REVIEW_HOST:-127.0.0.1}
export ASSENT_REVIEW_PORT=${ASSENT_REVIEW_PORT:-8766}
# One person on one machine: the agents run as you, the daemon's own uid, whose requests
# nobody can decide as another person (that uid reads the keys). So `make run` is in
# single-user mode (decisions recorded as same-user) unless ASSENT_SINGLE_USER=0; a real
# install runs assentd as its own user (docs/deploy.md, "Running it as a service").
export ASSENT_SINGLE_USER=${ASSENT_SINGLE_USER:-1}
if [ -f "$STATE/assentd.json" ] && pid=$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' "$STATE/assentd.json") &&
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q assentd "/proc/$pid/cmdline" 2>/dev/null; then
	echo "assentd already serves $STATE (pid $pid): stop it (kill $pid) to start it here in the foreground."
	exit 1
fi
# A port someone else already listens on: say which variable moves it, before any key or
# token is made or printed (the health URL would answer from the other daemon).
port_taken() { # host port: 0 when something accepts a connection there
	(exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}
for hp in "FEEDBACK_SSE_PORT $FEEDBACK_SSE_HOST $FEEDBACK_SSE_PORT agents' HTTP" \
	"ASSENT_REVIEW_PORT $ASSENT_REVIEW_HOST $ASSENT_REVIEW_PORT the review page's"; do
	read -r var host port what <<<"$hp"
	if port_taken "$host" "$port"; then
		echo "make run: $host:$port ($what listener) is already in use by another program;" >&2
		echo "  choose another port with $var, e.g.: $var=$((port + 10)) make run" >&2
		exit 1
	fi
done
me=$(id -un)
webtok=""
if ! "${A[@]}" reviewer list 2>/dev/null | grep -q '"name"'; then
	webtok=$("${A[@]}" reviewer add "$me" --uid "$(id -u)" --web | tail -1)
	echo "Registered you ($me, uid $(id -u)) as the first reviewer, in the terminal and on the web."
fi
key=""
if ! "${A[@]}" agent list 2>/dev/null | grep -q '"name"'; then
	key=$("${A[@]}" agent add first-agent | tail -1)
fi
url="http://$FEEDBACK_SSE_HOST:$FEEDBACK_SSE_PORT/mcp"
cat <<TXT

assent: state in $STATE
  Agents over HTTP:  $url
TXT
if [ -n "$key" ]; then
	cat <<TXT
  First agent key (shown this once; only its hash is kept):
      $key
  Claude Code:  claude mcp add --transport http assent $url --header "Authorization: Bearer $key"
TXT
else
	echo "  Agent keys: ${A[*]} agent add NAME [--audience A]   (prints a new key once)"
fi
cat <<TXT
  Agents on this machine (stdio): claude mcp add assent -- $B/assentd --stdio --state $STATE
      (SINGLE-USER MODE: agents run as you, the daemon's own user, so your decisions on them
       are recorded as assurance same-user; ASSENT_SINGLE_USER=0 turns it off, and then no one
       can decide them. Against a hostile agent run assentd as its own user: see docs/deploy.md.)
  Review, as $me, in another terminal:
      $B/assent --state $STATE pending      (then: show ID, approve ID, reject ID -m WHY, or: review)
  Review in a browser: http://$ASSENT_REVIEW_HOST:$ASSENT_REVIEW_PORT/review
TXT
if [ -n "$webtok" ]; then
	cat <<TXT
      log in with this token (shown this once; only its hash is kept):
      $webtok
TXT
else
	echo "      log in with a reviewer's web token: ${A[*]} reviewer token NAME   (prints a new one once)"
fi
cat <<TXT
  Health: curl http://$FEEDBACK_SSE_HOST:$FEEDBACK_SSE_PORT/health   Metrics: curl http://$ASSENT_REVIEW_HOST:$ASSENT_REVIEW_PORT/metrics
  Every tool call on the record: sqlite3 $STATE/calls.db "SELECT tool, outcome, COUNT(*) FROM ffb_tool_calls GROUP BY 1, 2"
      QA reports agents file: ${A[*]} qa list   (show ID: with the calls behind it)

Starting the daemon (JSON log lines below; Ctrl-C stops it).
TXT
# make run POLICY=FILE UPSTREAMS=FILE: the daemon's --policy and --upstreams (absolute, as
# the bridges that agents start compare them).
opts=()
[ -n "${POLICY:-}" ] && opts+=(--policy "$(realpath "$POLICY")")
[ -n "${UPSTREAMS:-}" ] && opts+=(--upstreams "$(realpath "$UPSTREAMS")")
[ ${#opts[@]} -gt 0 ] && echo "  With: ${opts[*]} (give the stdio bridges the same: assentd --stdio --state $STATE ${opts[*]})"
exec "$B/assentd" --state "$STATE" "${opts[@]}"
