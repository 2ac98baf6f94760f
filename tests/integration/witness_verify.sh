#!/usr/bin/env bash
# Witnesses' cosignatures (C2SP tlog-cosignature cosignature/v1) as an auditor checks them:
# a ledger written by `assent ledger append|checkpoint`, outside witnesses played by
# witness_tool.py (Python's cryptography, no assent code), their cosignature lines added to the
# stored checkpoints with Python's lmdb. `assent-verify ledger|checkpoint|consistency --witness`
# must find the newest checkpoint N witnesses cosigned, refuse a ledger without one in one line,
# refuse a forged cosignature naming the witness, not count a cosignature of a forked ledger's
# checkpoint, and ignore the lines of witnesses it was not given.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ledger_helpers.bash"
WT="$PY $ROOT/tests/integration/witness_tool.py"

# ---- a ledger with periodic checkpoints at sizes A and B and a head 2 entries after B; a fork
# from A (the ledger starts with its key entry, so A is 4 and B 7) ----
S=$T/s
requests 1 3 | "$ASSENT" --state "$S" ledger append >/dev/null
A=$("$ASSENT" --state "$S" ledger checkpoint | sed -n 2p)
F=$(fresh "$S" fork) # the same key, origin and first A entries: a split view from here
requests 4 6 | "$ASSENT" --state "$S" ledger append >/dev/null
B=$("$ASSENT" --state "$S" ledger checkpoint | sed -n 2p)
decisions 4 5 | "$ASSENT" --state "$S" ledger append >/dev/null
decisions 4 6 | "$ASSENT" --state "$F" ledger append >/dev/null
"$ASSENT" --state "$F" ledger checkpoint >/dev/null
L=$S/ledger
KEY=(--key "$S/keys/checkpoint.pub")
expect_exit 0 "the ledger verifies without witnesses" "$VERIFY" ledger "$L" "${KEY[@]}"
$WT get "$L" "$A" >"$T/c3" && $WT get "$L" "$B" >"$T/c6" && $WT get "$F/ledger" "$B" >"$T/f6"
check "checkpoints are stored at sizes $A and $B, and the fork's at $B differs" \
	sh -c "test -s '$T/c3' && test -s '$T/c6' && ! cmp -s '$T/c6' '$T/f6'"
E=$((B + 2)) # entries

mkdir "$T/w"
W1=$($WT key "$T/w" w1) W2=$($WT key "$T/w" w2) W3=$($WT key "$T/w" w3)
check "three witness keys (vkeys NAME+KEYID+KEY)" \
	sh -c "printf '%s\n' '$W1' '$W2' '$W3' | grep -cE '^witness\.example/w[123]\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$' | grep -qx 3"

# ---- no cosignature yet: not witnessed ----
expect_exit 1 "--witness W1 with no cosignature stored: exit 1" "$VERIFY" ledger "$L" "${KEY[@]}" --witness "$W1"
expect_err "not witnessed: no stored checkpoint is cosigned by 1 of the 1 witnesses" "  ... in one line saying none is cosigned"

# ---- w1 cosigns size A; w1 and w2 size B; w3 (not given) too ----
$WT cosign "$T/w" w1 "$T/c3" >"$T/l3"
$WT append "$L" "$A" "$T/l3"
expect_exit 0 "w1's cosignature on size $A: --witness W1 holds" "$VERIFY" ledger "$L" "${KEY[@]}" --witness "$W1"
check "  ... witnessed: size $A cosigned by 1 of 1, $((E - A)) entries after it" \
	grep -q "^witnessed: size $A cosigned by 1 of 1 witnesses (threshold 1); $((E - A)) entries after the last witnessed checkpoint" "$T/.out"
check "  ... and the ledger line is unchanged" grep -q "^ledger intact: $E entries" "$T/.out"
expect_exit 1 "--witness W1 --witness W2 --witness-threshold 2: only one cosigned, exit 1" \
	"$VERIFY" ledger "$L" "${KEY[@]}" --witness "$W1" --witness "$W2" --witness-threshold 2
expect_err "not witnessed: .*cosigned by 2 of the 2 witnesses given \(the most any carries: 1\)" "  ... in one line"

{ $WT cosign "$T/w" w3 "$T/c6"; $WT cosign "$T/w" w1 "$T/c6" --time 1893456100; $WT cosign "$T/w" w2 "$T/c6"; } >"$T/l6"
$WT append "$L" "$B" "$T/l6"
expect_exit 0 "w1 and w2 cosign size $B (and w3, not given): threshold 2 holds" \
	"$VERIFY" ledger "$L" "${KEY[@]}" --witness "$W1" --witness "$W2" --witness-threshold 2
check "  ... witnessed: size $B by 2 of 2, 2 entries after it" \
	grep -q "^witnessed: size $B cosigned by 2 of 2 witnesses (threshold 2); 2 entries after" "$T/.out"
printf '# the witnesses we trust\n\n%s\n  # w2, indented comment\n%s  \n' "$W1" "$W2" >"$T/witnesses"
expect_exit 0 "--witness-file (comments, blank lines, trailing spaces) --witness-threshold 2 --json" \
	"$VERIFY" ledger "$L" "${KEY[@]}" --witness-file "$T/witnesses" --witness-threshold 2 --json
json_is "  ... the JSON report's witness fields" "$OUT" ok=true witnesses=2 witness_threshold=2 witnessed_size="$B" \
	witnessed_by=2 after_witnessed=2
check "  ... with each witness's timestamp" $PY -c '
import json, sys
c = json.loads(sys.argv[1])["cosignatures"]
assert c == [{"name": "witness.example/w1", "cosigned": True, "time": 1893456100},
             {"name": "witness.example/w2", "cosigned": True, "time": 1893456000}], c' "$OUT"
expect_exit 0 "--witness W3 alone: w3's line on size $B counts for w3" "$VERIFY" ledger "$L" "${KEY[@]}" --witness "$W3"
check "  ... (size $B, 1 of 1)" grep -q "^witnessed: size $B cosigned by 1 of 1" "$T/.out"

# ---- checkpoint DIR, checkpoint --check FILE, consistency --old ----
expect_exit 0 "checkpoint DIR --witness W2: the newest checkpoint w2 cosigned" \
	"$VERIFY" checkpoint "$L" "${KEY[@]}" --witness "$W2"
printf '%s\n' "$OUT" >"$T/printed"
check "  ... is size $B, printed whole with its cosignatures" cmp -s "$T/printed" <(cat "$T/c6" "$T/l6")
check "  ... and stderr names the witness and its time" sh -c "printf '%s' \"\$1\" | grep -q 'size $B cosigned by 1 of 1 witnesses (threshold 1): witness.example/w2 at 1893456000'" _ "$ERR"
$WT get "$L" "$A" >"$T/c3w"
expect_exit 0 "checkpoint --check FILE --witness W1: holds" "$VERIFY" checkpoint --check "$T/c3w" "${KEY[@]}" --witness "$W1"
expect_exit 1 "checkpoint --check FILE --witness W2 (w2 did not cosign size $A): exit 1" \
	"$VERIFY" checkpoint --check "$T/c3w" "${KEY[@]}" --witness "$W2"
expect_err "cosigned by 0 of the 1 witnesses given, fewer than 1" "  ... in one line"
"$VERIFY" consistency "$L" "$A" "$B" >"$T/proof"
$WT get "$L" "$B" >"$T/c6w"
expect_exit 0 "consistency --old (cosigned by w1) --witness W1: holds" \
	"$VERIFY" consistency --old "$T/c3w" --new "$T/c6w" --proof "$T/proof" "${KEY[@]}" --witness "$W1"
expect_exit 1 "consistency --old --witness W2 (w2 did not cosign the old one): exit 1" \
	"$VERIFY" consistency --old "$T/c3w" --new "$T/c6w" --proof "$T/proof" "${KEY[@]}" --witness "$W2"

# ---- a forged cosignature fails naming the witness ----
G=$(fresh "$S" forged)
$WT cosign "$T/w" w2 "$T/c3" --forge >"$T/lf"
$WT append "$G/ledger" "$A" "$T/lf"
expect_exit 1 "a forged w2 cosignature on size $A: exit 1, though size $B is witnessed" \
	"$VERIFY" ledger "$G/ledger" "${KEY[@]}" --witness "$W1" --witness "$W2"
expect_err "tampered: stored signed checkpoint at size $A: cosignature by witness witness.example/w2 .*does not verify" \
	"  ... in one line naming the witness"
expect_exit 0 "  ... a verifier not given w2 ignores the line" "$VERIFY" ledger "$G/ledger" "${KEY[@]}" --witness "$W1"
G2=$(fresh "$S" forged-head)
$WT get "$G2/ledger" "$E" >"$T/ce"
$WT cosign "$T/w" w2 "$T/ce" --forge >"$T/lfe"
$WT append "$G2/ledger" "$E" "$T/lfe"
expect_exit 1 "checkpoint DIR --witness W2 meets a forged w2 line on the head (size $E) on its way back: exit 1" \
	"$VERIFY" checkpoint "$G2/ledger" "${KEY[@]}" --witness "$W2"
expect_err "size $E: cosignature by witness witness.example/w2 .*does not verify" "  ... naming the witness"

# ---- a cosignature of the fork's checkpoint does not count ----
$WT cosign "$T/w" w1 "$T/f6" >"$T/lfork"
H=$(fresh "$S" fork-line)
$WT append "$H/ledger" "$B" "$T/lfork"
expect_exit 1 "w1's cosignature of the fork's size $B, added to ours: exit 1" \
	"$VERIFY" ledger "$H/ledger" "${KEY[@]}" --witness "$W1"
expect_err "witness.example/w1 .*does not verify over this checkpoint" "  ... naming w1: it cosigned another checkpoint"
cat "$T/f6" "$T/lfork" >"$T/f6w"
$WT cosign "$T/w" w2 "$T/f6" >>"$T/f6w"
expect_exit 0 "the fork's checkpoint, log-signed and cosigned by w1 and w2, holds on its own" \
	"$VERIFY" checkpoint --check "$T/f6w" "${KEY[@]}" --witness "$W1" --witness "$W2" --witness-threshold 2
K=$(fresh "$S" fork-put)
$WT put "$K/ledger" "$B" "$T/f6w"
expect_exit 1 "... but stored in place of our size $B, the ledger fails: its root is not our tree's" \
	"$VERIFY" ledger "$K/ledger" "${KEY[@]}" --witness "$W1" --witness "$W2" --witness-threshold 2
expect_err "tampered.*(root at size $B differs|size $B.*differs)" "  ... in one line"

# ---- usage errors: exit 2, naming what is wrong ----
expect_exit 2 "a vkey with a wrong key ID: exit 2" "$VERIFY" ledger "$L" "${KEY[@]}" --witness "${W1/+/+0}"
expect_err "witness key .*key ID" "  ... saying the key ID is wrong"
expect_exit 2 "--witness-threshold 3 with two witnesses: exit 2" \
	"$VERIFY" ledger "$L" "${KEY[@]}" --witness "$W1" --witness "$W2" --witness-threshold 3
expect_err "only 2 witnesses given" "  ... saying so"
expect_exit 2 "--witness-threshold without a witness: exit 2" "$VERIFY" ledger "$L" "${KEY[@]}" --witness-threshold 1
expect_err "needs --witness" "  ... saying so"
expect_exit 2 "the same witness twice: exit 2" "$VERIFY" ledger "$L" "${KEY[@]}" --witness "$W1" --witness "$W1"
expect_err "given twice" "  ... saying so"
W1B=$(printf '%s' "$W1" | $PY -c '
import base64, hashlib, sys
name, _, key = sys.stdin.read().split("+", 2)
name = "witness.example/alias"
raw = base64.b64decode(key)
print(name + "+" + hashlib.sha256(name.encode() + b"\n" + raw).digest()[:4].hex() + "+" + key)')
expect_exit 2 "w1's key under a second name: exit 2 (one signature would count twice)" \
	"$VERIFY" ledger "$L" "${KEY[@]}" --witness "$W1" --witness "$W1B" --witness-threshold 2
expect_err "the same public key" "  ... saying so"
expect_exit 2 "--witness with export (which reads no signature): exit 2" "$VERIFY" export "$L" --witness "$W1"
expect_err "are for ledger, checkpoint and consistency" "  ... saying which commands take it"
printf '# nothing\n' >"$T/empty"
expect_exit 2 "--witness-file naming no witness: exit 2" "$VERIFY" ledger "$L" "${KEY[@]}" --witness-file "$T/empty"
expect_err "names no witness" "  ... saying so"
done_testing
