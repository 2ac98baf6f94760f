#!/usr/bin/env bash
# make bench: runs build/bench/p11_bench against a throwaway SoftHSM2 token (its own
# SOFTHSM2_CONF and token directory in a temporary directory, removed after).
set -eu
BENCH=${1:-build/bench/p11_bench}
MOD=
for m in /usr/lib/softhsm/libsofthsm2.so /usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so; do
	[ -f "$m" ] && MOD=$m && break
done
if [ -z "$MOD" ] || ! command -v softhsm2-util >/dev/null; then
	echo "p11_bench: SoftHSM2 is not installed (make deps installs softhsm2): no PKCS#11 figure" >&2
	exit 0
fi
D=$(mktemp -d /tmp/assent-p11-bench.XXXXXX)
trap 'rm -rf "$D"' EXIT
mkdir "$D/tokens"
printf 'directories.tokendir = %s/tokens\nobjectstore.backend = file\nlog.level = ERROR\n' "$D" >"$D/softhsm2.conf"
export SOFTHSM2_CONF=$D/softhsm2.conf
softhsm2-util --init-token --free --label bench --pin 1234 --so-pin 5678 >/dev/null
(umask 077 && printf '1234\n' >"$D/pin")
ASSENT_PKCS11_MODULE=$MOD ASSENT_PKCS11_TOKEN=bench ASSENT_PKCS11_PIN_FILE=$D/pin "$BENCH"
