/* make bench: approval token verification, next to Python's jwt module (PyJWT,
 * Debian python3-jwt) verifying the same tokens in the same run:
 *  - verifications per second in-process, ES256 and HS256;
 *  - whole-process time of one `assent-verify token` call (a CI step runs it once).
 * Figures only; nothing here passes or fails on time. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jansson.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/ecdsa.h>
#include <mbedtls/pk.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include "include/assent/verify.h"
#include "common/eckey.h"
#include "common/eckey_impl.h"
#include "common/util.h"

extern char **environ;

#define SECRET "bench-secret-0123456789abcdef0123456789"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *run_capture(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return NULL;
	static char out[65536];
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = 0;
	return pclose(p) == 0 ? out : NULL;
}

static char *mint(const char *bin, const char *state, const char *env)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "%s %s/tests/mint --state %s --aud bench", env, bin, state);
	char *o = run_capture(cmd);
	json_error_t je;
	json_t *j = o ? json_loads(o, 0, &je) : NULL;
	char *t = j ? strdup(json_string_value(json_object_get(j, "token"))) : NULL;
	json_decref(j);
	if (!t) {
		fprintf(stderr, "bench: mint failed\n");
		exit(2);
	}
	return t;
}

/* ES256 verification with the key held, three ways over one signature: what assent calls
 * (eckey_verify_rs, through libcrypto), mbedTLS's mbedtls_ecdsa_verify (what it called
 * before), and OpenSSL's own EVP interface with nothing of assent's around it. */
static void es256_key_held(void)
{
	struct eckey *k = NULL;
	uint8_t der[ECKEY_SIG_MAX], h[32] = {1, 2, 3}, rs[64];
	size_t dn = 0;
	if (eckey_generate(&k) != 0 || eckey_sign(k, "bench", 5, der, &dn) != 0) {
		fprintf(stderr, "bench: no key\n");
		exit(2);
	}
	SHA256((const unsigned char *)"bench", 5, h); /* what eckey_sign signed */
	const unsigned char *q = der;
	ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &q, (long)dn);
	const BIGNUM *r, *sv;
	ECDSA_SIG_get0(sig, &r, &sv);
	BN_bn2binpad(r, rs, 32);
	BN_bn2binpad(sv, rs + 32, 32);
	ECDSA_SIG_free(sig);
	uint8_t spki[ECKEY_SPKI_MAX];
	size_t sn = 0;
	if (eckey_spki(k, spki, &sn) != 0)
		exit(2);
	q = spki;
	EVP_PKEY *pk = d2i_PUBKEY(NULL, &q, (long)sn);
	int n = 3000, bad = 0;
	double t0 = now_s();
	for (int i = 0; i < n; i++)
		bad += eckey_verify_rs(k, h, rs) != 0;
	double a = n / (now_s() - t0);
	mbedtls_ecp_keypair *ec = mbedtls_pk_ec(k->pk);
	mbedtls_mpi mr, ms;
	mbedtls_mpi_init(&mr);
	mbedtls_mpi_init(&ms);
	mbedtls_mpi_read_binary(&mr, rs, 32);
	mbedtls_mpi_read_binary(&ms, rs + 32, 32);
	t0 = now_s();
	for (int i = 0; i < n / 4; i++)
		bad += mbedtls_ecdsa_verify(&ec->grp, h, 32, &ec->Q, &mr, &ms) != 0;
	double m = n / 4 / (now_s() - t0);
	uint8_t d2[ECKEY_SIG_MAX];
	size_t d2n = 0;
	bad += eckey_rs_der(rs, d2, &d2n) != 0;
	t0 = now_s();
	for (int i = 0; i < n; i++) {
		EVP_PKEY_CTX *c = EVP_PKEY_CTX_new(pk, NULL);
		bad += !(c && EVP_PKEY_verify_init(c) == 1 && EVP_PKEY_verify(c, d2, d2n, h, 32) == 1);
		EVP_PKEY_CTX_free(c);
	}
	double o = n / (now_s() - t0);
	if (bad)
		fprintf(stderr, "bench: %d ES256 verifications failed\n", bad);
	printf("== ES256 signature verification, key held (one P-256 signature) ==\n");
	printf("%-44s %14.0f\n", "assent (eckey_verify_rs, libcrypto), /s", a);
	printf("%-44s %14.0f\n", "mbedTLS mbedtls_ecdsa_verify, /s", m);
	printf("%-44s %14.0f\n", "OpenSSL EVP_PKEY_verify directly, /s", o);
	printf("assent = %.2fx OpenSSL (goal: 0.8x or more); %.1fx mbedTLS\n", a / o, a / m);
	mbedtls_mpi_free(&mr);
	mbedtls_mpi_free(&ms);
	EVP_PKEY_free(pk);
	eckey_free(k);
}

static double rate(const char *tok, const struct av_token_opts *o, int n)
{
	double t0 = now_s();
	for (int i = 0; i < n; i++) {
		struct av_token_result r;
		if (av_verify_token(tok, strlen(tok), o, &r) != 0) {
			fprintf(stderr, "bench: token did not verify: %s\n", r.reason);
			exit(2);
		}
		free(r.claims_json);
	}
	return n / (now_s() - t0);
}

/* posix_spawn (vfork-like in glibc): the cost measured is the child's, not the
 * copying of this process's page tables. */
static double process_ms(const char *path, char *const argv[], int n)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	double t0 = now_s();
	for (int i = 0; i < n; i++) {
		pid_t p;
		int st;
		if (posix_spawn(&p, path, &fa, NULL, argv, environ) != 0 || waitpid(p, &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			fprintf(stderr, "bench: %s failed\n", path);
			exit(2);
		}
	}
	double ms = (now_s() - t0) * 1000.0 / n;
	posix_spawn_file_actions_destroy(&fa);
	return ms;
}

int main(void)
{
	char exe[1024];
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[el > 0 ? el : 0] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0; /* build/bench */
	char bin[1100], state[] = "/tmp/assent-tbench.XXXXXX";
	snprintf(bin, sizeof bin, "%s/..", exe);
	if (!mkdtemp(state))
		return 2;
	char *es = mint(bin, state, "");
	char *hs = mint(bin, state, "FEEDBACK_SIGN_TOKENS=true FEEDBACK_TOKEN_SECRET=" SECRET);
	char keypath[2048], cmd[8192], verify[1200];
	snprintf(cmd, sizeof cmd, "ls %s/keys/token-*.pub", state);
	char *kp = run_capture(cmd);
	snprintf(keypath, sizeof keypath, "%.*s", (int)strcspn(kp, "\n"), kp);
	snprintf(verify, sizeof verify, "%s/assent-verify", bin);

	const char *keys[] = {keypath};
	struct av_token_opts oes = {.aud = "bench", .key_paths = keys, .nkeys = 1, .leeway = -1};
	struct av_token_opts ohs = {
	    .aud = "bench", .secret = (const uint8_t *)SECRET, .secret_len = strlen(SECRET), .leeway = -1};
	double es_rate = rate(es, &oes, 3000), hs_rate = rate(hs, &ohs, 30000);
	char *argv_es[] = {"assent-verify", "token", es, "--aud", "bench", "--key", keypath, NULL};
	setenv("BENCH_SECRET", SECRET, 1);
	char *argv_hs[] = {"assent-verify", "token", hs, "--aud", "bench", "--secret-env", "BENCH_SECRET", NULL};
	double es_ms = process_ms(verify, argv_es, 300), hs_ms = process_ms(verify, argv_hs, 300);

	/* The same tokens through PyJWT, measured by Python itself. */
	snprintf(cmd, sizeof cmd,
		 "/usr/bin/python3 - '%s' '%s' '%s' '%s' <<'PY'\n"
		 "import sys, time, subprocess, jwt\n"
		 "es, hs, key, secret = sys.argv[1:5]\n"
		 "pem = open(key).read()\n"
		 "def rate(tok, k, alg, n):\n"
		 "    t = time.perf_counter()\n"
		 "    for _ in range(n): jwt.decode(tok, k, algorithms=[alg], audience='bench')\n"
		 "    return n / (time.perf_counter() - t)\n"
		 "def proc(tok, k, alg, n):\n"
		 "    code = 'import sys,jwt; jwt.decode(sys.argv[1], sys.argv[2], algorithms=[sys.argv[3]], "
		 "audience=\"bench\")'\n"
		 "    t = time.perf_counter()\n"
		 "    for _ in range(n): subprocess.run(['/usr/bin/python3', '-c', code, tok, k, alg], check=True)\n"
		 "    return (time.perf_counter() - t) * 1000 / n\n"
		 "print(rate(es, pem, 'ES256', 3000), rate(hs, secret, 'HS256', 30000), proc(es, pem, 'ES256', 30), "
		 "proc(hs, secret, 'HS256', 30))\n"
		 "PY",
		 es, hs, keypath, SECRET);
	char *py = run_capture(cmd);
	double pes = 0, phs = 0, pes_ms = 0, phs_ms = 0;
	if (!py || sscanf(py, "%lf %lf %lf %lf", &pes, &phs, &pes_ms, &phs_ms) != 4)
		fprintf(stderr, "bench: the Python reference did not run\n");

	printf("== approval token verification (same tokens; PyJWT %s) ==\n", "from Debian python3-jwt");
	printf("%-44s %14s %14s\n", "", "assent (C)", "PyJWT");
	printf("%-44s %14.0f %14.0f\n", "ES256 verifications/s, in-process", es_rate, pes);
	printf("%-44s %14.0f %14.0f\n", "HS256 verifications/s, in-process", hs_rate, phs);
	printf("%-44s %14.2f %14.2f\n", "ES256 one whole-process call, ms", es_ms, pes_ms);
	printf("%-44s %14.2f %14.2f\n", "HS256 one whole-process call, ms", hs_ms, phs_ms);
	es256_key_held();
	double empty_ms = process_ms("/bin/true", (char *[]){"true", NULL}, 300);
	printf("%-44s %14.2f\n", "for scale: /bin/true, one whole-process call, ms", empty_ms);
	printf(
	    "(in-process figures include reading and parsing the key for every call; goal for one call: under 5 ms)\n");
	snprintf(cmd, sizeof cmd, "rm -rf %s", state);
	if (system(cmd) != 0)
		return 1;
	free(es);
	free(hs);
	return 0;
}
