/* Shared helpers: bounded buffers and reader, strict hex/base64, atomic files. */
#define _GNU_SOURCE
#include "common/util.h"

#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/base64.h>
#include <mbedtls/sha256.h>

const char *as_strerror(int code)
{
	switch (code) {
	case AS_OK:
		return "ok";
	case AS_ENOMEM:
		return "out of memory";
	case AS_EINVAL:
		return "invalid input";
	case AS_EIO:
		return "I/O error";
	case AS_ECORRUPT:
		return "integrity check failed";
	case AS_ETOOBIG:
		return "input too large";
	case AS_ENOTFOUND:
		return "not found";
	case AS_ECRYPTO:
		return "cryptographic error";
	case AS_EBADSIG:
		return "bad signature";
	case AS_EEXIST:
		return "already exists";
	}
	return "unknown error";
}

int as_fail(char *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, AS_ERRLEN, fmt, ap);
		va_end(ap);
	}
	return code;
}

void buf_init(struct buf *b, size_t max)
{
	b->p = NULL;
	b->len = b->cap = 0;
	b->max = max;
}

int buf_reserve(struct buf *b, size_t extra)
{
	if (extra > b->max || b->len > b->max - extra)
		return AS_ETOOBIG;
	size_t need = b->len + extra;
	if (need <= b->cap)
		return 0;
	size_t ncap = b->cap ? b->cap : 64;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	if (ncap > b->max)
		ncap = b->max;
	uint8_t *np = realloc(b->p, ncap);
	if (!np)
		return AS_ENOMEM;
	b->p = np;
	b->cap = ncap;
	return 0;
}

int buf_put(struct buf *b, const void *data, size_t n)
{
	if (n == 0)
		return 0;
	GUARD(buf_reserve(b, n));
	memcpy(b->p + b->len, data, n);
	b->len += n;
	return 0;
}

int buf_putc(struct buf *b, uint8_t c)
{
	return buf_put(b, &c, 1);
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return AS_EINVAL;
	GUARD(buf_reserve(b, (size_t)n + 1));
	va_start(ap, fmt);
	vsnprintf((char *)b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void buf_reset(struct buf *b)
{
	b->len = 0;
}

void buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

void buf_free_wipe(struct buf *b)
{
	if (b->p)
		explicit_bzero(b->p, b->cap);
	buf_free(b);
}

void hex_encode(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int hex_decode(const char *in, size_t inlen, uint8_t *out, size_t n)
{
	if (inlen != 2 * n)
		return AS_EINVAL;
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(in[2 * i]), lo = hexval(in[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return AS_EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

int b64_encode(const uint8_t *in, size_t n, struct buf *out)
{
	size_t need = 0;
	mbedtls_base64_encode(NULL, 0, &need, in, n);
	GUARD(buf_reserve(out, need));
	size_t w = 0;
	if (mbedtls_base64_encode(out->p + out->len, need, &w, in, n) != 0)
		return AS_EINVAL;
	out->len += w; /* w excludes the NUL mbedTLS writes */
	return 0;
}

/* One strict decoder for both alphabets. Tokens and checkpoints are public, so a
 * plain table lookup is fine (mbedTLS's constant-time decoder was most of the cost
 * of verifying an HS256 token). Canonical only: the unused low bits of the last
 * character must be zero, and padding (standard alphabet only) must be exact. */
static int b64_any_decode(const char *in, size_t inlen, int url, uint8_t *out, size_t outmax, size_t *outlen)
{
	static int8_t tab[2][256];
	static int ready;
	if (!ready) {
		const char *std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		const char *urls = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
		memset(tab, -1, sizeof tab);
		for (int i = 0; i < 64; i++) {
			tab[0][(uint8_t)std[i]] = (int8_t)i;
			tab[1][(uint8_t)urls[i]] = (int8_t)i;
		}
		ready = 1; /* idempotent: a racing thread writes the same values */
	}
	const int8_t *t = tab[url];
	size_t n = inlen;
	if (!url) {
		if (inlen == 0 || inlen % 4 != 0)
			return AS_EINVAL;
		if (in[n - 1] == '=')
			n -= in[n - 2] == '=' ? 2 : 1;
	} else if (n % 4 == 1) {
		return AS_EINVAL;
	}
	size_t full = n / 4, rem = n % 4, need = full * 3 + (rem ? rem - 1 : 0);
	if (need > outmax)
		return AS_EINVAL;
	size_t o = 0;
	for (size_t g = 0; g < full; g++) {
		const uint8_t *q = (const uint8_t *)in + 4 * g;
		int a = t[q[0]], b = t[q[1]], c = t[q[2]], d = t[q[3]];
		if ((a | b | c | d) < 0)
			return AS_EINVAL;
		uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
		out[o++] = (uint8_t)(v >> 16);
		out[o++] = (uint8_t)(v >> 8);
		out[o++] = (uint8_t)v;
	}
	if (rem) {
		const uint8_t *q = (const uint8_t *)in + 4 * full;
		int a = t[q[0]], b = t[q[1]], c = rem == 3 ? t[q[2]] : 0;
		if ((a | b | c) < 0)
			return AS_EINVAL;
		if ((rem == 2 && (b & 15)) || (rem == 3 && (c & 3)))
			return AS_EINVAL;
		out[o++] = (uint8_t)(a << 2 | b >> 4);
		if (rem == 3)
			out[o++] = (uint8_t)((b & 15) << 4 | c >> 2);
	}
	*outlen = o;
	return 0;
}

int b64_decode(const char *in, size_t inlen, uint8_t *out, size_t outmax, size_t *outlen)
{
	return b64_any_decode(in, inlen, 0, out, outmax, outlen);
}

int b64url_encode(const uint8_t *in, size_t n, struct buf *out)
{
	size_t start = out->len;
	GUARD(b64_encode(in, n, out));
	while (out->len > start && out->p[out->len - 1] == '=')
		out->len--;
	for (size_t i = start; i < out->len; i++)
		out->p[i] = out->p[i] == '+' ? '-' : out->p[i] == '/' ? '_' : out->p[i];
	return 0;
}

int b64url_decode(const char *in, size_t inlen, uint8_t *out, size_t outmax, size_t *outlen)
{
	return b64_any_decode(in, inlen, 1, out, outmax, outlen);
}

void hs256_kid(const uint8_t *secret, size_t n, char kid[24])
{
	mbedtls_sha256_context c;
	uint8_t h[32];
	mbedtls_sha256_init(&c);
	mbedtls_sha256_starts_ret(&c, 0);
	mbedtls_sha256_update_ret(&c, (const uint8_t *)"assent-kid", 10);
	mbedtls_sha256_update_ret(&c, secret, n);
	mbedtls_sha256_finish_ret(&c, h);
	mbedtls_sha256_free(&c);
	memcpy(kid, "hs256-", 6);
	hex_encode(h, 8, kid + 6);
}

int parse_u64(const char *s, uint64_t *out)
{
	if (!s || !*s || (s[0] == '0' && s[1]))
		return AS_EINVAL;
	uint64_t v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return AS_EINVAL;
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return AS_EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int file_read(const char *path, size_t max, struct buf *out, char *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return as_fail(err, errno == ENOENT ? AS_ENOTFOUND : AS_EIO, "cannot open %s: %s", path,
			       strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return as_fail(err, AS_EIO, "%s is not a regular file", path);
	}
	buf_init(out, max);
	for (;;) {
		size_t room = max - out->len;
		if (room == 0) {
			/* Full: the file fits only if nothing is left to read. */
			uint8_t probe;
			ssize_t r = read(fd, &probe, 1);
			if (r == 0)
				break;
			close(fd);
			buf_free(out);
			return as_fail(err, AS_ETOOBIG, "%s is larger than %zu bytes", path, max);
		}
		if (buf_reserve(out, room < 4096 ? room : 4096) != 0) {
			close(fd);
			buf_free(out);
			return as_fail(err, AS_ENOMEM, "out of memory reading %s", path);
		}
		ssize_t r = read(fd, out->p + out->len, out->cap - out->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			buf_free(out);
			return as_fail(err, AS_EIO, "cannot read %s: %s", path, strerror(e));
		}
		if (r == 0)
			break;
		out->len += (size_t)r;
	}
	close(fd);
	return 0;
}

static int fsync_dir_of(const char *path)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
		return AS_EINVAL;
	int dfd = open(dirname(tmp), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return AS_EIO;
	int rc = fsync(dfd);
	close(dfd);
	return rc == 0 ? 0 : AS_EIO;
}

/* data into a fresh, synced file beside path (its name in tmp). */
static int write_tmp(const char *path, const void *data, size_t n, unsigned mode, char *tmp, size_t tmpn, char *err)
{
	if (snprintf(tmp, tmpn, "%s.tmp.%ld", path, (long)getpid()) >= (int)tmpn)
		return as_fail(err, AS_EINVAL, "path too long: %.64s...", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return as_fail(err, AS_EIO, "cannot create %s: %s", tmp, strerror(errno));
	const uint8_t *p = data;
	size_t left = n;
	while (left) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = errno;
			close(fd);
			unlink(tmp);
			return as_fail(err, AS_EIO, "cannot write %s: %s", tmp, strerror(e));
		}
		p += w;
		left -= (size_t)w;
	}
	if (fchmod(fd, mode) != 0 || fsync(fd) != 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		return as_fail(err, AS_EIO, "cannot sync %s: %s", tmp, strerror(e));
	}
	close(fd);
	return 0;
}

int file_write_atomic(const char *path, const void *data, size_t n, unsigned mode, char *err)
{
	char tmp[4096];
	GUARD(write_tmp(path, data, n, mode, tmp, sizeof tmp, err));
	if (rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return as_fail(err, AS_EIO, "cannot rename %s to %s: %s", tmp, path, strerror(e));
	}
	if (fsync_dir_of(path) != 0)
		return as_fail(err, AS_EIO, "cannot sync the directory of %s", path);
	return 0;
}

int file_create_atomic(const char *path, const void *data, size_t n, unsigned mode, char *err)
{
	char tmp[4096];
	GUARD(write_tmp(path, data, n, mode, tmp, sizeof tmp, err));
	int rc = link(tmp, path), e = errno;
	unlink(tmp);
	if (rc != 0)
		return as_fail(err, e == EEXIST ? AS_EEXIST : AS_EIO, "cannot create %s: %s", path, strerror(e));
	if (fsync_dir_of(path) != 0)
		return as_fail(err, AS_EIO, "cannot sync the directory of %s", path);
	return 0;
}

int mkdir_p(const char *path, unsigned mode, char *err)
{
	char tmp[4096];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof tmp)
		return as_fail(err, AS_EINVAL, "bad directory path");
	memcpy(tmp, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (tmp[i] != '/' && tmp[i] != '\0')
			continue;
		char c = tmp[i];
		tmp[i] = '\0';
		if (mkdir(tmp, mode) != 0 && errno != EEXIST)
			return as_fail(err, AS_EIO, "cannot create directory %s: %s", tmp, strerror(errno));
		tmp[i] = c;
	}
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return as_fail(err, AS_EIO, "%s is not a directory", path);
	return 0;
}

uint64_t now_unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int name_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	return n > 0 && n <= max && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int heap_fired;

int heap_idle(int polled)
{
	static uint64_t last;
	static int dirty;
	uint64_t now = mono_ms();
	if (polled > 0) {
		last = now;
		dirty = 1;
	} else if (dirty && now - last >= HEAP_IDLE_MS) {
		malloc_trim(0);
		dirty = 0;
		heap_fired = 1;
	}
	return polled;
}

int heap_went_idle(void)
{
	int f = heap_fired;
	heap_fired = 0;
	return f;
}

void be64_put(uint8_t out[8], uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		out[i] = (uint8_t)v;
		v >>= 8;
	}
}

uint64_t be64_get(const uint8_t in[8])
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | in[i];
	return v;
}

int ct_memcmp(const void *a, const void *b, size_t n)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t d = 0;
	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d != 0;
}

int state_dir_resolve(const char *flag, char *out, size_t n, char *err)
{
	const char *e;
	int w;
	if (flag && *flag)
		w = snprintf(out, n, "%s", flag);
	else if ((e = getenv("ASSENT_STATE_DIR")) && *e)
		w = snprintf(out, n, "%s", e);
	else if ((e = getenv("XDG_STATE_HOME")) && *e == '/')
		w = snprintf(out, n, "%s/assent", e);
	else if ((e = getenv("HOME")) && *e == '/')
		w = snprintf(out, n, "%s/.local/state/assent", e);
	else
		return as_fail(err, AS_EINVAL, "no state directory: pass --state DIR or set ASSENT_STATE_DIR");
	if (w < 0 || (size_t)w >= n)
		return as_fail(err, AS_EINVAL, "state directory path too long");
	return 0;
}

int unix_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(path);
	if (n >= sizeof sa.sun_path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path, path, n + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}
