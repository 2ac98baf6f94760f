#!/usr/bin/env bash
# Consistency proofs for witnesses (RFC 9162 2.1.4, C2SP tlog-witness): a daemon's public
# GET /checkpoint at two moments and GET /checkpoint/consistency?old=M&new=N between them;
# `assent-verify consistency` and an independent Python checker (tests/scripts/rfc9162_check.py)
# accept the proof, and refuse it altered, swapped, or between two forked ledgers under one
# key. Bad queries are 400 naming the parameter, sizes past the signed tree 404. The C
# generator is also cross-checked against the Python one on a few hundred random pairs.
. "$(dirname "$0")/../lib.sh"
RFC=$ROOT/tests/scripts/rfc9162_check.py
TOOL=$ROOT/build/tests/consist_tool
listener() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$1/assentd.json" "$2" 2>/dev/null; }
daemon_state
cat >"$T/p.policy" <<'POL'
# every request is allowed: each one is ledgered and its commit signs a head checkpoint
default allow
POL
"$ASSENT" --state "$S" agent add pipeline --uid "$AGENT_UID" >/dev/null
ASSENT_SINGLE_USER=$(agent_single_user) daemon_start --policy "$T/p.policy"
for _ in $(seq 200); do [ -S "$S/agent.sock" ] && [ -n "$(listener "$S" review)" ] && break; sleep 0.05; done
daemon_listens "the daemon listens"
open_agent_sock "$S"
R=http://$(listener "$S" review)
KEY=$S/keys/checkpoint.pub
ask() { "${AGENT_PREFIX[@]}" "$ASSENT" --state "$S" request --message "$1" >/dev/null 2>&1; }
# get PATH FILE: the status printed, the body in FILE
get() { curl -s -o "$2" -w '%{http_code}' "$R$1"; }
size_of() { sed -n 2p "$1"; }

for i in 1 2 3; do ask "first $i"; done
# the first commit's checkpoint is a periodic one (none was signed before)
check "GET /checkpoint (no credential): 200" test "$(get /checkpoint "$T/c1")" = 200
check "GET /checkpoint/consistency without ASSENT_CONSISTENCY_PROOFS=on: 404" \
	test "$(get "/checkpoint/consistency?old=1&new=2" "$T/off")" = 404
check "  ... saying how the operator turns it on" grep -q "ASSENT_CONSISTENCY_PROOFS=on" "$T/off"
for i in 1 2 3 4 5 6 7; do ask "second $i"; done
# GET /checkpoint serves the periodic checkpoint (every 10,000 entries or 60 s, and at a
# clean stop): a restart makes the next one now.
kill "$DPID"
for _ in $(seq 200); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
rm -f "$S/assentd.json"
ASSENT_CONSISTENCY_PROOFS=on ASSENT_SINGLE_USER=$(agent_single_user) daemon_start --policy "$T/p.policy"
for _ in $(seq 200); do [ -S "$S/agent.sock" ] && [ -n "$(listener "$S" review)" ] && break; sleep 0.05; done
R=http://$(listener "$S" review)
check "GET /checkpoint after a restart: 200" test "$(get /checkpoint "$T/c2")" = 200
M=$(size_of "$T/c1") N=$(size_of "$T/c2")
check "the tree grew between the two ($M < $N)" test "$M" -lt "$N"

check "GET /checkpoint/consistency?old=$M&new=$N (no credential): 200" \
	test "$(get "/checkpoint/consistency?old=$M&new=$N" "$T/proof")" = 200
check "  ... one base64 hash a line" grep -qE '^[A-Za-z0-9+/]{43}=$' "$T/proof"
check "  ... nothing else" test "$(grep -cvE '^[A-Za-z0-9+/]{43}=$' "$T/proof")" = 0
expect_exit 0 "assent-verify consistency accepts it" \
	"$VERIFY" consistency --old "$T/c1" --new "$T/c2" --proof "$T/proof" --key "$KEY"
check "  ... and says so" sh -c "printf '%s' '$OUT' | grep -q 'at size $M is a prefix of the tree at size $N'"
expect_exit 0 "the Python checker (RFC 9162, hashlib) accepts it" $PY "$RFC" check "$T/c1" "$T/c2" "$T/proof"
expect_exit 0 "assent-verify consistency STATE/ledger $M $N makes the same proof offline" \
	"$VERIFY" consistency "$S/ledger" "$M" "$N"
check "  ... byte for byte" sh -c "printf '%s\n' '$OUT' | cmp -s - '$T/proof'"

# altered: a hash changed, the checkpoints swapped, a line dropped
sed '1s/^./A/;1s/^AA/BA/' "$T/proof" >"$T/bad"
cmp -s "$T/bad" "$T/proof" && sed -i '1s/^./C/' "$T/bad"
expect_exit 1 "a proof with a hash changed is refused" \
	"$VERIFY" consistency --old "$T/c1" --new "$T/c2" --proof "$T/bad" --key "$KEY"
expect_err "not a prefix" "  ... saying the trees are not one another's prefix"
expect_exit 1 "  ... and by the Python checker" $PY "$RFC" check "$T/c1" "$T/c2" "$T/bad"
expect_exit 1 "the checkpoints swapped: refused" \
	"$VERIFY" consistency --old "$T/c2" --new "$T/c1" --proof "$T/proof" --key "$KEY"
sed '$d' "$T/proof" >"$T/short"
expect_exit 1 "a proof one hash short: refused" \
	"$VERIFY" consistency --old "$T/c1" --new "$T/c2" --proof "$T/short" --key "$KEY"
printf 'not base64\n' >"$T/junk"
expect_exit 1 "a proof that is not base64: refused" \
	"$VERIFY" consistency --old "$T/c1" --new "$T/c2" --proof "$T/junk" --key "$KEY"
$PY - "$T/c2" "$T/c2forged" <<'PY'
import sys
lines = open(sys.argv[1]).read().split('\n')
lines[1] = str(int(lines[1]) + 1)  # the size changed, the signature kept
open(sys.argv[2], 'w').write('\n'.join(lines))
PY
expect_exit 1 "a checkpoint whose size was changed: refused (its signature)" \
	"$VERIFY" consistency --old "$T/c1" --new "$T/c2forged" --proof "$T/proof" --key "$KEY"
expect_exit 2 "no --key: a usage error" "$VERIFY" consistency --old "$T/c1" --new "$T/c2" --proof "$T/proof"
expect_exit 2 "no --proof: a usage error" "$VERIFY" consistency --old "$T/c1" --new "$T/c2" --key "$KEY"

# the same size: the empty proof
check "old = new: 200" test "$(get "/checkpoint/consistency?old=$N&new=$N" "$T/empty")" = 200
check "  ... with an empty body" test ! -s "$T/empty"
expect_exit 0 "  ... which assent-verify accepts for one checkpoint twice" \
	"$VERIFY" consistency --old "$T/c2" --new "$T/c2" --proof "$T/empty" --key "$KEY"

# the queries the review worker refuses, and the sizes the signer does
for q in "old=0&new=$N" "old=$N&new=$M" "old=$M" "new=$N" "old=x&new=$N" "old=$M&new=$N&seq=1" \
	"old=$M&old=$M&new=$N" "old=$M&new=99999999999999999999"; do
	check "?$q: 400" test "$(get "/checkpoint/consistency?$q" "$T/body")" = 400
done
check "  ... naming the parameter" grep -q '"new must be a whole number' "$T/body"
check "?old=1&new=(past the signed tree): 404" \
	test "$(get "/checkpoint/consistency?old=1&new=$((N + 1000))" "$T/body")" = 404
check "POST: 405" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$R/checkpoint/consistency?old=1&new=2")" = 405

# The review worker lets 5 proofs through at once, then one every 0.5 s: the bucket refills.
sleep 2.6
# every pair of sizes the daemon signed so far: the proof verifies in Python from the roots
# the two checkpoints' sizes give (through the offline generator and the ledger's own roots)
ok_all=1
for m in 1 2 "$M"; do
	[ "$m" -le "$N" ] || continue
	[ "$(get "/checkpoint/consistency?old=$m&new=$N" "$T/pm")" = 200 ] || ok_all=0
	"$VERIFY" consistency "$S/ledger" "$m" "$N" >"$T/pm2" 2>/dev/null || ok_all=0
	cmp -s "$T/pm" "$T/pm2" || ok_all=0
done
check "proofs from sizes 1, 2 and $M over HTTP equal the offline ones" test "$ok_all" = 1
sleep 2.6
codes=$(for _ in 1 2 3 4 5 6 7 8; do curl -s -o /dev/null -w '%{http_code} ' "$R/checkpoint/consistency?old=1&new=$N"; done)
check "8 proofs at once: 5 made, then 429 ($codes)" test "$codes" = "200 200 200 200 200 429 429 429 "
check "  ... with Retry-After" sh -c "curl -s -D - -o /dev/null '$R/checkpoint/consistency?old=1&new=$N' | grep -qi '^retry-after: 1'"
check "  ... and a bad query is still 400, not 429" test "$(get "/checkpoint/consistency?old=0&new=1" "$T/body")" = 400
sleep 0.6
check "  ... and half a second later one more is made" test "$(get "/checkpoint/consistency?old=1&new=$N" "$T/body")" = 200

# ---- two ledgers under one key: a fork ----
A=$T/forka B=$T/forkb
PUB=$A/keys/checkpoint.pub
mkdir -p "$A" "$B"
e() { printf '{"kind":"identity","event":"reviewer added","name":"%s"}\n' "$@"; }
ckpt() { "$VERIFY" checkpoint "$1/ledger" --key "$PUB" >"$2" 2>/dev/null; }
e a1 a2 a3 | "$ASSENT" --state "$A" ledger append >/dev/null
ckpt "$A" "$T/fa_old"
mkdir -p "$B/keys" && cp -p "$A/keys/checkpoint.key" "$PUB" "$B/keys/"
e b1 b2 b3 b4 b5 b6 b7 | "$ASSENT" --state "$B" ledger append >/dev/null
ckpt "$B" "$T/fb"
e a4 a5 a6 a7 a8 a9 | "$ASSENT" --state "$A" ledger append >/dev/null
ckpt "$A" "$T/fa"
FM=$(size_of "$T/fa_old") FB=$(size_of "$T/fb") FA=$(size_of "$T/fa")
check "the two ledgers' checkpoints: one key, one origin ($FM <= $FB)" \
	sh -c "[ \"\$(head -1 '$T/fa_old')\" = \"\$(head -1 '$T/fb')\" ] && [ '$FM' -le '$FB' ]"
"$VERIFY" consistency "$A/ledger" "$FM" "$FA" >"$T/pa"
expect_exit 0 "ledger A grown from $FM to $FA: consistent" \
	"$VERIFY" consistency --old "$T/fa_old" --new "$T/fa" --proof "$T/pa" --key "$PUB"
"$VERIFY" consistency "$B/ledger" "$FM" "$FB" >"$T/pb"
expect_exit 1 "A's checkpoint at $FM, B's at $FB (a fork under one key), B's proof: refused" \
	"$VERIFY" consistency --old "$T/fa_old" --new "$T/fb" --proof "$T/pb" --key "$PUB"
expect_err "not a prefix" "  ... saying the trees are not one another's prefix"
expect_exit 1 "  ... and by the Python checker" $PY "$RFC" check "$T/fa_old" "$T/fb" "$T/pb"

# ---- the C generator against the independent Python one ----
py_tap "$RFC" cross "$TOOL" 300

# ---- tiles: proofs on a ledger of a few thousand entries read a tile per 1,024 leaves ----
L=$T/tiles
mkdir -p "$L"
$PY -c 'import json
for i in range(5000): print(json.dumps({"kind": "identity", "event": "reviewer added", "name": "r%d" % i}))' |
	"$ASSENT" --state "$L" ledger append >/dev/null
py_tap "$ROOT/tests/integration/tiles_check.py" "$VERIFY" "$L/ledger" "$T"
done_testing
