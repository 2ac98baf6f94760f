/* Witness cosignatures (C2SP tlog-cosignature cosignature/v1, Ed25519): witness vkeys and
 * the check of a checkpoint's cosignature lines (cosig.h). Ed25519 is OpenSSL's (mbedTLS
 * 2.28 has none); verification only, no key here is private. */
#include "ledger/cosig.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "ledger/merkle.h"

/* SHA-256(name || "\n" || 0x04 || pub)[:4], C2SP tlog-cosignature's key ID. */
static void witness_key_id(const char *name, size_t nl, const uint8_t pub[32], uint8_t id[4])
{
	uint8_t in[CKPT_ORIGIN_MAX + 2 + 32], h[32];
	memcpy(in, name, nl);
	in[nl] = '\n';
	in[nl + 1] = COSIG_TYPE_ED25519;
	memcpy(in + nl + 2, pub, 32);
	sha256(in, nl + 2 + 32, h);
	memcpy(id, h, 4);
}

int witness_parse(const char *s, size_t n, struct witness *w, char *err)
{
	struct rd r, name, idhex;
	uint8_t key[34];
	size_t kl = 0;
	/* s is n bytes, not a string: messages quote at most the first 100 of them. */
	int q = n < 100 ? (int)n : 100;
	memset(w, 0, sizeof *w);
	if (n > COSIG_VKEY_MAX)
		return as_fail(err, AS_EINVAL, "witness key is %zu bytes, over the maximum of %d", n, COSIG_VKEY_MAX);
	rd_init(&r, s, n);
	if (rd_token(&r, "+", &name) != 0 || rd_expect(&r, "+") != 0 || !ckpt_origin_ok((const char *)name.p, name.len))
		return as_fail(err, AS_EINVAL,
			       "witness key '%.*s': expected NAME+KEYID+KEY with a name of printable ASCII, no "
			       "spaces or '+'",
			       q, s);
	if (rd_token(&r, "+", &idhex) != 0 || rd_expect(&r, "+") != 0 || idhex.len != 8 ||
	    hex_decode((const char *)idhex.p, 8, w->id, 4) != 0)
		return as_fail(err, AS_EINVAL, "witness key '%.*s': the key ID is not 8 lowercase hex digits", q, s);
	const uint8_t *k64 = NULL;
	size_t k64len = rd_left(&r);
	if (rd_take(&r, k64len, &k64) != 0 || b64_decode((const char *)k64, k64len, key, sizeof key, &kl) != 0 ||
	    kl != 33)
		return as_fail(err, AS_EINVAL, "witness key '%.*s': the key is not base64 of 33 bytes (found %zu)", q,
			       s, kl);
	if (key[0] != COSIG_TYPE_ED25519)
		return as_fail(err, AS_EINVAL,
			       "witness key '%.*s': key type 0x%02x, expected 0x04 (Ed25519 cosignature/v1)", q, s,
			       key[0]);
	memcpy(w->name, name.p, name.len);
	memcpy(w->pub, key + 1, 32);
	uint8_t id[4];
	witness_key_id(w->name, name.len, w->pub, id);
	if (memcmp(id, w->id, 4) != 0) {
		char want[9];
		hex_encode(id, 4, want);
		return as_fail(err, AS_EINVAL, "witness key '%.*s': key ID %.8s does not match the key (it is %s)", q,
			       s, (const char *)idhex.p, want);
	}
	return 0;
}

int cosig_message(const uint8_t *body, size_t n, uint64_t time, struct buf *out)
{
	GUARD(buf_printf(out, "cosignature/v1\ntime %llu\n", (unsigned long long)time));
	return buf_put(out, body, n);
}

/* Whether sig is pub's Ed25519 signature of msg (RFC 8032; OpenSSL refuses a non-canonical S):
 * 1 it is, 0 it is not, -1 OpenSSL could not check (no Ed25519 here: not the witness's fault).
 * The host's openssl.cnf is not read: a configuration (a FIPS provider without Ed25519, say)
 * must not turn a witness's valid cosignature into a "forgery". */
static int ed25519_check(const uint8_t pub[32], const uint8_t *msg, size_t n, const uint8_t sig[64])
{
	if (OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL) != 1)
		return -1;
	EVP_PKEY *k = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, 32);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	int rc = -1;
	if (k && md && EVP_DigestVerifyInit(md, NULL, NULL, NULL, k) == 1)
		rc = EVP_DigestVerify(md, sig, 64, msg, n) == 1 ? 1 : 0;
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(k);
	return rc;
}

int witness_set_ok(const struct witness *w, size_t nw, char *err)
{
	if (nw > COSIG_WITNESS_MAX)
		return as_fail(err, AS_EINVAL, "%zu witnesses given, at most %d", nw, COSIG_WITNESS_MAX);
	for (size_t i = 0; i < nw; i++)
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(w[i].name, w[j].name) && memcmp(w[i].id, w[j].id, 4) == 0)
				return as_fail(err, AS_EINVAL, "witness %s is given twice", w[i].name);
			if (memcmp(w[i].pub, w[j].pub, 32) == 0)
				return as_fail(err, AS_EINVAL, "witness %s and witness %s have the same public key",
					       w[j].name, w[i].name);
		}
	return 0;
}

/* One signature line (without its newline): "— NAME BASE64", read as ckpt_verify reads it;
 * the name and the decoded bytes (at most max) out. */
static int read_sig_line(struct rd *line, size_t no, struct rd *name, uint8_t *blob, size_t max, size_t *bl, char *err)
{
	if (rd_expect(line, NOTE_SIG_PREFIX) != 0)
		return as_fail(err, AS_EINVAL, "checkpoint: signature line %zu does not start with an em dash", no);
	int named = rd_token(line, " ", name) == 0;
	if (rd_expect(line, " ") != 0)
		return as_fail(err, AS_EINVAL, "checkpoint: signature line %zu has no signature", no);
	const uint8_t *sig = NULL;
	size_t siglen = rd_left(line);
	if (!named || !ckpt_origin_ok((const char *)name->p, name->len) || rd_take(line, siglen, &sig) != 0 ||
	    b64_decode((const char *)sig, siglen, blob, max, bl) != 0 || *bl < 5)
		return as_fail(err, AS_EINVAL, "checkpoint: signature line %zu is malformed", no);
	return 0;
}

/* The witness a line is by: its name and key ID both match; -1 for none. */
static int line_witness(const struct rd *name, const uint8_t *blob, const struct witness *w, size_t nw)
{
	for (size_t i = 0; i < nw; i++)
		if (name->len == strlen(w[i].name) && memcmp(name->p, w[i].name, name->len) == 0 &&
		    memcmp(blob, w[i].id, 4) == 0)
			return (int)i;
	return -1;
}

/* A line by witness i: 76 bytes, a timestamp C2SP allows, an Ed25519 signature of the
 * message over this body. msg is scratch space. */
static int check_cosig(const struct witness *wi, const uint8_t *blob, size_t bl, const uint8_t *body, size_t body_len,
		       struct buf *msg, uint64_t *time, char *err)
{
	if (bl != COSIG_BLOB_LEN)
		return as_fail(err, AS_EBADSIG, "cosignature by witness %s is %zu bytes, not %d", wi->name, bl,
			       COSIG_BLOB_LEN);
	uint64_t t = be64_get(blob + 4);
	if (t > COSIG_TIME_MAX)
		return as_fail(err, AS_EBADSIG, "cosignature by witness %s has a timestamp over 2^63 - 1", wi->name);
	buf_reset(msg);
	if (cosig_message(body, body_len, t, msg) != 0)
		return as_fail(err, AS_ENOMEM, "out of memory for a cosignature's message");
	int ok = ed25519_check(wi->pub, msg->p, msg->len, blob + 12);
	if (ok < 0)
		return as_fail(err, AS_ECRYPTO, "cannot check witness %s's cosignature: OpenSSL offers no Ed25519 here",
			       wi->name);
	if (ok == 0)
		return as_fail(err, AS_EBADSIG,
			       "cosignature by witness %s (time %llu) does not verify over this checkpoint: forged, "
			       "or made for another checkpoint",
			       wi->name, (unsigned long long)t);
	*time = t;
	return 0;
}

int cosig_verify(const uint8_t *t, size_t n, const struct witness *w, size_t nw, struct cosig_result *r, char *err)
{
	struct checkpoint cp;
	struct rd rest, line, name;
	size_t body_len, nsigs = 0;
	memset(r, 0, sizeof *r);
	GUARD(witness_set_ok(w, nw, err));
	GUARD(ckpt_parse_body(t, n, &cp, &body_len, err));
	rd_init(&rest, t + body_len + 1, n - body_len - 1); /* past the blank line */
	struct buf msg;
	buf_init(&msg, 64 + CKPT_MAX);
	int rc = 0;
	while (rc == 0 && rd_left(&rest) > 0) {
		size_t bl = 0;
		uint64_t time = 0;
		if (rd_line(&rest, &line) != 0) {
			rc = as_fail(err, AS_EINVAL, "checkpoint: signature line without a final newline");
			break;
		}
		if (++nsigs > CKPT_MAX_SIGS) {
			rc = as_fail(err, AS_EINVAL, "checkpoint: more than %d signature lines", CKPT_MAX_SIGS);
			break;
		}
		/* A line too long for any cosignature is still read: it may be the log's. */
		uint8_t big[4 + 256];
		rc = read_sig_line(&line, nsigs, &name, big, sizeof big, &bl, err);
		if (rc != 0)
			break;
		int i = line_witness(&name, big, w, nw);
		if (i < 0)
			continue;
		rc = check_cosig(&w[i], big, bl, t, body_len, &msg, &time, err);
		if (rc != 0) {
			r->bad = (size_t)i;
			break;
		}
		if (!r->cosigned[i])
			r->count++;
		r->cosigned[i] = 1;
		if (time > r->time[i])
			r->time[i] = time;
	}
	buf_free(&msg);
	if (rc == 0 && nsigs == 0)
		rc = as_fail(err, AS_EINVAL, "checkpoint has no signature line");
	if (rc != 0)
		r->count = 0;
	return rc;
}
