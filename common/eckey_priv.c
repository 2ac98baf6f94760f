/* P-256 private keys with mbedTLS 2.28: generate, store (0600), load, sign (deterministic,
 * RFC 6979), export as PEM. Split from eckey.c so that the verify library and assent-verify
 * carry no private-key code (tests/integration/binaries.sh checks). */
#include "common/eckey.h"
#include "common/eckey_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/entropy.h>
#include <mbedtls/pk.h>
#include <mbedtls/sha256.h>

static mbedtls_entropy_context g_entropy;
static mbedtls_ctr_drbg_context g_drbg;
static int g_rng_ready;

/* One DRBG per process, seeded from the kernel on first use. The signer seeds it
 * before its workers are started only in the sense that workers never hold keys. */
static int rng_init(void)
{
	if (g_rng_ready)
		return 0;
	mbedtls_entropy_init(&g_entropy);
	mbedtls_ctr_drbg_init(&g_drbg);
	static const char pers[] = "assent-eckey";
	if (mbedtls_ctr_drbg_seed(&g_drbg, mbedtls_entropy_func, &g_entropy, (const unsigned char *)pers,
				  sizeof pers - 1) != 0)
		return AS_ECRYPTO;
	g_rng_ready = 1;
	return 0;
}

int eckey_load_private(const char *path, struct eckey **out, char *err)
{
	struct buf b;
	GUARD(file_read(path, 16384, &b, err));
	struct eckey *k = eckey_new();
	int rc = k ? buf_putc(&b, 0) : AS_ENOMEM;
	if (rc == 0 && (mbedtls_pk_parse_key(&k->pk, b.p, b.len, NULL, 0) != 0 || !eckey_is_p256(&k->pk)))
		rc = as_fail(err, AS_ECRYPTO, "%s: not a P-256 private key in PEM form", path);
	buf_free_wipe(&b);
	if (rc != 0) {
		eckey_free(k);
		return rc == AS_ENOMEM ? as_fail(err, rc, "out of memory") : rc;
	}
	k->has_private = 1;
	*out = k;
	return 0;
}

/* The public half beside a private key that has none (its maker stopped in between). */
static int pub_fill(const struct eckey *k, const char *pub_path, char *err)
{
	struct stat st;
	if (stat(pub_path, &st) == 0 || errno != ENOENT)
		return 0;
	struct buf pub;
	buf_init(&pub, 4096);
	int rc = eckey_public_pem(k, &pub);
	rc = rc ? as_fail(err, rc, "cannot export the key") : file_write_atomic(pub_path, pub.p, pub.len, 0644, err);
	buf_free(&pub);
	return rc;
}

static int load_private(const char *priv_path, const char *pub_path, struct eckey **out, char *err)
{
	GUARD(eckey_load_private(priv_path, out, err));
	int rc = pub_fill(*out, pub_path, err);
	if (rc != 0) {
		eckey_free(*out);
		*out = NULL;
	}
	return rc;
}

/* Two processes may both find no key (a daemon starting and an `assent` command): the
 * private key is created exclusively, so one wins and the other loads the winner's
 * instead of signing with a key of its own that nobody else trusts. */
int eckey_load_or_create(const char *priv_path, const char *pub_path, struct eckey **out, char *err)
{
	struct stat st;
	if (stat(priv_path, &st) == 0)
		return load_private(priv_path, pub_path, out, err);
	if (errno != ENOENT)
		return as_fail(err, AS_EIO, "cannot stat %s: %s", priv_path, strerror(errno));
	struct eckey *k;
	if (eckey_generate(&k) != 0)
		return as_fail(err, AS_ECRYPTO, "cannot generate a P-256 key");
	struct buf priv;
	buf_init(&priv, 4096);
	int rc = eckey_private_pem(k, &priv);
	rc =
	    rc ? as_fail(err, rc, "cannot export the key") : file_create_atomic(priv_path, priv.p, priv.len, 0600, err);
	buf_free_wipe(&priv);
	if (rc == 0) { /* ours won: its public half replaces any left by an older key */
		struct buf pub;
		buf_init(&pub, 4096);
		rc = eckey_public_pem(k, &pub);
		rc = rc ? as_fail(err, rc, "cannot export the key")
			: file_write_atomic(pub_path, pub.p, pub.len, 0644, err);
		buf_free(&pub);
	}
	if (rc != 0)
		eckey_free(k);
	if (rc == AS_EEXIST) /* another process made it first: theirs */
		return load_private(priv_path, pub_path, out, err);
	if (rc == 0)
		*out = k;
	return rc;
}

int eckey_sign(const struct eckey *k, const void *msg, size_t n, uint8_t *sig, size_t *siglen)
{
	if (!k->has_private)
		return AS_EINVAL;
	GUARD(rng_init());
	uint8_t h[32];
	mbedtls_sha256_ret(msg, n, h, 0);
	/* With MBEDTLS_ECDSA_DETERMINISTIC (Debian's build) the nonce follows RFC 6979;
	 * the RNG only blinds the computation. */
	size_t len = 0;
	unsigned char tmp[MBEDTLS_ECDSA_MAX_LEN];
	if (mbedtls_pk_sign((mbedtls_pk_context *)&k->pk, MBEDTLS_MD_SHA256, h, 32, tmp, &len, mbedtls_ctr_drbg_random,
			    &g_drbg) != 0 ||
	    len > ECKEY_SIG_MAX)
		return AS_ECRYPTO;
	memcpy(sig, tmp, len);
	*siglen = len;
	return 0;
}

int eckey_private_pem(const struct eckey *k, struct buf *out)
{
	if (!k->has_private)
		return AS_EINVAL;
	unsigned char pem[1024];
	int rc = mbedtls_pk_write_key_pem((mbedtls_pk_context *)&k->pk, pem, sizeof pem) == 0
		     ? buf_put(out, pem, strlen((char *)pem))
		     : AS_ECRYPTO;
	explicit_bzero(pem, sizeof pem);
	return rc;
}

int eckey_generate(struct eckey **out)
{
	GUARD(rng_init());
	struct eckey *k = eckey_new();
	if (!k)
		return AS_ENOMEM;
	if (mbedtls_pk_setup(&k->pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY)) != 0 ||
	    mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(k->pk), mbedtls_ctr_drbg_random, &g_drbg) !=
		0) {
		eckey_free(k);
		return AS_ECRYPTO;
	}
	k->has_private = 1;
	*out = k;
	return 0;
}

int eckey_save(const struct eckey *k, const char *priv_path, const char *pub_path, char *err)
{
	struct buf priv, pub;
	buf_init(&priv, 4096);
	buf_init(&pub, 4096);
	int rc = eckey_private_pem(k, &priv);
	if (rc == 0)
		rc = eckey_public_pem(k, &pub);
	if (rc != 0)
		rc = as_fail(err, rc, "cannot export the key");
	/* Public part first: a crash in between leaves no private key without its public one. */
	if (rc == 0)
		rc = file_write_atomic(pub_path, pub.p, pub.len, 0644, err);
	if (rc == 0)
		rc = file_write_atomic(priv_path, priv.p, priv.len, 0600, err);
	buf_free_wipe(&priv);
	buf_free(&pub);
	return rc;
}
