/* The checkpoint key of the seed corpora of fuzz/checkpoint.c and fuzz/proof.c: both
 * were signed with its private half, which is not kept anywhere. To change it,
 * re-sign both corpora. Included by harnesses only. */
#ifndef ASSENT_FUZZ_KEY_H
#define ASSENT_FUZZ_KEY_H

#include <stdio.h>
#include <stdlib.h>

#include "common/eckey.h"

static const char fuzz_pub_pem[] = "-----BEGIN PUBLIC KEY-----\n"
				   "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEMiWZkTVojEP1fnuzJCiaxJBguuq3\n"
				   "4RfKCpidnOdvFT+UKy2gBH2sJQnc13P+9mDMbfnoRW6VbmOAW+ItdW0vlQ==\n"
				   "-----END PUBLIC KEY-----\n";

static struct eckey *fuzz_key(void)
{
	static struct eckey *k;
	char err[AS_ERRLEN];
	if (!k && eckey_parse_public((const uint8_t *)fuzz_pub_pem, sizeof fuzz_pub_pem - 1, &k, err) != 0) {
		fprintf(stderr, "fuzz: cannot parse the embedded key: %s\n", err);
		abort();
	}
	return k;
}

#endif
