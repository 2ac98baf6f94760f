/* Fuzz target: the WebAuthn checks of passkey approvals (common/webauthn.c), over the
 * bytes a reviewer's browser sends: authenticator data and clientDataJSON. The first
 * byte picks which (even: authenticator data; odd: client data).
 * Properties: authenticator data that parses is exactly as long as its parts say, its
 * credential id lies inside the input and its key is a point on P-256; client data that
 * passes begins with this ceremony's type, challenge and origin, byte for byte, and is
 * never cross-origin; every refusal says why. A first byte of 0xf0 or more picks the
 * challenge: two sets of decision terms cut from the input commit to the same challenge
 * only when every term is the same (an assertion for one decision never passes for
 * another: another request, outcome, response, reviewer, deadline or call). */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/eckey.h"
#include "common/util.h"
#include "common/webauthn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *why, const uint8_t *data, size_t size)
{
	fprintf(stderr, "webauthn: property violated: %s\ninput (%zu bytes):", why, size);
	for (size_t i = 0; i < size && i < 256; i++)
		fprintf(stderr, " %02x", data[i]);
	fprintf(stderr, "%s\n", size > 256 ? " ..." : "");
	abort();
}

static void authdata(const uint8_t *p, size_t n)
{
	struct wa_authdata a;
	char err[AS_ERRLEN] = "";
	if (wa_authdata_parse(p, n, &a, err) != 0) {
		if (!err[0] || !memchr(err, 0, sizeof err))
			fail("a refusal without its reason", p, n);
		return;
	}
	if (a.flags & WA_FLAG_ED)
		fail("extensions accepted", p, n);
	if (!a.has_cred) {
		if (n != WA_AUTHDATA_MIN || (a.flags & WA_FLAG_AT))
			fail("authenticator data without a credential is not 37 bytes", p, n);
		return;
	}
	if (a.cred_id < p + 55 || a.cred_id + a.cred_id_len > p + n || n != 37 + 18 + a.cred_id_len + 77)
		fail("the credential's parts do not add up to the input", p, n);
	struct eckey *k = NULL;
	if (eckey_from_xy(a.x, a.y, &k) != 0)
		fail("a key off the curve accepted", p, n);
	eckey_free(k);
}

static const uint8_t CH[32] = {0xde, 0xad, 0xbe, 0xef};
#define ORIGIN "https://review.example:8443"

static void client_data(const uint8_t *p, size_t n, int get)
{
	const char *type = get ? "webauthn.get" : "webauthn.create";
	char err[AS_ERRLEN] = "";
	if (wa_client_data_check(p, n, type, CH, ORIGIN, err) != 0) {
		if (!err[0] || !memchr(err, 0, sizeof err))
			fail("a refusal without its reason", p, n);
		return;
	}
	struct buf b64;
	buf_init(&b64, 64);
	if (b64url_encode(CH, 32, &b64) != 0 || buf_putc(&b64, 0) != 0)
		abort();
	char want[256];
	int k = snprintf(want, sizeof want, "{\"type\":\"%s\",\"challenge\":\"%s\",\"origin\":\"%s\"", type,
			 (const char *)b64.p, ORIGIN);
	buf_free(&b64);
	if (k <= 0 || (size_t)k > n || memcmp(p, want, (size_t)k) != 0)
		fail("client data accepted that does not begin with the ceremony's own terms", p, n);
	if ((size_t)k + 19 <= n && !memcmp(p + k, ",\"crossOrigin\":true", 19))
		fail("a cross-origin ceremony accepted", p, n);
}

/* Terms from the input: eight fields separated by 0x00 (the last a deadline's bytes). */
static int terms_of(const uint8_t *p, size_t n, char fields[8][64], struct wa_terms *t)
{
	size_t f = 0, at = 0;
	memset(fields, 0, 8 * 64);
	for (size_t i = 0; i < n && f < 8; i++) {
		if (p[i] == 0) {
			f++;
			at = 0;
		} else if (at < 63) {
			fields[f][at++] = (char)p[i];
		}
	}
	uint64_t dl = 0;
	for (size_t i = 0; i < 8 && fields[7][i]; i++)
		dl = dl << 8 | (uint8_t)fields[7][i];
	*t = (struct wa_terms){fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], fields[6], dl};
	return 0;
}

static int terms_eq(const struct wa_terms *a, const struct wa_terms *b)
{
	return !strcmp(a->origin, b->origin) && !strcmp(a->session_id, b->session_id) &&
	       !strcmp(a->action, b->action) && !strcmp(a->outcome, b->outcome) &&
	       !strcmp(a->response_digest, b->response_digest) && !strcmp(a->scope, b->scope) &&
	       !strcmp(a->reviewer, b->reviewer) && a->deadline == b->deadline;
}

/* The input is two term sets split at its first 0xff byte. */
static void challenge(const uint8_t *p, size_t n)
{
	const uint8_t *mid = memchr(p, 0xff, n);
	if (!mid)
		return;
	static char fa[8][64], fb[8][64];
	struct wa_terms a, b;
	uint8_t ha[32], hb[32];
	char err[AS_ERRLEN];
	terms_of(p, (size_t)(mid - p), fa, &a);
	terms_of(mid + 1, n - (size_t)(mid - p) - 1, fb, &b);
	if (wa_challenge(&a, ha, err) != 0 || wa_challenge(&b, hb, err) != 0)
		return; /* a term it cannot encode: no challenge at all */
	if ((memcmp(ha, hb, 32) == 0) != terms_eq(&a, &b))
		fail("two different decisions commit to one challenge (or one decision to two)", p, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] >= 0xf0)
		challenge(data + 1, size - 1);
	else if (data[0] % 2 == 0)
		authdata(data + 1, size - 1);
	else
		client_data(data + 1, size - 1, data[0] % 4 == 1);
	return 0;
}
