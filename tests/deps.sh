#!/usr/bin/env bash
# Install the Debian packages that the build, the tests and the fuzzers need, when
# any is missing. As root it runs apt-get; otherwise it prints the exact command.
set -euo pipefail
PKGS=(gcc make clang libclang-rt-14-dev pkg-config cppcheck
      libseccomp-dev libmbedtls-dev libcbor-dev liblmdb-dev lmdb-utils libssl-dev libjwt-dev libjansson-dev
      libmicrohttpd-dev libcmocka-dev python3-jwt python3-cryptography python3-lmdb)
# The official MCP SDK client and the conformance suite (0.1.13: the newest that runs on Node 20), pinned by tests/mcp/package-lock.json (npm registry).
npm_deps() {
	local dir
	dir=$(cd "$(dirname "$0")" && pwd)/mcp
	if [ -d "$dir" ] && { [ ! -d "$dir/node_modules/@modelcontextprotocol/sdk" ] || [ ! -d "$dir/node_modules/@modelcontextprotocol/conformance" ]; } && command -v npm >/dev/null; then
		(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || { echo "deps: npm ci in $dir failed" >&2; exit 1; }
	fi
}
missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && { npm_deps; exit 0; }
echo "deps: missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
	npm_deps
else
	echo "deps: run as root: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi
