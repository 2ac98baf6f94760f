#!/usr/bin/env bash
# Runs each named libFuzzer harness (build/fuzz/NAME, from `make fuzz`) for
# FUZZ_SECONDS (default 30) on a scratch copy of fuzz/corpus/NAME, with
# fuzz/NAME.dict. Fails, naming the harness and the input, on any crash, leak,
# timeout or out-of-memory; the input stays in build/fuzz/artifacts/. Prints the
# executions and coverage of each harness. The committed corpus is never written:
# libFuzzer adds new inputs to its first directory, which is the scratch copy.
# FUZZ_MERGE=1 merges the inputs that add coverage back into fuzz/corpus/NAME.
#   usage: FUZZ_SECONDS=60 tests/scripts/fuzz_smoke.sh ledger_entry checkpoint ...
set -u
cd "$(dirname "$0")/../.."
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
ART=build/fuzz/artifacts
LOGS=build/fuzz/logs
mkdir -p "$ART" "$LOGS"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

if [ $# -eq 0 ]; then
	echo "usage: FUZZ_SECONDS=N $0 HARNESS..." >&2
	exit 2
fi
case $FUZZ_SECONDS in
'' | *[!0-9]*)
	echo "fuzz_smoke: FUZZ_SECONDS must be a number of seconds, not '$FUZZ_SECONDS'" >&2
	exit 2
	;;
esac

scratch=()
cleanup() { [ ${#scratch[@]} -eq 0 ] || rm -rf "${scratch[@]}"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

failed=()
for name in "$@"; do
	bin=build/fuzz/$name corpus=fuzz/corpus/$name dict=fuzz/$name.dict log=$LOGS/$name.log
	for need in "$bin" "$corpus" "$dict"; do
		if [ ! -e "$need" ]; then
			echo "fuzz_smoke: $name: FAILED: $need is missing (run make fuzz)"
			failed+=("$name")
			continue 2
		fi
	done
	dir=$(mktemp -d "${TMPDIR:-/tmp}/assent-fuzz-$name.XXXXXX")
	scratch+=("$dir")
	cp -R "$corpus/." "$dir/"
	before=$(find "$dir" -type f | wc -l)
	start=$SECONDS
	"$bin" "$dir" "$corpus" -max_total_time="$FUZZ_SECONDS" -max_len=65536 -timeout=10 \
		-rss_limit_mb=2048 -detect_leaks=1 -dict="$dict" -artifact_prefix="$ART/$name-" \
		-print_final_stats=1 >"$log" 2>&1
	rc=$?
	took=$((SECONDS - start))
	# The last status line: "#N  DONE  cov: C ft: F corp: K/Sb lim: L exec/s: E rss: R".
	last=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -n 1)
	cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
	ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
	corp=$(sed -nE 's/.* corp: ([0-9]+)\/.*/\1/p' <<<"$last")
	execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log")
	rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+).*/\1/p' "$log")
	new=$(($(find "$dir" -type f | wc -l) - before))
	printf '%-14s %10s execs %7s/s  cov %5s  ft %6s  corpus %s (+%s new inputs)  %ss\n' "$name" \
		"${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$new" "$took"
	if [ "$rc" -ne 0 ]; then
		what=crash
		grep -q 'ERROR: LeakSanitizer' "$log" && what=leak
		grep -q 'ERROR: libFuzzer: timeout' "$log" && what=timeout
		grep -qE 'ERROR: libFuzzer: (out-of-memory|malloc limit)' "$log" && what=out-of-memory
		input=$(sed -nE 's/.*Test unit written to (.*)$/\1/p' "$log" | tail -n 1)
		echo "fuzz_smoke: $name: FAILED ($what, exit $rc): input ${input:-not written}; log $log"
		grep -E '^(SUMMARY|==[0-9]+==ERROR|[a-z_]+: property violated)' "$log" | head -n 3 | sed 's/^/    /'
		failed+=("$name")
		continue
	fi
	if [ "${FUZZ_MERGE:-0}" = 1 ] && [ "$new" -gt 0 ]; then
		"$bin" -merge=1 -max_len=65536 -timeout=10 -rss_limit_mb=2048 "$corpus" "$dir" >>"$log" 2>&1 ||
			echo "fuzz_smoke: $name: merge into $corpus failed; log $log"
	fi
done

if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz_smoke: FAILED: ${failed[*]} (inputs in $ART/, logs in $LOGS/)"
	exit 1
fi
echo "fuzz_smoke: $# harnesses ran ${FUZZ_SECONDS}s each without a crash, leak or timeout"
