#!/usr/bin/env bash
# --version on every program make install puts in PREFIX/bin: its name and the one
# version include/assent/version.h defines, exit 0, nothing on stderr; the same version
# in the installed pkg-config file; each --help and man page names --version.
. "$(dirname "$0")/../lib.sh"
V=$(sed -n 's/^#define ASSENT_VERSION "\(.*\)"$/\1/p' "$ROOT/include/assent/version.h")
check "include/assent/version.h defines ASSENT_VERSION" test -n "$V"

make -s -C "$ROOT" install DESTDIR="$T/inst" PREFIX=/usr >"$T/install.log" 2>&1
check "make install DESTDIR=... succeeds" test -x "$T/inst/usr/bin/assentd"
progs=$(ls "$T/inst/usr/bin")
check "make install puts the five programs in bin" test "$(echo "$progs" | wc -l)" -ge 5
for p in $progs; do
	expect_exit 0 "$p --version exits 0" "$T/inst/usr/bin/$p" --version
	check "$p --version prints '$p $V' (got '$(printf %.60s "$OUT")')" test "$OUT" = "$p $V"
	check "$p --version writes nothing on stderr" test -z "$ERR"
done
check "the pkg-config file says Version: $V" grep -qx "Version: $V" "$T/inst/usr/lib/pkgconfig/assent-verify.pc"
check "the installed headers include version.h" test -f "$T/inst/usr/include/assent/version.h"

for p in assentd assent assent-verify; do
	expect_exit 0 "$p --help exits 0" "$ROOT/build/$p" --help
	check "$p --help names --version" grep -q -- '--version' <<<"$OUT"
done
for m in gateway/cli/assentd.8 gateway/cli/assent.1 verify/assent-verify.1; do
	check "$m documents --version" grep -q -- '\\-\\-version' "$ROOT/$m"
done
# The daemon says the same version where it is recorded at start (assentd.json) and to agents.
check "the MCP serverInfo's version comes from the same header" \
	sh -c "! grep -rn '\"0\\.[0-9]*\\.[0-9]*\"' '$ROOT/gateway' --include='*.c' --include='*.h' | grep -qi version"
done_testing
