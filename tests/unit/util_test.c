/* Unit tests for common/util.c: bounded buffer and reader, strict hex/base64, parse_u64,
 * big-endian helpers, ct_memcmp, files (atomic write, bounded read, mkdir_p), state_dir_resolve. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "tests/unit/scratch.h"

static char dir[64];

static void path_in(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/assent-util-test.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return scratch_rm(dir);
}

/* ---- hex ---- */

static void test_hex(void **state)
{
	(void)state;
	const uint8_t in[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xcd, 0xef, 0xff};
	char out[2 * sizeof in + 1];
	memset(out, 'x', sizeof out);
	hex_encode(in, sizeof in, out);
	assert_string_equal(out, "00017f80abcdefff");
	uint8_t back[sizeof in];
	assert_int_equal(hex_decode(out, strlen(out), back, sizeof back), 0);
	assert_memory_equal(back, in, sizeof in);
	hex_encode(in, 0, out);
	assert_string_equal(out, "");
	assert_int_equal(hex_decode("", 0, back, 0), 0);

	/* strict: lowercase only, exact length, no whitespace or prefixes */
	static const char *const bad[] = {
	    "00017F80abcdefff", "00017f80ABCDEFFF",  "00017f80abcdeffF", "0x017f80abcdefff", " 0017f80abcdefff",
	    "00017f80abcdeff ", "00017f80abcdef\nf", "00017f80abcdefgf", "00017f80abcdef-f", "00017f80abc\0efff"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (hex_decode(bad[i], 16, back, 8) != AS_EINVAL)
			fail_msg("hex_decode accepted '%s'", bad[i]);
	assert_int_equal(hex_decode("00017f80abcdeff", 15, back, 8), AS_EINVAL);    /* odd */
	assert_int_equal(hex_decode("00017f80abcdef", 14, back, 8), AS_EINVAL);	    /* short */
	assert_int_equal(hex_decode("00017f80abcdefff00", 18, back, 8), AS_EINVAL); /* long */
}

/* ---- base64 ---- */

static void test_b64_rfc4648_vectors(void **state)
{
	(void)state;
	static const char *const plain[] = {"f", "fo", "foo", "foob", "fooba", "foobar"};
	static const char *const enc[] = {"Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	for (size_t i = 0; i < 6; i++) {
		struct buf b;
		buf_init(&b, 64);
		assert_int_equal(b64_encode((const uint8_t *)plain[i], strlen(plain[i]), &b), 0);
		assert_int_equal(b.len, strlen(enc[i]));
		assert_memory_equal(b.p, enc[i], b.len);
		buf_free(&b);
		uint8_t out[16];
		size_t n = 99;
		assert_int_equal(b64_decode(enc[i], strlen(enc[i]), out, sizeof out, &n), 0);
		assert_int_equal(n, strlen(plain[i]));
		assert_memory_equal(out, plain[i], n);
	}
	/* encoding appends to what the buffer holds */
	struct buf b;
	buf_init(&b, 64);
	assert_int_equal(buf_put(&b, "x:", 2), 0);
	assert_int_equal(b64_encode((const uint8_t *)"foo", 3, &b), 0);
	assert_int_equal(b.len, 6);
	assert_memory_equal(b.p, "x:Zm9v", 6);
	buf_free(&b);
	/* every byte value round-trips */
	uint8_t all[256], back[256];
	for (int i = 0; i < 256; i++)
		all[i] = (uint8_t)(255 - i);
	for (size_t n = 1; n <= 256; n += 51) {
		buf_init(&b, 1024);
		assert_int_equal(b64_encode(all, n, &b), 0);
		size_t m = 0;
		assert_int_equal(b64_decode((const char *)b.p, b.len, back, sizeof back, &m), 0);
		assert_int_equal(m, n);
		assert_memory_equal(back, all, n);
		buf_free(&b);
	}
}

static void test_b64_strict(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "Zh==",	"Zm9=",	    "Zm/=",		 /* non-zero padding bits ("f" is Zg==, "fo" is Zm8=) */
	    "Zg",	"Zg=",	    "Zm8",     "Zm9vYg", /* padding missing */
	    "Zg===",	"Z===",	    "====",    "=Zm9",	 /* padding in the wrong place */
	    "Zg==Zm9v", "Zm8=Zm9v",			 /* data after padding */
	    "Zm9v\n",	"Zm 9v",    " Zm9v",   "Zm9v ",	 "Zm9v\r\n", "Zm\t9v", /* whitespace */
	    "Zm9-",	"Zm9_",						       /* base64url alphabet */
	    "Zm9*",	"Zm9.",	    "Zm9\x80", "Zg=a",	 "Zm8A=",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		uint8_t out[16];
		size_t n = 0;
		if (b64_decode(bad[i], strlen(bad[i]), out, sizeof out, &n) != AS_EINVAL)
			fail_msg("b64_decode accepted '%s'", bad[i]);
	}
	/* a NUL inside the declared length */
	uint8_t out[16];
	size_t n = 0;
	assert_int_equal(b64_decode("Zm\0v", 4, out, sizeof out, &n), AS_EINVAL);
	/* the output bound is respected */
	assert_int_equal(b64_decode("Zm9vYmFy", 8, out, 5, &n), AS_EINVAL);
	assert_int_equal(b64_decode("Zm9vYmFy", 8, out, 6, &n), 0);
	assert_int_equal(n, 6);
}

static void test_b64_encode_respects_max(void **state)
{
	(void)state;
	struct buf b;
	buf_init(&b, 7); /* "Zm9vYmFy" needs 8 */
	assert_int_not_equal(b64_encode((const uint8_t *)"foobar", 6, &b), 0);
	assert_int_equal(b.len, 0);
	buf_free(&b);
}

/* ---- parse_u64 ---- */

static void test_parse_u64(void **state)
{
	(void)state;
	struct {
		const char *s;
		uint64_t v;
	} good[] = {{"0", 0},
		    {"1", 1},
		    {"9", 9},
		    {"10", 10},
		    {"4294967296", 4294967296ull},
		    {"18446744073709551614", UINT64_MAX - 1},
		    {"18446744073709551615", UINT64_MAX}};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		uint64_t v = 12345;
		assert_int_equal(parse_u64(good[i].s, &v), 0);
		if (v != good[i].v)
			fail_msg("parse_u64(\"%s\") gave %llu", good[i].s, (unsigned long long)v);
	}
	static const char *const bad[] = {
	    "18446744073709551616",
	    "18446744073709551620",
	    "18446744073709551699",
	    "99999999999999999999",
	    "184467440737095516150",
	    "100000000000000000000000", /* overflow */
	    "00",
	    "01",
	    "007",
	    "0000000000000000000001", /* leading zeros */
	    "",
	    "-0",
	    "-1",
	    "+1",
	    "+0", /* empty, sign */
	    " 1",
	    "1 ",
	    "1\n",
	    "\t1",
	    "1_000",
	    "1,000",
	    "1.0",
	    "1e3",
	    "0x10",
	    "a",
	    "1a",
	    "٣",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		uint64_t v = 77;
		if (parse_u64(bad[i], &v) != AS_EINVAL)
			fail_msg("parse_u64 accepted \"%s\" (as %llu)", bad[i], (unsigned long long)v);
		if (v != 77)
			fail_msg("parse_u64 wrote its output for refused \"%s\"", bad[i]);
	}
	uint64_t v;
	assert_int_equal(parse_u64(NULL, &v), AS_EINVAL);
}

/* ---- buf ---- */

static void test_buf_max_enforced(void **state)
{
	(void)state;
	struct buf b;
	buf_init(&b, 10);
	assert_int_equal(buf_put(&b, "0123456789", 10), 0);
	assert_int_equal(b.len, 10);
	assert_true(b.cap <= 10);
	assert_int_equal(buf_putc(&b, 'x'), AS_ETOOBIG);
	assert_int_equal(buf_put(&b, "x", 1), AS_ETOOBIG);
	assert_int_equal(b.len, 10);
	assert_memory_equal(b.p, "0123456789", 10);
	assert_int_equal(buf_put(&b, "", 0), 0); /* nothing to add is fine */
	assert_int_equal(buf_reserve(&b, SIZE_MAX), AS_ETOOBIG);
	assert_int_equal(buf_reserve(&b, SIZE_MAX - 5), AS_ETOOBIG); /* len + extra would wrap */
	buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_int_equal(buf_put(&b, "abc", 3), 0);
	assert_int_equal(buf_put(&b, "defghijk", 8), AS_ETOOBIG); /* 11 > 10: all or nothing */
	assert_int_equal(b.len, 3);
	assert_int_equal(buf_put(&b, "defghij", 7), 0);
	assert_memory_equal(b.p, "abcdefghij", 10);
	buf_free(&b);
	assert_null(b.p);
	assert_int_equal(b.len, 0);

	/* growth never passes max, even when doubling would */
	buf_init(&b, 100);
	for (int i = 0; i < 100; i++)
		assert_int_equal(buf_putc(&b, (uint8_t)i), 0);
	assert_true(b.cap <= 100);
	assert_int_equal(buf_putc(&b, 0), AS_ETOOBIG);
	buf_free_wipe(&b);
	assert_null(b.p);

	buf_init(&b, 0);
	assert_int_equal(buf_putc(&b, 1), AS_ETOOBIG);
	buf_free(&b);
}

static void test_buf_printf(void **state)
{
	(void)state;
	struct buf b;
	buf_init(&b, 16);
	assert_int_equal(buf_printf(&b, "%s=%d", "ab", 42), 0);
	assert_int_equal(b.len, 5);
	assert_memory_equal(b.p, "ab=42", 5);
	assert_int_equal(buf_printf(&b, "%05u", 7u), 0);
	assert_int_equal(b.len, 10);
	assert_memory_equal(b.p, "ab=4200007", 10);
	/* too long for what is left: refused, contents untouched */
	assert_int_equal(buf_printf(&b, "%s", "0123456789"), AS_ETOOBIG);
	assert_int_equal(b.len, 10);
	assert_memory_equal(b.p, "ab=4200007", 10);
	assert_true(b.cap <= 16);
	buf_free(&b);
	buf_init(&b, 1 << 20);
	assert_int_equal(buf_printf(&b, "%s", ""), 0);
	assert_int_equal(b.len, 0);
	assert_int_equal(buf_printf(&b, "%1000d", 1), 0);
	assert_int_equal(b.len, 1000);
	assert_int_equal(b.p[999], '1');
	buf_free(&b);
}

/* ---- rd ---- */

static void test_rd(void **state)
{
	(void)state;
	const uint8_t data[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a};
	struct rd r;
	uint8_t c;
	uint64_t v;
	const uint8_t *p;
	rd_init(&r, data, sizeof data);
	assert_int_equal(rd_left(&r), 10);
	assert_int_equal(rd_u8(&r, &c), 0);
	assert_int_equal(c, 1);
	assert_int_equal(rd_be(&r, 2, &v), 0);
	assert_int_equal(v, 0x0203);
	assert_int_equal(rd_be(&r, 0, &v), AS_EINVAL);
	assert_int_equal(rd_be(&r, 9, &v), AS_EINVAL);
	assert_int_equal(rd_take(&r, 8, &p), AS_EINVAL); /* 7 left */
	assert_int_equal(rd_left(&r), 7);
	assert_int_equal(rd_be(&r, 8, &v), AS_EINVAL);
	assert_int_equal(rd_left(&r), 7);
	assert_int_equal(rd_take(&r, 3, &p), 0);
	assert_ptr_equal(p, data + 3);
	assert_int_equal(rd_be(&r, 4, &v), 0);
	assert_int_equal(v, 0x0708090a);
	assert_int_equal(rd_left(&r), 0);
	assert_int_equal(rd_u8(&r, &c), AS_EINVAL);
	assert_int_equal(rd_be(&r, 1, &v), AS_EINVAL);
	assert_int_equal(rd_take(&r, 1, &p), AS_EINVAL);
	assert_int_equal(rd_take(&r, SIZE_MAX, &p), AS_EINVAL);
	assert_int_equal(rd_take(&r, 0, &p), 0);
	rd_init(&r, data, 8);
	assert_int_equal(rd_be(&r, 8, &v), 0);
	assert_int_equal(v, 0x0102030405060708ull);
}

/* ---- be64, ct_memcmp ---- */

static void test_be64_and_ct_memcmp(void **state)
{
	(void)state;
	uint8_t b[8];
	be64_put(b, 0x0102030405060708ull);
	const uint8_t want[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	assert_memory_equal(b, want, 8);
	assert_true(be64_get(b) == 0x0102030405060708ull);
	be64_put(b, UINT64_MAX);
	assert_true(be64_get(b) == UINT64_MAX);
	be64_put(b, 0);
	assert_true(be64_get(b) == 0);
	be64_put(b, 1);
	assert_int_equal(b[7], 1);
	assert_int_equal(b[0], 0);

	uint8_t x[64], y[64];
	for (int i = 0; i < 64; i++)
		x[i] = y[i] = (uint8_t)i;
	assert_int_equal(ct_memcmp(x, y, 64), 0);
	assert_int_equal(ct_memcmp(x, y, 0), 0);
	for (int i = 0; i < 64; i++) {
		y[i] ^= 0x80;
		if (ct_memcmp(x, y, 64) == 0)
			fail_msg("ct_memcmp missed a difference at byte %d", i);
		y[i] ^= 0x80;
	}
	y[63] ^= 1;
	assert_int_equal(ct_memcmp(x, y, 63), 0); /* only n bytes are compared */
}

/* ---- files ---- */

static mode_t mode_of(const char *p)
{
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	return st.st_mode;
}

static size_t count_entries(const char *d)
{
	size_t n = 0;
	DIR *dh = opendir(d);
	assert_non_null(dh);
	struct dirent *e;
	while ((e = readdir(dh)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(dh);
	return n;
}

static void test_file_write_atomic_modes(void **state)
{
	(void)state;
	char p[256], err[AS_ERRLEN];
	struct buf b;
	const unsigned modes[] = {0600, 0644, 0640, 0400};
	const mode_t umasks[] = {022, 077, 0};
	char sub[128];
	path_in(sub, sizeof sub, "atomic");
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(p, sizeof p, "%s/f", sub);
	for (size_t u = 0; u < 3; u++)
		for (size_t m = 0; m < 4; m++) {
			mode_t old = umask(umasks[u]);
			char data[64];
			int n = snprintf(data, sizeof data, "mode %o umask %o", modes[m], (unsigned)umasks[u]);
			int rc = file_write_atomic(p, data, (size_t)n, modes[m], err);
			umask(old);
			assert_int_equal(rc, 0);
			mode_t got = mode_of(p);
			assert_true(S_ISREG(got));
			if ((got & 07777) != modes[m])
				fail_msg("file_write_atomic(mode %o) under umask %o left mode %o", modes[m],
					 (unsigned)umasks[u], (unsigned)(got & 07777));
			assert_int_equal(file_read(p, 1024, &b, err), 0);
			assert_int_equal(b.len, (size_t)n);
			assert_memory_equal(b.p, data, (size_t)n);
			buf_free(&b);
			/* the temporary file is gone: the directory holds only the file */
			assert_int_equal(count_entries(sub), 1);
			chmod(p, 0600); /* so that 0400 can be replaced next time round */
		}
	/* empty contents */
	assert_int_equal(file_write_atomic(p, "", 0, 0644, err), 0);
	assert_int_equal(file_read(p, 16, &b, err), 0);
	assert_int_equal(b.len, 0);
	buf_free(&b);
	/* a missing directory is an error, not a crash */
	char q[256];
	snprintf(q, sizeof q, "%s/missing/f", sub);
	assert_int_equal(file_write_atomic(q, "x", 1, 0644, err), AS_EIO);
}

/* A symlink at the target path is replaced, never followed: the file it points to stays. */
static void test_file_write_atomic_replaces_symlink(void **state)
{
	(void)state;
	char target[128], link[128], err[AS_ERRLEN];
	path_in(target, sizeof target, "victim");
	path_in(link, sizeof link, "link");
	assert_int_equal(file_write_atomic(target, "original", 8, 0644, err), 0);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(file_write_atomic(link, "new", 3, 0600, err), 0);
	assert_true(S_ISREG(mode_of(link)));
	struct buf b;
	assert_int_equal(file_read(target, 64, &b, err), 0);
	assert_int_equal(b.len, 8);
	assert_memory_equal(b.p, "original", 8);
	buf_free(&b);
	assert_int_equal(file_read(link, 64, &b, err), 0);
	assert_int_equal(b.len, 3);
	buf_free(&b);
	unlink(link);
	unlink(target);
}

static void test_file_read_bounds(void **state)
{
	(void)state;
	char p[128], err[AS_ERRLEN];
	struct buf b;
	uint8_t data[10000];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (uint8_t)(i * 13);
	path_in(p, sizeof p, "big");
	assert_int_equal(file_write_atomic(p, data, sizeof data, 0644, err), 0);
	assert_int_equal(file_read(p, sizeof data, &b, err), 0); /* exactly max */
	assert_int_equal(b.len, sizeof data);
	assert_memory_equal(b.p, data, sizeof data);
	assert_true(b.cap <= sizeof data);
	buf_free(&b);
	assert_int_equal(file_read(p, sizeof data - 1, &b, err), AS_ETOOBIG);
	assert_int_equal(file_read(p, 1, &b, err), AS_ETOOBIG);
	path_in(p, sizeof p, "nope");
	assert_int_equal(file_read(p, 100, &b, err), AS_ENOTFOUND);
	assert_int_equal(file_read(dir, 100, &b, err), AS_EIO);		/* a directory */
	assert_int_equal(file_read("/dev/null", 100, &b, err), AS_EIO); /* not a regular file */
}

static void test_mkdir_p(void **state)
{
	(void)state;
	char p[256], err[AS_ERRLEN];
	mode_t old = umask(0);
	snprintf(p, sizeof p, "%s/a/b/c", dir);
	assert_int_equal(mkdir_p(p, 0750, err), 0);
	umask(old);
	assert_true(S_ISDIR(mode_of(p)));
	assert_int_equal(mode_of(p) & 07777, 0750);
	snprintf(p, sizeof p, "%s/a", dir);
	assert_int_equal(mode_of(p) & 07777, 0750);
	snprintf(p, sizeof p, "%s/a/b/c", dir);
	assert_int_equal(mkdir_p(p, 0700, err), 0); /* exists: fine */
	snprintf(p, sizeof p, "%s/a/b/c/", dir);
	assert_int_equal(mkdir_p(p, 0700, err), 0); /* trailing slash */
	/* through a regular file */
	char f[256];
	snprintf(f, sizeof f, "%s/a/file", dir);
	assert_int_equal(file_write_atomic(f, "x", 1, 0644, err), 0);
	assert_int_not_equal(mkdir_p(f, 0700, err), 0);
	snprintf(p, sizeof p, "%s/a/file/sub", dir);
	assert_int_not_equal(mkdir_p(p, 0700, err), 0);
	assert_int_not_equal(mkdir_p("", 0700, err), 0);
}

/* ---- state_dir_resolve ---- */

struct env_save {
	const char *name;
	char *val;
};

static void env_set(const char *name, const char *val)
{
	if (val)
		setenv(name, val, 1);
	else
		unsetenv(name);
}

static void test_state_dir_resolve_order(void **state)
{
	(void)state;
	struct env_save sv[] = {{"ASSENT_STATE_DIR", NULL}, {"XDG_STATE_HOME", NULL}, {"HOME", NULL}};
	for (size_t i = 0; i < 3; i++) {
		const char *v = getenv(sv[i].name);
		sv[i].val = v ? strdup(v) : NULL;
	}
	char out[256], err[AS_ERRLEN];
	env_set("ASSENT_STATE_DIR", "/env/state");
	env_set("XDG_STATE_HOME", "/xdg");
	env_set("HOME", "/home/u");
	assert_int_equal(state_dir_resolve("/flag/dir", out, sizeof out, err), 0);
	assert_string_equal(out, "/flag/dir");
	assert_int_equal(state_dir_resolve("", out, sizeof out, err), 0); /* an empty flag is no flag */
	assert_string_equal(out, "/env/state");
	assert_int_equal(state_dir_resolve(NULL, out, sizeof out, err), 0);
	assert_string_equal(out, "/env/state");
	env_set("ASSENT_STATE_DIR", "");
	assert_int_equal(state_dir_resolve(NULL, out, sizeof out, err), 0);
	assert_string_equal(out, "/xdg/assent");
	env_set("ASSENT_STATE_DIR", NULL);
	assert_int_equal(state_dir_resolve(NULL, out, sizeof out, err), 0);
	assert_string_equal(out, "/xdg/assent");
	/* XDG base directories must be absolute; a relative one is ignored */
	env_set("XDG_STATE_HOME", "relative/xdg");
	assert_int_equal(state_dir_resolve(NULL, out, sizeof out, err), 0);
	assert_string_equal(out, "/home/u/.local/state/assent");
	env_set("XDG_STATE_HOME", NULL);
	assert_int_equal(state_dir_resolve(NULL, out, sizeof out, err), 0);
	assert_string_equal(out, "/home/u/.local/state/assent");
	/* never the current directory */
	env_set("HOME", NULL);
	assert_int_equal(state_dir_resolve(NULL, out, sizeof out, err), AS_EINVAL);
	env_set("HOME", "relative-home");
	assert_int_equal(state_dir_resolve(NULL, out, sizeof out, err), AS_EINVAL);
	/* the flag still wins with nothing else set */
	assert_int_equal(state_dir_resolve("/f", out, sizeof out, err), 0);
	assert_string_equal(out, "/f");
	/* output too small */
	env_set("HOME", "/home/u");
	assert_int_equal(state_dir_resolve(NULL, out, 10, err), AS_EINVAL);
	assert_int_equal(state_dir_resolve("/flag/dir", out, 9, err), AS_EINVAL);
	assert_int_equal(state_dir_resolve("/flag/dir", out, 10, err), 0);
	for (size_t i = 0; i < 3; i++) {
		env_set(sv[i].name, sv[i].val);
		free(sv[i].val);
	}
}

static void test_as_fail_bounded(void **state)
{
	(void)state;
	char err[AS_ERRLEN + 16];
	memset(err, 'Z', sizeof err);
	char big[1000];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = 0;
	assert_int_equal(as_fail(err, AS_EIO, "x %s", big), AS_EIO);
	assert_int_equal(strlen(err), AS_ERRLEN - 1);
	assert_int_equal(err[AS_ERRLEN], 'Z'); /* nothing written past AS_ERRLEN */
	assert_int_equal(as_fail(NULL, AS_EINVAL, "no buffer"), AS_EINVAL);
	assert_string_equal(as_strerror(AS_EBADSIG), "bad signature");
	assert_string_not_equal(as_strerror(AS_ECORRUPT), as_strerror(AS_EIO));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hex),
	    cmocka_unit_test(test_b64_rfc4648_vectors),
	    cmocka_unit_test(test_b64_strict),
	    cmocka_unit_test(test_b64_encode_respects_max),
	    cmocka_unit_test(test_parse_u64),
	    cmocka_unit_test(test_buf_max_enforced),
	    cmocka_unit_test(test_buf_printf),
	    cmocka_unit_test(test_rd),
	    cmocka_unit_test(test_be64_and_ct_memcmp),
	    cmocka_unit_test(test_file_write_atomic_modes),
	    cmocka_unit_test(test_file_write_atomic_replaces_symlink),
	    cmocka_unit_test(test_file_read_bounds),
	    cmocka_unit_test(test_mkdir_p),
	    cmocka_unit_test(test_state_dir_resolve_order),
	    cmocka_unit_test(test_as_fail_bounded),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
