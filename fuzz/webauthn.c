/* Fuzz target: the WebAuthn checks of passkey approvals (common/webauthn.c), over the
 * bytes a reviewer's browser sends: authenticator data and clientDataJSON. The first
 * byte picks which (even: authenticator data; odd: client data).
 * Properties: authenticator data that parses is exactly as long as its parts say, its
 * credential id lies inside the input and its key is a point on P-256; client data that
 * passes begins with this ceremony's type, challenge and origin, byte for byte, and is
 * never cross-origin; every refusal says why. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] % 2 == 0)
		authdata(data + 1, size - 1);
	else
		client_data(data + 1, size - 1, data[0] % 4 == 1);
	return 0;
}
