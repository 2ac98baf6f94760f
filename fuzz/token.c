/* Fuzz target: `assent-verify token` on arbitrary input: header parsing, key
 * selection by kid, the one-algorithm-per-key rule, the signature check (mbedTLS)
 * and our claim checks. Keys: a fixed ES256 public key (the seed corpus in
 * fuzz/corpus/token was signed with its private half, which is not kept) and a
 * fixed HS256 secret.
 * Properties: whatever is accepted is a token of ours, for our audience, approved,
 * saying what vouches for it (assurance); libjwt (fuzz/jwt_oracle.h) decodes it
 * under the algorithm its key allows with the same claims; and a signature we say
 * does not verify, libjwt does not verify under that key and algorithm either.
 * libjwt is laxer (it checks no claim, takes duplicate keys, a high s, any key for
 * any algorithm), so nothing else it accepts is held against us. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "fuzz/jwt_oracle.h"
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

/* The alg the token's header names (the verifier read it already; so do we, the same way). */
static jwt_alg_t header_alg(const char *tok)
{
	const char *dot = strchr(tok, '.');
	uint8_t h[1024];
	size_t hl = 0;
	if (!dot || b64url_decode(tok, (size_t)(dot - tok), h, sizeof h, &hl) != 0)
		return JWT_ALG_INVAL;
	json_t *j = json_loadb((const char *)h, hl, 0, NULL);
	const char *a = json_string_value(json_object_get(j, "alg"));
	jwt_alg_t alg = !a		      ? JWT_ALG_INVAL
			: !strcmp(a, "ES256") ? JWT_ALG_ES256
			: !strcmp(a, "HS256") ? JWT_ALG_HS256
					      : JWT_ALG_INVAL;
	json_decref(j);
	return alg;
}

/* The oracle, both ways it holds: what we accept, libjwt decodes under the key's one
 * algorithm with our claims; a signature we find false, libjwt finds false too. */
static void check_libjwt(const uint8_t *data, size_t size, int accepted, const struct av_token_result *r)
{
	int badsig = !accepted && !strncmp(r->reason, "signature does not verify", 25);
	if (!accepted && !badsig)
		return;
	char *tok = strndup((const char *)data, size); /* base64url and dots only: no NUL inside */
	if (!tok)
		abort();
	jwt_alg_t alg = header_alg(tok);
	const void *key = alg == JWT_ALG_ES256 ? (const void *)pub_pem : secret;
	size_t keylen = alg == JWT_ALG_ES256 ? sizeof pub_pem - 1 : sizeof secret - 1;
	const char *why = "";
	if (alg == JWT_ALG_INVAL) {
		fprintf(stderr,
			"token: the verifier checked a signature under an alg that is neither ES256 nor HS256\n");
		abort();
	}
	if (accepted) {
		json_t *ours = json_loads(r->claims_json, 0, NULL);
		if (!ours || !jwt_oracle_check(tok, key, keylen, alg, ours, &why)) {
			fprintf(stderr, "token: we accept it, libjwt does not agree: %s\n", why);
			abort();
		}
		json_decref(ours);
	} else {
		json_t *theirs = jwt_oracle_decode(tok, key, keylen, alg, NULL, 0, &why);
		if (theirs) {
			fprintf(stderr, "token: we say '%s', libjwt verifies the signature\n", r->reason);
			abort();
		}
	}
	free(tok);
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
	} else if (rc != AS_EBADSIG || !r.reason[0]) {
		abort(); /* a token is valid or not, with a reason; never a usage error */
	}
	check_libjwt(data, size, rc == 0, &r);
	free(r.claims_json);
	return 0;
}
