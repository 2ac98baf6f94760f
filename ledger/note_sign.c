/* Signing checkpoints (the writer's half of note.c): the body and one signature line
 * named after the origin. Not in the verify library, which only checks them. */
#include "ledger/note.h"

#include <string.h>

static int body_write(const struct checkpoint *c, struct buf *out)
{
	GUARD(buf_printf(out, "%s\n%llu\n", c->origin, (unsigned long long)c->size));
	GUARD(b64_encode(c->root, 32, out));
	return buf_putc(out, '\n');
}

static int mbed_sign(void *k, const void *msg, size_t n, uint8_t *sig, size_t *siglen)
{
	return eckey_sign(k, msg, n, sig, siglen);
}

int ckpt_sign(const struct eckey *k, const struct checkpoint *c, struct buf *out, char *err)
{
	return ckpt_sign_with(k, mbed_sign, (void *)k, c, out, err);
}

int ckpt_sign_with(const struct eckey *k, note_sign_fn sign, void *ctx, const struct checkpoint *c, struct buf *out,
		   char *err)
{
	if (!ckpt_origin_ok(c->origin, strlen(c->origin)))
		return as_fail(err, AS_EINVAL,
			       "checkpoint origin must be 1-255 printable characters without spaces or '+'");
	size_t start = out->len;
	int rc = body_write(c, out);
	uint8_t blob[4 + ECKEY_SIG_MAX];
	size_t siglen = 0;
	if (rc == 0)
		rc = note_key_id(k, blob);
	if (rc == 0)
		rc = sign(ctx, out->p + start, out->len - start, blob + 4, &siglen);
	if (rc == 0)
		rc = buf_printf(out, "\n%s%s ", NOTE_SIG_PREFIX, c->origin);
	if (rc == 0)
		rc = b64_encode(blob, 4 + siglen, out);
	if (rc == 0)
		rc = buf_putc(out, '\n');
	if (rc != 0)
		return as_fail(err, rc, "cannot sign checkpoint: %s", as_strerror(rc));
	return 0;
}
