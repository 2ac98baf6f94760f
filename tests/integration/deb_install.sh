#!/usr/bin/env bash
# The Debian package as an operator uses it (issue 34, 3): make deb builds it (debhelper) and
# checks it (lintian: no error or warning); then, as root, it is installed, the daemon started
# as assentd.service would start it (its user, its environment file, an empty capability
# bounding set, no new privileges: this machine's PID 1 is not systemd), an agent asks over
# HTTP with its key, a reviewer of another uid approves with the assent command through the
# control socket's group, the token and the ledger verify, and remove and purge leave none of
# the files the package made. Not root: one skipped check.
. "$(dirname "$0")/../lib.sh"
if [ "$(id -u)" -ne 0 ]; then
	ok "# SKIP the package is installed as root only"
	done_testing
	exit 0
fi
SVC_ENV=/etc/assent/assentd.env
DPID=
REV=assent-test-rev
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && sleep 0.5
	dpkg -s assent >/dev/null 2>&1 && dpkg --purge assent >/dev/null 2>&1
	id "$REV" >/dev/null 2>&1 && userdel "$REV" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
# An assent package this test did not install is the machine's: never touched.
if dpkg -s assent >/dev/null 2>&1; then
	trap 'rm -rf "$T"' EXIT
	ok "# SKIP an assent package is installed on this machine (remove it to run this test: dpkg --purge assent)"
	done_testing
	exit 0
fi

make -s -C "$ROOT" deb >"$T/deb.log" 2>&1
check "make deb builds the package and lintian finds no error or warning" test $? -eq 0
DEB=$(ls "$ROOT"/build/deb/assent_*_"$(dpkg --print-architecture)".deb 2>/dev/null | head -1)
[ -n "$DEB" ] || { tail -20 "$T/deb.log" | sed 's/^/# /'; not_ok "no .deb was built"; done_testing; exit 1; }
grep '^deb: ' "$T/deb.log" | sed 's/^/# /'
score=$(sed -n 's/.*exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$T/deb.log")
check "the unit's systemd-analyze security exposure is low (${score:-none}: under 2.0)" \
	$PY -c "import sys; sys.exit(0 if 0 <= float(sys.argv[1]) < 2.0 else 1)" "${score:--1}"

dpkg-deb -c "$DEB" | awk '{print $6}' | sed 's|^\.||' >"$T/files"
dpkg -i "$DEB" >"$T/dpkg.log" 2>&1
check "dpkg -i installs it" test $? -eq 0
check "  ... the service user and the reviewers' group exist (sysusers.d)" sh -c 'getent passwd assent >/dev/null && getent group assent-reviewers >/dev/null'
check "  ... /var/lib/assent is the service user's, mode 0700 (tmpfiles.d)" \
	test "$(stat -c '%U %a' /var/lib/assent 2>/dev/null)" = "assent 700"
check "  ... /etc/assent/policy and assentd.env are conffiles" \
	sh -c 'dpkg-query -W -f="\${Conffiles}" assent | grep -q /etc/assent/policy && dpkg-query -W -f="\${Conffiles}" assent | grep -q /etc/assent/assentd.env'
check "  ... the unit is installed" test -f /lib/systemd/system/assentd.service
check "  ... assentd, assent and assent-verify are commands; the workers are beside assentd" \
	sh -c 'command -v assentd >/dev/null && command -v assent >/dev/null && command -v assent-verify >/dev/null &&
		test -x /usr/libexec/assent/assent-worker'

# The daemon as the unit runs it: ExecStart, User/Group, EnvironmentFile, CapabilityBoundingSet=,
# NoNewPrivileges=yes, UMask=0077 (the ports: any free one, so that a real daemon's are never taken).
exec_start=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/assentd.service)
(
	set -a
	. "$SVC_ENV"
	set +a
	export FEEDBACK_SSE_PORT=0 ASSENT_REVIEW_PORT=0
	umask 0077
	exec setpriv --reuid=assent --regid=assent --init-groups --bounding-set=-all --inh-caps=-all \
		--no-new-privs -- $exec_start
) >"$T/d.log" 2>&1 &
DPID=$!
S=/var/lib/assent
for _ in $(seq 600); do grep -q "\"pid\": $DPID," "$S/assentd.json" 2>/dev/null && break; kill -0 $DPID 2>/dev/null || break; sleep 0.05; done
check "the daemon starts as the unit would (user assent, no capability, no new privileges)" \
	grep -q "\"pid\": $DPID," "$S/assentd.json" || sed 's/^/# /' "$T/d.log"
check "  ... and runs as assent" test "$(ps -o user= -p "$DPID" 2>/dev/null)" = assent
HTTP=$($PY -c 'import json; print(json.load(open("/var/lib/assent/assentd.json"))["http"])' 2>/dev/null)
as_svc() { setpriv --reuid=assent --regid=assent --init-groups -- "$@"; }

useradd --system --no-create-home --shell /usr/sbin/nologin -G assent-reviewers "$REV"
RUID=$(id -u "$REV")
as_svc assent --state "$S" reviewer add rev --uid "$RUID" >/dev/null
KEY=$(as_svc assent --state "$S" agent add ci --audience deploy | tail -1)
check "agent and reviewer registered as the service user" test -n "$KEY"
printf 'plan: scale web to 3\n' >"$T/plan"
chmod 0644 "$T/plan"
chmod 0755 "$T"
(ASSENT_AGENT_KEY=$KEY assent request --url "http://$HTTP/mcp" --message "apply the plan?" --audience deploy \
	--subject "$T/plan" >"$T/req.out" 2>"$T/req.err"
	echo $? >"$T/req.rc") &
id=
for _ in $(seq 200); do
	id=$(setpriv --reuid="$RUID" --regid="$(id -g "$REV")" --init-groups -- assent --state "$S" pending --json 2>"$T/pend.err" |
		$PY -c 'import json,sys; d=json.load(sys.stdin); r=d["requests"] if isinstance(d,dict) else d; print(r[-1]["session_id"] if r else "")' 2>/dev/null)
	[ -n "$id" ] && break
	sleep 0.1
done
check "the agent's request waits; the reviewer (uid $RUID, group assent-reviewers) sees it ($id)" test -n "$id"
setpriv --reuid="$RUID" --regid="$(id -g "$REV")" --init-groups -- assent --state "$S" approve "$id" -m "ok" >"$T/appr.out" 2>&1
check "  ... and approves it with the assent command" test $? -eq 0
for _ in $(seq 200); do [ -s "$T/req.rc" ] && break; sleep 0.1; done
check "the agent gets its token (assent request exits 0)" test "$(cat "$T/req.rc" 2>/dev/null)" = 0
PUB=$(ls "$S"/keys/token-*.pub 2>/dev/null | head -1)
check "the token verifies with assent-verify against the plan's bytes" \
	assent-verify token "$(cat "$T/req.out")" --aud deploy --key "$PUB" --subject "$T/plan" --require-computed
kill "$DPID"
for _ in $(seq 100); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
DPID=
check "the ledger verifies (assent-verify ledger, key from the state directory)" \
	assent-verify ledger "$S/ledger" --key-from-state

dpkg -r assent >"$T/rm.log" 2>&1
check "dpkg -r removes it" test $? -eq 0
check "  ... the programs are gone, the configuration and the state stay" \
	sh -c '! command -v assentd >/dev/null && ! test -e /usr/libexec/assent && test -f /etc/assent/policy && test -d /var/lib/assent'
dpkg --purge assent >"$T/purge.log" 2>&1
check "dpkg --purge purges it" test $? -eq 0
left=$(while read -r f; do [ -n "$f" ] && [ "$f" != / ] && [ -e "$f" ] && [ ! -d "$f" ] && echo "$f"; done <"$T/files")
check "  ... no file the package installed is left (${left:-none})" test -z "$left"
check "  ... nor /etc/assent or /var/lib/assent" sh -c '! test -e /etc/assent && ! test -e /var/lib/assent'
done_testing
