/* OpenSSL signing of checkpoints for the ledger writer (see headsign.h). */
#include "ledger/headsign.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>

#include "ledger/merkle.h"

struct headsign {
	EVP_PKEY *pkey;
	EVP_PKEY_CTX *ctx; /* set up once for EVP_PKEY_sign; one thread at a time */
	BIGNUM *order, *half;
};

void headsign_free(struct headsign *hs)
{
	if (!hs)
		return;
	EVP_PKEY_CTX_free(hs->ctx);
	EVP_PKEY_free(hs->pkey); /* OpenSSL clears an EC private key as it frees it */
	BN_free(hs->order);
	BN_free(hs->half);
	free(hs);
}

/* s and n - s both verify: keep the one at most n/2. */
static int low_s(const struct headsign *hs, const uint8_t *der, size_t n, uint8_t *out, size_t *outlen)
{
	const unsigned char *p = der;
	ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)n);
	int rc = AS_ECRYPTO;
	if (!sig)
		return rc;
	const BIGNUM *r, *s;
	ECDSA_SIG_get0(sig, &r, &s);
	if (BN_cmp(s, hs->half) <= 0) {
		memcpy(out, der, n);
		*outlen = n;
		rc = 0;
	} else {
		BIGNUM *r2 = BN_dup(r), *s2 = BN_new();
		if (r2 && s2 && BN_sub(s2, hs->order, s) == 1 && ECDSA_SIG_set0(sig, r2, s2) == 1) {
			r2 = s2 = NULL; /* owned by sig now */
			unsigned char *q = out;
			int len = i2d_ECDSA_SIG(sig, NULL);
			if (len > 0 && len <= ECKEY_SIG_MAX && i2d_ECDSA_SIG(sig, &q) == len) {
				*outlen = (size_t)len;
				rc = 0;
			}
		}
		BN_free(r2);
		BN_free(s2);
	}
	ECDSA_SIG_free(sig);
	return rc;
}

int headsign_verify(void *arg, const void *msg, size_t n, const uint8_t *sig, size_t siglen)
{
	struct headsign *hs = arg;
	uint8_t h[32];
	sha256(msg, n, h);
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new(hs->pkey, NULL);
	int ok = c && EVP_PKEY_verify_init(c) == 1 && EVP_PKEY_verify(c, sig, siglen, h, 32) == 1;
	EVP_PKEY_CTX_free(c);
	ERR_clear_error();
	return ok ? 0 : AS_EBADSIG;
}

int headsign_sign(void *arg, const void *msg, size_t n, uint8_t *sig, size_t *siglen)
{
	struct headsign *hs = arg;
	uint8_t h[32], der[ECKEY_SIG_MAX];
	size_t len = sizeof der;
	sha256(msg, n, h);
	int rc = EVP_PKEY_sign(hs->ctx, der, &len, h, 32) == 1 ? low_s(hs, der, len, sig, siglen) : AS_ECRYPTO;
	ERR_clear_error(); /* nothing of a failure may linger in this thread's queue */
	return rc;
}

int headsign_open(const struct eckey *k, struct headsign **out, char *err)
{
	struct headsign *hs = calloc(1, sizeof *hs);
	if (!hs)
		return as_fail(err, AS_ENOMEM, "out of memory");
	struct buf pem;
	buf_init(&pem, 4096);
	BIO *bio = eckey_private_pem(k, &pem) == 0 ? BIO_new_mem_buf(pem.p, (int)pem.len) : NULL;
	if (bio)
		hs->pkey = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	BIO_free(bio);
	buf_free_wipe(&pem);
	EC_GROUP *g = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
	int rc = hs->pkey && g && EVP_PKEY_get_base_id(hs->pkey) == EVP_PKEY_EC && EVP_PKEY_get_bits(hs->pkey) == 256 &&
			 (hs->ctx = EVP_PKEY_CTX_new(hs->pkey, NULL)) != NULL && EVP_PKEY_sign_init(hs->ctx) == 1 &&
			 (hs->order = BN_dup(EC_GROUP_get0_order(g))) != NULL && (hs->half = BN_new()) != NULL &&
			 BN_rshift1(hs->half, hs->order) == 1
		     ? 0
		     : AS_ECRYPTO;
	EC_GROUP_free(g);
	ERR_clear_error();
	/* The two libraries must hold the same key: what OpenSSL signs, mbedTLS verifies. */
	static const char probe[] = "assent: checkpoint key self-check";
	uint8_t sig[ECKEY_SIG_MAX];
	size_t siglen = 0;
	if (rc == 0 && (headsign_sign(hs, probe, sizeof probe - 1, sig, &siglen) != 0 ||
			eckey_verify(k, probe, sizeof probe - 1, sig, siglen) != 0))
		rc = AS_ECRYPTO;
	if (rc != 0) {
		headsign_free(hs);
		return as_fail(err, rc, "OpenSSL refuses the checkpoint key, or signs differently from mbedTLS");
	}
	*out = hs;
	return 0;
}
