/* Small shared helpers: bounded buffers, a bounded reader for untrusted bytes and
 * text (its text operations in common/rd.c), hex/base64, error messages, files.
 * Internal to assent; not installed. */
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
#define GUARD(x)                                                                                                       \
	do {                                                                                                           \
		int guard_rc_ = (x);                                                                                   \
		if (guard_rc_ < 0)                                                                                     \
			return guard_rc_;                                                                              \
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
void buf_free(struct buf *b);	   /* frees; contents are not secret */
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
static inline size_t rd_left(const struct rd *r)
{
	return r->len - r->off;
}
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
/* The next byte without consuming it. */
AS_MUST_USE static inline int rd_peek(const struct rd *r, uint8_t *out)
{
	if (r->off >= r->len)
		return AS_EINVAL;
	*out = r->p[r->off];
	return 0;
}

/* Text on the same cursor (common/rd.c), for the line- and token-shaped formats:
 * signed notes, HTTP header values, JSON-RPC lines. The rules, everywhere:
 *   - bytes are bytes: no locale; "_ci" folds ASCII A-Z/a-z only (as strncasecmp
 *     does in the C locale the programs run in);
 *   - a set (ws, stop) is a C string of the bytes in it; its terminating NUL is not a
 *     member, so a NUL in the input is never whitespace nor a delimiter (strchr would
 *     have found the terminator): it is an ordinary byte, for the caller to refuse;
 *   - a line ends at LF; CR is an ordinary byte: a CR before the LF stays in the line
 *     (JSON counts it as whitespace, a signed note refuses it);
 *   - a sub-reader (line, tok) points into the input and starts at its offset 0;
 *   - on failure the cursor has not moved; nothing reads outside [off, len). */
#define RD_OWS " \t"	     /* HTTP optional whitespace (RFC 9110 section 5.6.3) */
#define RD_JSON_WS " \t\r\n" /* JSON insignificant whitespace (RFC 8259 section 2) */

/* The bytes before the next LF, into line; the LF is consumed, not included. No LF
 * left: AS_EINVAL (a last line without its newline is not a line). */
AS_MUST_USE int rd_line(struct rd *r, struct rd *line);
/* The longest run of at least one byte not in stop, into tok; the stop byte is left.
 * An empty run: AS_EINVAL, tok the empty reader at the cursor. */
AS_MUST_USE int rd_token(struct rd *r, const char *stop, struct rd *tok);
/* Skips the bytes in ws at the cursor; returns how many. It cannot fail, so it is no
 * AS_MUST_USE: a result that is fine to ignore must not need a cast (gcc keeps warning). */
size_t rd_skip_ws(struct rd *r, const char *ws);
/* Drops the bytes in ws from the end of the unread bytes; returns how many. */
size_t rd_trim_end(struct rd *r, const char *ws);
/* Consumes s (a C string) when the unread bytes start with it, else AS_EINVAL. */
AS_MUST_USE int rd_expect(struct rd *r, const char *s);
AS_MUST_USE int rd_expect_ci(struct rd *r, const char *s);
/* Drops s from the end when the unread bytes end with it, else AS_EINVAL. */
AS_MUST_USE int rd_expect_end(struct rd *r, const char *s);
/* 0 when the unread bytes are exactly s (rd_cmp) or s up to ASCII case (rd_casecmp),
 * else AS_EINVAL; reads without consuming. */
AS_MUST_USE int rd_cmp(const struct rd *r, const char *s);
AS_MUST_USE int rd_casecmp(const struct rd *r, const char *s);

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
/* As file_write_atomic, but only when path does not exist: AS_EEXIST when another
 * process made it first (theirs stays, whole). */
int file_create_atomic(const char *path, const void *data, size_t n, unsigned mode, char *err) AS_MUST_USE;
/* mkdir -p with mode for the directories it creates. */
int mkdir_p(const char *path, unsigned mode, char *err) AS_MUST_USE;
/* A stream socket (close-on-exec) connected to the unix socket at path, or -1 with errno
 * set (ENAMETOOLONG: path does not fit a socket address). */
int unix_connect(const char *path);

/* Milliseconds: since the epoch (the wall clock), and on the monotonic clock (for waits and
 * deadlines, which a clock change must not move). */
/* A name an operator gives (a reviewer, an agent, a webhook): 1 to max ASCII letters,
 * digits, '.', '_' or '-', so that it is safe in a file, a log line and a URL as it is. */
int name_ok(const char *s, size_t max);

uint64_t now_unix_ms(void);
uint64_t mono_ms(void);
/* A long-lived process's heap given back once it has been idle HEAP_IDLE_MS after work: glibc
 * keeps what was freed in its arenas, so a daemon would otherwise sit at its peak. Wraps the
 * poll of a loop that wakes at least every second: heap_idle(poll(...)) returns what poll did,
 * and a turn where nothing was ready counts as idle. */
#define HEAP_IDLE_MS 1000
int heap_idle(int polled);
/* 1 once after each time heap_idle gave the heap back: the caller lets its own caches go too
 * (arenas kept at their high-water mark), then calls malloc_trim(0) again. */
int heap_went_idle(void);
void be64_put(uint8_t out[8], uint64_t v);
uint64_t be64_get(const uint8_t in[8]);

/* Timing-safe comparison; returns 0 when equal. */
int ct_memcmp(const void *a, const void *b, size_t n) AS_MUST_USE;

/* The state directory: flag, else $ASSENT_STATE_DIR, else $XDG_STATE_HOME/assent,
 * else ~/.local/state/assent. Never the current directory: MCP clients start
 * servers in arbitrary ones. */
int state_dir_resolve(const char *flag, char *out, size_t n, char *err) AS_MUST_USE;
#endif
