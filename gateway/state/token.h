/* Approval tokens, signer side: the token keys (ES256 key pairs with rotation and
 * a JWKS, or an HS256 shared secret) and issuance of the JWT for an approval.
 *
 * Issuing is two steps because the decision's ledger entry and the token name
 * each other: tok_prepare fixes jti, kid and lifetime (recorded in the decision
 * entry), then tok_issue signs the token naming that entry's seq and leaf hash. */
#ifndef ASSENT_TOKEN_H
#define ASSENT_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "ledger/ledger.h"
#include "common/util.h"

#define TOK_TTL_DEFAULT 900 /* 15 minutes */
#define TOK_TTL_MAX 86400   /* policies may lengthen it up to a day */
#define TOK_SECRET_MIN 32
#define TOK_TYPE                                                                                                       \
	"assent/approval/v1" /* the typ header stays "JWT" (as libjwt wrote it): the token is typed by this claim */
#define TOK_KID_MAX 48
#define TOK_JWT_MAX (1u << 20) /* a token is far smaller: 16 subjects at most, each name bounded by the worker */

enum tok_mode { TOK_ES256, TOK_HS256, TOK_OFF };

struct p11_key;
struct tok_config {
	enum tok_mode mode;
	uint8_t *secret; /* HS256 only; owned, wiped by tok_config_clear */
	size_t secret_len;
	char iss[128];
	struct p11_key *hsm; /* ES256 with the key in a PKCS#11 token (common/p11.h): set by the caller,
			      * borrowed until tokkeys_free; NULL: key files in keys_dir */
};

/* FEEDBACK_SIGN_TOKENS unset: ES256; "true" with FEEDBACK_TOKEN_SECRET (at least 32
 * bytes): HS256; "false": no tokens. iss from ASSENT_TOKEN_ISSUER, default "assent". */
int tok_config_from_env(struct tok_config *c, char *err);
void tok_config_clear(struct tok_config *c);

struct tokkeys;

/* Load the active signing key from keys_dir (creating the first ES256 key when
 * there is none, recorded in l as a `key` entry when l is not NULL). With c->hsm the
 * key is the token's: no private key file is read or made; its public key is written
 * (token-KID.pub, jwks.json) and made active, and a key that was active before (a file
 * key, or the token key under another label: how keys in a token rotate) is retired
 * as tokkeys_rotate retires it. */
int tokkeys_open(const char *keys_dir, const struct tok_config *c, struct ledger *l, struct tokkeys **out, char *err);
void tokkeys_free(struct tokkeys *k);
const char *tokkeys_kid(const struct tokkeys *k);

/* Make a new ES256 key the active one. The old private key is deleted; its public
 * key stays in jwks.json until every token it signed has expired (rotation time +
 * TOK_TTL_MAX), after which the next keygen or start drops it. */
int tokkeys_rotate(const char *keys_dir, struct ledger *l, char new_kid[TOK_KID_MAX], char *err);

struct tok_subject {
	const char *name;
	char sha256[65]; /* lowercase hex */
	int computed;	 /* 1: the gateway hashed the bytes; 0: the agent asserted the digest */
};

struct tok_request {
	const char *aud, *session_id;
	const char *reviewer_name, *reviewer_channel; /* NULL when a policy decided */
	const char *policy_rule, *policy_digest;      /* may be NULL */
	char action_sha256[65];			      /* of the canonical action */
	const struct tok_subject *subjects;
	size_t nsubjects;
	const char *assurance; /* reviewer | policy | same-user | self-attested */
	uint32_t ttl;	       /* 0: TOK_TTL_DEFAULT */
	uint64_t now;	       /* unix seconds; 0: the clock */
};

struct tok_ticket {
	char jti[33];
	char kid[TOK_KID_MAX];
	uint64_t iat, exp;
};

int tok_prepare(const struct tokkeys *k, const struct tok_request *r, struct tok_ticket *t, char *err);
/* *jwt is malloc'd; the caller frees it. */
int tok_issue(const struct tokkeys *k, const struct tok_request *r, const struct tok_ticket *t, uint64_t ledger_seq,
	      const uint8_t leaf[32], char **jwt, char *err);

#endif
