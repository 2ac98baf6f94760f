/* Signed checkpoints (C2SP tlog-checkpoint in a C2SP signed note): parsing and
 * verifying, strict: one spelling per checkpoint, every line bounded. Signing is
 * note_sign.c, which the verify library leaves out. */
#include "ledger/note.h"

#include <stdio.h>
#include <string.h>

#include "ledger/merkle.h"

int note_key_id(const struct eckey *k, uint8_t id[4])
{
	uint8_t spki[ECKEY_SPKI_MAX], h[32];
	size_t n;
	GUARD(eckey_spki(k, spki, &n));
	sha256(spki, n, h);
	memcpy(id, h, 4);
	return 0;
}

int ckpt_origin_ok(const char *s, size_t n)
{
	if (n == 0 || n > CKPT_ORIGIN_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		/* Printable ASCII without spaces or '+': it doubles as the signature key name. */
		if (c <= 0x20 || c >= 0x7f || c == '+')
			return 0;
	}
	return 1;
}

/* The body's three lines and the blank line after it, from r (over the whole note),
 * leaving r at the first signature line. */
static int parse_body(struct rd *r, size_t *body_end, struct checkpoint *out, char *err)
{
	size_t n = rd_left(r);
	const uint8_t *t = r->p;
	if (n > CKPT_MAX)
		return as_fail(err, AS_ETOOBIG, "checkpoint is %zu bytes, over the maximum of %d", n, CKPT_MAX);
	for (size_t i = 0; i < n; i++)
		if (t[i] < 0x20 && t[i] != '\n')
			return as_fail(err, AS_EINVAL, "checkpoint contains a control character at byte %zu", i);
	struct rd line;
	if (rd_line(r, &line) != 0 || !ckpt_origin_ok((const char *)line.p, line.len))
		return as_fail(err, AS_EINVAL, "checkpoint line 1: expected an origin (printable, no spaces)");
	memcpy(out->origin, line.p, line.len);
	out->origin[line.len] = 0;
	char num[24];
	if (rd_line(r, &line) != 0 || line.len == 0 || line.len >= sizeof num)
		return as_fail(err, AS_EINVAL, "checkpoint line 2: expected a tree size");
	memcpy(num, line.p, line.len);
	num[line.len] = 0;
	if (parse_u64(num, &out->size) != 0)
		return as_fail(err, AS_EINVAL, "checkpoint line 2: tree size '%.23s' is not a decimal number", num);
	size_t rl = 0;
	uint8_t root[48];
	if (rd_line(r, &line) != 0 || b64_decode((const char *)line.p, line.len, root, sizeof root, &rl) != 0 ||
	    rl != 32)
		return as_fail(err, AS_EINVAL, "checkpoint line 3: expected a base64 SHA-256 root hash");
	memcpy(out->root, root, 32);
	if (rd_line(r, &line) != 0 || line.len != 0)
		return as_fail(err, AS_EINVAL, "checkpoint: expected a blank line after the root hash");
	*body_end = r->off - 1; /* the body is signed with its final newline, without the blank line */
	return 0;
}

int ckpt_parse(const uint8_t *text, size_t n, struct checkpoint *out, char *err)
{
	struct rd r;
	size_t end;
	rd_init(&r, text, n);
	return parse_body(&r, &end, out, err);
}

int ckpt_parse_body(const uint8_t *text, size_t n, struct checkpoint *out, size_t *body_len, char *err)
{
	struct rd r;
	rd_init(&r, text, n);
	return parse_body(&r, body_len, out, err);
}

/* One INTEGER of an ECDSA-Sig-Value in DER: short-form length, positive, no needless
 * leading zero byte. */
static int der_int_ok(struct rd *r)
{
	uint8_t tag, len;
	const uint8_t *p;
	if (rd_u8(r, &tag) != 0 || tag != 0x02 || rd_u8(r, &len) != 0 || len == 0 || len > 33 ||
	    rd_take(r, len, &p) != 0)
		return 0;
	if (p[0] & 0x80)
		return 0;
	return !(p[0] == 0 && (len == 1 || !(p[1] & 0x80)));
}

/* DER is the one encoding of (r, s); mbedTLS's parser also takes BER spellings of it
 * (a padded integer, a long-form length), which would be other bytes for one checkpoint. */
static int der_sig_ok(const uint8_t *sig, size_t n)
{
	struct rd r;
	uint8_t tag, len;
	rd_init(&r, sig, n);
	return rd_u8(&r, &tag) == 0 && tag == 0x30 && rd_u8(&r, &len) == 0 && len < 0x80 && len == rd_left(&r) &&
	       der_int_ok(&r) && der_int_ok(&r) && rd_left(&r) == 0;
}

static int verify_notes(const uint8_t *t, size_t n, struct eckey *const *keys, size_t nkeys, note_verify_fn vfn,
			void *vctx, struct checkpoint *out, char *err)
{
	struct rd r, line, name;
	size_t body_end;
	rd_init(&r, t, n);
	GUARD(parse_body(&r, &body_end, out, err));
	uint8_t ids[16][4];
	if (nkeys > 16)
		nkeys = 16;
	for (size_t i = 0; i < nkeys; i++)
		GUARD(note_key_id(keys[i], ids[i]));
	size_t nsigs = 0, verified = 0;
	while (rd_left(&r) > 0) {
		if (rd_line(&r, &line) != 0)
			return as_fail(err, AS_EINVAL, "checkpoint: signature line without a final newline");
		if (++nsigs > CKPT_MAX_SIGS)
			return as_fail(err, AS_EINVAL, "checkpoint: more than %d signature lines", CKPT_MAX_SIGS);
		if (rd_expect(&line, NOTE_SIG_PREFIX) != 0)
			return as_fail(err, AS_EINVAL, "checkpoint: signature line %zu does not start with an em dash",
				       nsigs);
		int named = rd_token(&line, " ", &name) == 0;
		if (rd_expect(&line, " ") != 0)
			return as_fail(err, AS_EINVAL, "checkpoint: signature line %zu has no signature", nsigs);
		const uint8_t *sig = NULL;
		size_t siglen = rd_left(&line), bl = 0;
		uint8_t blob[4 + ECKEY_SIG_MAX + 8];
		if (!named || !ckpt_origin_ok((const char *)name.p, name.len) || rd_take(&line, siglen, &sig) != 0 ||
		    b64_decode((const char *)sig, siglen, blob, sizeof blob, &bl) != 0 || bl < 5)
			return as_fail(err, AS_EINVAL, "checkpoint: signature line %zu is malformed", nsigs);
		for (size_t k = 0; k < nkeys; k++) {
			if (memcmp(blob, ids[k], 4) != 0)
				continue;
			if (name.len != strlen(out->origin) || memcmp(name.p, out->origin, name.len) != 0)
				return as_fail(err, AS_EBADSIG,
					       "checkpoint: signature by a trusted key under another name");
			if (!der_sig_ok(blob + 4, bl - 4))
				return as_fail(err, AS_EBADSIG, "checkpoint for size %llu: signature is not DER",
					       (unsigned long long)out->size);
			if ((vfn ? vfn(vctx, t, body_end, blob + 4, bl - 4)
				 : eckey_verify(keys[k], t, body_end, blob + 4, bl - 4)) != 0)
				return as_fail(err, AS_EBADSIG, "checkpoint for size %llu: signature does not verify",
					       (unsigned long long)out->size);
			verified++;
		}
	}
	if (nsigs == 0)
		return as_fail(err, AS_EINVAL, "checkpoint has no signature line");
	if (verified == 0)
		return as_fail(err, AS_EBADSIG, "checkpoint for size %llu is not signed by a trusted key",
			       (unsigned long long)out->size);
	return 0;
}

int ckpt_verify(const uint8_t *t, size_t n, struct eckey *const *keys, size_t nkeys, struct checkpoint *out, char *err)
{
	return verify_notes(t, n, keys, nkeys, NULL, NULL, out, err);
}

int ckpt_verify_with(const uint8_t *t, size_t n, struct eckey *key, note_verify_fn vfn, void *vctx,
		     struct checkpoint *out, char *err)
{
	return verify_notes(t, n, &key, 1, vfn, vctx, out, err);
}
