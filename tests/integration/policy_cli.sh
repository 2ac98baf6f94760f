#!/usr/bin/env bash
# assent policy check | test: the shipped policies load, errors name FILE:LINE:COLUMN and
# the offending text, exit codes are 0, 1 and 2, and the example policy decides the
# requests its comments promise.
. "$(dirname "$0")/../lib.sh"
P=$ROOT/policy
expect_exit 0 "the default policy loads" "$ASSENT" policy check "$P/default.policy"
expect_exit 0 "the example policy loads" "$ASSENT" policy check "$P/examples.policy"
printf 'allow type approval\nallow colour red\ndeny type input\ndefault ask\n' >"$T/bad.policy"
expect_exit 1 "a policy with errors does not load" "$ASSENT" policy check "$T/bad.policy"
"$ASSENT" policy check "$T/bad.policy" >/dev/null 2>"$T/bad.err"
check "an unknown word is reported as FILE:2:7 with the word" grep -q "bad.policy:2:7: error: unknown word.*'colour'" "$T/bad.err"
check "a deny without a reason is reported on its line" grep -q "bad.policy:3:1: error: a deny rule needs a reason" "$T/bad.err"
printf 'allow type input\nallow type input\ndefault ask\n' >"$T/warn.policy"
expect_exit 0 "warnings alone do not stop a policy" "$ASSENT" policy check "$T/warn.policy"
"$ASSENT" policy check "$T/warn.policy" >/dev/null 2>"$T/warn.err"
check "a rule that can never match is warned about" grep -q "warn.policy:2:1: warning: can never match: line 1" "$T/warn.err"
printf 'allow upstream db tool query args.sql ~ "^SELECT[[:space:]]"\nallow upstream db args.sql ~ "^SELECT[^;]*$"\ndefault ask\n' >"$T/anchor.policy"
expect_exit 0 "an allow on a pattern anchored at one end is a warning, not an error" "$ASSENT" policy check "$T/anchor.policy"
check "... naming the line, the column and the pattern" grep -q "anchor.policy:1:41: warning: allows on a pattern anchored at its start only.*'^SELECT\[\[:space:\]\]'" "$T/.err"
check "... and only that rule (the whole-string match on line 2 is not warned about)" sh -c "[ \$(grep -c warning '$T/.err') -eq 1 ]"
expect_exit 2 "a missing file is a usage or I/O error" "$ASSENT" policy check "$T/none.policy"
expect_exit 2 "a request that is not JSON is a usage error" "$ASSENT" policy test "$P/examples.policy" "$T/bad.policy"
head -c 300000 /dev/zero | tr '\0' '#' >"$T/huge.policy"
expect_exit 1 "a policy over its size limit is refused" "$ASSENT" policy check "$T/huge.policy"

decision() { # REQUEST_JSON -> the first line of `policy test` on the examples
	printf '%s' "$1" >"$T/req.json"
	"$ASSENT" policy test "$P/examples.policy" "$T/req.json" 2>/dev/null | head -1
}
d=$(decision '{"type":"approval","message":"m","context":{"sql":"ALTER TABLE t DROP COLUMN c"}}')
check "examples: dropping a column is denied, with the reason ($d)" sh -c "case '$d' in 'deny (rule on line 6): dropping a column'*) exit 0;; esac; exit 1"
d=$(decision '{"type":"approval","message":"m","context":{"sql":"alter table t drop  column c"}}')
check "examples: ... in lower case too ($d)" sh -c "case '$d' in 'deny (rule on line 6): dropping a column'*) exit 0;; esac; exit 1"
d=$(decision '{"type":"approval","message":"m","context":{"sql":"ALTER TABLE t Drop Column c"}}')
check "examples: ... and in mixed case ($d)" sh -c "case '$d' in 'deny (rule on line 6): dropping a column'*) exit 0;; esac; exit 1"
d=$(decision '{"type":"approval","message":"m","audience":"tf-prod","subject":{"name":"p.tfplan","content":"aGk="}}')
check "examples: a Terraform plan with its bytes is asked of group:infra ($d)" sh -c "case '$d' in 'ask (rule on line 11)') exit 0;; esac; exit 1"
"$ASSENT" policy test "$P/examples.policy" "$T/req.json" 2>/dev/null >"$T/tf.out"
check "... by two reviewers, 1800 s, then deny" grep -q "reviewers: group:infra; quorum 2; deadline 1800 s (then deny)" "$T/tf.out"
d=$(decision '{"type":"approval","message":"m","audience":"tf-prod","subject":{"name":"p.tfplan","digest":{"sha256":"00"}}}')
check "examples: a plan whose digest is only asserted is denied ($d)" sh -c "case '$d' in 'deny (rule on line 12)'*) exit 0;; esac; exit 1"
d=$(decision '{"type":"approval","message":"deploy","agent":"ci-bot","audience":"staging"}')
check "examples: CI deploys to staging are allowed ($d)" sh -c "case '$d' in 'allow (rule on line 15)') exit 0;; esac; exit 1"
d=$(decision '{"type":"approval","message":"deploy","agent":"ci-bot","audience":"production"}')
check "examples: CI deploys to production are asked ($d)" sh -c "case '$d' in 'ask (rule on line 16)') exit 0;; esac; exit 1"
d=$(decision '{"type":"confirmation","message":"list files?","context":{"readonly":true}}')
check "examples: read-only confirmations are allowed ($d)" sh -c "case '$d' in 'allow (rule on line 19)') exit 0;; esac; exit 1"
d=$(decision '{"type":"confirmation","message":"read prod?","context":{"readonly":true},"audience":"production"}')
check "examples: ... for the default audience only: production is denied, the rule names no audience ($d)" \
	sh -c "case '$d' in 'deny (rule on line 19): the allow rule (line 19) names no audience'*) exit 0;; esac; exit 1"
"$ASSENT" policy test "$P/examples.policy" <(printf '{"type":"input","message":"rm -rf build"}') >"$T/sh.out" 2>/dev/null
check "examples: the shadow rule is recorded and a person still asked" sh -c "head -1 '$T/sh.out' | grep -q '^ask (default, line 56)' && grep -q 'shadow: the rule on line 23 would deny' '$T/sh.out'"
for m in "rm -fr build" "cd /tmp && rm -r -f build" "/bin/rm --recursive build" "rm -Rf build"; do
	"$ASSENT" policy test "$P/examples.policy" <(printf '{"type":"input","message":"%s"}' "$m") >"$T/sh.out" 2>/dev/null
	check "examples: the shadow rule sees '$m'" grep -q 'shadow: the rule on line 23 would deny' "$T/sh.out"
done
"$ASSENT" policy test "$P/examples.policy" <(printf '{"type":"input","message":"rm notes-r.txt; firm -r"}') >"$T/sh.out" 2>/dev/null
check "examples: ... and not a plain rm, nor -r in a name or after another word" sh -c "! grep -q shadow '$T/sh.out'"
d=$(decision '{"upstream":"dbro","tool":"query","arguments":{"sql":"SELECT 1; DELETE FROM users"}}')
check "examples: the read-only role's entry is allowed by name, whatever the SQL ($d)" sh -c "case '$d' in 'allow (rule on line 39)') exit 0;; esac; exit 1"
done_testing
