/* WebAuthn checks for passkey approvals (issue 31), the same in the signer and in
 * assent-verify: authenticator data read at its fixed offsets, the client data checked by
 * the specification's limited verification algorithm (a byte comparison against what it
 * must begin with, no JSON parser: WebAuthn Level 3, section 5.8.1.2), an ES256 assertion
 * checked over authenticatorData || SHA-256(clientDataJSON), and the challenge an approval
 * commits to, as canonical CBOR. Only ES256 on P-256 credentials (COSE alg -7), the one
 * algorithm every platform authenticator offers; extensions in authenticator data are
 * refused rather than skipped, since assent asks for none. */
#ifndef ASSENT_WEBAUTHN_H
#define ASSENT_WEBAUTHN_H

#include <stddef.h>
#include <stdint.h>

#include "common/attr.h"

#define WA_AUTHDATA_MIN 37
#define WA_AUTHDATA_MAX 1400 /* 37 + 18 + a 1023-byte credential id + a 77-byte COSE key, rounded up */
#define WA_CRED_ID_MAX 1023  /* the specification's bound */
#define WA_CDJ_MAX 1024	     /* clientDataJSON: a browser's is about 150 to 250 bytes */
#define WA_ORIGIN_MAX 256

/* authenticator data flags */
#define WA_FLAG_UP 0x01 /* user present */
#define WA_FLAG_UV 0x04 /* user verified */
#define WA_FLAG_BE 0x08 /* backup eligible */
#define WA_FLAG_BS 0x10 /* backed up */
#define WA_FLAG_AT 0x40 /* attested credential data follows */
#define WA_FLAG_ED 0x80 /* extensions follow */

struct wa_authdata {
	uint8_t rpid_hash[32];
	uint8_t flags;
	uint32_t sign_count;
	int has_cred; /* AT: the credential below was read */
	uint8_t aaguid[16];
	const uint8_t *cred_id; /* into the input */
	size_t cred_id_len;
	uint8_t x[32], y[32]; /* the credential's public key (ES256, P-256) */
};

/* Read authenticator data: 32 bytes rpIdHash, flags, a 4-byte big-endian signCount, then
 * with AT the attested credential (16-byte AAGUID, 2-byte length, the id, a COSE_Key that is
 * exactly {1: 2, 3: -7, -1: 1, -2: x, -3: y} in canonical CBOR) filling the rest. Anything
 * else, or bytes after it, is refused with err naming it. */
int wa_authdata_parse(const uint8_t *p, size_t n, struct wa_authdata *out, char *err) AS_MUST_USE;

/* The client data of a ceremony: type "webauthn.create" or "webauthn.get", the 32-byte
 * challenge (base64url in the JSON) and the origin, which must be exactly these, in this
 * order, at its start; then the end, or "crossOrigin":false (true is refused: assent's page
 * is never framed). What follows that is not read (browsers add keys there on purpose). */
int wa_client_data_check(const uint8_t *cdj, size_t n, const char *type, const uint8_t challenge[32],
			 const char *origin, char *err) AS_MUST_USE;

/* An assertion's signature (DER ECDSA-Sig-Value, either s) by the credential (x, y) over
 * authenticatorData || SHA-256(clientDataJSON). 0, or AS_EBADSIG with err. */
int wa_assertion_verify(const uint8_t x[32], const uint8_t y[32], const uint8_t *authdata, size_t an,
			const uint8_t *cdj, size_t cn, const uint8_t *sig, size_t sn, char *err) AS_MUST_USE;

/* What a passkey approval commits to (issue 31): SHA-256 over the canonical CBOR map of
 * these fields, keyed by their names here, "v": 1. response_digest is the hex SHA-256 of the
 * reviewer's response text ("" when there is none: the digest of the empty string). */
struct wa_terms {
	const char *origin;	/* the ledger's checkpoint origin */
	const char *session_id; /* the request */
	const char *action;	/* the action's or the call's digest ("sha256:...") */
	const char *outcome;	/* "approved", "rejected", ... */
	const char *response_digest;
	const char *scope; /* "request": this one request, nothing else */
	const char *reviewer;
	uint64_t deadline; /* unix seconds: the request's deadline */
};
int wa_challenge(const struct wa_terms *t, uint8_t out[32], char *err) AS_MUST_USE;

/* The rpIdHash a relying party id must give: SHA-256 of the id (a host name). */
void wa_rpid_hash(const char *rp_id, uint8_t out[32]);

#endif
