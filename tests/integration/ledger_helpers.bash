# Shared by the ledger_*.sh integration scripts (sourced after tests/lib.sh; named
# .bash so tests/scripts/run.sh does not run it as a test of its own).
TOOL="$PY $ROOT/tests/integration/ledger_tool.py"

# requests FROM TO: JSON lines of request entries, each with a distinct message.
requests() {
	local i
	for i in $(seq "$1" "$2"); do
		printf '{"kind":"request","session_id":"s%d","type":"approval","message":"please deploy build number %d to production"}\n' "$i" "$i"
	done
}

# decisions FROM TO: JSON lines of decision entries.
decisions() {
	local i
	for i in $(seq "$1" "$2"); do
		printf '{"kind":"decision","session_id":"s%d","outcome":"approved","response":"ok %d"}\n' "$i" "$i"
	done
}

# fresh SRC_STATE NAME: a copy of a state directory (ledger and keys) in $T/NAME; prints its path.
fresh() {
	rm -rf "${T:?}/$2"
	cp -a "$1" "$T/$2"
	echo "$T/$2"
}

# json_is DESC JSON KEY=VALUE...: passes when JSON is an object holding every KEY with
# exactly the JSON value VALUE (types compared too: true is not 1).
json_is() {
	local d=$1 j=$2
	shift 2
	if printf '%s' "$j" | $PY -c '
import json, sys
o = json.loads(sys.stdin.read())
def same(a, b):
    return type(a) is type(b) and a == b
for arg in sys.argv[1:]:
    k, v = arg.split("=", 1)
    if k not in o or not same(o[k], json.loads(v)):
        sys.exit(1)
' "$@" 2>/dev/null; then ok "$d"; else not_ok "$d: wanted $*; got: $(printf '%s' "$j" | head -c 400)"; fi
}

# tampered DESC DIR SEQ: the ledger in DIR must be reported tampered (exit 1, one line
# on stderr naming seq SEQ), and `--json` must say ok false with bad_seq SEQ.
tampered() {
	local d=$1 dir=$2 seq=$3
	expect_exit 1 "$d: verify exits 1" "$VERIFY" ledger "$dir" --key "$PUB"
	expect_err "tampered at seq $seq: " "$d: one stderr line naming seq $seq"
	local j
	j=$("$VERIFY" ledger "$dir" --key "$PUB" --json 2>/dev/null)
	# The compact JSON is matched as text here: python per case would double the run time.
	if [[ $j =~ \"ok\":false ]] && [[ $j =~ \"bad_seq\":${seq}[,}] ]]; then ok "$d: --json says ok false, bad_seq $seq"
	else not_ok "$d: --json should say ok false, bad_seq $seq; got: $(printf '%s' "$j" | head -c 400)"; fi
}

# tampered_noseq DESC DIR PATTERN [VERIFY ARGS...]: tampered, with a reason matching
# PATTERN (no particular entry is to blame, or none can be named).
tampered_noseq() {
	local d=$1 dir=$2 pat=$3
	shift 3
	expect_exit 1 "$d: verify exits 1" "$VERIFY" ledger "$dir" --key "$PUB" "$@"
	expect_err "tampered.*($pat)" "$d: one stderr line saying why"
}

# intact DESC DIR [VERIFY ARGS...]: verify exits 0 and says so.
intact() {
	local d=$1 dir=$2
	shift 2
	expect_exit 0 "$d: verify exits 0" "$VERIFY" ledger "$dir" --key "$PUB" "$@"
	if printf '%s' "$OUT" | grep -q '^ledger intact: '; then ok "$d: says intact"; else not_ok "$d: stdout: $OUT"; fi
}

# entry_count DIR: the number of stored entries, read with python-lmdb.
entry_count() { $TOOL count "$1"; }
