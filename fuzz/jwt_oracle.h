/* libjwt (Debian 12: 1.10.2) as an independent oracle for our tokens: a token we
 * issue or accept must be one libjwt decodes, under the one algorithm its key
 * allows, with the same claims. libjwt verifies whatever algorithm the header
 * names with the key it is handed (an HS256 token keyed with the ES256 public PEM
 * verifies: NOTES.md), so the algorithm is pinned after decoding; a NULL key would
 * verify nothing, so there is none. Included by fuzz/token.c and
 * tests/unit/token_oracle_test.c; the product links no libjwt (docs/hacking.md, "Why it is built this way"). */
#ifndef ASSENT_JWT_ORACLE_H
#define ASSENT_JWT_ORACLE_H

#include <jansson.h>
#include <jwt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libjwt's decoding of tok (NUL-terminated) under key, pinned to alg: its claims
 * (the caller decrefs them) and, when kid is not NULL, its header's kid copied
 * there (kidn bytes at most). NULL with *why saying what libjwt did otherwise. */
static json_t *jwt_oracle_decode(const char *tok, const void *key, size_t keylen, jwt_alg_t alg, char *kid, size_t kidn,
				 const char **why)
{
	jwt_t *j = NULL;
	if (!key || keylen == 0 || keylen > 1u << 16) {
		*why = "no key: libjwt would verify nothing";
		return NULL;
	}
	if (jwt_decode(&j, tok, key, (int)keylen) != 0 || !j) {
		*why = "jwt_decode refuses it";
		return NULL;
	}
	json_t *claims = NULL;
	char *g = NULL;
	if (jwt_get_alg(j) != alg) {
		*why = "libjwt verified it under another algorithm than its key allows";
	} else if (!(g = jwt_get_grants_json(j, NULL)) || !(claims = json_loads(g, JSON_REJECT_DUPLICATES, NULL))) {
		*why = "libjwt's claims are not a JSON object";
	} else if (kid) {
		const char *k = jwt_get_header(j, "kid");
		snprintf(kid, kidn, "%s", k ? k : "");
	}
	free(g);
	jwt_free(j);
	return claims;
}

/* 1 when libjwt decodes tok under key, pinned to alg, with exactly the claims
 * `ours` (a JSON object); 0 with *why otherwise. */
static int jwt_oracle_check(const char *tok, const void *key, size_t keylen, jwt_alg_t alg, const json_t *ours,
			    const char **why)
{
	json_t *theirs = jwt_oracle_decode(tok, key, keylen, alg, NULL, 0, why);
	int same = theirs && json_equal(theirs, (json_t *)ours);
	if (theirs && !same)
		*why = "libjwt decodes other claims";
	json_decref(theirs);
	return same;
}

#endif
