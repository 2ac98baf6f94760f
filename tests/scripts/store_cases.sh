# Sourced by tests/integration/store_pg.sh and store_my.sh (after lib.sh): store_test's cases on a real server.
# store_cases BINARY VAR VALUE GROUP NAME: runs BINARY with VAR=VALUE; one TAP line here for its
# cmocka group GROUP (the lines between the sqlite group's summary and GROUP's own), NAME the
# database as the line says it; the output stays in $T/cases.out and $T/cases.err.
store_cases() {
	local bin=$1 var=$2 value=$3 group=$4 dbname=$5 name
	name=$(basename "$(dirname "$(dirname "$bin")")")/$(basename "$bin")
	env "$var=$value" CMOCKA_MESSAGE_OUTPUT=tap "$bin" >"$T/cases.out" 2>"$T/cases.err"
	local rc=$? n_ok n_bad
	n_ok=$(sed -n "/^# .* - sqlite\$/,/^# .* - $group\$/p" "$T/cases.out" | grep -c '^ok ')
	n_bad=$(sed -n "/^# .* - sqlite\$/,/^# .* - $group\$/p" "$T/cases.out" | grep -c '^not ok ')
	if [ "$rc" -eq 0 ] && [ "$n_ok" -ge 11 ] && [ "$n_bad" -eq 0 ] && grep -q "^# ok - $group\$" "$T/cases.out"; then
		ok "$name: all $n_ok store cases pass on $dbname"
	else
		not_ok "$name on $dbname: exit $rc, $n_ok passed, $n_bad failed: $(grep -E '^not ok|ERROR|LINE|failed' "$T/cases.out" "$T/cases.err" | head -5 | tr '\n' ' ' | head -c 400)"
	fi
}
