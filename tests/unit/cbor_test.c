/* Unit tests for common/cbor.c: exact canonical encodings (RFC 8949 Appendix A),
 * round trips, and refusal of every non-canonical or unsupported input form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/cbor.h"

static struct cv_arena A; /* builders for expected values; reset per test */

static int setup(void **state)
{
	(void)state;
	cv_arena_init(&A, 1u << 20);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	cv_arena_free(&A);
	return 0;
}

/* Local hex parser (spaces allowed) so these tests do not depend on util's hex. */
static size_t unhex(const char *h, uint8_t *out, size_t max)
{
	size_t n = 0;
	int hi = -1;
	for (; *h; h++) {
		int d = 0;
		if (*h == ' ')
			continue;
		if (*h >= '0' && *h <= '9')
			d = *h - '0';
		else if (*h >= 'a' && *h <= 'f')
			d = *h - 'a' + 10;
		else
			fail_msg("bad hex digit in test vector: %c", *h);
		if (hi < 0) {
			hi = d;
		} else {
			if (n >= max)
				fail_msg("test vector too long");
			out[n++] = (uint8_t)(hi << 4 | d);
			hi = -1;
		}
	}
	if (hi >= 0)
		fail_msg("odd hex test vector");
	return n;
}

/* ---- value builders ---- */

static struct cv *new_cv(void)
{
	struct cv *v = cv_alloc(&A, 1);
	assert_non_null(v);
	return v;
}
static struct cv *U(uint64_t x)
{
	struct cv *v = new_cv();
	cv_set_uint(v, x);
	return v;
}
static struct cv *I(int64_t x)
{
	struct cv *v = new_cv();
	cv_set_int(v, x);
	return v;
}
static struct cv *NINT(uint64_t u) /* the value -1 - u */
{
	struct cv *v = new_cv();
	v->t = CV_NINT;
	v->u = u;
	return v;
}
static struct cv *T(const char *s)
{
	struct cv *v = new_cv();
	assert_int_equal(cv_set_text(&A, v, s, strlen(s)), 0);
	return v;
}
static struct cv *Tn(const char *s, size_t n)
{
	struct cv *v = new_cv();
	assert_int_equal(cv_set_text(&A, v, s, n), 0);
	return v;
}
static struct cv *B(const char *hex)
{
	uint8_t tmp[512];
	size_t n = unhex(hex, tmp, sizeof tmp);
	struct cv *v = new_cv();
	assert_int_equal(cv_set_bytes(&A, v, tmp, n), 0);
	return v;
}
static struct cv *S(enum cv_type t)
{
	struct cv *v = new_cv();
	v->t = t;
	return v;
}
static struct cv *ARR(size_t n, ...)
{
	struct cv *v = cv_array(&A, n);
	assert_non_null(v);
	va_list ap;
	va_start(ap, n);
	for (size_t i = 0; i < n; i++)
		v->items[i] = *va_arg(ap, struct cv *);
	va_end(ap);
	return v;
}
static struct cv *MAP(size_t npairs, ...) /* key, value, key, value... in the order given */
{
	struct cv *v = cv_map(&A, npairs);
	assert_non_null(v);
	va_list ap;
	va_start(ap, npairs);
	for (size_t i = 0; i < 2 * npairs; i++)
		v->items[i] = *va_arg(ap, struct cv *);
	va_end(ap);
	return v;
}

static int cv_equal(const struct cv *a, const struct cv *b)
{
	if (a->t != b->t)
		return 0;
	switch (a->t) {
	case CV_UINT:
	case CV_NINT:
		return a->u == b->u;
	case CV_BYTES:
	case CV_TEXT:
		return a->n == b->n && (a->n == 0 || memcmp(a->s, b->s, a->n) == 0);
	case CV_ARRAY:
	case CV_MAP: {
		if (a->n != b->n)
			return 0;
		size_t k = a->t == CV_MAP ? 2 * a->n : a->n;
		for (size_t i = 0; i < k; i++)
			if (!cv_equal(&a->items[i], &b->items[i]))
				return 0;
		return 1;
	}
	default:
		return 1;
	}
}

/* Equal values, maps compared as sets of pairs (keys are unique in both). */
static int cv_equiv(const struct cv *a, const struct cv *b)
{
	if (a->t != b->t)
		return 0;
	if (a->t == CV_ARRAY) {
		if (a->n != b->n)
			return 0;
		for (size_t i = 0; i < a->n; i++)
			if (!cv_equiv(&a->items[i], &b->items[i]))
				return 0;
		return 1;
	}
	if (a->t != CV_MAP)
		return cv_equal(a, b);
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		size_t j = 0;
		while (j < b->n && !cv_equiv(&a->items[2 * i], &b->items[2 * j]))
			j++;
		if (j == b->n || !cv_equiv(&a->items[2 * i + 1], &b->items[2 * j + 1]))
			return 0;
	}
	return 1;
}

/* v encodes to exactly hex, and hex decodes to a value equal to v that re-encodes to hex. */
static void expect_enc(const struct cv *v, const char *hex)
{
	uint8_t want[1024];
	size_t wn = unhex(hex, want, sizeof want);
	struct buf b, b2;
	struct cv_arena a;
	struct cv *d = NULL;
	char err[AS_ERRLEN] = "", why[AS_ERRLEN * 2] = "";
	buf_init(&b, 1 << 16);
	buf_init(&b2, 1 << 16);
	cv_arena_init(&a, 4096);
	if (cbor_encode(v, &b, err) != 0)
		snprintf(why, sizeof why, "encoding for %s failed: %s", hex, err);
	else if (b.len != wn || memcmp(b.p, want, wn) != 0)
		snprintf(why, sizeof why, "encoding differs from %s (got %zu bytes)", hex, b.len);
	else if (cbor_decode(want, wn, &a, &d, err) != 0)
		snprintf(why, sizeof why, "canonical %s refused: %s", hex, err);
	else if (!cv_equiv(v, d))
		snprintf(why, sizeof why, "%s decodes to a different value", hex);
	else if (cbor_encode(d, &b2, err) != 0 || b2.len != wn || memcmp(b2.p, want, wn) != 0)
		snprintf(why, sizeof why, "%s does not re-encode to itself", hex);
	cv_arena_free(&a);
	buf_free(&b);
	buf_free(&b2);
	if (why[0])
		fail_msg("%s", why);
}

static int decode_hex(const char *hex, struct cv_arena *a, struct cv **out)
{
	uint8_t in[1200];
	size_t n = unhex(hex, in, sizeof in);
	char err[AS_ERRLEN] = "";
	return cbor_decode(in, n, a, out, err);
}

/* Every vector must be refused with AS_ECORRUPT. */
/* Every vector must be refused with AS_ECORRUPT. */
static void expect_refused(const char *const *vecs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct cv_arena a;
		cv_arena_init(&a, 4096);
		struct cv *out = NULL;
		int rc = decode_hex(vecs[i], &a, &out);
		cv_arena_free(&a);
		if (rc != AS_ECORRUPT)
			fail_msg("decoder returned %d (wanted AS_ECORRUPT) for %s", rc, vecs[i]);
	}
}

static void expect_accepted(const char *const *vecs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct cv_arena a;
		cv_arena_init(&a, 4096);
		struct cv *out = NULL;
		int rc = decode_hex(vecs[i], &a, &out);
		cv_arena_free(&a);
		if (rc != 0)
			fail_msg("decoder refused canonical %s (rc %d)", vecs[i], rc);
	}
}

#define N_(x) (sizeof(x) / sizeof((x)[0]))

/* ---- RFC 8949 Appendix A ---- */

static void test_rfc8949_unsigned(void **state)
{
	(void)state;
	expect_enc(U(0), "00");
	expect_enc(U(1), "01");
	expect_enc(U(10), "0a");
	expect_enc(U(23), "17");
	expect_enc(U(24), "1818");
	expect_enc(U(25), "1819");
	expect_enc(U(100), "1864");
	expect_enc(U(1000), "1903e8");
	expect_enc(U(1000000), "1a000f4240");
	expect_enc(U(1000000000000ull), "1b000000e8d4a51000");
	expect_enc(U(UINT64_MAX), "1bffffffffffffffff");
	/* each head size boundary */
	expect_enc(U(255), "18ff");
	expect_enc(U(256), "190100");
	expect_enc(U(65535), "19ffff");
	expect_enc(U(65536), "1a00010000");
	expect_enc(U(0xffffffffu), "1affffffff");
	expect_enc(U(0x100000000ull), "1b0000000100000000");
}

static void test_rfc8949_negative(void **state)
{
	(void)state;
	expect_enc(I(-1), "20");
	expect_enc(I(-10), "29");
	expect_enc(I(-24), "37");
	expect_enc(I(-25), "3818");
	expect_enc(I(-100), "3863");
	expect_enc(I(-256), "38ff");
	expect_enc(I(-257), "390100");
	expect_enc(I(-1000), "3903e7");
	expect_enc(I(INT64_MIN), "3b7fffffffffffffff");
	expect_enc(NINT(UINT64_MAX), "3bffffffffffffffff"); /* -18446744073709551616 */
}

static void test_rfc8949_simple(void **state)
{
	(void)state;
	expect_enc(S(CV_FALSE), "f4");
	expect_enc(S(CV_TRUE), "f5");
	expect_enc(S(CV_NULL), "f6");
}

static void test_rfc8949_strings(void **state)
{
	(void)state;
	expect_enc(B(""), "40");
	expect_enc(B("01020304"), "4401020304");
	expect_enc(T(""), "60");
	expect_enc(T("a"), "6161");
	expect_enc(T("IETF"), "6449455446");
	expect_enc(T("\"\\"), "62225c");
	expect_enc(T("\xc3\xbc"), "62c3bc");
	expect_enc(T("\xe6\xb0\xb4"), "63e6b0b4");
	expect_enc(T("\xf0\x90\x85\x91"), "64f0908591");
	/* a text of 24 bytes needs a one-byte length */
	expect_enc(T("abcdefghijklmnopqrstuvwx"), "7818 6162636465666768696a6b6c6d6e6f707172737475767778");
	/* a text with an embedded NUL is still one text */
	expect_enc(Tn("a\0b", 3), "63 610062");
}

static void test_rfc8949_arrays(void **state)
{
	(void)state;
	expect_enc(ARR(0), "80");
	expect_enc(ARR(3, U(1), U(2), U(3)), "83010203");
	expect_enc(ARR(3, U(1), ARR(2, U(2), U(3)), ARR(2, U(4), U(5))), "8301820203820405");
	struct cv *a25 = cv_array(&A, 25);
	assert_non_null(a25);
	for (size_t i = 0; i < 25; i++)
		cv_set_uint(&a25->items[i], i + 1);
	expect_enc(a25, "98190102030405060708090a0b0c0d0e0f101112131415161718181819");
	expect_enc(ARR(2, T("a"), MAP(1, T("b"), T("c"))), "826161a161626163");
}

static void test_rfc8949_maps(void **state)
{
	(void)state;
	expect_enc(MAP(0), "a0");
	expect_enc(MAP(2, U(1), U(2), U(3), U(4)), "a201020304");
	expect_enc(MAP(2, T("a"), U(1), T("b"), ARR(2, U(2), U(3))), "a26161016162820203");
	expect_enc(MAP(5, T("a"), T("A"), T("b"), T("B"), T("c"), T("C"), T("d"), T("D"), T("e"), T("E")),
		   "a56161614161626142616361436164614461656145");
}

static void test_long_string_lengths(void **state)
{
	(void)state;
	/* 256 bytes: two-byte length head 59 0100 */
	char hex[2 * 256 + 16];
	strcpy(hex, "590100");
	for (int i = 0; i < 256; i++)
		snprintf(hex + 6 + 2 * i, 3, "%02x", i);
	uint8_t raw[256];
	for (int i = 0; i < 256; i++)
		raw[i] = (uint8_t)i;
	struct cv *v = new_cv();
	assert_int_equal(cv_set_bytes(&A, v, raw, sizeof raw), 0);
	expect_enc(v, hex);
}

static void test_roundtrip_all_types(void **state)
{
	(void)state;
	struct cv *v = MAP(9, T("uint"), U(0x123456789ull), T("nint"), I(-70000), T("bytes"), B("00ff10"), T("text"),
			   T("h\xc3\xa9llo"), T("array"), ARR(3, U(1), S(CV_NULL), ARR(0)), T("map"),
			   MAP(2, U(1), S(CV_TRUE), I(-1), S(CV_FALSE)), T("f"), S(CV_FALSE), T("t"), S(CV_TRUE),
			   T("n"), S(CV_NULL));
	struct buf b;
	char err[AS_ERRLEN] = "";
	buf_init(&b, 4096);
	assert_int_equal(cbor_encode(v, &b, err), 0);

	struct cv_arena a;
	cv_arena_init(&a, 4096);
	struct cv *d = NULL;
	assert_int_equal(cbor_decode(b.p, b.len, &a, &d, err), 0);
	/* The decoder returns keys in canonical order, so compare field by field. */
	assert_int_equal(d->t, CV_MAP);
	assert_int_equal(d->n, 9);
	const char *keys[] = {"uint", "nint", "bytes", "text", "array", "map", "f", "t", "n"};
	for (size_t i = 0; i < N_(keys); i++) {
		const struct cv *got = cv_get(d, keys[i]);
		const struct cv *want = cv_get(v, keys[i]);
		assert_non_null(got);
		assert_non_null(want);
		if (!cv_equal(got, want))
			fail_msg("field %s changed in the round trip", keys[i]);
	}
	assert_null(cv_get(d, "absent"));
	/* Decoded strings point into the input, not into copies. */
	const struct cv *bytes = cv_get(d, "bytes");
	assert_true(bytes->s >= b.p && bytes->s + bytes->n <= b.p + b.len);
	/* Re-encoding the decoded value gives the same bytes. */
	struct buf b2;
	buf_init(&b2, 4096);
	assert_int_equal(cbor_encode(d, &b2, err), 0);
	assert_int_equal(b2.len, b.len);
	assert_memory_equal(b2.p, b.p, b.len);
	buf_free(&b2);
	buf_free(&b);
	cv_arena_free(&a);
}

/* ---- refusals ---- */

static void test_refuse_long_forms(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "1800",
	    "1805",
	    "1817", /* < 24 in a 1-byte argument */
	    "190010",
	    "1900ff", /* < 256 in 2 bytes */
	    "1a00000005",
	    "1a0000ffff", /* < 65536 in 4 bytes */
	    "1b0000000000000005",
	    "1b00000000ffffffff", /* < 2^32 in 8 bytes */
	    "3800",
	    "3817",
	    "3900ff",
	    "3a0000ffff",
	    "3b00000000ffffffff", /* negative */
	    "5800",
	    "580100",
	    "590001ab", /* byte string lengths */
	    "7800",
	    "780161", /* text lengths */
	    "9800",
	    "980101",
	    "990001 01", /* array lengths */
	    "b800",
	    "b8010000",	  /* map lengths */
	    "81 1805",	  /* nested */
	    "a1 1801 00", /* as a map key */
	};
	expect_refused(bad, N_(bad));
	static const char *const ok[] = {"17",
					 "1818",
					 "18ff",
					 "190100",
					 "1a00010000",
					 "1b0000000100000000",
					 "37",
					 "3818",
					 "7818 616161616161616161616161616161616161616161616161",
					 "9818 000102030405060708090a0b0c0d0e0f1011121314151617"};
	expect_accepted(ok, N_(ok));
}

static void test_refuse_unsorted_keys(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "a2 02 00 01 00",	    /* {2:0, 1:0} */
	    "a2 6162 00 6161 00",   /* {"b":0, "a":0} */
	    "a2 626161 00 6162 00", /* "aa" (626161) before "b" (6162): the length is in the head */
	    "a2 20 00 1818 00",	    /* {-1, 24}: length-first order, not bytewise */
	    "a2 6161 00 01 00",	    /* text key before an integer key */
	    "a3 01 00 03 00 02 00", /* only the last pair out of order */
	    "81 a2 02 00 01 00",    /* inside an array */
	    "a1 00 a2 02 00 01 00", /* inside a map value */
	};
	expect_refused(bad, N_(bad));
	static const char *const ok[] = {"a2 01 00 02 00", "a2 6161 00 6162 00", "a2 1818 00 20 00",
					 "a2 6162 00 626161 00", "a2 01 00 6161 00"};
	expect_accepted(ok, N_(ok));
}

static void test_refuse_duplicate_keys(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "a2 01 00 01 00",	     "a2 01 00 01 01", "a2 6161 00 6161 01",
	    "a3 01 00 02 00 02 00",  "a2 80 00 80 00", /* equal array keys */
	    "81 a2 6161 00 6161 00",		       /* nested */
	};
	expect_refused(bad, N_(bad));
}

static void test_refuse_indefinite(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "5f ff",	   "5f 41 00 ff", "7f ff",	 "7f 61 61 ff", "9f ff",
	    "9f 01 02 ff", "bf ff",	  "bf 01 02 ff", "ff", /* a lone break */
	    "1f",	   "3f",			       /* additional info 31 on integers */
	    "81 9f ff",					       /* nested */
	};
	expect_refused(bad, N_(bad));
}

static void test_refuse_floats(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "f9 3c00",		   /* 1.0 as half */
	    "f9 0000",		   /* 0.0 */
	    "f9 7c00",		   /* infinity */
	    "fa 47c35000",	   /* 100000.0 */
	    "fb 3ff199999999999a", /* 1.1 */
	    "f9",		   /* truncated half */
	    "81 fb 0000000000000000",
	};
	expect_refused(bad, N_(bad));
}

static void test_refuse_tags(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "c0 74 323031332d30332d32315432303a30343a30305a", /* tag 0 date/time */
	    "c1 1a514b67b0",				      /* tag 1 epoch */
	    "c2 49 010000000000000000",			      /* bignum */
	    "d8 20 76 687474703a2f2f7777772e6578616d706c652e636f6d",
	    "d9 d9f7 00", /* self-describe CBOR */
	    "d7 00",
	    "82 01 c0 00",
	};
	expect_refused(bad, N_(bad));
}

static void test_refuse_other_simple_values(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "e0",    "e1", "f0", "f3", "f7" /* undefined */, "f8 20", "f8 ff",
	    "f8 00", "fc", "fd", "fe", /* reserved additional info 28-30 */
	    "1c",    "5c", "9d", "be", /* reserved on other major types */
	};
	expect_refused(bad, N_(bad));
	static const char *const ok[] = {"f4", "f5", "f6"};
	expect_accepted(ok, N_(ok));
}

/* Declared lengths far beyond the input are refused before anything is allocated. */
static void test_huge_declared_array(void **state)
{
	(void)state;
	static const char *const vecs[] = {
	    "9a 40000000", "9a 40000000 010203",  "9b ffffffffffffffff",      "9b 7fffffffffffffff 00",
	    "ba 40000000", "bb 8000000000000000", "bb ffffffffffffffff 0000", "99 ffff",
	    "84 01 02 03", "a2 01 02 03",	  "81 9a 40000000",
	};
	for (size_t i = 0; i < N_(vecs); i++) {
		struct cv_arena a;
		cv_arena_init(&a, SIZE_MAX); /* no arena limit: only the input bounds the count */
		struct cv *out = NULL;
		int rc = decode_hex(vecs[i], &a, &out);
		size_t used = a.used;
		cv_arena_free(&a);
		if (rc != AS_ECORRUPT)
			fail_msg("%s: rc %d, wanted AS_ECORRUPT", vecs[i], rc);
		/* only the root and, for the nested vector, its one item */
		if (used > 2)
			fail_msg("%s: %zu items allocated for a refused input", vecs[i], used);
	}
}

static void test_huge_declared_string(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "5a 40000000 00", "5b ffffffffffffffff",	  "5b 7fffffffffffffff 00",
	    "7a ffffffff 61", "7b 8000000000000000 6161", "59 ffff 00",
	    "43 0102", /* one byte short */
	    "63 6161",	      "81 5a 40000000",
	};
	expect_refused(bad, N_(bad));
	static const char *const ok[] = {"43 010203", "63 616161", "40", "60"};
	expect_accepted(ok, N_(ok));
}

static void test_refuse_trailing_bytes(void **state)
{
	(void)state;
	static const char *const bad[] = {"00 00", "80 00", "a0 ff", "f6 f6", "6161 61", "8101 01", "f4 00"};
	expect_refused(bad, N_(bad));
	struct cv_arena a;
	cv_arena_init(&a, 16);
	struct cv *out = NULL;
	char err[AS_ERRLEN];
	assert_int_equal(cbor_decode((const uint8_t *)"", 0, &a, &out, err), AS_ECORRUPT); /* no item */
	cv_arena_free(&a);
}

static void test_refuse_invalid_utf8(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "61 ff",	      "61 80",		"61 c3", "62 c3 28", /* stray, lone continuation, truncated */
	    "62 c0 80",	      "62 c1 bf",			     /* overlong 2-byte */
	    "63 e0 80 80",    "63 e0 9f bf",			     /* overlong 3-byte */
	    "63 ed a0 80",    "63 ed bf bf",			     /* UTF-16 surrogates */
	    "64 f0 80 80 80", "64 f0 8f bf bf",			     /* overlong 4-byte */
	    "64 f4 90 80 80", "64 f5 80 80 80",			     /* beyond U+10FFFF */
	    "61 fe",	      "62 e2 82",			     /* truncated 3-byte */
	    "a1 61 ff 00",					     /* as a map key */
	    "81 62 c0 80",
	};
	expect_refused(bad, N_(bad));
	static const char *const ok[] = {
	    "61 7f",	      "62 c2 80",	"62 df bf", "63 e0 a0 80", "63 ed 9f bf", "63 ee 80 80", "63 ef bf bf",
	    "64 f0 90 80 80", "64 f4 8f bf bf", "61 00",    "41 ff",	   "42 c0 80", /* byte strings are not UTF-8 */
	};
	expect_accepted(ok, N_(ok));
}

static void nested_hex(char *out, int depth, const char *open, const char *leaf)
{
	out[0] = 0;
	for (int i = 0; i < depth - 1; i++)
		strcat(out, open);
	strcat(out, leaf);
}

static void test_nesting_depth(void **state)
{
	(void)state;
	char hex[4 * 2100];
	struct cv_arena a;
	struct cv *out;
	/* 32 nested arrays: [[[...[]...]]] */
	cv_arena_init(&a, 4096);
	nested_hex(hex, 32, "81", "80");
	assert_int_equal(decode_hex(hex, &a, &out), 0);
	cv_arena_reset(&a);
	nested_hex(hex, 32, "81", "81 00"); /* 32 arrays holding an integer */
	assert_int_equal(decode_hex(hex, &a, &out), 0);
	cv_arena_reset(&a);
	nested_hex(hex, 33, "81", "80");
	assert_int_equal(decode_hex(hex, &a, &out), AS_ECORRUPT);
	cv_arena_reset(&a);
	nested_hex(hex, 33, "81", "81 00");
	assert_int_equal(decode_hex(hex, &a, &out), AS_ECORRUPT);
	cv_arena_reset(&a);
	/* maps: {0: {0: ... {} }} */
	nested_hex(hex, 32, "a1 00", "a0");
	assert_int_equal(decode_hex(hex, &a, &out), 0);
	cv_arena_reset(&a);
	nested_hex(hex, 33, "a1 00", "a0");
	assert_int_equal(decode_hex(hex, &a, &out), AS_ECORRUPT);
	cv_arena_reset(&a);
	/* mixed, and much deeper: refused without exhausting the stack */
	nested_hex(hex, 33, "a1 00 81", "80");
	assert_int_equal(decode_hex(hex, &a, &out), AS_ECORRUPT);
	cv_arena_reset(&a);
	nested_hex(hex, 1000, "81", "80");
	assert_int_equal(decode_hex(hex, &a, &out), AS_ECORRUPT);
	cv_arena_free(&a);
}

static void test_arena_limit(void **state)
{
	(void)state;
	struct cv_arena a;
	struct cv *out;
	cv_arena_init(&a, 5); /* root + 4 items */
	assert_int_equal(decode_hex("84 01 02 03 04", &a, &out), 0);
	assert_int_equal(out->n, 4);
	assert_int_equal(out->items[3].u, 4);
	cv_arena_reset(&a);
	assert_int_not_equal(decode_hex("85 01 02 03 04 05", &a, &out), 0);
	cv_arena_free(&a);
}

/* ---- encoder ---- */

static void test_encoder_sorts_keys(void **state)
{
	(void)state;
	/* RFC 8949 section 4.2.1's example order: 10, 100, -1, "z", "aa", [100], [-1], false;
	 * inserted here in reverse. */
	struct cv *m = MAP(8, S(CV_FALSE), U(7), ARR(1, I(-1)), U(6), ARR(1, U(100)), U(5), T("aa"), U(4), T("z"), U(3),
			   I(-1), U(2), U(100), U(1), U(10), U(0));
	expect_enc(m, "a8 0a 00 1864 01 20 02 617a 03 626161 04 811864 05 8120 06 f4 07");
	/* bytewise, not length-first: 24 (1818) sorts before -1 (20) */
	expect_enc(MAP(2, I(-1), T("x"), U(24), T("y")), "a2 1818 6179 20 6178");
	/* unsorted at two levels */
	expect_enc(MAP(2, T("b"), MAP(2, T("z"), U(1), T("a"), U(2)), T("a"), MAP(2, T("y"), U(3), T("c"), U(4))),
		   "a2 6161 a2 6163 04 6179 03 6162 a2 6161 02 617a 01");
	/* a map inside an array inside a map */
	expect_enc(MAP(1, T("k"), ARR(2, MAP(2, U(2), U(0), U(1), U(0)), U(9))), "a1 616b 82 a2 01 00 02 00 09");
}

static void test_encoder_refuses_duplicates(void **state)
{
	(void)state;
	struct cv *vals[] = {
	    MAP(2, T("a"), U(1), T("a"), U(2)),
	    MAP(2, U(1), U(0), U(1), U(0)),
	    MAP(3, T("a"), U(1), T("b"), U(2), T("a"), U(3)), /* not adjacent as inserted */
	    MAP(2, ARR(1, U(1)), U(0), ARR(1, U(1)), U(1)),
	    ARR(2, U(0), MAP(2, T("k"), U(0), T("k"), U(1))), /* nested */
	    MAP(1, T("outer"), MAP(2, I(-5), U(0), I(-5), U(0))),
	};
	for (size_t i = 0; i < N_(vals); i++) {
		struct buf b;
		char err[AS_ERRLEN] = "";
		buf_init(&b, 4096);
		int rc = cbor_encode(vals[i], &b, err);
		buf_free(&b);
		if (rc == 0)
			fail_msg("encoder accepted duplicate keys in value %zu", i);
	}
	/* same key text, different type: not duplicates */
	expect_enc(MAP(2, T("1"), U(0), U(1), U(0)), "a2 01 00 6131 00");
}

static void test_encoder_refuses_invalid_utf8(void **state)
{
	(void)state;
	struct cv *vals[] = {Tn("\xff", 1), Tn("\xc0\x80", 2), Tn("\xed\xa0\x80", 3), MAP(1, Tn("\x80", 1), U(0))};
	for (size_t i = 0; i < N_(vals); i++) {
		struct buf b;
		char err[AS_ERRLEN] = "";
		buf_init(&b, 4096);
		int rc = cbor_encode(vals[i], &b, err);
		buf_free(&b);
		if (rc == 0)
			fail_msg("encoder wrote invalid UTF-8 text (value %zu)", i);
	}
}

static void test_encoder_respects_max(void **state)
{
	(void)state;
	struct buf b;
	char err[AS_ERRLEN] = "";
	buf_init(&b, 4);
	assert_int_equal(cbor_encode(T("abcd"), &b, err), AS_ETOOBIG); /* 5 bytes needed */
	buf_free(&b);
	buf_init(&b, 5);
	assert_int_equal(cbor_encode(T("abcd"), &b, err), 0);
	assert_int_equal(b.len, 5);
	buf_free(&b);
}

/* Whatever the encoder writes, the decoder must accept: otherwise a value built
 * from JSON could be encoded and then refused by every reader. */
static void test_encoder_output_always_decodes_at_depth_limit(void **state)
{
	(void)state;
	for (int depth = 30; depth <= 35; depth++) {
		for (int leaf_is_empty = 0; leaf_is_empty <= 1; leaf_is_empty++) {
			/* depth nested arrays; the innermost is [] or [0] */
			struct cv *v = leaf_is_empty ? ARR(0) : ARR(1, U(0));
			for (int i = 1; i < depth; i++)
				v = ARR(1, v);
			struct buf b;
			char err[AS_ERRLEN] = "";
			buf_init(&b, 4096);
			int rc = cbor_encode(v, &b, err);
			if (rc == 0) {
				struct cv_arena a;
				cv_arena_init(&a, 4096);
				struct cv *out;
				int drc = cbor_decode(b.p, b.len, &a, &out, err);
				cv_arena_free(&a);
				if (drc != 0) {
					buf_free(&b);
					fail_msg("encoder wrote %d nested arrays (innermost %s) that the decoder "
						 "refuses: %s",
						 depth, leaf_is_empty ? "empty" : "[0]", err);
				}
			}
			buf_free(&b);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T_(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	    T_(test_rfc8949_unsigned),
	    T_(test_rfc8949_negative),
	    T_(test_rfc8949_simple),
	    T_(test_rfc8949_strings),
	    T_(test_rfc8949_arrays),
	    T_(test_rfc8949_maps),
	    T_(test_long_string_lengths),
	    T_(test_roundtrip_all_types),
	    T_(test_refuse_long_forms),
	    T_(test_refuse_unsorted_keys),
	    T_(test_refuse_duplicate_keys),
	    T_(test_refuse_indefinite),
	    T_(test_refuse_floats),
	    T_(test_refuse_tags),
	    T_(test_refuse_other_simple_values),
	    T_(test_huge_declared_array),
	    T_(test_huge_declared_string),
	    T_(test_refuse_trailing_bytes),
	    T_(test_refuse_invalid_utf8),
	    T_(test_nesting_depth),
	    T_(test_arena_limit),
	    T_(test_encoder_sorts_keys),
	    T_(test_encoder_refuses_duplicates),
	    T_(test_encoder_refuses_invalid_utf8),
	    T_(test_encoder_respects_max),
	    T_(test_encoder_output_always_decodes_at_depth_limit),
#undef T_
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
