/* Passkey decisions, checked as a ledger is walked in order (verify/passkeys.c). */
#ifndef ASSENT_VERIFY_PASSKEYS_H
#define ASSENT_VERIFY_PASSKEYS_H

#include <stdint.h>

#include "common/cbor.h"
#include "common/attr.h"

struct av_passkeys;
struct av_passkeys *av_passkeys_new(void); /* NULL when out of memory */
void av_passkeys_free(struct av_passkeys *p);
/* Pin a credential (base64url id) of reviewer, as an auditor confirmed it with them: once any
 * is pinned, an approval by a credential the ledger enrolled but nobody pinned is refused
 * (root on the gateway's host can append an enrolment; it cannot make the person confirm it). */
int av_passkeys_pin(struct av_passkeys *p, const char *reviewer, const char *cred_b64url, char *err) AS_MUST_USE;
/* The pins of a file: one `REVIEWER CREDENTIAL_ID` per line (base64url, as the page showed it
 * at enrolment), blank lines and # comments; at least one. */
int av_passkeys_pin_file(struct av_passkeys *p, const char *path, char *err) AS_MUST_USE;
/* Entry seq (decoded, already checked by entry_check) of the ledger whose checkpoint origin
 * is origin ("" when it has none). 0, or an error with err naming the entry and request. */
int av_passkeys_entry(struct av_passkeys *p, const char *origin, uint64_t seq, const struct cv *e,
		      char *err) AS_MUST_USE;

#endif
