#!/usr/bin/env bash
# The verification vectors (docs/verification.md, issue 31): every vector of
# tests/vectors/manifest.json through assent-verify and through tests/vectors/check.py, the
# checker written from docs/verification.md alone; each must give the manifest's result, and
# the two must agree. Then gen.py, run afresh, must give the same entries, hashes, roots and
# manifest as the committed ones (the product still writes what the vectors say).
. "$(dirname "$0")/../lib.sh"
cd "$ROOT" || exit 2

if ! command -v faketime >/dev/null || [ ! -x build/tests/assent-verify-dyn ] || [ ! -x build/tests/mint ]; then
	not_ok "vectors need faketime (tests/scripts/deps.sh), build/tests/assent-verify-dyn and build/tests/mint (make check)"
	done_testing
	exit 1
fi
# run.py's TAP lines, renumbered as ours.
$PY tests/vectors/run.py >"$T/run.tap" 2>"$T/run.err"
rc=$?
while IFS= read -r line; do
	case "$line" in
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	esac
done <"$T/run.tap"
check "run.py ran to its end (exit $rc; $(head -c 200 "$T/run.err"))" test "$rc" -eq 0 -o "$rc" -eq 1 -a "$(tail -1 "$T/run.tap" | cut -c1-3)" = "1.."

# The same vectors through the AddressSanitizer + UBSan build (make check builds it), which
# turns undefined behaviour on any of them into a failure (the token vectors stay on the
# dynamic build: faketime and ASan do not share a process).
if [ -x build/san/assent-verify ]; then
	$PY tests/vectors/run.py --verify "$ROOT/build/san/assent-verify" >"$T/san.tap" 2>"$T/san.err"
	while IFS= read -r line; do
		case "$line" in
		"ok "*"assent-verify: token/"*) ;;
		"ok "*"assent-verify: "*) ok "sanitized ${line#ok * - }" ;;
		"not ok "*"assent-verify: "*) not_ok "sanitized ${line#not ok * - }" ;;
		esac
	done <"$T/san.tap"
fi

# Regenerated with the committed keys: the parts that do not depend on randomness are the same.
if $PY tests/vectors/gen.py --out "$T/gen" >"$T/gen.out" 2>&1; then
	ok "gen.py regenerates the vectors: $(tail -1 "$T/gen.out")"
	same=1
	for f in manifest.json tree/tree.json $(cd tests/vectors && ls entry/*.cbor); do
		cmp -s "tests/vectors/$f" "$T/gen/$f" || { same=0; echo "# differs: $f"; }
	done
	check "regenerated entries, leaf hashes, roots and manifest equal the committed ones" test "$same" -eq 1
else
	not_ok "gen.py regenerates the vectors: $(tail -3 "$T/gen.out" | tr '\n' ' ')"
fi
done_testing
