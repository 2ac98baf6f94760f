/* Small shared helpers: bounded buffers, a bounded reader for untrusted bytes,
 * hex/base64, error messages, files. Internal to assent; not installed. */
#ifndef ASSENT_UTIL_H
#define ASSENT_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "include/assent/err.h"
#include "common/attr.h"

#define AS_UNUSED __attribute__((unused))
#define AS_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Guard macro: return the error of a call that failed, so happy paths read straight down. */
#define GUARD(x)                         \
	do {                             \
		int guard_rc_ = (x);     \
		if (guard_rc_ < 0)       \
			return guard_rc_; \
	} while (0)

/* Write a bounded, formatted message into err (AS_ERRLEN bytes) when err is not NULL,
 * and return code so callers can `return as_fail(err, AS_EINVAL, "...")`. */
int as_fail(char *err, int code, const char *fmt, ...) AS_PRINTF(3, 4);

/* A growable byte buffer that never grows past max. Owner calls buf_free. */
struct buf {
	uint8_t *p;
	size_t len, cap, max;
};
void buf_init(struct buf *b, size_t max);
int buf_reserve(struct buf *b, size_t extra) AS_MUST_USE;
int buf_put(struct buf *b, const void *data, size_t n) AS_MUST_USE;
int buf_putc(struct buf *b, uint8_t c) AS_MUST_USE;
int buf_printf(struct buf *b, const char *fmt, ...) AS_PRINTF(2, 3) AS_MUST_USE;
void buf_reset(struct buf *b);
void buf_free(struct buf *b);      /* frees; contents are not secret */
void buf_free_wipe(struct buf *b); /* wipes then frees: for secrets */

/* A bounded cursor over untrusted bytes. Every read checks what is left first. */
struct rd {
	const uint8_t *p;
	size_t len, off;
};
static inline void rd_init(struct rd *r, const void *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->off = 0;
}
static inline size_t rd_left(const struct rd *r) { return r->len - r->off; }
/* Inline: the ledger verifier calls these a dozen times per entry. */
static inline AS_MUST_USE int rd_u8(struct rd *r, uint8_t *out)
{
	if (r->off >= r->len)
		return AS_EINVAL;
	*out = r->p[r->off++];
	return 0;
}
static inline AS_MUST_USE int rd_be(struct rd *r, size_t nbytes, uint64_t *out) /* 1..8 bytes, big-endian */
{
	if (nbytes < 1 || nbytes > 8 || r->len - r->off < nbytes)
		return AS_EINVAL;
	uint64_t v = 0;
	for (size_t i = 0; i < nbytes; i++)
		v = (v << 8) | r->p[r->off + i];
	r->off += nbytes;
	*out = v;
	return 0;
}
static inline AS_MUST_USE int rd_take(struct rd *r, size_t n, const uint8_t **out)
{
	if (r->len - r->off < n)
		return AS_EINVAL;
	*out = r->p + r->off;
	r->off += n;
	return 0;
}

/* Lowercase hex. hex_decode is strict: exactly 2*n lowercase hex digits. */
void hex_encode(const uint8_t *in, size_t n, char *out /* 2n+1 */);
int hex_decode(const char *in, size_t inlen, uint8_t *out, size_t n) AS_MUST_USE;

/* Standard base64 (RFC 4648 section 4). b64_decode is strict: canonical padding and
 * zero trailing bits, so one text has exactly one decoding. */
int b64_encode(const uint8_t *in, size_t n, struct buf *out) AS_MUST_USE;
int b64_decode(const char *in, size_t inlen, uint8_t *out, size_t outmax, size_t *outlen) AS_MUST_USE;

/* base64url without padding (RFC 7515 section 2); decoding is strict. */
int b64url_encode(const uint8_t *in, size_t n, struct buf *out) AS_MUST_USE;
int b64url_decode(const char *in, size_t inlen, uint8_t *out, size_t outmax, size_t *outlen) AS_MUST_USE;

/* kid of an HS256 token secret: "hs256-" and 16 hex digits of
 * SHA-256("assent-kid" || secret); names the secret without revealing it. */
void hs256_kid(const uint8_t *secret, size_t n, char kid[24]);

/* Parse a decimal u64 with no sign, no leading zeros (except "0"), no junk. */
int parse_u64(const char *s, uint64_t *out) AS_MUST_USE;

/* Read a whole file of at most max bytes. */
int file_read(const char *path, size_t max, struct buf *out, char *err) AS_MUST_USE;
/* Write a file atomically (temp file, fsync, rename, fsync dir) with the given mode. */
int file_write_atomic(const char *path, const void *data, size_t n, unsigned mode, char *err) AS_MUST_USE;
/* mkdir -p with mode for the directories it creates. */
int mkdir_p(const char *path, unsigned mode, char *err) AS_MUST_USE;

uint64_t now_unix_ms(void);
void be64_put(uint8_t out[8], uint64_t v);
uint64_t be64_get(const uint8_t in[8]);

/* Timing-safe comparison; returns 0 when equal. */
int ct_memcmp(const void *a, const void *b, size_t n) AS_MUST_USE;



/* The state directory: flag, else $ASSENT_STATE_DIR, else $XDG_STATE_HOME/assent,
 * else ~/.local/state/assent. Never the current directory: MCP clients start
 * servers in arbitrary ones. */
int state_dir_resolve(const char *flag, char *out, size_t n, char *err) AS_MUST_USE;
#endif
