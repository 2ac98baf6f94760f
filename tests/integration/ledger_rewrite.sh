#!/usr/bin/env bash
# History rewritten by someone with write access to STATE/ledger but not the
# checkpoint key, on a real gateway's ledger: an approver renamed, a rejection made
# an approval, entries dropped, with the chain and the tree state recomputed, the
# stored checkpoints kept, deleted or all but the first kept; tail edits after the
# newest periodic checkpoint and tail deletion; a forged ledger with a forged key in
# keys/. Each is exit 1 with one line saying why, because every commit signs its
# head and the verifier pins its key and wants the head covered. Also: the gateway
# refuses to sign a ledger it did not see signed, entry times never go backwards,
# `assent ledger append` never writes a gateway's ledger, and a verifier run by
# root leaves no lock.mdb that locks a non-root daemon out.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ledger_helpers.bash"
ASSENTD=$ROOT/build/assentd
S=$T/gw
U=
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
cleanup() {
	for d in "$S" "$T/restart"; do p=$(daemon_pid "$d"); [ -n "$p" ] && kill -9 "$p" 2>/dev/null; done
	[ -n "$U" ] && userdel "$U" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT

# unsigned DESC DIR FROM: exit 1, one line naming the unsigned tail from seq FROM.
unsigned() {
	tampered "$1" "$2" "$3"
	expect_exit 1 "$1: the reason is the unsigned tail" "$VERIFY" ledger "$2" --key "$PUB"
	expect_err "tampered at seq $3: unsigned tail: entries $3 to " "$1: one line naming the unsigned tail"
}

# ---- a real gateway's ledger: 4 requests decided by reviewer tester, then a crash ----
"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)" >/dev/null
ASSENT_SINGLE_USER=1 "$ASSENTD" --state "$S" >"$T/daemon.log" 2>&1 &
disown
for _ in $(seq 200); do [ -S "$S/agent.sock" ] && break; sleep 0.05; done
if ! $PY "$ROOT/tests/integration/ledger_gateway.py" "$S" "$ROOT/build" 4 >"$T/reqs.jsonl" 2>"$T/reqs.err"; then
	not_ok "cannot drive the gateway: $(tail -3 "$T/reqs.err") $(tail -3 "$T/daemon.log")"
	done_testing
	exit 1
fi
L=$S/ledger
N=$(entry_count "$L")
check "the gateway wrote 11 entries (2 keys, 1 identity, 4 requests, 4 decisions)" [ "$N" = 11 ]
SIZES=$($TOOL ckpt_sizes "$L")
check "every commit signs its head: the newest stored checkpoint covers all $N ($SIZES)" [ "${SIZES##* }" = "$N" ]
check "  ... and the head signatures replace each other: 3 stored checkpoints, not one per commit" \
	[ "$(echo $SIZES | wc -w)" = 3 ]
kill -9 "$(daemon_pid "$S")" # a crash: nothing is signed at close
sleep 0.2
cp "$S/keys/checkpoint.pub" "$T/trusted.pub"
PUB=$T/trusted.pub
intact "the gateway's ledger after kill -9" "$L"
check "  ... 0 entries after the last signed checkpoint (size $N)" \
	grep -q "0 entries after the last signed checkpoint (size $N)$" "$T/.out"
expect_exit 0 "save the head checkpoint" "$VERIFY" checkpoint "$L" --key "$PUB"
printf '%s\n' "$OUT" >"$T/saved"
check "  ... it is for size $N" [ "$(sed -n 2p "$T/saved")" = "$N" ]
APPROVED=$($TOOL find "$L" decision outcome '"approved"')
REJECTED=$($TOOL find "$L" decision outcome '"rejected"')
check "entry $APPROVED approves (by tester), entry $REJECTED rejects" [ "$APPROVED" = 4 -a "$REJECTED" = 6 ]

# ---- an approver's name changed, the chain and tree state recomputed ----
X=$(fresh "$S" rename)
$TOOL rewrite "$X/ledger" "$APPROVED" reviewer.name '"alice"'
check "the rewritten chain holds together (independent check)" [ "$($TOOL chain "$X/ledger" | cut -d' ' -f1)" = "$N" ]
tampered_noseq "approver renamed, checkpoints kept" "$X/ledger" "rewritten"
$TOOL ckpt_keep "$X/ledger" none && rm -f "$X/ledger/checkpoint"
unsigned "approver renamed, every checkpoint deleted" "$X/ledger" 0
X=$(fresh "$S" rename-first)
$TOOL rewrite "$X/ledger" "$APPROVED" reviewer.name '"alice"'
$TOOL ckpt_keep "$X/ledger" first && rm -f "$X/ledger/checkpoint"
unsigned "approver renamed, all but the first checkpoint deleted" "$X/ledger" 1
X=$(fresh "$S" rename-file)
$TOOL rewrite "$X/ledger" "$APPROVED" reviewer.name '"alice"'
$TOOL ckpt_keep "$X/ledger" first
unsigned "approver renamed, the first stored checkpoint and the checkpoint file (size 2) kept" "$X/ledger" 2

# ---- a rejection turned into an approval ----
X=$(fresh "$S" flipdecision)
$TOOL rewrite "$X/ledger" "$REJECTED" outcome '"approved"'
tampered_noseq "rejection made an approval, checkpoints kept" "$X/ledger" "rewritten"
$TOOL ckpt_keep "$X/ledger" first && rm -f "$X/ledger/checkpoint"
unsigned "rejection made an approval, all but the first checkpoint deleted" "$X/ledger" 1

# ---- entries dropped (the rejected request and its decision) ----
X=$(fresh "$S" drop)
$TOOL drop "$X/ledger" $((REJECTED - 1)) "$REJECTED"
tampered_noseq "two entries dropped and renumbered, checkpoints kept" "$X/ledger" "truncated|rolled back"
$TOOL ckpt_keep "$X/ledger" none && rm -f "$X/ledger/checkpoint"
unsigned "two entries dropped, every checkpoint deleted" "$X/ledger" 0

# ---- the tail after the newest periodic checkpoint (size 2): the head signature covers it ----
X=$(fresh "$S" tailedit)
$TOOL flip "$X/ledger" 9 text:deploy >/dev/null
tampered "tail entry 9 edited in place" "$X/ledger" 9
X=$(fresh "$S" tailrewrite)
$TOOL rewrite "$X/ledger" 9 message '"please deploy build number 3 to staging"'
tampered_noseq "tail entry 9 rewritten, chain recomputed" "$X/ledger" "rewritten"
$TOOL ckpt_keep "$X/ledger" but-newest
unsigned "tail entry 9 rewritten and the head checkpoint deleted" "$X/ledger" 2
expect_exit 0 "  ... passes only with --allow-unsigned-tail 9, saying so" \
	"$VERIFY" ledger "$X/ledger" --key "$PUB" --allow-unsigned-tail 9
check "  ... stdout counts 9 entries after the last signed checkpoint" \
	grep -q "9 entries after the last signed checkpoint (size 2)" "$T/.out"
expect_err "note: an unsigned tail of 9 entries" "  ... with one note on stderr"
expect_exit 1 "  ... and --allow-unsigned-tail 8 is not enough" \
	"$VERIFY" ledger "$X/ledger" --key "$PUB" --allow-unsigned-tail 8

# ---- tail deletion ----
X=$(fresh "$S" taildel)
$TOOL drop "$X/ledger" $((N - 1))
tampered_noseq "the last entry deleted, checkpoints kept" "$X/ledger" "truncated|rolled back"
$TOOL ckpt_keep "$X/ledger" but-newest
unsigned "the last entry deleted with the head checkpoint" "$X/ledger" 2
X=$(fresh "$S" taildel2)
$TOOL drop "$X/ledger" $((N - 2)) $((N - 1))
$TOOL ckpt_keep "$X/ledger" but-newest
unsigned "the last decision and its request deleted with the head checkpoint" "$X/ledger" 2

# ---- a forged ledger signed with a forged key put in keys/ ----
X=$(fresh "$S" forged)
$TOOL rewrite "$X/ledger" "$APPROVED" reviewer.name '"alice"'
$TOOL newkey "$X/keys/checkpoint.key" "$X/keys/checkpoint.pub"
$TOOL resign "$X/ledger" "$X/keys/checkpoint.key"
expect_exit 2 "forged key: verify without a pinned key is a usage error, not a pass" "$VERIFY" ledger "$X/ledger"
expect_err "pin the checkpoint key" "  ... one line naming the ways to pin it"
expect_exit 1 "forged key: verify --key (the genuine key) exits 1" "$VERIFY" ledger "$X/ledger" --key "$PUB"
expect_err "not signed by a trusted key" "  ... one line: not signed by a trusted key"
SHA=$($TOOL spki_sha256 "$PUB")
expect_exit 1 "forged key: --key-sha256 of the genuine key exits 1" "$VERIFY" ledger "$X/ledger" --key-sha256 "$SHA"
expect_err "not the pinned one" "  ... one line: the key in the state directory is not the pinned one"
expect_exit 1 "forged key: --trusted (the saved head checkpoint) exits 1" "$VERIFY" ledger "$X/ledger" --trusted "$T/saved"
expect_err "trusted checkpoint .* not signed by the key in the state directory" "  ... one line naming the saved checkpoint"
expect_exit 0 "forged key: --key-from-state passes, as documented (consistency only)" \
	"$VERIFY" ledger "$X/ledger" --key-from-state
expect_err "consistent with itself, not that it is the gateway's" "  ... and says it proves consistency only"
# The genuine state pinned each way passes.
expect_exit 0 "the genuine ledger with --key-sha256" "$VERIFY" ledger "$L" --key-sha256 "$SHA"
check "  ... nothing on stderr" [ -z "$ERR" ]
expect_exit 0 "the genuine ledger with --trusted only (the key in the state directory signed it)" \
	"$VERIFY" ledger "$L" --trusted "$T/saved" --json
json_is "  ... one trusted checkpoint consistent, tail 0" "$OUT" ok=true trusted_consistent=1 unsigned_tail=0 \
	key_from_state_dir=false "key_sha256=\"$SHA\""
expect_exit 2 "--key-sha256 that is not 64 hex digits is a usage error" "$VERIFY" ledger "$L" --key-sha256 abc

# ---- the gateway signs only a tree it saw signed ----
X=$(fresh "$S" resign)
$TOOL rewrite "$X/ledger" "$APPROVED" reviewer.name '"alice"'
expect_exit 2 "the daemon refuses to start on a rewritten ledger (checkpoints kept)" \
	env ASSENT_SINGLE_USER=1 "$ASSENTD" --state "$X"
check "  ... saying it was changed without the checkpoint key" grep -q "changed without the checkpoint key" "$T/.err"
$TOOL ckpt_keep "$X/ledger" none
expect_exit 2 "the daemon refuses to start on a rewritten ledger (checkpoints deleted)" \
	env ASSENT_SINGLE_USER=1 "$ASSENTD" --state "$X"
check "  ... saying it was changed without the checkpoint key" grep -q "changed without the checkpoint key" "$T/.err"
expect_exit 1 "  ... and so does another writer with the key (assent reviewer add)" \
	"$ASSENT" --state "$X" reviewer add bob --uid 12345
check "  ... the rewritten ledger was not signed meanwhile" [ "$($TOOL ckpt_sizes "$X/ledger")" = "" ]
# ... nor while it runs: history rewritten under a live daemon is not signed at its stop.
X=$(fresh "$S" live)
rm -f "$X/assentd.json" "$X"/*.sock
ASSENT_SINGLE_USER=1 "$ASSENTD" --state "$X" >"$T/live.log" 2>&1 &
lpid=$!
for _ in $(seq 200); do grep -q '"assentd .* serving' "$T/live.log" && break; sleep 0.05; done
before=$($TOOL ckpt_sizes "$X/ledger")
$TOOL rewrite "$X/ledger" "$APPROVED" reviewer.name '"alice"'
kill "$lpid" 2>/dev/null
wait "$lpid"
check "a live daemon does not sign history rewritten under it (its final checkpoint is refused)" \
	grep -q "changed without the checkpoint key" "$T/live.log"
check "  ... no checkpoint was added ($before)" [ "$($TOOL ckpt_sizes "$X/ledger")" = "$before" ]
tampered_noseq "  ... and the rewrite is caught" "$X/ledger" "rewritten"
# ... nor one cut back under it to an older signed size (every commit's head is signed, so
# one exists for each): the checkpoints stored there would accept it; the daemon does not.
X=$(fresh "$S" cutback)
rm -f "$X/assentd.json" "$X"/*.sock
printf 'default ask\n' >"$T/cutback.policy"
ASSENT_SINGLE_USER=1 "$ASSENTD" --state "$X" --policy "$T/cutback.policy" >"$T/cutback.log" 2>&1 &
lpid=$!
for _ in $(seq 200); do grep -q '"assentd .* serving' "$T/cutback.log" && break; sleep 0.05; done
older=$($TOOL ckpt_sizes "$X/ledger" | tr ' ' '\n' | sort -n | tail -2 | head -1)
$TOOL truncate "$X/ledger" "$older"
$TOOL drop "$X/ledger" # the stored tree state recomputed for what is left
kill -HUP "$lpid" # a policy reload is an entry to commit
for _ in $(seq 200); do grep -q 'shrank' "$T/cutback.log" && break; sleep 0.05; done
kill "$lpid" 2>/dev/null
wait "$lpid"
check "a live daemon refuses a ledger cut back under it to an older signed size ($older)" \
	grep -q "shrank from [0-9]* to $older entries under this process" "$T/cutback.log"
check "  ... and signs nothing more ($($TOOL ckpt_sizes "$X/ledger"))" \
	[ "$($TOOL ckpt_sizes "$X/ledger" | tr ' ' '\n' | sort -n | tail -1)" = "$older" ]
X=$(fresh "$S" restart)
expect_exit 0 "another writer with the key on the genuine ledger (assent reviewer add)" \
	"$ASSENT" --state "$X" reviewer add bob --uid 12345
intact "  ... which signs its own head" "$X/ledger"
check "  ... 0 entries after the last signed checkpoint (size 12)" \
	grep -q "0 entries after the last signed checkpoint (size 12)" "$T/.out"

# An unsigned tail is signed only when the operator adopts that many entries, and only
# if the rest of the ledger is still what was signed.
X=$(fresh "$S" adopt)
rm -f "$X/assentd.json" "$X"/*.sock
$TOOL rewrite "$X/ledger" 9 message '"please deploy build number 3 to staging"'
$TOOL ckpt_keep "$X/ledger" but-newest
expect_exit 2 "the daemon refuses to sign an unsigned tail of 9 entries" env ASSENT_SINGLE_USER=1 "$ASSENTD" --state "$X"
check "  ... naming it and how to adopt it" grep -q "unsigned tail: 9 entries.*ASSENT_ADOPT_UNSIGNED_TAIL=9" "$T/.err"
expect_exit 2 "  ... ASSENT_ADOPT_UNSIGNED_TAIL=8 is not enough" \
	env ASSENT_SINGLE_USER=1 ASSENT_ADOPT_UNSIGNED_TAIL=8 "$ASSENTD" --state "$X"
rm -f "$X"/*.sock # the refused starts left theirs
ASSENT_SINGLE_USER=1 ASSENT_ADOPT_UNSIGNED_TAIL=9 "$ASSENTD" --state "$X" >"$T/adopt.log" 2>&1 &
apid=$!
for _ in $(seq 200); do grep -q '"assentd .* serving' "$T/adopt.log" && break; sleep 0.05; done
check "with ASSENT_ADOPT_UNSIGNED_TAIL=9 the daemon starts" grep -q '"assentd .* serving' "$T/adopt.log"
kill "$apid" 2>/dev/null
wait "$apid"
intact "  ... and its clean stop signs the adopted tail" "$X/ledger"
check "  ... 0 entries after the last signed checkpoint (size $N)" \
	grep -q "0 entries after the last signed checkpoint (size $N)" "$T/.out"
X=$(fresh "$S" adopt-prefix)
rm -f "$X/assentd.json" "$X"/*.sock
$TOOL rewrite "$X/ledger" 1 name '"mallory"'
$TOOL ckpt_keep "$X/ledger" but-newest
expect_exit 2 "an adopted tail does not bless a rewritten signed prefix (entry 1 renamed, head checkpoint deleted)" \
	env ASSENT_SINGLE_USER=1 ASSENT_ADOPT_UNSIGNED_TAIL=100 "$ASSENTD" --state "$X"
check "  ... the signed root at size 2 no longer holds" grep -q "no longer have the signed root at size 2" "$T/.err"

# ---- ledger times never go backwards ----
X=$(fresh "$S" time)
T6=$($TOOL get "$X/ledger" 6 | $PY -c '
import sys; sys.path.insert(0, sys.argv[1]); import ledger_tool as t
m = t.cbor_decode(bytes.fromhex(sys.stdin.read().strip()))[0]; print(t._get(m, "time"))' "$ROOT/tests/integration")
$TOOL rewrite "$X/ledger" 7 time $((T6 - 1000))
$TOOL resign "$X/ledger" "$X/keys/checkpoint.key" # signed with the genuine key: only the times are wrong
tampered "entry 7's time a second before entry 6's, signed with the genuine key" "$X/ledger" 7
check "  ... the reason says times never go backwards" grep -q "never go backwards" "$T/.err"

# ---- assent ledger append writes demo ledgers only ----
expect_exit 1 "assent ledger append refuses a gateway's ledger" "$ASSENT" --state "$S" ledger append <<<'{"kind":"decision","session_id":"x","outcome":"approved","reviewer":{"name":"alice"}}'
expect_err "is a gateway's ledger" "  ... with one line saying so"
check "  ... nothing was written" [ "$(entry_count "$L")" = "$N" ]
requests 1 2 | "$ASSENT" --state "$T/demo" ledger append >/dev/null
expect_exit 2 "the daemon refuses a demo ledger" env ASSENT_SINGLE_USER=1 "$ASSENTD" --state "$T/demo"
check "  ... saying it is a demo ledger" grep -q "is a demo ledger" "$T/.err"
expect_exit 0 "the verifier names a demo ledger" "$VERIFY" ledger "$T/demo/ledger" --key "$T/demo/keys/checkpoint.pub" --json
json_is "  ... demo true, origin assent-demo/..." "$OUT" ok=true demo=true \
	"origin=\"assent-demo/$($TOOL spki_sha256 "$T/demo/keys/checkpoint.pub" | cut -c1-8)\""
expect_exit 0 "a gateway's ledger is not a demo ledger" "$VERIFY" ledger "$L" --key "$PUB" --json
json_is "  ... demo false, origin assent/..." "$OUT" ok=true demo=false "origin=\"assent/${SHA:0:8}\""

# ---- a verifier run by root creates no lock.mdb that locks a non-root daemon out ----
if [ "$(id -u)" = 0 ] && command -v useradd >/dev/null; then
	U=assentlt$$
	useradd --system --no-create-home --shell /usr/sbin/nologin "$U" 2>/dev/null || U=
fi
if [ -n "$U" ]; then
	X=$(fresh "$S" owned)
	rm -f "$X/assentd.json" "$X"/*.sock
	rm "$X/ledger/lock.mdb"
	chown -R "$U:" "$X"
	chmod 0711 "$T"
	expect_exit 0 "root verifies a ledger that has no lock.mdb" "$VERIFY" ledger "$X/ledger" --key "$PUB"
	check "  ... and creates none" [ ! -e "$X/ledger/lock.mdb" ]
	expect_exit 0 "then the ledger's own non-root user writes to it (assent reviewer add)" \
		setpriv --reuid="$U" --regid="$(id -g "$U")" --clear-groups "$ASSENT" --state "$X" reviewer add carol --uid 4242
	check "  ... its lock.mdb is the user's own" [ "$(stat -c %U "$X/ledger/lock.mdb")" = "$U" ]
else
	ok "root verifies a ledger that has no lock.mdb # SKIP needs root and useradd"
	ok "  ... and creates none # SKIP needs root and useradd"
	ok "then the ledger's own non-root user writes to it # SKIP needs root and useradd"
	ok "  ... its lock.mdb is the user's own # SKIP needs root and useradd"
fi

done_testing
