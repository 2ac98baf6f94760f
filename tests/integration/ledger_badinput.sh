#!/usr/bin/env bash
# Bad input never crashes assent-verify or assent: damaged entries, non-canonical
# CBOR, huge declared lengths, random bit flips in data.mdb, missing, unreadable and
# foreign directories, bad signatures, bad keys and options, and malformed JSON lines
# for `assent ledger append`. Each ends with exit 1 or 2, never a signal, and one
# clear line on stderr.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ledger_helpers.bash"
chmod 755 "$T" # the unprivileged user below must reach the files it is allowed to read

requests 1 11 | "$ASSENT" --state "$T/base" ledger append >/dev/null || { not_ok "cannot build the base ledger"; done_testing; exit 1; }
cp "$T/base/keys/checkpoint.pub" "$T/trusted.pub"
chmod 644 "$T/trusted.pub"
PUB=$T/trusted.pub
intact "untouched base ledger" "$T/base/ledger"

# bad_entry DESC HEX: entry 4 replaced by the bytes HEX; reported at seq 4 as bad
# CBOR or a bad entry, by the decoder (not by a crash of the reader).
bad_entry() {
	local s
	s=$(fresh "$T/base" bad)
	$TOOL put "$s/ledger" 4 "$2"
	tampered "$1" "$s/ledger" 4
	if grep -q "killed the LMDB reader" "$T/.err"; then not_ok "$1: the reader crashed: $ERR"; else ok "$1: refused by the decoder, no crash"; fi
}
# ---- entry values that are not CBOR, or not an entry ----
bad_entry "entry value is ASCII text, not CBOR" "$(printf 'not cbor at all' | od -An -tx1 | tr -d ' \n')"
bad_entry "entry value is a lone break byte" ff
bad_entry "entry value is empty" ""
bad_entry "entry value is an empty CBOR map" a0
bad_entry "entry value is a CBOR array" 83010203
bad_entry "entry value is a map with a tag" a16176c101

# ---- non-canonical CBOR with the same content ----
# Any changed byte breaks the chain anyway; the decoder must refuse the form itself
# (deterministic CBOR is the format), so the reason must say what is wrong.
noncanon() { # DESC MODE PATTERN
	local s
	s=$(fresh "$T/base" nc)
	$TOOL noncanon "$s/ledger" 4 "$2"
	tampered "$1" "$s/ledger" 4
	if printf '%s' "$ERR" | grep -qiE -- "$3"; then ok "$1: the reason says so"; else not_ok "$1: reason should match '$3': $ERR"; fi
}
noncanon "seq written in the long (8-byte) integer form" longint "shortest|canonical"
noncanon "message length written in a 2-byte head" longlen "shortest|canonical"
noncanon "map keys unsorted" unsorted "order|sorted|canonical"
noncanon "duplicate map key" dup "duplicate"
noncanon "indefinite-length map" indef "indefinite"
noncanon "a trailing byte after the entry" trailing "trailing"

# ---- declared lengths far beyond the data ----
bad_entry "array declaring 2^30 items (9a 40 00 00 00)" 9a40000000
bad_entry "byte string declaring 2^64-1 bytes (5b ff..ff)" 5bffffffffffffffff00
bad_entry "byte string declaring 2^32 bytes" 5b000000010000000000
bad_entry "text string declaring 2^31 bytes" 7b000000008000000041
bad_entry "map declaring 2^64-1 pairs" bbffffffffffffffff
bad_entry "array declaring 2^32-1 items (4-byte head)" 9affffffff
bad_entry "map declaring 2^30 pairs inside an entry" a1616bba40000000
s=$(fresh "$T/base" big)
$PY -c 'import sys; sys.stdout.write("5a00110000" + "41" * 0x110000)' >"$T/big.hex"
$TOOL put "$s/ledger" 4 "@$T/big.hex"
tampered "an entry of 1.06 MiB, over the 1 MiB maximum" "$s/ledger" 4

# ---- random bit flips in data.mdb ----
requests 1 300 | "$ASSENT" --state "$T/flip" ledger append --batch 50 --checkpoint-every 100 >/dev/null
R=$($TOOL bitflips "$T/flip/ledger" 150 4242 "$VERIFY" "$T/flip/keys/checkpoint.pub" "$T/flipwork")
printf '# bit flips: %.2000s\n' "$R"
field() { printf '%s' "$R" | $PY -c "import json,sys; r=json.load(sys.stdin); print($1)"; }
check "150 random bit flips in data.mdb: every run exits 0, 1 or 2, none killed by a signal or hung" \
	[ "$(field 'len(r["signal"]) + len(r["timeout"]) + sum(v for k, v in r["codes"].items() if k not in ("0","1","2"))')" = 0 ]
check "  ... stderr is exactly one line on every failure and empty when intact" [ "$(field 'len(r["bad_stderr"]) + len(r["crash_text"])')" = 0 ]
check "  ... 'intact' only where the entries read back unchanged (flip in free space or a stale page)" \
	[ "$(field 'len(r["missed"]) + len(r["unreadable_but_intact"])')" = 0 ]
check "  ... and the flips did damage: at least 30 of 150 reported (exit 1)" [ "$(field 'r["codes"].get("1", 0)')" -ge 30 ]

# ---- the other readers on a damaged ledger ----
S=$(fresh "$T/base" other)
$TOOL put "$S/ledger" 4 9a40000000
expect_exit 1 "export of a ledger with a damaged entry 4: exit 1" "$VERIFY" export "$S/ledger"
expect_err "seq 4" "  ... one line naming seq 4"
check "  ... after exporting the 4 good entries before it" [ "$(printf '%s\n' "$OUT" | grep -c '"seq"')" = 4 ]
expect_exit 1 "proof from a ledger with a damaged entry 4: exit 1" "$VERIFY" proof "$S/ledger" 7 --key "$PUB"
expect_err "4" "  ... one line naming entry 4"
S=$(fresh "$T/base" other)
cp "$S/ledger/checkpoint" "$T/stored2.ck"
$PY -c 'import sys; p=sys.argv[1]; t=open(p).read().replace("\n12\n", "\n13\n", 1); open(p, "w").write(t)' "$T/stored2.ck"
$TOOL ckpt_put "$S/ledger" 12 "$T/stored2.ck"
expect_exit 1 "checkpoint command when the latest stored checkpoint was edited: exit 1" "$VERIFY" checkpoint "$S/ledger" --key "$PUB"
expect_err "signature|size|checkpoint" "  ... one line"
tampered_noseq "a stored checkpoint whose size line was edited" "$S/ledger" "checkpoint"

# ---- directories that are not (readable) ledgers ----
expect_exit 2 "missing directory: exit 2" "$VERIFY" ledger "$T/nonexistent" --key "$PUB"
expect_err "nonexistent.*(No such|not found|missing)" "missing directory: one line naming it"
expect_exit 2 "missing directory without --key: exit 2" "$VERIFY" ledger "$T/nonexistent"
expect_err "." "missing directory without --key: one line"
mkdir -p "$T/empty"
expect_exit 2 "empty directory: exit 2" "$VERIFY" ledger "$T/empty" --key "$PUB"
expect_err "no ledger|not a ledger|data.mdb" "empty directory: one line saying there is no ledger"
touch "$T/plainfile"
expect_exit 2 "a regular file instead of a directory: exit 2" "$VERIFY" ledger "$T/plainfile" --key "$PUB"
expect_err "not a directory" "a regular file: one line saying so"
mkdir -p "$T/junk" && head -c 20000 /dev/urandom >"$T/junk/data.mdb"
"$VERIFY" ledger "$T/junk" --key "$PUB" >/dev/null 2>"$T/.err"
rc=$? ERR=$(cat "$T/.err")
check "random bytes as data.mdb: exit 1 or 2 (got $rc)" [ "$rc" = 1 -o "$rc" = 2 ]
expect_err "LMDB|damaged|not a" "random bytes as data.mdb: one line saying it is not LMDB"
$PY -c 'import lmdb, sys
e = lmdb.open(sys.argv[1], max_dbs=4)
with e.begin(write=True) as t:
    t.put(b"hello", b"world")' "$T/foreign"
"$VERIFY" ledger "$T/foreign" --key "$PUB" >/dev/null 2>"$T/.err"
rc=$? ERR=$(cat "$T/.err")
check "an LMDB environment that is not a ledger: exit 1 or 2 (got $rc)" [ "$rc" = 1 -o "$rc" = 2 ]
expect_err "no assent ledger|not a ledger|named databases" "an LMDB environment that is not a ledger: one line saying so"

if [ "$(id -u)" = 0 ]; then
	S=$(fresh "$T/base" locked)
	chmod 700 "$S" "$S/ledger"
	expect_exit 2 "unreadable ledger (0700 root) verified as uid 65534: exit 2" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$VERIFY" ledger "$S/ledger" --key "$PUB"
	expect_err "Permission denied|cannot read" "unreadable ledger: one line saying it cannot be read"
	chmod 755 "$S" "$S/ledger"
	chmod 600 "$S/ledger/data.mdb"
	expect_exit 2 "data.mdb unreadable (0600 root) for uid 65534: exit 2" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$VERIFY" ledger "$S/ledger" --key "$PUB"
	expect_err "Permission denied|cannot read" "unreadable data.mdb: one line saying it cannot be read"
else
	ok "unreadable ledger as another user # SKIP needs root for setpriv"
fi

# ---- checkpoints with bad signatures ----
sigflip() { # FILE: change one character of the signature (last line) in place
	$PY -c 'import sys
p = sys.argv[1]
t = open(p, "rb").read().rstrip(b"\n").split(b"\n")
sig = bytearray(t[-1]); i = len(sig) - 20
sig[i] = ord("B") if sig[i] != ord("B") else ord("C")
t[-1] = bytes(sig)
open(p, "wb").write(b"\n".join(t) + b"\n")' "$1"
}
S=$(fresh "$T/base" sig)
sigflip "$S/ledger/checkpoint"
tampered_noseq "checkpoint file with a changed signature" "$S/ledger" "signature|not signed|trusted key"
S=$(fresh "$T/base" sig)
sed -i 's/^— /-- /' "$S/ledger/checkpoint"
tampered_noseq "checkpoint file whose signature line lost its em dash" "$S/ledger" "signature|em dash|checkpoint"
S=$(fresh "$T/base" sig)
cp "$S/ledger/checkpoint" "$T/stored.ck" && sigflip "$T/stored.ck"
$TOOL ckpt_put "$S/ledger" 12 "$T/stored.ck"
tampered_noseq "stored checkpoint (LMDB) with a changed signature" "$S/ledger" "signature|not signed|trusted key"
S=$(fresh "$T/base" sig)
printf 'assent/x\n12\nnot base64\n\n' >"$T/nosig.ck"
$TOOL ckpt_put "$S/ledger" 12 "$T/nosig.ck"
tampered_noseq "stored checkpoint without a signature line, bad root" "$S/ledger" "checkpoint"

cp "$T/base/ledger/checkpoint" "$T/trusted-bad.ck" && sigflip "$T/trusted-bad.ck"
"$VERIFY" ledger "$T/base/ledger" --key "$PUB" --trusted "$T/trusted-bad.ck" >/dev/null 2>"$T/.err"
rc=$? ERR=$(cat "$T/.err")
check "--trusted checkpoint with a bad signature: exit 1 or 2 (got $rc)" [ "$rc" = 1 -o "$rc" = 2 ]
expect_err "trusted.*(signature|not signed|trusted key)" "--trusted with a bad signature: one line naming it"
printf 'hello\n' >"$T/trusted-junk.ck"
"$VERIFY" ledger "$T/base/ledger" --key "$PUB" --trusted "$T/trusted-junk.ck" >/dev/null 2>"$T/.err"
rc=$? ERR=$(cat "$T/.err")
check "--trusted file that is not a checkpoint: exit 1 or 2 (got $rc)" [ "$rc" = 1 -o "$rc" = 2 ]
expect_err "trusted" "--trusted junk: one line naming it"
expect_exit 2 "--trusted file missing: exit 2" "$VERIFY" ledger "$T/base/ledger" --key "$PUB" --trusted "$T/nope.ck"
expect_err "nope.ck" "--trusted missing: one line naming the file"

# ---- --key that is not a key ----
printf 'not a key\n' >"$T/notakey.pem"
expect_exit 2 "--key file of text: exit 2" "$VERIFY" ledger "$T/base/ledger" --key "$T/notakey.pem"
expect_err "notakey.pem.*(key|PEM)" "--key of text: one line naming the file"
printf -- '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n' >"$T/badpem.pem"
expect_exit 2 "--key PEM with a bad body: exit 2" "$VERIFY" ledger "$T/base/ledger" --key "$T/badpem.pem"
expect_err "badpem.pem" "--key bad PEM: one line naming the file"
expect_exit 2 "--key with the private key file: exit 2" "$VERIFY" ledger "$T/base/ledger" --key "$T/base/keys/checkpoint.key"
expect_err "checkpoint.key" "--key private key: one line naming the file"
expect_exit 2 "--key that is a directory: exit 2" "$VERIFY" ledger "$T/base/ledger" --key "$T/base/keys"
expect_err "keys" "--key directory: one line"
expect_exit 2 "--key missing file: exit 2" "$VERIFY" ledger "$T/base/ledger" --key "$T/nokey.pem"
expect_err "nokey.pem" "--key missing: one line naming the file"

# ---- unknown commands and options, bad arguments ----
expect_exit 2 "assent-verify with an unknown command: exit 2" "$VERIFY" frobnicate "$T/base/ledger"
expect_err "unknown command" "  ... one line"
expect_exit 2 "assent-verify ledger with an unknown option: exit 2" "$VERIFY" ledger "$T/base/ledger" --frobnicate
expect_err "unknown|unrecognized" "assent-verify ledger --frobnicate: one stderr line"
expect_exit 2 "assent-verify without a command: exit 2" "$VERIFY"
expect_err "." "  ... one line"
expect_exit 2 "assent-verify ledger with two directories: exit 2" "$VERIFY" ledger "$T/base/ledger" "$T/base/ledger"
expect_err "." "  ... one line"
expect_exit 2 "assent-verify export --from not a number: exit 2" "$VERIFY" export "$T/base/ledger" --from x
expect_err "from" "  ... one line"
expect_exit 2 "assent-verify proof with a non-numeric seq: exit 2" "$VERIFY" proof "$T/base/ledger" seven --key "$PUB"
expect_err "seven" "  ... one line"
expect_exit 2 "assent with an unknown command: exit 2" "$ASSENT" --state "$T/base" frobnicate
expect_err "unknown command" "  ... one line"
expect_exit 2 "assent with an unknown option: exit 2" "$ASSENT" --frobnicate
expect_err "unknown option" "  ... one line"
expect_exit 2 "assent ledger append with an unknown option: exit 2" "$ASSENT" --state "$T/base" ledger append --frobnicate </dev/null
expect_err "option" "assent ledger append --frobnicate: one stderr line"
expect_exit 2 "assent ledger append --batch 0: exit 2" "$ASSENT" --state "$T/base" ledger append --batch 0 </dev/null
expect_err "option|batch" "  ... one line"

# ---- bad JSON lines for `assent ledger append`: refused whole, nothing written ----
A=$T/app
requests 1 3 | "$ASSENT" --state "$A" ledger append >/dev/null
before_count=$(entry_count "$A/ledger")
cp "$A/ledger/data.mdb" "$T/app-data.mdb"
cp "$A/ledger/checkpoint" "$T/app-checkpoint"
badline() { # DESC LINE PATTERN: LINE as line 3 after two good ones
	printf '%s\n%s\n%s\n' '{"kind":"timeout","session_id":"s1","reason":"late"}' \
		'{"kind":"cancelled","session_id":"s2","reason":"user"}' "$2" >"$T/bad.jsonl"
	expect_exit 1 "append refuses $1: exit 1" "$ASSENT" --state "$A" ledger append <"$T/bad.jsonl"
	expect_err "line 3.*($3)" "append refuses $1: one line naming line 3"
	if cmp -s "$A/ledger/data.mdb" "$T/app-data.mdb" && cmp -s "$A/ledger/checkpoint" "$T/app-checkpoint"; then
		ok "append refuses $1: ledger unchanged (data.mdb and checkpoint byte for byte)"
	else not_ok "append refuses $1: the ledger changed"; fi
}
badline "malformed JSON" '{"kind":"request","session_id":"x"' "JSON"
badline "a JSON array" '["kind","request"]' "object"
badline "a JSON string" '"request"' "object|JSON"
badline "a JSON float" '{"kind":"timeout","session_id":"x","reason":"r","score":0.5}' "integer|number|float"
badline "a float hidden in a nested object" '{"kind":"timeout","session_id":"x","reason":"r","ctx":{"a":[1,2.0]}}' "integer|number|float"
badline "a missing kind" '{"session_id":"x","reason":"r"}' "kind"
badline "an unknown kind" '{"kind":"bogus","session_id":"x"}' "kind|bogus"
badline "a reserved field seq" '{"kind":"timeout","session_id":"x","reason":"r","seq":5}' "seq"
badline "a reserved field prev" '{"kind":"timeout","session_id":"x","reason":"r","prev":"00"}' "prev"
badline "a missing required field" '{"kind":"request","session_id":"x","type":"approval"}' "message"
badline "a required field of the wrong type" '{"kind":"request","session_id":"x","type":"approval","message":7}' "message"
badline "a duplicate key" '{"kind":"timeout","session_id":"x","reason":"r","reason":"s"}' "duplicate"
check "after the refused appends the ledger still holds $before_count entries" [ "$(entry_count "$A/ledger")" = "$before_count" ]
PUB=$A/keys/checkpoint.pub intact "the ledger after all the refused appends" "$A/ledger"
printf '%s\n' '{"kind":"timeout","session_id":"x","reason":"r","seq":1}' >"$T/bad1.jsonl"
expect_exit 1 "a refused append into a new state" "$ASSENT" --state "$T/newstate" ledger append <"$T/bad1.jsonl"
check "  ... creates no ledger" [ ! -e "$T/newstate/ledger/data.mdb" ]

done_testing
