/* Fuzz target: the upstream client's check of a server certificate's iPAddress entries
 * (uhttp_der_has_ip in gateway/worker/upstream/uhttp_cfg.c), which walks the DER of the
 * extensions mbedTLS parsed (mbedTLS 2.28 keeps no iPAddress of its own). Input: a DER
 * certificate. Properties (abort when violated): no read outside the input (the sanitizers);
 * the answer is 1, 0 or AS_EINVAL; an address the certificate does not hold byte for byte
 * (the same one with its last byte changed) is never matched when the certificate holds
 * at most that one address; and a certificate holds 127.0.0.1 only if its bytes do. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "include/assent/err.h"
#include "gateway/worker/upstream/uhttp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int holds(const uint8_t *d, size_t n, const uint8_t *ip, size_t iplen)
{
	/* an iPAddress is [7] (0x87), its length, its bytes */
	for (size_t i = 0; i + 2 + iplen <= n; i++)
		if (d[i] == 0x87 && d[i + 1] == iplen && memcmp(d + i + 2, ip, iplen) == 0)
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t v4[4] = {127, 0, 0, 1}, v4b[4] = {127, 0, 0, 2};
	static const uint8_t v6[16] = {[15] = 1};
	int a = uhttp_der_has_ip(data, size, v4, 4), b = uhttp_der_has_ip(data, size, v4b, 4);
	int c = uhttp_der_has_ip(data, size, v6, 16);
	if ((a != 0 && a != 1 && a != AS_EINVAL) || (b != 0 && b != 1 && b != AS_EINVAL) ||
	    (c != 0 && c != 1 && c != AS_EINVAL))
		abort();
	if ((a == AS_EINVAL) != (b == AS_EINVAL) || (a == AS_EINVAL) != (c == AS_EINVAL))
		abort(); /* whether the DER is a certificate does not depend on the address */
	if ((a == 1 && !holds(data, size, v4, 4)) || (b == 1 && !holds(data, size, v4b, 4)) ||
	    (c == 1 && !holds(data, size, v6, 16)))
		abort(); /* a match the bytes do not contain */
	if (uhttp_der_has_ip(data, size, v4, 3) == 1)
		abort(); /* no address of another length matches */
	return 0;
}
