#!/usr/bin/env bash
# The verify library as another C program uses it (make install + pkg-config), and the
# docs/pipelines.md's Terraform wrapper run as written, against a fake terraform.
. "$(dirname "$0")/../lib.sh"
MINT=$ROOT/build/tests/mint

# ---- install into a prefix, build a program against the .pc file ----
make -s -C "$ROOT" install PREFIX="$T/prefix" >"$T/install.log" 2>&1
check "make install PREFIX=... installs the library, headers and pkg-config file" \
	test -f "$T/prefix/lib/libassent-verify.a" -a -f "$T/prefix/include/assent/verify.h" -a \
	-f "$T/prefix/lib/pkgconfig/assent-verify.pc" -a -x "$T/prefix/bin/assent-verify"
cat >"$T/gate.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <assent/verify.h>
int main(int argc, char **argv)
{
	const char *keys[] = {argv[2]};
	struct av_token_opts o = {.aud = argv[3], .key_paths = keys, .nkeys = 1, .leeway = -1};
	struct av_token_result r;
	int rc = av_verify_token(argv[1], strlen(argv[1]), &o, &r);
	printf("%s\n", rc == 0 ? "valid" : r.reason);
	return rc == 0 ? 0 : 1;
}
C
export PKG_CONFIG_PATH=$T/prefix/lib/pkgconfig
check "a C program builds against pkg-config assent-verify" \
	sh -c "cc -o '$T/gate' '$T/gate.c' \$(pkg-config --cflags --libs assent-verify)"
"$MINT" --state "$T/s" --aud tf-prod >"$T/m.json"
TOK=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$T/m.json")
PUB=$(ls "$T"/s/keys/token-*.pub)
expect_exit 0 "the linked program accepts a token for its audience" "$T/gate" "$TOK" "$PUB" tf-prod
expect_exit 1 "the linked program refuses it for another audience" "$T/gate" "$TOK" "$PUB" other
check "... and says why" sh -c "printf '%s' \"\$0\" | grep -q audience" "$OUT"

# ---- docs/pipelines.md's wrapper, verbatim ----
$PY - "$ROOT/docs/pipelines.md" "$T/tf-apply-approved" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"```sh\n(#!/bin/sh\n# tf-apply-approved.*?)```", text, re.S)
open(sys.argv[2], "w").write(m.group(1))
PY
chmod +x "$T/tf-apply-approved"
mkdir -p "$T/bin" "$T/etc"
cat >"$T/bin/terraform" <<'SH'
#!/bin/sh
echo "terraform $*" >>"$TF_LOG"
SH
chmod +x "$T/bin/terraform"
ln -s "$VERIFY" "$T/bin/assent-verify"
sed -i "s|/etc/assent/jwks.json|$T/s/keys/jwks.json|" "$T/tf-apply-approved"
echo 'plan bytes' >"$T/plan.tfplan"
"$MINT" --state "$T/s" --aud tf-prod --subject "$T/plan.tfplan" >"$T/m2.json"
TOK2=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$T/m2.json")
export TF_LOG=$T/tf.log
run_wrapper() { PATH="$T/bin:$PATH" ASSENT_TOKEN="$1" "$T/tf-apply-approved" "$2"; }
expect_exit 0 "docs/pipelines.md wrapper: a token bound to the plan lets terraform apply run" run_wrapper "$TOK2" "$T/plan.tfplan"
check "... and terraform was called with the plan" grep -q "apply $T/plan.tfplan" "$TF_LOG"
echo 'plan bytes, changed' >"$T/plan.tfplan"
: >"$TF_LOG"
expect_exit 1 "docs/pipelines.md wrapper: a changed plan is refused (exit 1)" run_wrapper "$TOK2" "$T/plan.tfplan"
check "... and terraform did not run" test ! -s "$TF_LOG"
expect_exit 2 "docs/pipelines.md wrapper: no keys file is a usage error (exit 2)" \
	env PATH="$T/bin:$PATH" ASSENT_TOKEN="$TOK2" sh -c "sed 's|$T/s/keys/jwks.json|$T/missing.json|' '$T/tf-apply-approved' >'$T/w2'; sh '$T/w2' '$T/plan.tfplan'"
done_testing
