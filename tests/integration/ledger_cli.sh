#!/usr/bin/env bash
# The ledger's happy path as users and auditors meet it: append entries of every
# kind, verify, export ranges, print checkpoints, make and check inclusion proofs,
# read --json reports, and verify a read-only copy as an unprivileged auditor.
# Hashes and roots are recomputed independently (tests/integration/ledger_tool.py).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ledger_helpers.bash"
chmod 755 "$T" # the unprivileged auditor below must reach its copy

# pyc SCRIPT ARGS...: a python check; passes when it exits 0, prints why otherwise.
pyc() {
	local d=$1 code=$2
	shift 2
	local why
	if why=$($PY -c "$code" "$@" 2>&1); then ok "$d"; else not_ok "$d: $(printf '%s' "$why" | tail -3 | head -c 600)"; fi
}

# ---- --help ----
expect_exit 0 "assent --help exits 0" "$ASSENT" --help
check "  ... and prints the usage with ledger append" grep -q "ledger append" "$T/.out"
expect_exit 0 "assent-verify --help exits 0" "$VERIFY" --help
check "  ... and prints the usage with proof --check" grep -q "proof --check" "$T/.out"

# ---- append entries of every kind ----
S=$T/state
cat >"$T/entries.jsonl" <<'EOF'
{"kind":"policy_load","digest":"sha256:0f1e2d3c","source":"/etc/assent/policy.conf","rules":3}
{"kind":"identity","event":"reviewer added","name":"alice","groups":["ops","sre"]}
{"kind":"request","session_id":"r-1","type":"approval","message":"Deploy v1.2 to prod? ünïcødé ✓","context":{"diff":"+a\n-b","lines":[1,-2,3]},"options":["yes","no"],"default":null,"deadline":1700000000000}
{"kind":"decision","session_id":"r-1","outcome":"approved","response":"go","reviewer":{"name":"alice","channel":"cli"},"assurance":"reviewer","token":{"jti":"j1","kid":"k1","exp":1700000300}}
{"kind":"request","session_id":"r-2","type":"selection","message":"pick one","options":["a","b","c"],"default":"b"}
{"kind":"timeout","session_id":"r-2","reason":"deadline passed"}
{"kind":"request","session_id":"r-3","type":"input","message":"name?","audience":"tf-prod","flags":[true,false,null]}
{"kind":"cancelled","session_id":"r-3","reason":"agent went away"}
{"kind":"abandoned","session_id":"r-4","reason":"daemon restarted","attempts":-1}
{"kind":"key","purpose":"token","kid":"tok-1","event":"rotated"}
EOF
N=10
expect_exit 0 "append $N entries of every kind" "$ASSENT" --state "$S" ledger append <"$T/entries.jsonl"
printf '%s\n' "$OUT" >"$T/append.out"
pyc "append prints one {seq, leaf_hash} per entry, seq 1..$N after the key entry" '
import json, re, sys
lines = open(sys.argv[1]).read().split("\n")[:-1]
recs = [json.loads(l) for l in lines]
assert [r["seq"] for r in recs] == list(range(1, int(sys.argv[2]) + 1)), [r["seq"] for r in recs]
assert all(set(r) == {"seq", "leaf_hash"} and re.fullmatch("[0-9a-f]{64}", r["leaf_hash"]) for r in recs)
' "$T/append.out" $N
L=$S/ledger
check "the ledger holds $((N + 1)) entries (key entry first)" [ "$(entry_count "$L")" = $((N + 1)) ]
read -r chain_n MROOT < <($TOOL chain "$L")
check "independent check: entries canonical, numbered and linked by prev" [ "$chain_n" = $((N + 1)) ]
$TOOL dump "$L" >"$T/dump.jsonl"
pyc "the printed leaf hashes are SHA-256(0x00 || stored entry)" '
import json, sys
printed = [json.loads(l) for l in open(sys.argv[1])]
dump = {r["seq"]: r["leaf_hash"] for r in map(json.loads, open(sys.argv[2]))}
assert all(p["leaf_hash"] == dump[p["seq"]] for p in printed)
' "$T/append.out" "$T/dump.jsonl"

# ---- verify ----
# A verification pins its key: the state directory's key only when asked for, and
# then it says that this proves consistency only.
expect_exit 2 "verify without a pinned key is a usage error" "$VERIFY" ledger "$L"
expect_err "pin the checkpoint key.*--key.*--trusted.*--key-from-state" "  ... naming the ways to pin it"
expect_exit 0 "verify with the key from the state directory (--key-from-state)" "$VERIFY" ledger "$L" --key-from-state
check "  ... says intact, $((N + 1)) entries, head seq $N" grep -q "^ledger intact: $((N + 1)) entries, head seq $N," "$T/.out"
check "  ... and the root we computed" grep -q "root $MROOT" "$T/.out"
check "  ... and 0 entries after the last signed checkpoint, a demo ledger" \
	grep -q "0 entries after the last signed checkpoint (size $((N + 1))), a demo ledger: origin assent-demo/" "$T/.out"
expect_err "note: .*key.*state directory.*consistent with itself" "  ... with one note that it proves consistency only"
cp "$S/keys/checkpoint.pub" "$T/trusted.pub"
chmod 644 "$T/trusted.pub"
PUB=$T/trusted.pub
expect_exit 0 "verify with --key" "$VERIFY" ledger "$L" --key "$PUB"
check "  ... prints nothing on stderr" [ -z "$ERR" ]
expect_exit 0 "verify --json" "$VERIFY" ledger "$L" --key "$PUB" --json
HEAD=$(tail -1 "$T/append.out" | $PY -c 'import json,sys; print(json.load(sys.stdin)["leaf_hash"])')
json_is "--json: ok, entries, head_seq, head_leaf_hash, root, key and lock flags" "$OUT" ok=true entries=$((N + 1)) \
	head_seq=$N "head_leaf_hash=\"$HEAD\"" "root=\"$MROOT\"" trusted_consistent=0 key_from_state_dir=false read_without_lock=false \
	signed_size=$((N + 1)) unsigned_tail=0 demo=true
pyc "--json: at least the stored checkpoints at sizes 1 and $((N + 1)) verified" '
import json, sys
assert json.loads(sys.argv[1])["checkpoints_verified"] >= 2' "$OUT"
expect_exit 0 "verify --json --key-from-state" "$VERIFY" ledger "$L" --json --key-from-state
json_is "  ... reports key_from_state_dir true" "$OUT" ok=true key_from_state_dir=true

# ---- export ----
expect_exit 0 "export everything" "$VERIFY" export "$L"
printf '%s\n' "$OUT" >"$T/export.jsonl"
pyc "export: $((N + 1)) lines matching the appended entries, chained, with the key entry first" '
import json, sys
exp = [json.loads(l) for l in open(sys.argv[1])]
inp = [json.loads(l) for l in open(sys.argv[2])]
dump = [json.loads(l) for l in open(sys.argv[3])]
pub = open(sys.argv[4]).read()
assert [e["seq"] for e in exp] == list(range(len(inp) + 1))
prev = "00" * 32
for e, d in zip(exp, dump):
    ent = e["entry"]
    assert e["leaf_hash"] == d["leaf_hash"], e["seq"]
    assert ent["v"] == 1 and ent["seq"] == e["seq"] and ent["prev"] == prev and isinstance(ent["time"], int), e
    prev = e["leaf_hash"]
k = exp[0]["entry"]
assert (k["kind"], k["purpose"], k["event"], k["public_key"]) == ("key", "checkpoint", "created", pub), k
for e, want in zip(exp[1:], inp):
    got = {f: x for f, x in e["entry"].items() if f not in ("v", "seq", "time", "prev")}
    assert got == want, (got, want)
' "$T/export.jsonl" "$T/entries.jsonl" "$T/dump.jsonl" "$S/keys/checkpoint.pub"
expect_exit 0 "export --from 3 --to 6" "$VERIFY" export "$L" --from 3 --to 6
check "  ... prints exactly lines 3-6 of the full export" [ "$OUT" = "$(sed -n 4,7p "$T/export.jsonl")" ]
expect_exit 0 "export --from 9" "$VERIFY" export "$L" --from 9
check "  ... prints seq 9 and 10" [ "$(printf '%s\n' "$OUT" | grep -o '^{"seq":[0-9]*' | tr -d '{"seq:' | tr '\n' ' ')" = "9 10 " ]
expect_exit 0 "export --to 0" "$VERIFY" export "$L" --to 0
check "  ... prints only the key entry" [ "$OUT" = "$(sed -n 1p "$T/export.jsonl")" ]
expect_exit 0 "export --from past the end" "$VERIFY" export "$L" --from 50
check "  ... prints nothing" [ -z "$OUT" ]
expect_exit 2 "export --from 6 --to 3 is a usage error" "$VERIFY" export "$L" --from 6 --to 3

# ---- checkpoints ----
expect_exit 0 "assent ledger checkpoint" "$ASSENT" --state "$S" ledger checkpoint
printf '%s\n' "$OUT" >"$T/ck11"
# `assent ledger append` writes demo ledgers: their origin says so.
pyc "  ... prints a signed note for size $((N + 1)) with our root and origin assent-demo/<key id>" '
import base64, re, sys
t = open(sys.argv[1]).read().split("\n")
assert re.fullmatch("assent-demo/[0-9a-f]{8}", t[0]), t[0]
assert t[1] == sys.argv[2], t[1]
assert base64.b64decode(t[2]).hex() == sys.argv[3]
assert t[3] == "" and t[4].startswith("\u2014 " + t[0] + " "), t
' "$T/ck11" $((N + 1)) "$MROOT"
check "  ... the same note as the checkpoint file" cmp -s "$T/ck11" "$L/checkpoint"
expect_exit 0 "assent-verify checkpoint" "$VERIFY" checkpoint "$L" --key "$PUB"
check "  ... prints the same note" [ "$OUT" = "$(cat "$T/ck11")" ]
expect_exit 2 "assent-verify checkpoint without a pinned key is a usage error" "$VERIFY" checkpoint "$L"
expect_err "pin" "  ... one line naming the ways to pin it"
SHA=$($TOOL spki_sha256 "$PUB")
expect_exit 0 "assent-verify checkpoint --key-sha256 (the key in the state directory, pinned)" \
	"$VERIFY" checkpoint "$L" --key-sha256 "$SHA"
check "  ... prints the same note, nothing on stderr" [ "$OUT" = "$(cat "$T/ck11")" -a -z "$ERR" ]
expect_exit 1 "assent-verify checkpoint --key-sha256 of another key exits 1" \
	"$VERIFY" checkpoint "$L" --key-sha256 "$(printf '%064d' 0)"
expect_exit 0 "assent-verify checkpoint --key-from-state" "$VERIFY" checkpoint "$L" --key-from-state
expect_err "note: .*state directory.*consistency only" "  ... with a note that this shows consistency only"
expect_exit 2 "assent-verify proof without a pinned key is a usage error" "$VERIFY" proof "$L" 3

requests 101 105 | "$ASSENT" --state "$S" ledger append >/dev/null
read -r _ ROOT16 < <($TOOL chain "$L")
expect_exit 0 "after 5 more entries, assent-verify checkpoint" "$VERIFY" checkpoint "$L" --key "$PUB"
printf '%s\n' "$OUT" >"$T/ck16"
check "  ... is for size 16" [ "$(sed -n 2p "$T/ck16")" = 16 ]
check "stored checkpoints are at sizes 1, 11 and 16" [ "$($TOOL ckpt_sizes "$L")" = "1 11 16" ]
expect_exit 0 "verify against the saved checkpoint at size 11" "$VERIFY" ledger "$L" --key "$PUB" --trusted "$T/ck11" --json
json_is "  ... one trusted checkpoint consistent, root recomputed" "$OUT" ok=true entries=16 trusted_consistent=1 "root=\"$ROOT16\""

# ---- inclusion proofs ----
for seq in 0 5 10 15; do
	expect_exit 0 "proof of entry $seq" "$VERIFY" proof "$L" $seq --key "$PUB"
	printf '%s\n' "$OUT" >"$T/proof$seq.json"
	pyc "  ... names entry $seq in the tree of size 16, with its leaf hash and entry bytes" '
import base64, json, sys
sys.path.insert(0, sys.argv[4])
import ledger_tool as lt
p = json.load(open(sys.argv[1]))
seq = int(sys.argv[2])
d = [json.loads(l) for l in open(sys.argv[3])]
raw = base64.b64decode(p["entry"])
assert p["index"] == seq and p["tree_size"] == 16, p
assert lt.leaf_hash(raw).hex() == p["leaf_hash"] and p["root"] == sys.argv[5]
m, _ = lt.cbor_decode(raw)
assert lt.to_json(m)["seq"] == seq
assert p["checkpoint"] == open(sys.argv[6]).read()
' "$T/proof$seq.json" $seq <($TOOL dump "$L") "$ROOT/tests/integration" "$ROOT16" "$T/ck16"
	expect_exit 0 "  ... holds" "$VERIFY" proof --check "$T/proof$seq.json" --key "$PUB"
	check "  ... and says so" grep -q "entry $seq is in the signed tree of size 16" "$T/.out"
	check "  ... and what the proven entry says (as export prints it)" \
		sh -c "grep -q '^entry $seq: {.*\"seq\":$seq[,}]' '$T/.out'"
	expect_exit 0 "  ... holds with the checkpoint given separately" \
		"$VERIFY" proof --check "$T/proof$seq.json" --key "$PUB" --checkpoint "$T/ck16"
done
expect_exit 0 "proof of entry 3 at the older size 11" "$VERIFY" proof "$L" 3 --size 11 --key "$PUB"
printf '%s\n' "$OUT" >"$T/proof3-11.json"
json_is "  ... is for the tree of size 11" "$OUT" index=3 tree_size=11
expect_exit 0 "  ... holds against the checkpoint saved at size 11" \
	"$VERIFY" proof --check "$T/proof3-11.json" --key "$PUB" --checkpoint "$T/ck11"
expect_exit 1 "a proof for size 16 does not hold against the checkpoint of size 11" \
	"$VERIFY" proof --check "$T/proof5.json" --key "$PUB" --checkpoint "$T/ck11"
expect_err "tree of size 16, the checkpoint given is of size 11: make the proof at that size \\(assent-verify proof LEDGER 5 --size 11" \
	"  ... and says how to make one that fits (--size 11)"
expect_exit 2 "proof --check without --key is a usage error" "$VERIFY" proof --check "$T/proof5.json"
expect_exit 2 "proof of an entry past the end is refused" "$VERIFY" proof "$L" 16 --key "$PUB"

# ---- docs/audit.md's snapshot line, as written (mdb_copy needs its target directory) ----
SNAPLINE=$(grep -m1 '^mkdir -p /path/to/snapshot && mdb_copy STATE/ledger /path/to/snapshot$' "$ROOT/docs/audit.md")
check "docs/audit.md gives the snapshot line" test -n "$SNAPLINE"
expect_exit 0 "docs/audit.md's snapshot line copies the ledger" \
	sh -c "$(printf '%s' "$SNAPLINE" | sed "s|STATE|$S|; s|/path/to/snapshot|$T/snap/copy|g")"
expect_exit 0 "  ... and the copy verifies" "$VERIFY" ledger "$T/snap/copy" --key "$PUB"

# ---- an auditor without write access ----
if [ "$(id -u)" = 0 ]; then
	# A copy owned by root, directory 0755, files 0644: uid 65534 can read but not lock.
	AUD=$T/audit
	mkdir -p "$AUD/ledger" "$AUD/keys"
	cp "$L/data.mdb" "$L/lock.mdb" "$L/checkpoint" "$AUD/ledger/"
	cp "$S/keys/checkpoint.pub" "$AUD/keys/"
	cp "$T/ck11" "$AUD/saved.ck"
	chmod 755 "$AUD" "$AUD/ledger" "$AUD/keys"
	chmod 644 "$AUD"/ledger/* "$AUD/keys/checkpoint.pub" "$AUD/saved.ck"
	lock_before=$(md5sum <"$AUD/ledger/lock.mdb")
	asnobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	expect_exit 0 "auditor (uid 65534) verifies a read-only copy" asnobody "$VERIFY" ledger "$AUD/ledger" --key "$AUD/keys/checkpoint.pub"
	check "  ... intact, 16 entries" grep -q "^ledger intact: 16 entries" "$T/.out"
	expect_err "without a lock|lock" "  ... with one note that it read without LMDB's lock"
	expect_exit 0 "auditor verify --json with the saved checkpoint" \
		asnobody "$VERIFY" ledger "$AUD/ledger" --key "$AUD/keys/checkpoint.pub" --trusted "$AUD/saved.ck" --json
	json_is "  ... read_without_lock true, one trusted checkpoint consistent" "$OUT" ok=true entries=16 \
		read_without_lock=true trusted_consistent=1 "root=\"$ROOT16\""
	expect_exit 0 "auditor verify using the key beside the copy (DIR/../keys, --key-from-state)" asnobody "$VERIFY" ledger "$AUD/ledger" --key-from-state
	expect_exit 0 "auditor exports the copy" asnobody "$VERIFY" export "$AUD/ledger"
	check "  ... 16 lines, the same as the owner's export" [ "$OUT" = "$("$VERIFY" export "$L")" ]
	expect_exit 0 "auditor makes a proof from the copy" asnobody "$VERIFY" proof "$AUD/ledger" 7 --key "$AUD/keys/checkpoint.pub"
	check "the auditor's reads left lock.mdb untouched" [ "$(md5sum <"$AUD/ledger/lock.mdb")" = "$lock_before" ]
	rm "$AUD/ledger/lock.mdb"
	expect_exit 0 "auditor verifies a copy that has no lock.mdb" asnobody "$VERIFY" ledger "$AUD/ledger" --key "$AUD/keys/checkpoint.pub"
	check "  ... and creates none" [ ! -e "$AUD/ledger/lock.mdb" ]
	tamper_aud=$(fresh "$AUD" audit-bad)
	chmod 755 "$tamper_aud" "$tamper_aud/ledger"
	$TOOL flip "$tamper_aud/ledger" 12 text:deploy >/dev/null || not_ok "could not edit the auditor's copy"
	chmod 644 "$tamper_aud"/ledger/*
	expect_exit 1 "auditor on a tampered read-only copy: exit 1" asnobody "$VERIFY" ledger "$tamper_aud/ledger" --key "$AUD/keys/checkpoint.pub"
	expect_err "tampered at seq 12: " "  ... one line naming seq 12"
else
	ok "auditor without write access # SKIP needs root for setpriv"
fi

done_testing
