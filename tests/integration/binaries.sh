#!/usr/bin/env bash
# The binaries show what runs where. assent-worker (the jailed workers) holds no token,
# ledger, registry or policy code and links neither OpenSSL nor LMDB; the verify library
# and the static assent-verify hold no ledger writer, checkpoint signer or private-key
# code; make install puts assent-worker beside assentd and only the verify API's headers;
# the installed daemon runs its workers from there. Every absence is checked next to a
# binary where the same symbol or library is present, so an nm or ldd that prints
# nothing cannot pass.
. "$(dirname "$0")/../lib.sh"
B=$ROOT/build
WORKER=$B/assent-worker
daemon_pid() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/assentd.json" 2>/dev/null; }
cleanup() { p=$(daemon_pid "$T/s"); [ -n "$p" ] && kill "$p" 2>/dev/null; sleep 0.2; rm -rf "$T"; }
trap cleanup EXIT

defined() { nm --defined-only "$1" 2>/dev/null | awk '{print $NF}'; } # FILE: the names it defines
has_def() { defined "$1" | grep -qE "$2"; }                            # FILE REGEX
no_def() { # FILE REGEX: nm reads FILE (it defines something) and nothing matches
	local d
	d=$(defined "$1")
	[ -n "$d" ] && ! grep -qE "$2" <<<"$d"
}
links() { ldd "$1" 2>/dev/null | grep -q "$2"; } # FILE LIBRARY-NAME

check "build/assent-worker is built" test -x "$WORKER"

# ---- assent-worker: no key, ledger, registry or policy code ----
check "nm: assent-worker defines the workers' entry points (worker_mcp_main, worker_review_main)" \
	sh -c "nm --defined-only '$WORKER' | grep -q ' T worker_mcp_main\$' && nm --defined-only '$WORKER' | grep -q ' T worker_review_main\$'"
for p in tok_ ledger_ registry_ policy_; do
	check "nm: assentd defines ${p}* symbols (the check below can see them)" has_def "$B/assentd" "^$p"
	check "nm: assent-worker defines no ${p}* symbol" no_def "$WORKER" "^$p"
done
for l in libcrypto liblmdb; do
	check "ldd: assentd links $l" links "$B/assentd" "$l"
	check "ldd: assent-worker does not link $l" sh -c "ldd '$WORKER' | grep -q libseccomp && ! ldd '$WORKER' | grep -q '$l'"
done
# The database clients are the recorder's and the cluster client's alone (DESIGN: never in the signer).
check "ldd: assent-cluster links libpq" links "$B/assent-cluster" libpq
for l in libsqlite3 libpq libmariadb; do
	check "ldd: assent-recorder links $l" links "$B/assent-recorder" "$l"
	check "ldd: assentd and assent-worker do not link $l" sh -c "ldd '$B/assentd' | grep -q libcrypto && ! ldd '$B/assentd' '$WORKER' | grep -q '$l'"
done

# ---- the upstream HTTP client (gateway/worker/upstream/uhttp.c, uhttp_cfg.c): mbedTLS, never OpenSSL ----
# Linked with --as-needed, assent-worker maps libmbedtls only once a worker calls the client;
# uhttp_probe holds the client and the jail alone, so its ldd shows what the client brings.
PROBE=$B/tests/uhttp_probe
if [ -x "$PROBE" ]; then
	check "ldd: the upstream HTTP client links libmbedtls and libmbedx509 (uhttp_probe)" \
		sh -c "ldd '$PROBE' | grep -q libmbedtls && ldd '$PROBE' | grep -q libmbedx509"
	check "ldd: ... and neither brings OpenSSL (libcrypto, libssl)" sh -c "ldd '$PROBE' | grep -q libmbedtls && ! ldd '$PROBE' | grep -qE 'libcrypto|libssl'"
else
	ok "# SKIP build/tests/uhttp_probe is not built (make check builds it)"
fi
if has_def "$WORKER" '^uhttp_io$'; then
	check "ldd: assent-worker, which holds the upstream HTTP client, links libmbedtls and libmbedx509" \
		sh -c "ldd '$WORKER' | grep -q libmbedtls && ldd '$WORKER' | grep -q libmbedx509"
fi

# ---- the verify library and the static verifier: verify-only code ----
check "nm: libassent-verify.a defines the verify API (av_verify_token, av_verify_ledger)" \
	sh -c "nm --defined-only '$B/libassent-verify.a' | grep -q ' T av_verify_token\$' && nm --defined-only '$B/libassent-verify.a' | grep -q ' T av_verify_ledger\$'"
check "nm: assent-verify defines av_verify_ledger" has_def "$B/assent-verify" '^av_verify_ledger$'
# p11_open and p11_sign_rs: signing through a PKCS#11 module (common/p11.c) is private-key code too.
for s in ledger_append ckpt_sign eckey_generate eckey_save eckey_sign eckey_load_private p11_open p11_sign_rs; do
	check "nm: assentd defines $s" has_def "$B/assentd" "^$s\$"
	check "nm: libassent-verify.a does not define $s" no_def "$B/libassent-verify.a" "^$s\$"
	check "nm: assent-verify does not define $s" no_def "$B/assent-verify" "^$s\$"
done

# ---- make install: assent-worker beside assentd, the verify API's headers only ----
P=$T/prefix
make -s -C "$ROOT" install PREFIX="$P" >"$T/install.log" 2>&1
check "make install puts assentd and assent-worker in PREFIX/bin" test -x "$P/bin/assentd" -a -x "$P/bin/assent-worker"
check "make install installs err.h, verify.h and version.h as the only headers" \
	test "$(cd "$P/include" && find . -type f | sort | tr '\n' ' ')" = "./assent/err.h ./assent/verify.h ./assent/version.h "

# ---- the installed daemon runs its workers from the installed assent-worker ----
"$P/bin/assentd" --state "$T/s" 2>"$T/d.log" &
W=
for _ in $(seq 100); do
	p=$(daemon_pid "$T/s")
	[ -n "$p" ] && W=$(pgrep -P "$p" | tr '\n' ' ') && [ "$(echo $W | wc -w)" -eq 3 ] && break
	sleep 0.05
done
check "the installed daemon runs two workers and the recorder ($W)" test "$(echo $W | wc -w)" -eq 3
kinds=
REC=
for w in $W; do
	if [ "$(readlink "/proc/$w/exe")" = "$P/bin/assent-recorder" ]; then
		REC=$w
		continue
	fi
	exe=$(readlink "/proc/$w/exe")
	check "worker $w runs $P/bin/assent-worker ($exe)" test "$exe" = "$P/bin/assent-worker"
	kinds="$kinds $(tr '\0' ' ' <"/proc/$w/cmdline" | awk '$1 == "assent-worker" {print $2}')"
done
check "... one as 'assent-worker mcp', one as 'assent-worker review' ($kinds)" \
	test "$(echo $kinds | tr ' ' '\n' | sort | tr '\n' ' ')" = "mcp review "

check "... and the recorder runs $P/bin/assent-recorder" test -n "$REC"

# ---- without assent-worker beside it, assentd refuses to start ----
mkdir -p "$T/alone"
cp "$B/assentd" "$T/alone/"
# (timeout: an assentd that does not refuse would serve until killed; not a measure of speed)
expect_exit 2 "assentd without assent-worker in its directory refuses to start" timeout 30 "$T/alone/assentd" --state "$T/s2"
expect_err "assent-worker belongs beside assentd" "... and says where assent-worker must be"
check "... before it makes a state directory" test ! -e "$T/s2"
expect_exit 2 "assentd no longer has a worker mode (--worker)" timeout 30 "$B/assentd" --worker mcp
expect_err "unknown option '--worker'" "... it says --worker is an unknown option"

done_testing
