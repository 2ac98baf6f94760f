#!/usr/bin/env bash
# The workers' jail as deployed, in both ways docs/deploy.md runs the daemon: as root, and as a
# service user of its own (useradd + setpriv when this runs as root; the current user
# otherwise). For each worker: /proc/PID/status (NoNewPrivs, Seccomp, every capability set
# including the bounding set empty, its uid and gid), /proc/PID/root, a ptrace and a kill that
# must be refused, and the daemon still deciding a stdio request and serving the web page.
. "$(dirname "$0")/../lib.sh"
ASSENTD=$ROOT/build/assentd
ROOT_S=$T/root
USER_S=$T/user
DUSER=assent-jt$$ # the service user, made for this run and removed at its end
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
review_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get("review") or "")' "$1/assentd.json" 2>/dev/null; }
cleanup() {
	for d in "$ROOT_S" "$USER_S"; do p=$(daemon_pid "$d"); [ -n "$p" ] && kill "$p" 2>/dev/null; done
	sleep 0.2
	[ "$(id -u)" -eq 0 ] && id "$DUSER" >/dev/null 2>&1 && userdel "$DUSER" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
chmod 755 "$T" # the service user must reach its state directory below it
ME=$(id -u)

# Run a command as uid:gid (and no groups); as ourselves when not root.
as() {
	local u=$1
	shift
	if [ "$ME" -eq 0 ]; then setpriv --reuid="$u" --regid="$u" --clear-groups "$@"; else "$@"; fi
}

# What a process of some uid gets to do to PID: one word per attempt, "refused" or what it got.
cat >"$T/probe.py" <<'PY'
import ctypes, errno, os, signal, sys
pid = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
out = []
for name, req in (("seize", 0x4206), ("attach", 16)):
    r = libc.ptrace(req, pid, None, None)
    e = ctypes.get_errno()
    out.append(name + ":" + ("refused" if r != 0 and e == errno.EPERM else "got-in(%d,%s)" % (r, errno.errorcode.get(e, e))))
    if r == 0:
        libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
try:
    os.readlink("/proc/%d/root" % pid)
    out.append("root:read")
except PermissionError:
    out.append("root:refused")
try:
    os.close(os.open("/proc/%d/mem" % pid, os.O_RDONLY))
    out.append("mem:read")
except PermissionError:
    out.append("mem:refused")
try:
    os.kill(pid, 0)
    out.append("kill:sent")
except PermissionError:
    out.append("kill:refused")
print(" ".join(out))
PY
probe() { as "$1" $PY "$T/probe.py" "$2"; } # UID PID

field() { sed -n "s/^$2:\t//p" "/proc/$1/status"; } # PID NAME

# Start a daemon on DIR as uid U (root: 0) and wait for its two workers to be jailed.
start() {
	local d=$1 u=$2
	shift 2
	mkdir -p "$d"
	[ "$u" -ne "$ME" ] && chown "$u:$u" "$d"
	(cd "$d" && as "$u" env "$@" "$ASSENTD" --state "$d" >"$d.log" 2>&1 &)
	for _ in $(seq 200); do
		p=$(daemon_pid "$d")
		if [ -n "$p" ]; then
			W=
			for c in $(pgrep -P "$p"); do # the workers; the recorder is checked on its own (REC)
				case "$(readlink "/proc/$c/exe")" in
				*/assent-worker) W="$W $c" ;;
				*/assent-recorder) REC=$c ;;
				esac
			done
			n=0
			for w in $W; do [ "$(field "$w" Seccomp)" = 2 ] && n=$((n + 1)); done
			[ "$n" -eq 2 ] && return 0
		fi
		sleep 0.05
	done
	return 1
}

# The checks every worker passes in both modes.
jailed() { # MODE PID
	local m=$1 w=$2 c
	check "$m: worker $w: NoNewPrivs 1" test "$(field "$w" NoNewPrivs)" = 1
	check "$m: worker $w: Seccomp 2 (filter)" test "$(field "$w" Seccomp)" = 2
	for c in CapBnd CapEff CapPrm CapInh CapAmb; do
		check "$m: worker $w: $c empty" test "$(field "$w" $c)" = 0000000000000000
	done
	check "$m: worker $w: no supplementary groups" test -z "$(field "$w" Groups | tr -d ' ')"
}

# A request over stdio decided by a reviewer with `assent`, and the reviewer page served.
end_to_end() { # MODE DIR DAEMON-UID REVIEWER-UID
	local m=$1 d=$2 du=$3 ru=$4 id="" i
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
		'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"request_feedback","arguments":{"type":"approval","message":"jail e2e","timeout_override":20}}}' >"$T/req.jsonl"
	# stdin stays open until the answer came (or 25 s passed): closing it cancels the request
	(cat "$T/req.jsonl"; for i in $(seq 250); do grep -q '"id":2' "$d.out" 2>/dev/null && break; sleep 0.1; done) |
		as "$du" "$ASSENTD" --stdio --state "$d" >"$d.out" 2>"$d.bridge" &
	local bridge=$!
	for i in $(seq 200); do
		id=$(as "$ru" "$ASSENT" --state "$d" pending --json 2>/dev/null | $PY -c 'import json,sys; r=json.load(sys.stdin); print(r[0]["session_id"] if r else "")' 2>/dev/null)
		[ -n "$id" ] && break
		sleep 0.05
	done
	check "$m: the stdio request is pending" test -n "$id"
	expect_exit 0 "$m: a reviewer approves it with assent" as "$ru" "$ASSENT" --state "$d" approve "$id"
	wait "$bridge"
	check "$m: the agent got the approval" grep -q '"status":"approved"' "$d.out"
	local r
	r=$(review_of "$d")
	check "$m: the reviewer page is served" sh -c "curl -sf http://$r/review | grep -qi '<html'"
}

# ---- a daemon running as its own user (docs/deploy.md's service setup) ----
if [ "$ME" -eq 0 ]; then
	useradd --system --no-create-home --shell /usr/sbin/nologin "$DUSER"
	DU=$(id -u "$DUSER")
else
	DU=$ME
fi
mkdir -p "$USER_S" && [ "$DU" -ne "$ME" ] && chown "$DU:$DU" "$USER_S"
chmod 700 "$USER_S"
# When we are root the agent is root and the reviewer uid 65534: neither is the daemon's
# own uid, whose requests are same-user for everybody; else single-user.
if [ "$ME" -eq 0 ]; then
	as "$DU" "$ASSENT" --state "$USER_S" reviewer add tester --uid 65534 >/dev/null
	extra=()
else
	"$ASSENT" --state "$USER_S" reviewer add tester --uid "$ME" >/dev/null
	extra=(ASSENT_SINGLE_USER=1)
fi
if ! start "$USER_S" "$DU" "${extra[@]}"; then
	not_ok "the daemon as its own user did not start jailed workers: $(tail -3 "$USER_S.log")"
	done_testing
	exit 1
fi
P=$(daemon_pid "$USER_S")
check "service user: the daemon runs as uid $DU" test "$(field "$P" Uid | cut -f1)" = "$DU"
for w in $W; do
	m="service user"
	jailed "$m" "$w"
	check "$m: worker $w: keeps the daemon's uid (it cannot change it)" test "$(field "$w" Uid)" = "$DU	$DU	$DU	$DU"
	got=$(probe "$DU" "$w")
	check "$m: worker $w: the daemon's uid cannot PTRACE_SEIZE it ($got)" grep -q 'seize:refused' <<<"$got"
	check "$m: worker $w: ... nor PTRACE_ATTACH it" grep -q 'attach:refused' <<<"$got"
	check "$m: worker $w: ... nor read its /proc/PID/root" grep -q 'root:refused' <<<"$got"
	check "$m: worker $w: ... nor open its /proc/PID/mem" grep -q 'mem:refused' <<<"$got"
	if [ "$ME" -eq 0 ]; then
		got=$(probe 65534 "$w")
		check "$m: worker $w: nobody cannot signal it ($got)" grep -q 'kill:refused' <<<"$got"
	else
		ok "$m: worker $w: nobody cannot signal it # SKIP needs root for setpriv"
	fi
done
# The recorder: confined its own way (a database client needs its files), never a worker's jail.
recorder_checks() { # MODE WANT-UID
	local m=$1 want=$2
	check "$m: the recorder runs ($REC)" test -n "$REC"
	check "$m: recorder: NoNewPrivs 1" test "$(field "$REC" NoNewPrivs)" = 1
	check "$m: recorder: Seccomp 2 (filter)" test "$(field "$REC" Seccomp)" = 2
	check "$m: recorder: uid $want" test "$(field "$REC" Uid)" = "$want	$want	$want	$want"
	check "$m: recorder: CapEff empty" test "$(field "$REC" CapEff)" = 0000000000000000
	check "$m: recorder: empty environment" test ! -s "/proc/$REC/environ"
	check "$m: recorder: no key or ledger file open" sh -c "! ls -l /proc/$REC/fd 2>/dev/null | grep -qE 'keys/|ledger/'"
}
recorder_checks "service user" "$DU"
if [ "$ME" -eq 0 ]; then # the reviewer (uid 65534) reaches the service user's control socket
	chmod 0711 "$USER_S"
	chmod 0666 "$USER_S/control.sock"
	end_to_end "service user" "$USER_S" 0 65534
else
	end_to_end "service user" "$USER_S" "$ME" "$ME"
fi

# ---- a daemon running as root ----
if [ "$ME" -ne 0 ]; then
	ok "root daemon: workers on uids of their own, chrooted # SKIP needs root"
	done_testing
	exit
fi
"$ASSENT" --state "$ROOT_S" reviewer add tester --uid 0 >/dev/null
if ! start "$ROOT_S" 0 ASSENT_SINGLE_USER=1; then # the stdio agent and the reviewer are both root here
	not_ok "the root daemon did not start jailed workers: $(tail -3 "$ROOT_S.log")"
	done_testing
	exit 1
fi
P=$(daemon_pid "$ROOT_S")
recorder_checks "root daemon" 66016
check "root daemon: recorder: CapBnd empty" test "$(field "$REC" CapBnd)" = 0000000000000000
check "root daemon: recorder: no supplementary groups" test -z "$(field "$REC" Groups | tr -d ' ')"
uids=""
for w in $W; do
	m="root daemon"
	jailed "$m" "$w"
	u=$(field "$w" Uid | cut -f1)
	uids="$uids $u"
	kind=$(tr '\0' ' ' <"/proc/$w/cmdline" | awk '{print $2}') # assent-worker KIND --uid N
	want=$((66000 + $([ "$kind" = review ] && echo 1 || echo 0)))
	check "$m: $kind worker $w: uid and gid $want, its own (not nobody)" \
		test "$(field "$w" Uid)/$(field "$w" Gid)" = "$want	$want	$want	$want/$want	$want	$want	$want"
	root=$(readlink "/proc/$w/root")
	check "$m: $kind worker $w: its root is a deleted empty directory ($root)" \
		sh -c "case '$root' in /tmp/assent-jail-*' (deleted)') exit 0;; esac; exit 1"
	check "$m: $kind worker $w: ... with nothing in it" test -z "$(ls -A "/proc/$w/root/" 2>&1)"
	got=$(probe "$u" "$w")
	check "$m: $kind worker $w: a process of its own uid cannot trace it or read its /proc ($got)" \
		test "${got% kill:*}" = "seize:refused attach:refused root:refused mem:refused"
	other=$((want == 66000 ? 66001 : 66000))
	got=$(probe "$other" "$w")
	check "$m: $kind worker $w: the other worker's uid cannot trace or signal it ($got)" \
		test "$got" = "seize:refused attach:refused root:refused mem:refused kill:refused"
	got=$(probe 65534 "$w")
	check "$m: $kind worker $w: nobody cannot trace or signal it ($got)" \
		test "$got" = "seize:refused attach:refused root:refused mem:refused kill:refused"
done
check "root daemon: the two workers have two different uids" test "$(echo $uids | tr ' ' '\n' | sort -u | wc -l)" -eq 2
end_to_end "root daemon" "$ROOT_S" 0 0

# A worker uid that is another account's is refused at start, naming it.
# (uid 1 is the account "daemon" on Debian.) A daemon that did start is stopped after 10 s.
ASSENT_WORKER_UID=1 timeout 10 "$ASSENTD" --state "$T/taken" >"$T/taken.log" 2>&1
rc=$?
check "ASSENT_WORKER_UID naming an account's uid: the daemon refuses to start (exit $rc)" test "$rc" -eq 2
check "... saying whose uid it is" grep -q "is the account" "$T/taken.log"
done_testing
