#!/usr/bin/env bash
# Runs the whole suite and prints one closing line: "N passed, N failed".
# Every test speaks TAP ("ok ..." / "not ok ..."): cmocka unit tests (with
# CMOCKA_MESSAGE_OUTPUT=tap), corpus replays, and the integration scripts.
# A program that dies without reporting a failure counts as one failure.
set -u
cd "$(dirname "$0")/../.."
export CMOCKA_MESSAGE_OUTPUT=tap
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
passed=0 failed=0
failures=()
LOG=build/test-logs
mkdir -p "$LOG"

run_one() { # name, command...
	local name=$1
	shift
	local log="$LOG/$(echo "$name" | tr '/ ' '__').log"
	"$@" >"$log" 2>&1
	local rc=$?
	local p f
	p=$(grep -cE '^ok ' "$log")
	f=$(grep -cE '^not ok ' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "not ok - $name exited with status $rc" >>"$log"
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "not ok - $name reported no test" >>"$log"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$f" -gt 0 ]; then
		failures+=("$name")
		printf '%-44s %4d passed, %d FAILED (log: %s)\n' "$name" "$p" "$f" "$log"
		grep -E '^not ok' "$log" | head -5 | sed 's/^/    /'
	else
		printf '%-44s %4d passed\n' "$name" "$p"
	fi
}

replay() { # harness, corpus dir: one TAP line
	local h=$1 dir=$2
	if "$h" "$dir"; then echo "ok - replay $dir"; else echo "not ok - replay $dir"; fi
}

static_checks() {
	# cppcheck over the product code, and curl's habit: functions we never call.
	if make -s lint >"$LOG/cppcheck.out" 2>&1; then echo "ok - cppcheck clean"; else
		echo "not ok - cppcheck: $(head -3 "$LOG/cppcheck.out" | tr '\n' ' ')"; fi
	local banned
	banned=$(grep -rnE '\b(strcpy|strcat|sprintf|vsprintf|gets|atoi|atol|atoll|strtok|tmpnam|mktemp|alloca)[[:space:]]*\(' \
		--include='*.c' --include='*.h' common ledger verify gateway policy fuzz tests/tools tests/bench 2>/dev/null)
	if [ -z "$banned" ]; then echo "ok - no banned functions (strcpy, sprintf, atoi, ...)"; else
		echo "not ok - banned functions used: $(echo "$banned" | head -3 | tr '\n' ' ')"; fi
	# The layout shows the architecture: includes name their folder, no arrow points up.
	local layout
	if layout=$(/usr/bin/python3 tests/scripts/layout_check.py 2>&1); then echo "ok - include graph: no upward arrow, no cycle"; else
		echo "not ok - include graph: $(echo "$layout" | head -3 | tr '\n' ' ')"; fi
	# The signer's layers by their calls: the core calls nothing above it, no capability
	# calls the loop, no cycle among the capabilities (tests/scripts/signer_layers.py).
	local layers
	if layers=$(/usr/bin/python3 tests/scripts/signer_layers.py 2>&1); then
		echo "$layers" | grep '^# '
		echo "ok - signer layers: the core calls nothing above it, no capability calls the loop, no cycle"
	else
		echo "$layers" | grep '^# '
		echo "not ok - signer layers: $(echo "$layers" | grep -v '^# ' | head -3 | tr '\n' ' ')"
	fi
	# No file over ~800 lines in the signer or the workers, no function over 100 lines in the
	# product, except the known offenders the script names (a list that only shrinks).
	local bounds
	if bounds=$(/usr/bin/python3 tests/scripts/bounds_check.py 2>&1); then
		echo "$bounds" | grep '^# '
		echo "ok - size bounds: no new file over 800 lines, no new function over 100"
	else
		echo "$bounds" | grep '^# '
		echo "not ok - size bounds: $(echo "$bounds" | grep -v '^# ' | head -3 | tr '\n' ' ')"
	fi
	# Every C file as .clang-format says (make format fixes them).
	local unformatted=""
	for f in $(git ls-files '*.c' '*.h' | grep -v node_modules); do
		clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || unformatted="$unformatted $f"
	done
	if [ -z "$unformatted" ]; then echo "ok - every C file as .clang-format says"; else
		echo "not ok - differ from .clang-format (make format):$(echo $unformatted | cut -c1-200)"; fi
}
run_one "static" static_checks

for t in build/tests/*_test; do
	[ -x "$t" ] && run_one "unit/$(basename "$t")" "$t"
done
for t in build/san/tests/*_test; do
	[ -x "$t" ] && run_one "unit-san/$(basename "$t")" "$t"
done
for h in build/san/replay/*; do
	[ -x "$h" ] || continue
	n=$(basename "$h")
	run_one "replay/$n" replay "$h" "fuzz/corpus/$n"
done
for s in tests/integration/*.sh; do
	[ -f "$s" ] && run_one "integration/$(basename "$s" .sh)" bash "$s"
done

echo
[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
