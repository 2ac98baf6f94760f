/* Unit tests for ledger/note.c: C2SP checkpoints as signed notes (ECDSA P-256):
 * signing, the exact text format, and every refusal of ckpt_verify. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <mbedtls/base64.h>
#include <mbedtls/sha256.h>

#include "common/eckey.h"
#include "ledger/note.h"
#include "common/util.h"

#define EMDASH "\xe2\x80\x94"

static char dir[64];
static struct eckey *k1, *k2;

static void path_in(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

static int setup(void **state)
{
	(void)state;
	char priv[128], pub[128], err[AS_ERRLEN];
	strcpy(dir, "/tmp/assent-note-test.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	path_in(priv, sizeof priv, "k1.key");
	path_in(pub, sizeof pub, "k1.pub");
	if (eckey_load_or_create(priv, pub, &k1, err) != 0)
		return -1;
	path_in(priv, sizeof priv, "k2.key");
	path_in(pub, sizeof pub, "k2.pub");
	if (eckey_load_or_create(priv, pub, &k2, err) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	eckey_free(k1);
	eckey_free(k2);
	const char *names[] = {"k1.key", "k1.pub", "k2.key", "k2.pub"};
	char p[128];
	for (size_t i = 0; i < 4; i++) {
		path_in(p, sizeof p, names[i]);
		unlink(p);
	}
	rmdir(dir);
	return 0;
}

static struct checkpoint sample(void)
{
	struct checkpoint c;
	memset(&c, 0, sizeof c);
	strcpy(c.origin, "example.com/assent");
	c.size = 12345;
	for (int i = 0; i < 32; i++)
		c.root[i] = (uint8_t)(i * 9 + 1);
	return c;
}

static void b64(const uint8_t *in, size_t n, struct buf *out)
{
	assert_int_equal(b64_encode(in, n, out), 0);
}

/* Append one signature line "— name base64(keyid || sig(body))" signed by k over body. */
static void sig_line(struct eckey *k, const char *name, const char *body, size_t blen, struct buf *out)
{
	uint8_t blob[4 + ECKEY_SIG_MAX];
	size_t sl = 0;
	assert_int_equal(note_key_id(k, blob), 0);
	assert_int_equal(eckey_sign(k, body, blen, blob + 4, &sl), 0);
	assert_int_equal(buf_printf(out, EMDASH " %s ", name), 0);
	b64(blob, 4 + sl, out);
	assert_int_equal(buf_putc(out, '\n'), 0);
}

/* A note over any body text, properly signed by k1 under name: so a refusal can only come
 * from the parser, never from a signature that no longer matches. */
static void make_note(const char *body, size_t blen, const char *name, struct buf *out)
{
	buf_init(out, 1 << 16);
	assert_int_equal(buf_put(out, body, blen), 0);
	assert_int_equal(buf_putc(out, '\n'), 0);
	sig_line(k1, name, body, blen, out);
}

static int verify_k1(const struct buf *t)
{
	struct checkpoint c;
	char err[AS_ERRLEN];
	struct eckey *keys[] = {k1};
	return ckpt_verify(t->p, t->len, keys, 1, &c, err);
}

/* Body text of a checkpoint with a given size line and root line. */
static void body_of(char *out, size_t n, const char *origin, const char *size, const char *root_b64)
{
	snprintf(out, n, "%s\n%s\n%s\n", origin, size, root_b64);
}

static void root_b64(const struct checkpoint *c, char *out)
{
	struct buf b;
	buf_init(&b, 64);
	b64(c->root, 32, &b);
	memcpy(out, b.p, b.len);
	out[b.len] = 0;
	buf_free(&b);
}

static size_t body_len(const struct buf *t) /* up to and including the blank line */
{
	const char *p = memmem(t->p, t->len, "\n\n", 2);
	assert_non_null(p);
	return (size_t)(p - (const char *)t->p) + 2;
}

/* ---- signing and the format ---- */

static void test_sign_verify_roundtrip(void **state)
{
	(void)state;
	uint64_t sizes[] = {0, 1, 12345, UINT64_MAX};
	for (size_t s = 0; s < 4; s++) {
		struct checkpoint c = sample(), got;
		c.size = sizes[s];
		struct buf t;
		char err[AS_ERRLEN] = "";
		buf_init(&t, CKPT_MAX);
		assert_int_equal(ckpt_sign(k1, &c, &t, err), 0);
		/* The body, byte for byte: origin, decimal size, base64 root, blank line. */
		char rb[64], want[1024];
		root_b64(&c, rb);
		snprintf(want, sizeof want, "%s\n%llu\n%s\n\n" EMDASH " %s ", c.origin, (unsigned long long)c.size, rb,
			 c.origin);
		assert_true(t.len > strlen(want));
		assert_memory_equal(t.p, want, strlen(want));
		assert_int_equal(t.p[t.len - 1], '\n');
		memset(&got, 0, sizeof got);
		struct eckey *keys[] = {k1};
		assert_int_equal(ckpt_verify(t.p, t.len, keys, 1, &got, err), 0);
		assert_string_equal(got.origin, c.origin);
		assert_true(got.size == c.size);
		assert_memory_equal(got.root, c.root, 32);
		memset(&got, 0, sizeof got);
		assert_int_equal(ckpt_parse(t.p, t.len, &got, err), 0);
		assert_string_equal(got.origin, c.origin);
		assert_true(got.size == c.size);
		assert_memory_equal(got.root, c.root, 32);
		buf_free(&t);
	}
}

/* The signature line is base64(key ID || DER ECDSA signature over the body with its final newline). */
static void test_signature_line_format(void **state)
{
	(void)state;
	struct checkpoint c = sample();
	struct buf t;
	char err[AS_ERRLEN];
	buf_init(&t, CKPT_MAX);
	assert_int_equal(ckpt_sign(k1, &c, &t, err), 0);
	size_t bl = body_len(&t);
	char prefix[300];
	snprintf(prefix, sizeof prefix, EMDASH " %s ", c.origin);
	size_t pl = strlen(prefix);
	assert_memory_equal(t.p + bl, prefix, pl);
	const uint8_t *sig64 = t.p + bl + pl;
	size_t n64 = t.len - bl - pl - 1;
	uint8_t blob[200], id[4];
	size_t blen = 0;
	assert_int_equal(mbedtls_base64_decode(blob, sizeof blob, &blen, sig64, n64), 0);
	assert_true(blen > 4 + 8 && blen <= 4 + 72);
	assert_int_equal(blob[4], 0x30); /* DER SEQUENCE */
	assert_int_equal(note_key_id(k1, id), 0);
	assert_memory_equal(blob, id, 4);
	assert_int_equal(eckey_verify(k1, t.p, bl - 1, blob + 4, blen - 4), 0);
	assert_int_equal(eckey_verify(k1, t.p, bl, blob + 4, blen - 4), AS_EBADSIG); /* not with the blank line */
	assert_int_equal(eckey_verify(k2, t.p, bl - 1, blob + 4, blen - 4), AS_EBADSIG);
	buf_free(&t);
}

/* Key ID = first 4 bytes of SHA-256 of the DER SubjectPublicKeyInfo, here taken from the PEM file. */
static void test_key_id_is_spki_hash(void **state)
{
	(void)state;
	char p[128];
	path_in(p, sizeof p, "k1.pub");
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	char line[256], b64s[1024] = "";
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "-----", 5) == 0)
			continue;
		line[strcspn(line, "\r\n")] = 0;
		strcat(b64s, line);
	}
	fclose(f);
	uint8_t der[512], h[32], id[4], spki[ECKEY_SPKI_MAX];
	size_t dn = 0, sn = 0;
	assert_int_equal(mbedtls_base64_decode(der, sizeof der, &dn, (const uint8_t *)b64s, strlen(b64s)), 0);
	assert_int_equal(dn, 91); /* P-256 SPKI, uncompressed point */
	assert_int_equal(eckey_spki(k1, spki, &sn), 0);
	assert_int_equal(sn, dn);
	assert_memory_equal(spki, der, dn);
	mbedtls_sha256_ret(der, dn, h, 0);
	assert_int_equal(note_key_id(k1, id), 0);
	assert_memory_equal(id, h, 4);
	uint8_t id2[4];
	assert_int_equal(note_key_id(k2, id2), 0);
	assert_memory_not_equal(id, id2, 4);
}

static void test_signatures_are_deterministic(void **state)
{
	(void)state;
	struct checkpoint c = sample();
	struct buf a, b, d;
	char err[AS_ERRLEN];
	buf_init(&a, CKPT_MAX);
	buf_init(&b, CKPT_MAX);
	buf_init(&d, CKPT_MAX);
	assert_int_equal(ckpt_sign(k1, &c, &a, err), 0);
	assert_int_equal(ckpt_sign(k1, &c, &b, err), 0);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.p, b.p, a.len);
	/* the same key loaded again from its file signs the same text */
	char p[128];
	struct eckey *again;
	path_in(p, sizeof p, "k1.key");
	assert_int_equal(eckey_load_private(p, &again, err), 0);
	buf_reset(&b);
	assert_int_equal(ckpt_sign(again, &c, &b, err), 0);
	eckey_free(again);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.p, b.p, a.len);
	/* another checkpoint gets another signature */
	c.size++;
	assert_int_equal(ckpt_sign(k1, &c, &d, err), 0);
	size_t bl = body_len(&a);
	assert_false(d.len == a.len && memcmp(d.p + bl, a.p + bl, a.len - bl) == 0);
	buf_free(&a);
	buf_free(&b);
	buf_free(&d);
}

/* ---- refusals ---- */

static void test_flipped_body_byte_refused(void **state)
{
	(void)state;
	struct checkpoint c = sample();
	struct buf t;
	char err[AS_ERRLEN];
	buf_init(&t, CKPT_MAX);
	assert_int_equal(ckpt_sign(k1, &c, &t, err), 0);
	size_t bl = body_len(&t);
	static const uint8_t masks[] = {0x01, 0x20, 0x80};
	for (size_t i = 0; i < bl; i++)
		for (size_t m = 0; m < sizeof masks; m++) {
			t.p[i] ^= masks[m];
			int rc = verify_k1(&t);
			t.p[i] ^= masks[m];
			if (rc == 0)
				fail_msg("accepted with body byte %zu xor 0x%02x", i, masks[m]);
		}
	assert_int_equal(verify_k1(&t), 0);
	buf_free(&t);
}

static void test_flipped_signature_byte_refused(void **state)
{
	(void)state;
	struct checkpoint c = sample();
	struct buf t;
	char err[AS_ERRLEN];
	buf_init(&t, CKPT_MAX);
	assert_int_equal(ckpt_sign(k1, &c, &t, err), 0);
	size_t bl = body_len(&t);
	static const uint8_t masks[] = {0x01, 0x80};
	for (size_t i = bl; i < t.len; i++)
		for (size_t m = 0; m < sizeof masks; m++) {
			t.p[i] ^= masks[m];
			int rc = verify_k1(&t);
			t.p[i] ^= masks[m];
			if (rc == 0)
				fail_msg("accepted with signature-line byte %zu xor 0x%02x", i - bl, masks[m]);
		}
	assert_int_equal(verify_k1(&t), 0);
	buf_free(&t);
}

static void test_other_key_refused(void **state)
{
	(void)state;
	struct checkpoint c = sample(), got;
	struct buf t;
	char err[AS_ERRLEN];
	buf_init(&t, CKPT_MAX);
	assert_int_equal(ckpt_sign(k1, &c, &t, err), 0);
	struct eckey *only2[] = {k2}, *both[] = {k2, k1};
	assert_int_equal(ckpt_verify(t.p, t.len, only2, 1, &got, err), AS_EBADSIG);
	assert_int_equal(ckpt_verify(t.p, t.len, both, 2, &got, err), 0);
	assert_int_not_equal(ckpt_verify(t.p, t.len, both, 0, &got, err), 0);
	buf_free(&t);
}

static void test_missing_signature_or_blank_line(void **state)
{
	(void)state;
	struct checkpoint c = sample();
	struct buf t;
	char err[AS_ERRLEN];
	buf_init(&t, CKPT_MAX);
	assert_int_equal(ckpt_sign(k1, &c, &t, err), 0);
	size_t bl = body_len(&t);
	struct buf v;
	/* body and blank line, no signature */
	buf_init(&v, CKPT_MAX);
	assert_int_equal(buf_put(&v, t.p, bl), 0);
	assert_int_not_equal(verify_k1(&v), 0);
	/* body only */
	assert_int_not_equal(verify_k1(&(struct buf){.p = t.p, .len = bl - 1}), 0);
	/* an empty line where the signature should be */
	assert_int_equal(buf_putc(&v, '\n'), 0);
	assert_int_not_equal(verify_k1(&v), 0);
	/* no blank line between body and signature */
	buf_reset(&v);
	assert_int_equal(buf_put(&v, t.p, bl - 1), 0);
	assert_int_equal(buf_put(&v, t.p + bl, t.len - bl), 0);
	assert_int_not_equal(verify_k1(&v), 0);
	/* two blank lines */
	buf_reset(&v);
	assert_int_equal(buf_put(&v, t.p, bl), 0);
	assert_int_equal(buf_putc(&v, '\n'), 0);
	assert_int_equal(buf_put(&v, t.p + bl, t.len - bl), 0);
	assert_int_not_equal(verify_k1(&v), 0);
	/* signature line without its final newline */
	assert_int_not_equal(verify_k1(&(struct buf){.p = t.p, .len = t.len - 1}), 0);
	/* an ASCII hyphen instead of the em dash */
	buf_reset(&v);
	assert_int_equal(buf_put(&v, t.p, bl), 0);
	assert_int_equal(buf_put(&v, "-", 1), 0);
	assert_int_equal(buf_put(&v, t.p + bl + 3, t.len - bl - 3), 0);
	assert_int_not_equal(verify_k1(&v), 0);
	assert_int_equal(verify_k1(&t), 0);
	buf_free(&v);
	buf_free(&t);
}

/* The signature line is "\xe2\x80\x94 NAME SIG": each way of getting its shape wrong
 * is refused with its own message (the name ends at the first space; SIG is the rest). */
static void sig_line_refused(const struct buf *t, size_t bl, const char *line, const char *want)
{
	struct buf v;
	struct checkpoint c;
	char err[AS_ERRLEN];
	struct eckey *keys[] = {k1};
	buf_init(&v, CKPT_MAX);
	assert_int_equal(buf_put(&v, t->p, bl), 0);
	assert_int_equal(buf_put(&v, line, strlen(line)), 0);
	assert_int_equal(ckpt_verify(v.p, v.len, keys, 1, &c, err), AS_EINVAL);
	if (!strstr(err, want))
		fail_msg("for %s: expected \"%s\", got \"%s\"", line, want, err);
	buf_free(&v);
}

static void test_signature_line_shape(void **state)
{
	(void)state;
	struct checkpoint c = sample();
	struct buf t;
	char err[AS_ERRLEN], line[512];
	buf_init(&t, CKPT_MAX);
	assert_int_equal(ckpt_sign(k1, &c, &t, err), 0);
	size_t bl = body_len(&t);
	/* The signed line, taken apart: name, then the base64 signature up to the newline. */
	const char *name = (const char *)t.p + bl + 4, *sp = memchr(name, ' ', t.len - bl - 4);
	assert_non_null(sp);
	int nl = (int)(sp - name), sl = (int)((const char *)t.p + t.len - 1 - (sp + 1));
	snprintf(line, sizeof line, "\xe2\x80\x94 %.*s %.*s\n", nl, name, sl, sp + 1);
	assert_int_equal(memcmp(line, t.p + bl, t.len - bl), 0);
	snprintf(line, sizeof line, "\xe2\x80\x94  %.*s\n", sl, sp + 1); /* no name */
	sig_line_refused(&t, bl, line, "signature line 1 is malformed");
	snprintf(line, sizeof line, "\xe2\x80\x94 %.*s\n", nl, name); /* no signature */
	sig_line_refused(&t, bl, line, "signature line 1 has no signature");
	snprintf(line, sizeof line, "\xe2\x80\x94 %.*s \n", nl, name); /* an empty one */
	sig_line_refused(&t, bl, line, "signature line 1 is malformed");
	snprintf(line, sizeof line, "\xe2\x80\x94 %.*s  %.*s\n", nl, name, sl, sp + 1); /* two spaces */
	sig_line_refused(&t, bl, line, "signature line 1 is malformed");
	snprintf(line, sizeof line, "\xe2\x80\x94%.*s %.*s\n", nl, name, sl, sp + 1); /* no space after the dash */
	sig_line_refused(&t, bl, line, "signature line 1 does not start with an em dash");
	snprintf(line, sizeof line, "\xe2\x80\x94 %.*s %.*s", nl, name, sl, sp + 1); /* no final newline */
	sig_line_refused(&t, bl, line, "signature line without a final newline");
	buf_free(&t);
}

/* Sanity check for the helper: a well-formed body signed by make_note verifies. */
static void test_make_note_control(void **state)
{
	(void)state;
	struct checkpoint c = sample();
	char rb[64], body[512];
	root_b64(&c, rb);
	body_of(body, sizeof body, c.origin, "12345", rb);
	struct buf t;
	make_note(body, strlen(body), c.origin, &t);
	assert_int_equal(verify_k1(&t), 0);
	buf_free(&t);
	body_of(body, sizeof body, c.origin, "0", rb);
	make_note(body, strlen(body), c.origin, &t);
	assert_int_equal(verify_k1(&t), 0);
	buf_free(&t);
	body_of(body, sizeof body, c.origin, "18446744073709551615", rb);
	make_note(body, strlen(body), c.origin, &t);
	assert_int_equal(verify_k1(&t), 0);
	buf_free(&t);
}

static void expect_body_refused(const char *body, size_t blen, const char *name, const char *what)
{
	struct buf t;
	make_note(body, blen, name, &t);
	int rc = verify_k1(&t);
	struct checkpoint c;
	char err[AS_ERRLEN];
	int prc = ckpt_parse(t.p, t.len, &c, err);
	buf_free(&t);
	if (rc == 0)
		fail_msg("ckpt_verify accepted a signed body with %s", what);
	if (prc == 0)
		fail_msg("ckpt_parse accepted a body with %s", what);
}

static void test_bad_base64_refused(void **state)
{
	(void)state;
	struct checkpoint c = sample();
	char rb[64], body[512], bad[128];
	root_b64(&c, rb); /* 44 characters ending in one '=' */
	assert_int_equal(strlen(rb), 44);
	assert_int_equal(rb[43], '=');
	/* padding bits set: the last data character of a 32-byte value carries two unused
	 * bits, which must be zero */
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	strcpy(bad, rb);
	size_t val = (size_t)(strchr(alphabet, bad[42]) - alphabet);
	assert_int_equal(val & 3, 0);
	bad[42] = alphabet[val | 1];
	body_of(body, sizeof body, c.origin, "1", bad);
	expect_body_refused(body, strlen(body), c.origin, "non-canonical base64 padding bits");
	strcpy(bad, rb);
	bad[43] = 0; /* padding missing */
	body_of(body, sizeof body, c.origin, "1", bad);
	expect_body_refused(body, strlen(body), c.origin, "base64 without padding");
	strcpy(bad, rb);
	bad[10] = '*';
	body_of(body, sizeof body, c.origin, "1", bad);
	expect_body_refused(body, strlen(body), c.origin, "a non-base64 character");
	strcpy(bad, rb);
	bad[10] = '-'; /* base64url */
	body_of(body, sizeof body, c.origin, "1", bad);
	expect_body_refused(body, strlen(body), c.origin, "a base64url character");
	snprintf(bad, sizeof bad, " %s", rb);
	body_of(body, sizeof body, c.origin, "1", bad);
	expect_body_refused(body, strlen(body), c.origin, "a space before the root");
	snprintf(bad, sizeof bad, "%.20s %s", rb, rb + 20);
	body_of(body, sizeof body, c.origin, "1", bad);
	expect_body_refused(body, strlen(body), c.origin, "a space inside the root");

	/* bad base64 in the signature line */
	struct buf t, v;
	char err[AS_ERRLEN];
	buf_init(&t, CKPT_MAX);
	assert_int_equal(ckpt_sign(k1, &c, &t, err), 0);
	size_t sigstart = body_len(&t) + strlen(EMDASH " ") + strlen(c.origin) + 1;
	buf_init(&v, CKPT_MAX);
	const char *inserts[] = {" ", "*", "=", "\t"};
	for (size_t i = 0; i < 4; i++) {
		buf_reset(&v);
		assert_int_equal(buf_put(&v, t.p, sigstart + 8), 0);
		assert_int_equal(buf_put(&v, inserts[i], 1), 0);
		assert_int_equal(buf_put(&v, t.p + sigstart + 8, t.len - sigstart - 8), 0);
		if (verify_k1(&v) == 0)
			fail_msg("signature base64 with '%s' inserted accepted", inserts[i]);
	}
	/* a trailing space after the signature */
	buf_reset(&v);
	assert_int_equal(buf_put(&v, t.p, t.len - 1), 0);
	assert_int_equal(buf_put(&v, " \n", 2), 0);
	assert_int_not_equal(verify_k1(&v), 0);
	buf_free(&v);
	buf_free(&t);
}

static void test_bad_size_refused(void **state)
{
	(void)state;
	struct checkpoint c = sample();
	char rb[64], body[512];
	root_b64(&c, rb);
	static const char *const sizes[] = {"01",
					    "00",
					    "007",
					    "-1",
					    "+1",
					    " 1",
					    "1 ",
					    "",
					    "1a",
					    "a",
					    "0x10",
					    "1.0",
					    "1e3",
					    "18446744073709551616",
					    "99999999999999999999",
					    "123456789012345678901234567890"};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		char what[96];
		snprintf(what, sizeof what, "size line '%s'", sizes[i]);
		body_of(body, sizeof body, c.origin, sizes[i], rb);
		expect_body_refused(body, strlen(body), c.origin, what);
	}
}

static void test_root_not_32_bytes_refused(void **state)
{
	(void)state;
	uint8_t raw[64];
	for (int i = 0; i < 64; i++)
		raw[i] = (uint8_t)(i + 100);
	const size_t lens[] = {31, 33, 16, 48, 64, 1};
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		struct buf r;
		buf_init(&r, 256);
		b64(raw, lens[i], &r);
		assert_int_equal(buf_putc(&r, 0), 0);
		char body[512], what[64];
		body_of(body, sizeof body, "example.com/assent", "5", (const char *)r.p);
		snprintf(what, sizeof what, "a root of %zu bytes", lens[i]);
		expect_body_refused(body, strlen(body), "example.com/assent", what);
		buf_free(&r);
	}
	expect_body_refused("example.com/assent\n5\n\n", strlen("example.com/assent\n5\n\n"), "example.com/assent",
			    "an empty root line");
}

static void test_extra_or_missing_body_lines_refused(void **state)
{
	(void)state;
	struct checkpoint c = sample();
	char rb[64], body[512];
	root_b64(&c, rb);
	snprintf(body, sizeof body, "%s\n5\n%s\nextension line\n", c.origin, rb);
	expect_body_refused(body, strlen(body), c.origin, "an extra line after the root");
	snprintf(body, sizeof body, "%s\nextra\n5\n%s\n", c.origin, rb);
	expect_body_refused(body, strlen(body), c.origin, "an extra line before the size");
	snprintf(body, sizeof body, "%s\n5\n", c.origin);
	expect_body_refused(body, strlen(body), c.origin, "no root line");
	snprintf(body, sizeof body, "%s\n%s\n", c.origin, rb);
	expect_body_refused(body, strlen(body), c.origin, "no size line");
	snprintf(body, sizeof body, "\n%s\n5\n%s\n", c.origin, rb);
	expect_body_refused(body, strlen(body), c.origin, "an empty first line");
}

static void test_control_characters_refused(void **state)
{
	(void)state;
	struct checkpoint c = sample();
	char rb[64], body[512];
	root_b64(&c, rb);
	/* CRLF line endings */
	snprintf(body, sizeof body, "%s\r\n5\r\n%s\r\n", c.origin, rb);
	expect_body_refused(body, strlen(body), c.origin, "CRLF line endings");
	snprintf(body, sizeof body, "example.com/\tassent\n5\n%s\n", rb);
	expect_body_refused(body, strlen(body), "example.com/\tassent", "a tab in the origin");
	snprintf(body, sizeof body,
		 "example.com/\x7f"
		 "assent\n5\n%s\n",
		 rb);
	expect_body_refused(body, strlen(body),
			    "example.com/\x7f"
			    "assent",
			    "DEL in the origin");
	snprintf(body, sizeof body, "%s\n5\x0b\n%s\n", c.origin, rb);
	expect_body_refused(body, strlen(body), c.origin, "a vertical tab after the size");
	/* a NUL after the size digits: "5\0" would read as 5 through a C string */
	snprintf(body, sizeof body, "%s\n5#\n%s\n", c.origin, rb);
	size_t bl = strlen(body);
	*strchr(body, '#') = '\0';
	expect_body_refused(body, bl, c.origin, "a NUL after the size");
	snprintf(body, sizeof body, "%s#\n5\n%s\n", c.origin, rb);
	bl = strlen(body);
	*strchr(body, '#') = '\0';
	expect_body_refused(body, bl, c.origin, "a NUL after the origin");

	/* control characters in the signature line */
	struct buf t, v;
	char err[AS_ERRLEN];
	buf_init(&t, CKPT_MAX);
	buf_init(&v, CKPT_MAX);
	assert_int_equal(ckpt_sign(k1, &c, &t, err), 0);
	size_t sb = body_len(&t);
	/* replace the space between name and signature with a tab */
	size_t sp = sb + strlen(EMDASH " ") + strlen(c.origin);
	assert_int_equal(t.p[sp], ' ');
	assert_int_equal(buf_put(&v, t.p, t.len), 0);
	v.p[sp] = '\t';
	assert_int_not_equal(verify_k1(&v), 0);
	/* CR before the final newline */
	buf_reset(&v);
	assert_int_equal(buf_put(&v, t.p, t.len - 1), 0);
	assert_int_equal(buf_put(&v, "\r\n", 2), 0);
	assert_int_not_equal(verify_k1(&v), 0);
	/* a witness line holding a control character, after a valid signature */
	buf_reset(&v);
	assert_int_equal(buf_put(&v, t.p, t.len), 0);
	assert_int_equal(buf_printf(&v, EMDASH " wit\x01ness AAAAAAAA\n"), 0);
	assert_int_not_equal(verify_k1(&v), 0);
	buf_free(&v);
	buf_free(&t);
}

/* A witness-like line by an unknown key: "— name base64(4-byte id || nsig bytes)". */
static void witness_line(struct buf *out, const char *name, size_t nsig, uint8_t seed)
{
	uint8_t blob[4 + 90], kid[4];
	assert_true(nsig <= 90);
	for (size_t i = 0; i < sizeof blob; i++)
		blob[i] = (uint8_t)(seed + 31 * i);
	assert_int_equal(note_key_id(k1, kid), 0);
	if (memcmp(blob, kid, 4) == 0)
		blob[0] ^= 1;
	assert_int_equal(buf_printf(out, EMDASH " %s ", name), 0);
	b64(blob, 4 + nsig, out);
	assert_int_equal(buf_putc(out, '\n'), 0);
}

static void test_size_limit_4096(void **state)
{
	(void)state;
	struct checkpoint c = sample();
	struct buf t;
	char err[AS_ERRLEN];
	for (size_t target = CKPT_MAX - 1; target <= CKPT_MAX + 1; target++) {
		buf_init(&t, 1 << 16);
		assert_int_equal(ckpt_sign(k1, &c, &t, err), 0);
		/* pad with witness lines of 56 signature bytes (80 base64 characters): a line
		 * is 3 (em dash) + 1 + name + 1 + 80 + 1 = 86 + name bytes, name 1..255 */
		char name[300];
		while (t.len < target) {
			size_t left = target - t.len;
			size_t len = left <= 86 + 255 ? left : (left - 87 < 86 + 255 ? left - 87 : 86 + 255);
			assert_true(len >= 87 && len <= 86 + 255);
			memset(name, 'w', len - 86);
			name[len - 86] = 0;
			witness_line(&t, name, 56, (uint8_t)t.len);
		}
		assert_int_equal(t.len, target);
		struct eckey *keys[] = {k1};
		struct checkpoint got;
		int rc = ckpt_verify(t.p, t.len, keys, 1, &got, err);
		if (target <= CKPT_MAX && rc != 0)
			fail_msg("a note of %zu bytes refused: %s", target, err);
		if (target > CKPT_MAX && rc != AS_ETOOBIG)
			fail_msg("a note of %zu bytes: rc %d, wanted AS_ETOOBIG", target, rc);
		buf_free(&t);
	}
	/* far larger */
	buf_init(&t, 1 << 20);
	assert_int_equal(ckpt_sign(k1, &c, &t, err), 0);
	while (t.len < 100000)
		witness_line(&t, "witness", 60, 7);
	assert_int_equal(verify_k1(&t), AS_ETOOBIG);
	struct checkpoint got;
	assert_int_equal(ckpt_parse(t.p, t.len, &got, err), AS_ETOOBIG);
	buf_free(&t);
}

static void test_origin_rules(void **state)
{
	(void)state;
	struct checkpoint c = sample();
	struct buf t;
	char err[AS_ERRLEN], rb[64], body[700];
	root_b64(&c, rb);
	const char *bad[] = {"my log", " log", "log ", "a+b", ""};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		strcpy(c.origin, bad[i]);
		buf_init(&t, CKPT_MAX);
		if (ckpt_sign(k1, &c, &t, err) == 0)
			fail_msg("ckpt_sign accepted origin '%s'", bad[i]);
		buf_free(&t);
	}
	/* a body whose origin has a space, signed under its first word */
	body_of(body, sizeof body, "my log", "5", rb);
	expect_body_refused(body, strlen(body), "my", "an origin with a space");
	body_of(body, sizeof body, "a+b", "5", rb);
	expect_body_refused(body, strlen(body), "a+b", "an origin with '+'");
	/* 255 characters is the maximum */
	memset(c.origin, 'o', 255);
	c.origin[255] = 0;
	buf_init(&t, CKPT_MAX);
	assert_int_equal(ckpt_sign(k1, &c, &t, err), 0);
	assert_int_equal(verify_k1(&t), 0);
	buf_free(&t);
	char o256[257];
	memset(o256, 'o', 256);
	o256[256] = 0;
	body_of(body, sizeof body, o256, "5", rb);
	expect_body_refused(body, strlen(body), "o", "a 256-character origin");
}

static void test_witness_signatures_ignored(void **state)
{
	(void)state;
	struct checkpoint c = sample(), got;
	struct buf t, v;
	char err[AS_ERRLEN];
	buf_init(&t, CKPT_MAX);
	buf_init(&v, CKPT_MAX);
	assert_int_equal(ckpt_sign(k1, &c, &t, err), 0);
	size_t bl = body_len(&t);
	struct eckey *keys[] = {k1};
	/* an unknown key's line after the trusted one */
	assert_int_equal(buf_put(&v, t.p, t.len), 0);
	witness_line(&v, "witness.example/w1", 70, 3);
	assert_int_equal(ckpt_verify(v.p, v.len, keys, 1, &got, err), 0);
	assert_true(got.size == c.size);
	/* ... and before it */
	buf_reset(&v);
	assert_int_equal(buf_put(&v, t.p, bl), 0);
	witness_line(&v, "witness.example/w1", 70, 3);
	assert_int_equal(buf_put(&v, t.p + bl, t.len - bl), 0);
	assert_int_equal(ckpt_verify(v.p, v.len, keys, 1, &got, err), 0);
	/* a real cosignature by a key we do not trust, under its own name */
	buf_reset(&v);
	assert_int_equal(buf_put(&v, t.p, t.len), 0);
	sig_line(k2, "witness.example/w2", (const char *)t.p, bl - 1, &v);
	assert_int_equal(ckpt_verify(v.p, v.len, keys, 1, &got, err), 0);
	/* only unknown keys signed: refused */
	buf_reset(&v);
	assert_int_equal(buf_put(&v, t.p, bl), 0);
	witness_line(&v, c.origin, 70, 3);
	sig_line(k2, c.origin, (const char *)t.p, bl - 1, &v);
	assert_int_equal(ckpt_verify(v.p, v.len, keys, 1, &got, err), AS_EBADSIG);
	buf_free(&v);
	buf_free(&t);
}

/* A line with a trusted key ID that does not verify fails the note, even beside a good one. */
static void test_bad_trusted_line_fails_note(void **state)
{
	(void)state;
	struct checkpoint c = sample(), got;
	struct buf t, v;
	char err[AS_ERRLEN];
	buf_init(&t, CKPT_MAX);
	buf_init(&v, CKPT_MAX);
	assert_int_equal(ckpt_sign(k1, &c, &t, err), 0);
	size_t bl = body_len(&t);
	struct eckey *keys[] = {k1};
	/* k1's signature over another body, with k1's key ID */
	struct checkpoint c2 = c;
	c2.size++;
	struct buf other;
	buf_init(&other, CKPT_MAX);
	assert_int_equal(ckpt_sign(k1, &c2, &other, err), 0);
	size_t obl = body_len(&other);
	for (int order = 0; order < 2; order++) {
		buf_reset(&v);
		assert_int_equal(buf_put(&v, t.p, bl), 0);
		if (order == 0)
			assert_int_equal(buf_put(&v, t.p + bl, t.len - bl), 0);
		assert_int_equal(buf_put(&v, other.p + obl, other.len - obl), 0);
		if (order == 1)
			assert_int_equal(buf_put(&v, t.p + bl, t.len - bl), 0);
		assert_int_equal(ckpt_verify(v.p, v.len, keys, 1, &got, err), AS_EBADSIG);
	}
	/* a valid k1 signature of this body, but under a name other than the origin */
	buf_reset(&v);
	assert_int_equal(buf_put(&v, t.p, bl), 0);
	sig_line(k1, "another.example/log", (const char *)t.p, bl - 1, &v);
	assert_int_not_equal(ckpt_verify(v.p, v.len, keys, 1, &got, err), 0);
	buf_free(&other);
	buf_free(&v);
	buf_free(&t);
}

/* The signature is DER, the one encoding of (r, s): BER spellings of a valid signature
 * (mbedTLS's parser takes some of them) are other bytes for the same checkpoint. */
static void ber_line(const uint8_t *der, size_t n, int how, const char *body, size_t blen, struct buf *out)
{
	uint8_t v[4 + ECKEY_SIG_MAX + 8];
	size_t o = 0;
	assert_true(n >= 8 && der[0] == 0x30 && der[1] == n - 2 && der[2] == 0x02);
	size_t rl = der[3], sl = der[5 + rl];
	assert_int_equal(note_key_id(k1, v), 0);
	o = 4;
	v[o++] = 0x30;
	if (how == 1) /* the sequence's length in the long form */
		v[o++] = 0x81;
	v[o++] = (uint8_t)(n - 2 + (how == 0));
	v[o++] = 0x02;
	v[o++] = (uint8_t)(rl + (how == 0));
	if (how == 0) /* r with a needless leading zero */
		v[o++] = 0;
	memcpy(v + o, der + 4, rl);
	o += rl;
	memcpy(v + o, der + 4 + rl, 2 + sl);
	o += 2 + sl;
	assert_int_equal(buf_printf(out, "%.*s\n" EMDASH " example.com/assent ", (int)blen, body), 0);
	b64(v, o, out);
	assert_int_equal(buf_putc(out, '\n'), 0);
}

static void test_signature_must_be_der(void **state)
{
	(void)state;
	struct checkpoint c = sample();
	char body[512], rb[64];
	root_b64(&c, rb);
	body_of(body, sizeof body, c.origin, "12345", rb);
	size_t blen = strlen(body);
	uint8_t der[ECKEY_SIG_MAX];
	size_t n = 0;
	assert_int_equal(eckey_sign(k1, body, blen, der, &n), 0);
	for (int how = 0; how < 2; how++) {
		struct buf t;
		buf_init(&t, CKPT_MAX);
		ber_line(der, n, how, body, blen, &t);
		if (verify_k1(&t) == 0)
			fail_msg("a BER signature (%s) was accepted",
				 how ? "long-form length" : "r padded with a zero");
		buf_free(&t);
	}
	struct buf t; /* the DER one itself verifies */
	buf_init(&t, CKPT_MAX);
	assert_int_equal(buf_printf(&t, "%s\n", body), 0);
	uint8_t blob[4 + ECKEY_SIG_MAX];
	assert_int_equal(note_key_id(k1, blob), 0);
	memcpy(blob + 4, der, n);
	assert_int_equal(buf_printf(&t, EMDASH " example.com/assent "), 0);
	b64(blob, 4 + n, &t);
	assert_int_equal(buf_putc(&t, '\n'), 0);
	assert_int_equal(verify_k1(&t), 0);
	buf_free(&t);
}

static void test_signature_line_count_limit(void **state)
{
	(void)state;
	struct checkpoint c = sample(), got;
	struct buf t;
	char err[AS_ERRLEN];
	struct eckey *keys[] = {k1};
	for (int extra = CKPT_MAX_SIGS - 1; extra <= CKPT_MAX_SIGS; extra++) {
		buf_init(&t, 1 << 16);
		assert_int_equal(ckpt_sign(k1, &c, &t, err), 0);
		for (int i = 0; i < extra; i++)
			witness_line(&t, "w", 2, (uint8_t)i); /* 6-byte blobs: short lines */
		assert_true(t.len <= CKPT_MAX);
		int rc = ckpt_verify(t.p, t.len, keys, 1, &got, err);
		if (extra + 1 <= CKPT_MAX_SIGS)
			assert_int_equal(rc, 0);
		else
			assert_int_not_equal(rc, 0);
		buf_free(&t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sign_verify_roundtrip),
	    cmocka_unit_test(test_signature_line_format),
	    cmocka_unit_test(test_key_id_is_spki_hash),
	    cmocka_unit_test(test_signatures_are_deterministic),
	    cmocka_unit_test(test_flipped_body_byte_refused),
	    cmocka_unit_test(test_flipped_signature_byte_refused),
	    cmocka_unit_test(test_other_key_refused),
	    cmocka_unit_test(test_missing_signature_or_blank_line),
	    cmocka_unit_test(test_signature_line_shape),
	    cmocka_unit_test(test_make_note_control),
	    cmocka_unit_test(test_bad_base64_refused),
	    cmocka_unit_test(test_bad_size_refused),
	    cmocka_unit_test(test_root_not_32_bytes_refused),
	    cmocka_unit_test(test_extra_or_missing_body_lines_refused),
	    cmocka_unit_test(test_control_characters_refused),
	    cmocka_unit_test(test_size_limit_4096),
	    cmocka_unit_test(test_origin_rules),
	    cmocka_unit_test(test_witness_signatures_ignored),
	    cmocka_unit_test(test_bad_trusted_line_fails_note),
	    cmocka_unit_test(test_signature_line_count_limit),
	    cmocka_unit_test(test_signature_must_be_der),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
