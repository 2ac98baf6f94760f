#!/usr/bin/env bash
# Keys in an HSM (issue 31 part 3): the token and checkpoint keys made by `assent keygen
# --pkcs11` in a SoftHSM2 token of our own (SOFTHSM2_CONF under $T); a daemon signs
# through the module; its token verifies with assent-verify and Python's jwt against the
# JWKS, its ledger (checkpoints signed in the token) with assent-verify; the state
# directory holds no private key; each misconfiguration fails at start, named.
. "$(dirname "$0")/../lib.sh"
S=$T/state
DPID=
trap _daemon_cleanup EXIT
MOD=
for m in /usr/lib/softhsm/libsofthsm2.so /usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so; do
	[ -f "$m" ] && MOD=$m && break
done
if [ -z "$MOD" ] || ! command -v softhsm2-util >/dev/null; then
	not_ok "SoftHSM2 is not installed (make deps installs softhsm2)"
	done_testing
	exit 1
fi
mkdir -p "$T/tokens"
printf 'directories.tokendir = %s/tokens\nobjectstore.backend = file\nlog.level = ERROR\n' "$T" >"$T/softhsm2.conf"
export SOFTHSM2_CONF=$T/softhsm2.conf
check "softhsm2-util makes a token labelled assent" \
	sh -c "softhsm2-util --init-token --free --label assent --pin 1234 --so-pin 5678 >/dev/null"
printf '1234\n' >"$T/pin"
chmod 600 "$T/pin"
export ASSENT_PKCS11_MODULE=$MOD ASSENT_PKCS11_TOKEN=assent ASSENT_PKCS11_PIN_FILE=$T/pin
export FEEDBACK_SSE_PORT=off ASSENT_REVIEW_PORT=off
no_private_key() { [ -z "$(find "$S" -name '*.key')" ]; }

chmod 644 "$T/pin"
expect_exit 1 "keygen --pkcs11 refuses a PIN file others can read" "$ASSENT" --state "$S" keygen --pkcs11
expect_err "ASSENT_PKCS11_PIN_FILE .* has mode 0644" "... and says so"
chmod 600 "$T/pin"
expect_exit 0 "assent keygen --pkcs11 makes both key pairs in the token" "$ASSENT" --state "$S" keygen --pkcs11
check "... and prints both as made" grep -q "checkpoint key 'assent-checkpoint' made, token key 'assent-token' made" "$T/.out"
expect_exit 1 "keygen --pkcs11 twice refuses" "$ASSENT" --state "$S" keygen --pkcs11
expect_err "already holds keys labelled 'assent-checkpoint' and 'assent-token'" "... naming the labels it found"
expect_exit 1 "keygen --rotate refuses with the key in the token" "$ASSENT" --state "$S" keygen --rotate
expect_err "rotate it by making a key under a new label" "... and says how to rotate"
check "the state directory holds no private key (find STATE -name '*.key')" no_private_key
check "it holds the checkpoint key's public half and the JWKS" test -s "$S/keys/checkpoint.pub" -a -s "$S/keys/jwks.json"
expect_exit 0 "assent reviewer add writes the ledger through the token's checkpoint key" \
	"$ASSENT" --state "$S" reviewer add tester --uid "$(id -u)"

daemon_start --single-user
daemon_listens "assentd starts with its keys in the token"
for _ in $(seq 100); do grep -q "serving" "$T/d.log" && break; sleep 0.05; done
check "... and logs where its keys are" grep -q "keys in PKCS#11 token 'assent'" "$T/d.log"
# approved_token FILE: an `assent request` a reviewer approves; its token in FILE, its id in $sid.
approved_token() {
	"$ASSENT" --state "$S" request --message "deploy with the HSM?" >"$1" 2>"$T/req.err" &
	local rpid=$!
	# up to 30 s: a loaded CI machine once took longer than 10 s here (the request's own
	# words, if it ended, are in the check below)
	for _ in $(seq 600); do
		sid=$("$ASSENT" --state "$S" pending --json 2>/dev/null | $PY -c '
import json, sys
d = json.load(sys.stdin)
r = d["requests"] if isinstance(d, dict) else d
print(r[-1]["session_id"] if r else "")' 2>/dev/null)
		[ -n "$sid" ] && break
		sleep 0.05
	done
	expect_exit 0 "a reviewer approves the request (${sid:-none pending; assent request said: $(head -c 300 "$T/req.err")})" \
		"$ASSENT" --state "$S" approve "$sid"
	wait "$rpid"
	check "assent request prints the approval token" test -s "$1"
}
approved_token "$T/approve.token"
py_tap "$ROOT/tests/integration/pkcs11.py" "$T/approve.token" "$S/keys/jwks.json" "$sid"
expect_exit 0 "assent-verify token verifies the HSM-signed token against jwks.json and the ledger" \
	"$VERIFY" token - --aud assent --jwks "$S/keys/jwks.json" --ledger "$S/ledger" <"$T/approve.token"
stop_daemon() {
	kill "$DPID" 2>/dev/null
	for _ in $(seq 200); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
	! kill -0 "$DPID" 2>/dev/null
}
check "assentd stops cleanly (a final checkpoint signed in the token)" stop_daemon
DPID=
expect_exit 0 "assent-verify ledger verifies the ledger whose checkpoints the token signed" \
	"$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
check "the state directory still holds no private key" no_private_key
cp "$S/keys/checkpoint.pub" "$T/ckpt.pub"
# ckpt_key_entries: how many `key` entries for the checkpoint key the ledger holds, each
# with the public key of STATE/keys/checkpoint.pub (any other is counted as 99).
ckpt_key_entries() {
	"$VERIFY" export "$S/ledger" 2>/dev/null | $PY -c '
import json, sys
pub = open(sys.argv[1]).read().strip()
es = [json.loads(l)["entry"] for l in sys.stdin]
ks = [e for e in es if e.get("kind") == "key" and e.get("purpose") == "checkpoint"]
print(99 if any(e.get("public_key", "").strip() != pub for e in ks) else len(ks))' "$S/keys/checkpoint.pub"
}
nkey=$(ckpt_key_entries)
check "the ledger records the checkpoint key once ($nkey key entries)" test "$nkey" -eq 1

# start_fails DESC PATTERN VAR=VALUE...: assentd with that environment exits at start, and
# its log names the cause.
start_fails() {
	local d=$1 pat=$2
	shift 2
	env "$@" "$ASSENTD" --state "$S" --single-user >"$T/f.log" 2>&1 &
	local pid=$! i
	for i in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid"
		wait "$pid" 2>/dev/null
		not_ok "$d: assentd kept running"
	elif wait "$pid"; then
		not_ok "$d: assentd exited 0"
	elif grep -qE -- "$pat" "$T/f.log"; then
		ok "$d"
	else
		not_ok "$d: the log says: $(head -c 300 "$T/f.log")"
	fi
}
printf '9999\n' >"$T/badpin"
chmod 600 "$T/badpin"
start_fails "a wrong PIN fails at start, named (CKR_PIN_INCORRECT)" "wrong PIN \(CKR_PIN_INCORRECT\)" \
	ASSENT_PKCS11_PIN_FILE="$T/badpin"
start_fails "a missing key label fails at start, named" "no private key labelled 'nosuchkey' in PKCS#11 token 'assent'" \
	ASSENT_PKCS11_TOKEN_KEY=nosuchkey
start_fails "a missing checkpoint key label fails at start, named" "no private key labelled 'nockpt'" \
	ASSENT_PKCS11_CHECKPOINT_KEY=nockpt
# A P-384 key pair under a label of its own (softhsm2-util imports private and public halves).
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$T/p384.p8"
softhsm2-util --import "$T/p384.p8" --token assent --label p384 --id 0a0b --pin 1234 >/dev/null
start_fails "a key that is not P-256 fails at start, named" "the key labelled 'p384' in PKCS#11 token 'assent' is not a P-256 EC key" \
	ASSENT_PKCS11_TOKEN_KEY=p384
start_fails "a wrong token label fails at start, named" "no PKCS#11 token labelled 'other'" ASSENT_PKCS11_TOKEN=other
start_fails "an unloadable module fails at start, named" "cannot load the PKCS#11 module $T/nosuch.so" \
	ASSENT_PKCS11_MODULE="$T/nosuch.so"
start_fails "a relative module path fails at start" "ASSENT_PKCS11_MODULE must be an absolute path" \
	ASSENT_PKCS11_MODULE=libsofthsm2.so
start_fails "without ASSENT_PKCS11_MODULE the daemon refuses the state, naming the token, and makes no key file" \
	"checkpoint key of .* is in a PKCS#11 token" ASSENT_PKCS11_MODULE=
expect_exit 1 "... and so does assent reviewer add" env ASSENT_PKCS11_MODULE= "$ASSENT" --state "$S" reviewer add bob --uid 4242
check "after the failed starts no private key file was made (never files instead)" no_private_key
check "... and checkpoint.pub is still the token's key" sh -c "cmp -s '$S/keys/checkpoint.pub' '$T/ckpt.pub'"

# A second start with the keys in the token: the same ledger, no second key entry.
daemon_start --single-user
daemon_listens "assentd starts again on the same ledger"
check "... and stops" stop_daemon
DPID=
expect_exit 0 "the ledger verifies after the restart" "$VERIFY" ledger "$S/ledger" --key "$S/keys/checkpoint.pub"
nkey=$(ckpt_key_entries)
check "... still with one checkpoint key entry ($nkey)" test "$nkey" -eq 1

# A state directory whose ledger a file key signed is not taken over by the token's key.
F=$T/filestate
env ASSENT_PKCS11_MODULE= "$ASSENT" --state "$F" reviewer add alice --uid 4242 >/dev/null
cp "$F/keys/checkpoint.pub" "$T/file.pub"
expect_exit 2 "a file-key state with checkpoint.key is refused under the token" "$ASSENT" --state "$F" reviewer add bob --uid 4243
check "... naming the key file" grep -q "checkpoint.key exists but the checkpoint key is in a PKCS#11 token" "$T/.err"
mv "$F/keys/checkpoint.key" "$T/file.key"
expect_exit 1 "... and with checkpoint.key moved away, its ledger is refused" "$ASSENT" --state "$F" reviewer add bob --uid 4243
check "... as not signed by the token's key" grep -q "changed without the checkpoint key" "$T/.err"
check "... and its checkpoint.pub is left as it was" cmp -s "$F/keys/checkpoint.pub" "$T/file.pub"

# Rotation of a token key in the token: a key under a new label, then the daemon with it.
export ASSENT_PKCS11_TOKEN_KEY=assent-token-2
expect_exit 0 "keygen --pkcs11 with a new token key label makes that key alone" "$ASSENT" --state "$S" keygen --pkcs11
check "... saying so" grep -q "checkpoint key 'assent-checkpoint' already there, token key 'assent-token-2' made" "$T/.out"
njwk=$($PY -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["keys"]))' "$S/keys/jwks.json")
check "jwks.json holds the new key and the retired one ($njwk keys)" test "$njwk" -eq 2
"$VERIFY" export "$S/ledger" 2>/dev/null | grep -q '"event":"retired","purpose":"token"'
check "the ledger records the old token key as retired" test $? -eq 0
daemon_start --single-user
daemon_listens "assentd starts with the new token key"
approved_token "$T/rotated.token"
expect_exit 0 "a token signed with the new key in the token verifies against jwks.json" \
	"$VERIFY" token - --aud assent --jwks "$S/keys/jwks.json" --ledger "$S/ledger" <"$T/rotated.token"
expect_exit 0 "... and the token of the retired key still does" \
	"$VERIFY" token - --aud assent --jwks "$S/keys/jwks.json" <"$T/approve.token"
kid() { $PY -c 'import jwt,sys; print(jwt.get_unverified_header(open(sys.argv[1]).read().strip())["kid"])' "$1"; }
check "the two tokens name two keys" test "$(kid "$T/rotated.token")" != "$(kid "$T/approve.token")"
check "assentd stops" stop_daemon
DPID=
check "the state directory holds no private key after the rotation" no_private_key
done_testing
