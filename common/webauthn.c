/* WebAuthn checks for passkey approvals: see webauthn.h. Every read is bounded by the
 * input's length (struct rd); nothing here allocates from what the input declares. */
#include "common/webauthn.h"

#include <stdio.h>
#include <string.h>

#include <mbedtls/sha256.h>

#include "common/cbor.h"
#include "common/eckey.h"
#include "common/util.h"

/* The COSE_Key of an ES256 credential on P-256, as an authenticator writes it (CTAP2
 * canonical order, which is RFC 8949's for these keys): map(5) 1:2 3:-7 -1:1 -2:bstr(32)
 * -3:bstr(32). Byte for byte: anything else (another algorithm, curve, extra members, a
 * longer form) is refused. */
static const uint8_t COSE_HEAD[] = {0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20};
static const uint8_t COSE_Y[] = {0x22, 0x58, 0x20};
#define COSE_KEY_LEN (sizeof COSE_HEAD + 32 + sizeof COSE_Y + 32)

static int cose_key(struct rd *r, struct wa_authdata *out, char *err)
{
	const uint8_t *p;
	if (rd_left(r) != COSE_KEY_LEN)
		return as_fail(err, AS_EINVAL,
			       "authenticator data: the credential's public key is %zu bytes; an ES256 P-256 COSE key "
			       "is %zu (only ES256 passkeys are accepted, and no extensions)",
			       rd_left(r), COSE_KEY_LEN);
	if (rd_take(r, sizeof COSE_HEAD, &p) != 0 || memcmp(p, COSE_HEAD, sizeof COSE_HEAD) != 0)
		return as_fail(err, AS_EINVAL,
			       "authenticator data: the credential's public key is not an ES256 P-256 COSE key "
			       "(kty 2, alg -7, crv 1)");
	if (rd_take(r, 32, &p) != 0)
		return as_fail(err, AS_EINVAL, "authenticator data: the public key's x is cut short");
	memcpy(out->x, p, 32);
	if (rd_take(r, sizeof COSE_Y, &p) != 0 || memcmp(p, COSE_Y, sizeof COSE_Y) != 0 || rd_take(r, 32, &p) != 0)
		return as_fail(err, AS_EINVAL, "authenticator data: the public key's y is missing");
	memcpy(out->y, p, 32);
	struct eckey *k = NULL;
	if (eckey_from_xy(out->x, out->y, &k) != 0)
		return as_fail(err, AS_EINVAL, "authenticator data: the public key is not a point on P-256");
	eckey_free(k);
	return 0;
}

int wa_authdata_parse(const uint8_t *p, size_t n, struct wa_authdata *out, char *err)
{
	memset(out, 0, sizeof *out);
	if (n < WA_AUTHDATA_MIN || n > WA_AUTHDATA_MAX)
		return as_fail(err, AS_EINVAL, "authenticator data is %zu bytes; it is %d to %d", n, WA_AUTHDATA_MIN,
			       WA_AUTHDATA_MAX);
	struct rd r;
	rd_init(&r, p, n);
	const uint8_t *h;
	uint64_t count = 0;
	if (rd_take(&r, 32, &h) != 0 || rd_u8(&r, &out->flags) != 0 || rd_be(&r, 4, &count) != 0)
		return as_fail(err, AS_EINVAL, "authenticator data is cut short");
	memcpy(out->rpid_hash, h, 32);
	out->sign_count = (uint32_t)count;
	if (out->flags & WA_FLAG_ED)
		return as_fail(err, AS_EINVAL, "authenticator data carries extensions (flag ED); assent asks for none");
	if (!(out->flags & WA_FLAG_AT)) {
		if (rd_left(&r) != 0)
			return as_fail(err, AS_EINVAL,
				       "authenticator data: %zu bytes after the sign count, with no "
				       "credential (flag AT) or extensions (flag ED) to hold them",
				       rd_left(&r));
		return 0;
	}
	uint64_t idlen = 0;
	const uint8_t *id;
	if (rd_take(&r, 16, &h) != 0 || rd_be(&r, 2, &idlen) != 0)
		return as_fail(err, AS_EINVAL, "authenticator data: the attested credential is cut short");
	memcpy(out->aaguid, h, 16);
	if (idlen == 0 || idlen > WA_CRED_ID_MAX || rd_take(&r, (size_t)idlen, &id) != 0)
		return as_fail(err, AS_EINVAL,
			       "authenticator data: a credential id of %llu bytes (1 to %d, within the data)",
			       (unsigned long long)idlen, WA_CRED_ID_MAX);
	out->cred_id = id;
	out->cred_id_len = (size_t)idlen;
	GUARD(cose_key(&r, out, err));
	out->has_cred = 1;
	return 0;
}

/* The specification's CCDToString for what assent itself chose (a type, a base64url
 * challenge, an origin): a JSON string that needs no escape. An origin that would need one
 * is refused where it is configured; here it is refused again. */
static int ccd_string(struct buf *b, const char *s)
{
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e || *c == '"' || *c == '\\')
			return AS_EINVAL;
	return buf_putc(b, '"') || buf_put(b, s, strlen(s)) || buf_putc(b, '"') ? AS_ENOMEM : 0;
}

static int expected_prefix(struct buf *b, const char *type, const uint8_t challenge[32], const char *origin)
{
	struct buf ch;
	buf_init(&ch, 64);
	int rc = b64url_encode(challenge, 32, &ch) || buf_putc(&ch, 0) ? AS_ENOMEM : 0;
	if (rc == 0)
		rc = buf_put(b, "{\"type\":", 8) ? AS_ENOMEM : ccd_string(b, type);
	if (rc == 0)
		rc = buf_put(b, ",\"challenge\":", 13) ? AS_ENOMEM : ccd_string(b, (const char *)ch.p);
	if (rc == 0)
		rc = buf_put(b, ",\"origin\":", 10) ? AS_ENOMEM : ccd_string(b, origin);
	buf_free(&ch);
	return rc;
}

int wa_client_data_check(const uint8_t *cdj, size_t n, const char *type, const uint8_t challenge[32],
			 const char *origin, char *err)
{
	if (n == 0 || n > WA_CDJ_MAX)
		return as_fail(err, AS_EINVAL, "clientDataJSON is %zu bytes; it is 1 to %d", n, WA_CDJ_MAX);
	if (!utf8_valid(cdj, n))
		return as_fail(err, AS_EINVAL, "clientDataJSON is not UTF-8");
	if (strlen(origin) > WA_ORIGIN_MAX)
		return as_fail(err, AS_EINVAL, "the relying party's origin is over %d bytes", WA_ORIGIN_MAX);
	struct buf want;
	buf_init(&want, 512);
	int rc = expected_prefix(&want, type, challenge, origin);
	if (rc != 0) {
		buf_free(&want);
		return as_fail(err, rc,
			       rc == AS_ENOMEM ? "out of memory" : "the origin has a character JSON would escape");
	}
	size_t k = want.len;
	int same = n >= k && memcmp(cdj, want.p, k) == 0;
	buf_free(&want);
	if (!same) /* which part differs, for the one line the reviewer or auditor reads */
		return as_fail(
		    err, AS_ECORRUPT,
		    "clientDataJSON does not begin with this ceremony's type (%s), challenge and origin (%s): "
		    "an assertion for another request, another decision, or another page",
		    type, origin);
	struct rd r;
	rd_init(&r, cdj + k, n - k);
	if (rd_left(&r) == 1 && cdj[k] == '}')
		return 0;
	if (rd_expect(&r, ",\"crossOrigin\":") == 0) {
		if (rd_expect(&r, "false") != 0)
			return as_fail(err, AS_ECORRUPT,
				       "clientDataJSON: a cross-origin ceremony (crossOrigin is not false)");
		uint8_t c = 0;
		if (rd_peek(&r, &c) == 0 && (c == '}' || c == ','))
			return 0;
	}
	return as_fail(err, AS_ECORRUPT, "clientDataJSON: after the origin, neither its end nor \"crossOrigin\":false");
}

int wa_assertion_verify(const uint8_t x[32], const uint8_t y[32], const uint8_t *authdata, size_t an,
			const uint8_t *cdj, size_t cn, const uint8_t *sig, size_t sn, char *err)
{
	if (an < WA_AUTHDATA_MIN || an > WA_AUTHDATA_MAX || cn == 0 || cn > WA_CDJ_MAX || sn == 0 || sn > ECKEY_SIG_MAX)
		return as_fail(err, AS_EINVAL, "assertion: authenticator data, client data or signature out of bounds");
	struct eckey *k = NULL;
	if (eckey_from_xy(x, y, &k) != 0)
		return as_fail(err, AS_EINVAL, "assertion: the credential's key is not a point on P-256");
	uint8_t msg[WA_AUTHDATA_MAX + 32];
	memcpy(msg, authdata, an);
	mbedtls_sha256_ret(cdj, cn, msg + an, 0);
	int rc = eckey_verify(k, msg, an + 32, sig, sn);
	eckey_free(k);
	return rc ? as_fail(err, AS_EBADSIG, "assertion: the signature does not verify under the enrolled credential")
		  : 0;
}

int wa_challenge(const struct wa_terms *t, uint8_t out[32], char *err)
{
	const char *const kv[][2] = {{"origin", t->origin},    {"session_id", t->session_id},	 {"action", t->action},
				     {"outcome", t->outcome},  {"response", t->response_digest}, {"scope", t->scope},
				     {"reviewer", t->reviewer}};
	const size_t ntext = sizeof kv / sizeof kv[0];
	for (size_t i = 0; i < ntext; i++)
		if (!kv[i][1] || !*kv[i][1])
			return as_fail(err, AS_EINVAL, "a passkey challenge needs its %s", kv[i][0]);
	struct cv_arena a;
	cv_arena_init(&a, 32);
	struct cv *m = cv_map(&a, ntext + 2);
	int rc = m ? 0 : AS_ENOMEM;
	for (size_t i = 0; rc == 0 && i < ntext; i++)
		if (cv_set_text(&a, &m->items[2 * i], kv[i][0], strlen(kv[i][0])) != 0 ||
		    cv_set_text(&a, &m->items[2 * i + 1], kv[i][1], strlen(kv[i][1])) != 0)
			rc = AS_ENOMEM;
	if (rc == 0 && (cv_set_text(&a, &m->items[2 * ntext], "deadline", 8) != 0 ||
			cv_set_text(&a, &m->items[2 * ntext + 2], "v", 1) != 0))
		rc = AS_ENOMEM;
	struct buf b;
	buf_init(&b, 2048);
	if (rc == 0) {
		cv_set_uint(&m->items[2 * ntext + 1], t->deadline);
		cv_set_uint(&m->items[2 * ntext + 3], 1);
		rc = cbor_encode(m, &b, err);
	} else
		as_fail(err, rc, "out of memory");
	if (rc == 0)
		mbedtls_sha256_ret(b.p, b.len, out, 0);
	buf_free(&b);
	cv_arena_free(&a);
	return rc;
}

void wa_rpid_hash(const char *rp_id, uint8_t out[32])
{
	mbedtls_sha256_ret((const uint8_t *)rp_id, strlen(rp_id), out, 0);
}
