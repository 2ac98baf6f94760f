#!/usr/bin/env bash
# Every shipped policy (policy/*.policy) and every ```policy block of README.md and docs/*.md against the known
# bypasses of regular expressions over SQL (tests/policy_bypass/cases): none is allowed without a
# person, none is decided more weakly than the plain statement it disguises (a DROP hidden by a
# comment still needs the two people a plain DROP needs), and each policy checks without a warning.
. "$(dirname "$0")/../lib.sh"
B=$ROOT/tests/policy_bypass

# The documentation's policy blocks, one file each; the first is the gate's (docs/gate.md).
docs=("$ROOT/docs/gate.md" "$ROOT/README.md")
for f in "$ROOT"/docs/*.md; do [ "$f" = "$ROOT/docs/gate.md" ] || docs+=("$f"); done
awk -v dir="$T" '/^```policy[[:space:]]*$/ { n++; on = 1; next }
	on && /^```/ { on = 0; next }
	on { print > (dir "/README-" n ".policy") }' "${docs[@]}"
policies=("$ROOT"/policy/*.policy "$T"/README-*.policy)
check "docs/gate.md has a \`\`\`policy block to test" test -f "$T/README-1.policy"

# decide POLICY NAME -> "ACTION STRICTNESS": allow 0, ask its quorum, deny 100.
decide() {
	local out action q
	out=$("$ASSENT" policy test "$1" "$B/$2.json" 2>/dev/null) || { echo "error -1"; return; }
	action=${out%% *}
	case $action in
	allow) echo "allow 0" ;;
	deny) echo "deny 100" ;;
	ask)
		q=$(printf '%s\n' "$out" | sed -n 's/.*; quorum \([0-9]*\).*/\1/p')
		echo "ask ${q:-0}" ;;
	*) echo "error -1" ;;
	esac
}

for p in "${policies[@]}"; do
	name=${p#"$ROOT"/}
	name=${name#"$T"/}
	expect_exit 0 "$name: loads" "$ASSENT" policy check "$p"
	check "$name: checks without a warning" test -z "$ERR"
	[ -z "$ERR" ] || printf '%s\n' "$ERR" | sed 's/^/# /'
	while read -r case of why; do
		case $case in '#'* | '') continue ;; esac
		read -r act s < <(decide "$p" "$case")
		if [ "$act" = error ] || [ "$act" = allow ]; then
			not_ok "$name: $case ($why) is $act, wanted a person or a refusal"
			continue
		fi
		if [ "$of" = - ]; then
			ok "$name: $case ($why): $act"
			continue
		fi
		read -r pact ps < <(decide "$p" "$of")
		if [ "$s" -ge "$ps" ]; then
			ok "$name: $case ($why): $act $s, as strict as $of ($pact $ps)"
		else
			not_ok "$name: $case ($why): $act $s, weaker than $of ($pact $ps)"
		fi
	done <"$B/cases"
done

# The tests above hold for a policy that asks everything; these show the examples' rules are live.
E=$ROOT/policy/examples.policy
check "examples: a plain SELECT is allowed" sh -c "[ \"\$1\" = 'allow 0' ]" - "$(decide "$E" read_select)"
check "examples: a plain DROP TABLE needs two people" sh -c "[ \"\$1\" = 'ask 2' ]" - "$(decide "$E" plain_drop_table)"
check "examples: a plain DROP COLUMN is refused" sh -c "[ \"\$1\" = 'deny 100' ]" - "$(decide "$E" plain_drop_column)"
check "docs/gate.md: a plain DROP TABLE needs two people" sh -c "[ \"\$1\" = 'ask 2' ]" - "$(decide "$T/README-1.policy" plain_drop_table)"
done_testing
