/* Passkey approvals (issue 31): the reviewers' WebAuthn credentials the ledger enrolled,
 * their enrolment, and the check of an approval's assertion before anything is ledgered
 * or forwarded. The formats are docs/verification.md's section 4, which assent-verify
 * checks offline (verify/passkeys.c); the checks are common/webauthn.c's, the same there.
 * A capability: it calls the core only (docs/hacking.md, "The signer's layers"). */
#ifndef ASSENT_SIGNER_PASSKEY_H
#define ASSENT_SIGNER_PASSKEY_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/cbor.h"

struct signer;
struct pq_item;
struct who;

/* An assertion or an attestation as the page sent it: base64url text, bounded by the
 * frame's table, decoded and checked here. */
struct pk_assertion {
	const char *cred, *authdata, *cdj, *sig;
	size_t credn, authdatan, cdjn, sign;
};

/* From the environment: ASSENT_PASSKEY_ORIGIN (the page's origin as the browser names it;
 * default http://localhost:PORT of the reviewer listener) and ASSENT_PASSKEY_RP_ID (the
 * relying party id; default the origin's host). err names the variable. */
int passkey_setup(struct signer *s, char *err);
void passkey_free(struct signer *s);
/* At start, every ledger entry in order (restore.c's scan): enrolments, removals, and the
 * sign counts the approvals used. */
void passkey_scan(struct signer *s, const struct cv *e);
/* The page's link to a request (for the terminal and /review/mcp, which cannot approve one). */
void passkey_link(const struct signer *s, const char *sid, char *out, size_t n);

/* Registration: PublicKeyCredentialCreationOptions for reviewer (a fresh challenge, kept
 * five minutes), then the attestation's authenticator data and client data, enrolled by a
 * `passkey` entry; the reviewer hears back once it is on disk. */
json_t *passkey_register_options(struct signer *s, const char *reviewer, char *err);
void passkey_register(struct signer *s, const struct who *c, const struct pk_assertion *a);
/* An approval: PublicKeyCredentialRequestOptions whose challenge commits to the decision
 * (common/webauthn.h, wa_challenge), for reviewer's credentials. */
json_t *passkey_approve_options(struct signer *s, const char *reviewer, const struct pq_item *it, const char *outcome,
				const char *text, char *err);
/* Check a's assertion of reviewer's decision (outcome, text) on it; on success the sign
 * count moves on and rd holds the response digest the entry records. 0, or err. */
int passkey_check(struct signer *s, const char *reviewer, const struct pq_item *it, const char *outcome,
		  const char *text, const struct pk_assertion *a, char rd[65], char *err);
/* The reviewer's own passkeys ({ok, passkeys: [{credential_id, rp_id, origin, sign_count}]}),
 * and the removal of one (a `passkey` entry, event removed; the reviewer hears back once it is
 * on disk, and from then on it approves nothing). */
json_t *passkey_list(struct signer *s, const char *reviewer);
void passkey_remove(struct signer *s, const struct who *w, const char *cred, size_t credn);
/* The entry's fields for a checked assertion: response_digest and passkey {...}. */
int passkey_put(struct cv_arena *ar, struct cv *m, size_t *i, const struct pk_assertion *a, const char *rd);

#endif
