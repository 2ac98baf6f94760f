/* Fuzz target: `assent-verify token` on arbitrary input: header parsing, key
 * selection by kid, the one-algorithm-per-key rule, libjwt's decode and our claim
 * checks. Keys: a fixed ES256 public key (the seed corpus in fuzz/corpus/token was
 * signed with its private half, which is not kept) and a fixed HS256 secret.
 * Property: whatever is accepted is a token of ours, for our audience, approved,
 * saying what vouches for it (assurance). */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/assent/verify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char pub_pem[] = "-----BEGIN PUBLIC KEY-----\n"
			      "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEjRtMzhyMTXL4n1qGlR4UP+B1qfgj\n"
			      "B2S6EmWVp+3Kb5quvRh/FNh/CvNdeC/Ja6Kz3hCFQ4eMdstITv+gVimeKA==\n"
			      "-----END PUBLIC KEY-----\n";
static const char secret[] = "fuzz-secret-0123456789abcdef0123456789";

/* The verifier takes keys as files: write the public key once per process. */
static const char *key_path(void)
{
	static char path[64];
	if (!path[0]) {
		snprintf(path, sizeof path, "/tmp/assent-fuzz-token-%ld.pem", (long)getpid());
		FILE *f = fopen(path, "we");
		if (!f || fwrite(pub_pem, 1, sizeof pub_pem - 1, f) != sizeof pub_pem - 1 || fclose(f) != 0)
			abort();
	}
	return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *keys[] = {key_path()};
	struct av_token_opts o = {.aud = "fuzz",
				  .key_paths = keys,
				  .nkeys = 1,
				  .secret = (const uint8_t *)secret,
				  .secret_len = sizeof secret - 1,
				  .leeway = 60,
				  .now = 1796000100};
	struct av_token_result r;
	int rc = av_verify_token((const char *)data, size, &o, &r);
	if (rc == 0) {
		json_error_t je;
		json_t *c = json_loads(r.claims_json, 0, &je);
		json_t *aud = json_object_get(c, "aud");
		int ours = json_is_true(json_object_get(c, "approved")) &&
			   !strcmp(json_string_value(json_object_get(c, "token_type")) ?: "", "assent/approval/v1") &&
			   (json_is_array(aud) || !strcmp(json_string_value(aud) ?: "", "fuzz")) &&
			   json_is_string(json_object_get(c, "assurance"));
		json_decref(c);
		if (!ours)
			abort();
		free(r.claims_json);
	} else if (rc != AS_EBADSIG || !r.reason[0]) {
		abort(); /* a token is valid or not, with a reason; never a usage error */
	}
	return 0;
}
