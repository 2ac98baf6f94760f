# assent — build, test, fuzz, bench. `make help` lists the targets.
# Three builds of the same sources:
#   build/            hardened release build (NOTES.md flags), what users run
#   build/san/        gcc with AddressSanitizer + UBSan, for unit tests and corpus replay
#   build/fuzz/       clang libFuzzer harnesses (fuzzer,address,undefined)

CC      ?= gcc
CLANG   ?= clang
PREFIX  ?= /usr/local
DESTDIR ?=
FUZZ_SECONDS ?= 30

WARN     := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wvla
# One include root: every #include names its folder ("gateway/proto/ipc.h"); the
# installed headers in include/assent/ include each other by bare name.
INCS     := -I.
HARDEN   := -O2 -D_FORTIFY_SOURCE=3 -fstack-protector-strong -fstack-clash-protection \
            -fcf-protection=full -fPIE -ftrivial-auto-var-init=zero
LDHARDEN := -pie -Wl,-z,relro,-z,now,-z,noexecstack
SANFLAGS := -O1 -g -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=0 -fsanitize=address,undefined \
            -fno-sanitize-recover=all -fno-omit-frame-pointer
# -lmbedtls -lmbedx509: the upstream HTTP client's TLS (gateway/worker/upstream/uhttp.c, uhttp_cfg.c),
# which the tests and harnesses that link libassent.a may pull in too.
LIBS     := -llmdb -lmbedtls -lmbedx509 -lmbedcrypto -lcrypto -ljansson -lseccomp -lmicrohttpd -pthread
TESTLIBS := -lcmocka

# The version is written once, in include/assent/version.h; the pkg-config file takes it from there.
VERSION := $(shell sed -n 's/^\#define ASSENT_VERSION "\(.*\)"$$/\1/p' include/assent/version.h)

CFLAGS_BASE := -std=gnu11 -g $(WARN) $(INCS)

GW_PROGS := gateway/cli/assent.c gateway/cli/assentd.c gateway/worker/main.c gateway/recorder/main.c gateway/recorder/cluster.c \
            gateway/recorder/cluster_lease.c
# assent-verify's own files (its command line and commands), not the verify library's.
VERIFY_CLI := verify/main.c verify/commands.c
LIB_SRC  := $(wildcard common/*.c) $(wildcard ledger/*.c) $(wildcard policy/*.c) $(filter-out $(VERIFY_CLI),$(wildcard verify/*.c)) \
            $(filter-out $(GW_PROGS),$(shell find gateway -name '*.c' | sort))
UNIT_SRC := $(wildcard tests/unit/*_test.c)
FUZZ_SRC := $(filter-out fuzz/driver.c,$(wildcard fuzz/*.c))
FUZZERS  := $(patsubst fuzz/%.c,%,$(FUZZ_SRC))
PROGS    := build/assent-verify build/assent build/assentd build/assent-worker build/assent-recorder build/assent-cluster

HDRS     := $(wildcard include/assent/*.h common/*.h ledger/*.h verify/*.h policy/*.h fuzz/*.h) $(shell find gateway -name '*.h')
LIB_OBJ      := $(patsubst %.c,build/obj/%.o,$(LIB_SRC))
LIB_SAN_OBJ  := $(patsubst %.c,build/san/obj/%.o,$(LIB_SRC))
LIB_FUZZ_OBJ := $(patsubst %.c,build/fuzz/obj/%.o,$(LIB_SRC))

.PHONY: all check test unit-tests fuzz fuzz-smoke bench run demo install install-deb deb deps clean help format lint
all: $(PROGS) build/libassent-verify.a

help:
	@echo "make          build build/assentd, build/assent-worker, build/assent, build/assent-verify (hardened)"
	@echo "make run      start the daemon on ./var (agents: http://127.0.0.1:8765/mcp), first reviewer and agent key"
	@echo "make demo     the ledger alone: append, checkpoint, verify, prove, export in ./var/demo"
	@echo "make check    install deps, build, run every test (plain + ASan/UBSan), replay fuzz corpora"
	@echo "make fuzz     build the libFuzzer harnesses with clang"
	@echo "make fuzz-smoke  run each harness FUZZ_SECONDS (default 30) on a copy of its corpus"
	@echo "make bench    print ledger, token (file key and PKCS#11 token), CBOR, gateway, policy, web reviewer and MCP-era (2026-07-28 vs 2025) performance figures, and the gate (allowed tools/call direct, via an SDK proxy, via assentd recording off, meta and full), call records written per second to SQLite and PostgreSQL, and the durable paths beside the disk's sync floor (durable_bench.py: request_feedback and a ledgered gated call against the SDK references, memory after 100,000 decisions)"
	@echo "make install  PREFIX=... DESTDIR=..."
	@echo "make deps     install the Debian packages the build and tests need"

# ---- objects ----
build/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS_BASE) $(HARDEN) -c $< -o $@

build/san/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	@echo "  CC san  $<"
	@$(CC) $(CFLAGS_BASE) $(SANFLAGS) -c $< -o $@

build/fuzz/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	@echo "  CC fuzz $<"
	@$(CLANG) $(CFLAGS_BASE) -Wno-unknown-warning-option -Wno-missing-field-initializers -O1 -fsanitize=fuzzer-no-link,address,undefined \
	  -fno-sanitize-recover=all -c $< -o $@

# common/p11.c includes the standard PKCS#11 header as p11-kit ships it (libp11-kit-dev); the
# module itself is dlopen'ed at run time, so nothing more is linked.
P11_INCS := -isystem /usr/include/p11-kit-1
build/obj/common/p11.o build/san/obj/common/p11.o build/fuzz/obj/common/p11.o: CFLAGS_BASE += $(P11_INCS)

# The verify library other C programs link (pkg-config assent-verify), and so the static
# assent-verify: verify-only objects. No gateway or policy code, and none that writes the
# ledger or holds a private key: the ledger writer (ledger.c, cosign_store.c, its write-ahead log wal.c, recover.c), its head signer (headsign.c,
# OpenSSL), checkpoint signing (note_sign.c) and private keys (eckey_priv.c, and p11.c, which
# signs in a PKCS#11 token) stay out (tests/integration/binaries.sh checks with nm).
SIGNING_OBJ    := build/obj/ledger/ledger.o build/obj/ledger/cosign_store.o build/obj/ledger/headsign.o build/obj/ledger/note_sign.o \
                  build/obj/common/eckey_priv.o build/obj/common/p11.o build/obj/ledger/sync.o build/obj/ledger/wal.o \
                  build/obj/ledger/recover.o build/obj/ledger/keyfile.o
VERIFY_LIB_OBJ := $(filter-out build/obj/gateway/% build/obj/policy/% $(SIGNING_OBJ),$(LIB_OBJ))
build/libassent-verify.a: $(VERIFY_LIB_OBJ)
	@echo "  AR      $@"
	@rm -f $@; ar rcs $@ $^

# Each archive is made anew (rm first): ar would keep a member whose object left the list.
# The reviewer's page (gateway/web/assets.S) goes into every archive: whatever links the
# review worker links its page.
WEB_OBJ := build/obj/gateway/web/assets.o
build/libassent.a: $(LIB_OBJ) $(WEB_OBJ)
	@echo "  AR      $@"
	@rm -f $@; ar rcs $@ $^
build/san/libassent.a: $(LIB_SAN_OBJ) $(WEB_OBJ)
	@echo "  AR      $@"
	@rm -f $@; ar rcs $@ $^
build/fuzz/libassent.a: $(LIB_FUZZ_OBJ) $(WEB_OBJ)
	@echo "  AR      $@"
	@rm -f $@; ar rcs $@ $^

# ---- programs ----
# assent-verify runs once per CI job: it is a static PIE (no libjwt in it at all), so
# starting it costs no dynamic linking; make bench shows the figure. libcrypto is linked in
# for one thing, Ed25519 verification of witnesses' cosignatures (ledger/cosig.c: mbedTLS 2.28
# has no Ed25519); the linker's notes that OpenSSL's socket and DSO code would want glibc's
# shared libraries at run time concern code the verifier never calls, and are filtered out.
VERIFY_LIBS := -llmdb -lmbedcrypto -lcrypto -ljansson -pthread
build/assent-verify: $(patsubst %.c,build/obj/%.o,$(VERIFY_CLI)) build/libassent-verify.a
	@echo "  CCLD    $@"
	@$(CC) -static-pie -Wl,-z,relro,-z,now,-z,noexecstack -o $@ $^ $(VERIFY_LIBS) 2>$@.ld || { cat $@.ld; rm -f $@.ld; exit 1; }
	@grep -vE "in statically linked applications requires at runtime|: in function \`" $@.ld || true; rm -f $@.ld
# The reviewer's page, built into assentd as it is (no build step): gateway/web/assets.S
# .incbin's the files, so editing one rebuilds the binary.
WEB_ASSETS := gateway/web/review.html gateway/web/app.js gateway/web/app.css
$(WEB_OBJ): gateway/web/assets.S $(WEB_ASSETS)
	@mkdir -p $(dir $@)
	@echo "  AS      $<"
	@$(CC) -c $< -o $@
build/assentd: build/obj/gateway/cli/assentd.o build/libassent.a
	@echo "  CCLD    $@"
	@$(CC) $(LDHARDEN) -o $@ $^ $(LIBS)
# The jailed workers' binary, which assentd's signer executes (it must sit beside
# assentd): linked from common/, gateway/proto/ and gateway/worker/ only, and without
# OpenSSL or LMDB, so a worker has no key, ledger, registry or policy code to run
# (tests/integration/binaries.sh checks with nm and ldd).
WORKER_LIB_OBJ := $(filter build/obj/common/% build/obj/gateway/proto/% build/obj/gateway/worker/%,$(LIB_OBJ))
WORKER_LIBS    := -lmbedtls -lmbedx509 -lmbedcrypto -ljansson -lseccomp -lmicrohttpd -pthread
build/libassent-worker.a: $(WORKER_LIB_OBJ) $(WEB_OBJ)
	@echo "  AR      $@"
	@rm -f $@; ar rcs $@ $^
build/assent-worker: build/obj/gateway/worker/main.o build/libassent-worker.a
	@echo "  CCLD    $@"
	@$(CC) $(LDHARDEN) -o $@ $^ $(WORKER_LIBS)
# The call recorder (gateway/recorder/): the only program with a database client in it.
build/assent-recorder: build/obj/gateway/recorder/main.o build/libassent.a
	@echo "  CCLD    $@"
	@$(CC) $(LDHARDEN) -o $@ $^ $(REC_LIBS) -lmbedcrypto -ljansson -lseccomp -pthread
# The cluster client (gateway/recorder/cluster.c, cluster_lease.c): a replica's PostgreSQL connection (issue 32).
build/assent-cluster: build/obj/gateway/recorder/cluster.o build/obj/gateway/recorder/cluster_lease.o build/libassent.a
	@echo "  CCLD    $@"
	@$(CC) $(LDHARDEN) -o $@ $^ $(REC_LIBS) -lmbedcrypto -ljansson -lseccomp -pthread
build/assent: build/obj/gateway/cli/assent.o build/libassent.a
	@echo "  CCLD    $@"
	@$(CC) $(LDHARDEN) -o $@ $^ $(LIBS)
build/san/assent-verify: $(patsubst %.c,build/san/obj/%.o,$(VERIFY_CLI)) build/san/libassent.a
	$(CC) -fsanitize=address,undefined -o $@ $^ $(LIBS)
build/san/assent: build/san/obj/gateway/cli/assent.o build/san/libassent.a
	$(CC) -fsanitize=address,undefined -o $@ $^ $(LIBS)

# Independent decoders as test oracles, linked only by the tests and harnesses that
# use them (ORACLE_LIBS_<name>); the product links neither (docs/hacking.md, "Why it is built
# this way"): libcbor checks our strict CBOR decoder, libjwt our tokens.
ORACLE_LIBS_ledger_entry      := -lcbor
ORACLE_LIBS_token             := -ljwt
ORACLE_LIBS_token_oracle_test := -ljwt

# The call recorder's database clients (gateway/recorder/db.c, db_my.c: libmariadb for MySQL and
# MariaDB): what links the recorder
# links these, and so do the unit tests named db_* or store_* (unit_libs).
REC_LIBS := -lsqlite3 -lpq -lmariadb
unit_libs = $(ORACLE_LIBS_$(1)) $(if $(filter db_% store_%,$(1)),$(REC_LIBS))

# ---- unit tests: each under the plain build and under the sanitizers ----
UNIT_BINS     := $(patsubst tests/unit/%.c,build/tests/%,$(UNIT_SRC))
UNIT_SAN_BINS := $(patsubst tests/unit/%.c,build/san/tests/%,$(UNIT_SRC))
build/tests/%: build/obj/tests/unit/%.o build/libassent.a
	@mkdir -p $(dir $@)
	$(CC) $(LDHARDEN) -o $@ $^ $(LIBS) $(TESTLIBS) $(call unit_libs,$*)
build/san/tests/%: build/san/obj/tests/unit/%.o build/san/libassent.a
	@mkdir -p $(dir $@)
	$(CC) -fsanitize=address,undefined -o $@ $^ $(LIBS) $(TESTLIBS) $(call unit_libs,$*)

# ---- fuzz harnesses: libFuzzer (clang) and a replay driver (gcc + sanitizers) ----
FUZZ_BINS   := $(patsubst %,build/fuzz/%,$(FUZZERS))
REPLAY_BINS := $(patsubst %,build/san/replay/%,$(FUZZERS))
build/fuzz/%: fuzz/%.c build/fuzz/libassent.a
	$(CLANG) $(CFLAGS_BASE) -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o $@ $^ $(LIBS) $(ORACLE_LIBS_$*)
build/san/replay/%: build/san/obj/fuzz/%.o build/san/obj/fuzz/driver.o build/san/libassent.a
	@mkdir -p $(dir $@)
	$(CC) -fsanitize=address,undefined -o $@ $^ $(LIBS) $(ORACLE_LIBS_$*)

fuzz: $(FUZZ_BINS)

fuzz-smoke: deps $(FUZZ_BINS)
	FUZZ_SECONDS=$(FUZZ_SECONDS) tests/scripts/fuzz_smoke.sh $(FUZZERS)

# ---- the whole test suite ----
check: deps all build/san/assent-verify build/san/assent $(UNIT_BINS) $(UNIT_SAN_BINS) $(REPLAY_BINS) build/tests/mint build/tests/evil_worker build/tests/uhttp_probe build/tests/assent-verify-dyn
	tests/scripts/run.sh
test: check

# ---- benchmarks ----
build/bench/ledger_bench: tests/bench/ledger_bench.c build/libassent.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(HARDEN) $(LDHARDEN) -o $@ $^ $(LIBS)
build/bench/token_bench: tests/bench/token_bench.c build/libassent.a
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	@$(CC) $(CFLAGS_BASE) $(HARDEN) $(LDHARDEN) -o $@ $^ $(LIBS)
# sign_bench compares libjwt with what replaced it, so it alone still links libjwt.
build/bench/sign_bench: tests/bench/sign_bench.c build/libassent.a
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	@$(CC) $(CFLAGS_BASE) $(HARDEN) $(LDHARDEN) -o $@ $^ $(LIBS) -ljwt
# cbor_bench compares our decoder with libcbor's, so it alone links libcbor.
build/bench/cbor_bench: tests/bench/cbor_bench.c build/libassent.a
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	@$(CC) $(CFLAGS_BASE) $(HARDEN) $(LDHARDEN) -o $@ $^ $(LIBS) -lcbor
build/bench/policy_bench: tests/bench/policy_bench.c build/libassent.a
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	@$(CC) $(CFLAGS_BASE) $(HARDEN) $(LDHARDEN) -o $@ $^ $(LIBS)
# records_bench drives the recorder's store directly, so it links the database clients.
build/bench/records_bench: tests/bench/records_bench.c build/libassent.a
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	@$(CC) $(CFLAGS_BASE) $(HARDEN) $(LDHARDEN) -o $@ $^ $(LIBS) $(REC_LIBS)
# passkey_bench checks a WebAuthn assertion as the signer does, beside OpenSSL's ES256 verify.
build/bench/passkey_bench: tests/bench/passkey_bench.c build/libassent.a
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	@$(CC) $(CFLAGS_BASE) $(HARDEN) $(LDHARDEN) -o $@ $^ $(LIBS)
# p11_bench signs through a PKCS#11 module (SoftHSM2, in a token p11_bench.sh makes).
build/bench/p11_bench: tests/bench/p11_bench.c build/libassent.a
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	@$(CC) $(CFLAGS_BASE) $(HARDEN) $(LDHARDEN) -o $@ $^ $(LIBS)
bench: deps all build/bench/ledger_bench build/bench/token_bench build/bench/sign_bench build/bench/p11_bench build/bench/passkey_bench build/bench/cbor_bench build/bench/policy_bench build/bench/records_bench build/tests/mint
	build/bench/ledger_bench
	build/bench/token_bench
	build/bench/sign_bench
	tests/bench/p11_bench.sh build/bench/p11_bench
	build/bench/passkey_bench
	tests/bench/witness_bench.sh build
	build/bench/cbor_bench
	/usr/bin/python3 tests/bench/gateway_bench.py --build build
	/usr/bin/python3 tests/bench/gateway_http_bench.py --build build
	build/bench/policy_bench
	/usr/bin/python3 tests/bench/policy_e2e_bench.py --build build
	node tests/bench/web_bench.mjs --build build
	/usr/bin/python3 tests/bench/mcp2026_bench.py --build build
	/usr/bin/python3 tests/bench/gate_bench.py --build build
	build/bench/records_bench
	/usr/bin/python3 tests/bench/cluster_bench.py --build build
	/usr/bin/python3 tests/bench/durable_bench.py --build build

# ---- the main job: the gateway on ./var (gateway/cli/run.sh) ----
# POLICY=FILE and UPSTREAMS=FILE hand the daemon a policy and the MCP servers to gate.
run: deps all
	POLICY="$(POLICY)" UPSTREAMS="$(UPSTREAMS)" gateway/cli/run.sh ./var

# The ledger on its own: append, checkpoint, verify, prove, export (./var/demo).
demo: deps all
	tests/scripts/demo.sh ./var/demo

# ---- install ----
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include/assent $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0755 build/assent-verify build/assent build/assentd build/assent-worker build/assent-recorder build/assent-cluster $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 include/assent/err.h include/assent/verify.h include/assent/version.h $(DESTDIR)$(PREFIX)/include/assent/
	install -m 0644 build/libassent-verify.a $(DESTDIR)$(PREFIX)/lib/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' verify/assent-verify.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/assent-verify.pc
	install -m 0644 verify/assent-verify.1 gateway/cli/assent.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -d $(DESTDIR)$(PREFIX)/share/man/man5
	install -m 0644 policy/assent.policy.5 gateway/cli/assent.upstreams.5 gateway/cli/assent.records.5 gateway/cli/assent.notify.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	install -m 0644 gateway/cli/assentd.8 $(DESTDIR)$(PREFIX)/share/man/man8/

# What the Debian package installs (debian/rules): assentd and its workers in /usr/libexec/assent
# (assentd runs the workers from its own directory; they are not commands and have no manual
# pages), /usr/bin/assentd a link to it, assent and assent-verify in /usr/bin, and /etc/assent.
install-deb: all
	install -d $(DESTDIR)/usr/bin $(DESTDIR)/usr/libexec/assent $(DESTDIR)/etc/assent \
	  $(DESTDIR)/usr/share/man/man1 $(DESTDIR)/usr/share/man/man5 $(DESTDIR)/usr/share/man/man8
	install -m 0755 build/assentd build/assent-worker build/assent-recorder build/assent-cluster $(DESTDIR)/usr/libexec/assent/
	ln -sf ../libexec/assent/assentd $(DESTDIR)/usr/bin/assentd
	install -m 0755 build/assent build/assent-verify $(DESTDIR)/usr/bin/
	install -m 0644 verify/assent-verify.1 gateway/cli/assent.1 $(DESTDIR)/usr/share/man/man1/
	install -m 0644 policy/assent.policy.5 gateway/cli/assent.upstreams.5 gateway/cli/assent.records.5 gateway/cli/assent.notify.5 $(DESTDIR)/usr/share/man/man5/
	install -m 0644 gateway/cli/assentd.8 $(DESTDIR)/usr/share/man/man8/
	install -m 0644 debian/policy $(DESTDIR)/etc/assent/policy
	install -m 0644 debian/assentd.env $(DESTDIR)/etc/assent/assentd.env

# The Debian package, built with debhelper from a copy of the tracked files (build/deb/src; the
# .deb lands in build/deb), then checked: lintian with no error or warning, and the unit's
# exposure score as systemd-analyze security rates it (docs/deploy.md, "The Debian package").
deb:
	@tests/scripts/deps.sh
	rm -rf build/deb && mkdir -p build/deb/src
	git ls-files -z | tar -c --null -T - -f - | tar -x -C build/deb/src
	cd build/deb/src && dpkg-buildpackage -b -us -uc -j2 >../build.log 2>&1 || { tail -30 ../build.log; exit 1; }
	lintian --fail-on error,warning build/deb/assent_$(VERSION)_*.deb
	@echo "deb: $$(ls build/deb/assent_$(VERSION)_*.deb)"
	@echo "deb: assentd.service: $$(systemd-analyze security --offline=true debian/assent.assentd.service 2>/dev/null | tail -1)"

deps:
	@tests/scripts/deps.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability --inline-suppr $(INCS) \
	  --suppress=missingIncludeSystem common ledger verify gateway policy

clean:
	rm -rf build

# Programs and tests are rebuilt when any source changes.
.SECONDARY:

# Test tools: mint issues tokens through the signer's issuance call over a scratch ledger (no daemon);
# evil_worker plays a compromised worker against a real signer.
build/tests/mint: tests/tools/mint.c build/libassent.a
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	@$(CC) $(CFLAGS_BASE) $(HARDEN) $(LDHARDEN) -o $@ $^ $(LIBS)
# The same objects as build/assent-verify, linked dynamically: faketime (LD_PRELOAD, which a static
# PIE ignores) then sets its clock, so tests/vectors' tokens are checked as of the time they name.
build/tests/assent-verify-dyn: $(patsubst %.c,build/obj/%.o,$(VERIFY_CLI)) build/libassent-verify.a
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	@$(CC) $(LDHARDEN) -o $@ $^ $(VERIFY_LIBS)
build/tests/evil_worker: tests/tools/evil_worker.c build/libassent.a
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	@$(CC) $(CFLAGS_BASE) $(HARDEN) $(LDHARDEN) -o $@ $^ $(LIBS)
# consist_tool answers tests/scripts/rfc9162_check.py with ledger/merkle.c's consistency proofs
# (tests/integration/consistency.sh).
check: build/tests/consist_tool
build/tests/consist_tool: tests/tools/consist_tool.c build/libassent.a
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	@$(CC) $(CFLAGS_BASE) $(HARDEN) $(LDHARDEN) -o $@ $^ $(LIBS)
# uhttp_probe drives the upstream HTTP client over sockets it connects itself, optionally
# inside the workers' jail (tests/integration/uhttp_tls.sh); the plain build, since the
# sanitizers' runtime makes calls the jail kills.
build/tests/uhttp_probe: tests/tools/uhttp_probe.c build/libassent.a
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	@$(CC) $(CFLAGS_BASE) $(HARDEN) $(LDHARDEN) -o $@ $^ $(LIBS)
