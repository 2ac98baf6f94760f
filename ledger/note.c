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

/* Next line of text[off..n) ending in '\n'; returns its length without the newline. */
static int next_line(const uint8_t *t, size_t n, size_t *off, const uint8_t **line, size_t *len)
{
	if (*off >= n)
		return AS_EINVAL;
	const uint8_t *nl = memchr(t + *off, '\n', n - *off);
	if (!nl)
		return AS_EINVAL;
	*line = t + *off;
	*len = (size_t)(nl - (t + *off));
	*off += *len + 1;
	return 0;
}

static int parse_body(const uint8_t *t, size_t n, size_t *body_end, struct checkpoint *out, char *err)
{
	if (n > CKPT_MAX)
		return as_fail(err, AS_ETOOBIG, "checkpoint is %zu bytes, over the maximum of %d", n, CKPT_MAX);
	for (size_t i = 0; i < n; i++)
		if (t[i] < 0x20 && t[i] != '\n')
			return as_fail(err, AS_EINVAL, "checkpoint contains a control character at byte %zu", i);
	size_t off = 0, len;
	const uint8_t *line;
	if (next_line(t, n, &off, &line, &len) != 0 || !ckpt_origin_ok((const char *)line, len))
		return as_fail(err, AS_EINVAL, "checkpoint line 1: expected an origin (printable, no spaces)");
	memcpy(out->origin, line, len);
	out->origin[len] = 0;
	char num[24];
	if (next_line(t, n, &off, &line, &len) != 0 || len == 0 || len >= sizeof num)
		return as_fail(err, AS_EINVAL, "checkpoint line 2: expected a tree size");
	memcpy(num, line, len);
	num[len] = 0;
	if (parse_u64(num, &out->size) != 0)
		return as_fail(err, AS_EINVAL, "checkpoint line 2: tree size '%.23s' is not a decimal number", num);
	size_t rl = 0;
	uint8_t root[48];
	if (next_line(t, n, &off, &line, &len) != 0 || b64_decode((const char *)line, len, root, sizeof root, &rl) != 0 ||
	    rl != 32)
		return as_fail(err, AS_EINVAL, "checkpoint line 3: expected a base64 SHA-256 root hash");
	memcpy(out->root, root, 32);
	if (next_line(t, n, &off, &line, &len) != 0 || len != 0)
		return as_fail(err, AS_EINVAL, "checkpoint: expected a blank line after the root hash");
	*body_end = off - 1; /* the body is signed with its final newline, without the blank line */
	return 0;
}

int ckpt_parse(const uint8_t *text, size_t n, struct checkpoint *out, char *err)
{
	size_t end;
	return parse_body(text, n, &end, out, err);
}

int ckpt_verify(const uint8_t *t, size_t n, struct eckey *const *keys, size_t nkeys, struct checkpoint *out, char *err)
{
	size_t body_end;
	GUARD(parse_body(t, n, &body_end, out, err));
	uint8_t ids[16][4];
	if (nkeys > 16)
		nkeys = 16;
	for (size_t i = 0; i < nkeys; i++)
		GUARD(note_key_id(keys[i], ids[i]));
	size_t off = body_end + 1, nsigs = 0, verified = 0, len;
	const uint8_t *line;
	size_t prefix = sizeof NOTE_SIG_PREFIX - 1;
	while (off < n) {
		if (next_line(t, n, &off, &line, &len) != 0)
			return as_fail(err, AS_EINVAL, "checkpoint: signature line without a final newline");
		if (++nsigs > CKPT_MAX_SIGS)
			return as_fail(err, AS_EINVAL, "checkpoint: more than %d signature lines", CKPT_MAX_SIGS);
		if (len < prefix || memcmp(line, NOTE_SIG_PREFIX, prefix) != 0)
			return as_fail(err, AS_EINVAL, "checkpoint: signature line %zu does not start with an em dash", nsigs);
		const uint8_t *name = line + prefix;
		const uint8_t *sp = memchr(name, ' ', len - prefix);
		if (!sp)
			return as_fail(err, AS_EINVAL, "checkpoint: signature line %zu has no signature", nsigs);
		size_t namelen = (size_t)(sp - name);
		uint8_t blob[4 + ECKEY_SIG_MAX + 8];
		size_t bl = 0;
		if (!ckpt_origin_ok((const char *)name, namelen) ||
		    b64_decode((const char *)sp + 1, len - prefix - namelen - 1, blob, sizeof blob, &bl) != 0 || bl < 5)
			return as_fail(err, AS_EINVAL, "checkpoint: signature line %zu is malformed", nsigs);
		for (size_t k = 0; k < nkeys; k++) {
			if (memcmp(blob, ids[k], 4) != 0)
				continue;
			if (namelen != strlen(out->origin) || memcmp(name, out->origin, namelen) != 0)
				return as_fail(err, AS_EBADSIG, "checkpoint: signature by a trusted key under another name");
			if (eckey_verify(keys[k], t, body_end, blob + 4, bl - 4) != 0)
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
