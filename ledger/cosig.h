/* Witness cosignatures on checkpoints (C2SP tlog-cosignature, cosignature/v1, Ed25519):
 * witness verifier keys (C2SP signed-note vkeys) and the check of the cosignature lines
 * of a signed checkpoint. Verify-only: witnesses sign, the ledger writer stores the lines. */
#ifndef ASSENT_COSIG_H
#define ASSENT_COSIG_H

#include <stddef.h>
#include <stdint.h>

#include "common/attr.h"
#include "ledger/note.h"

#define COSIG_WITNESS_MAX 32 /* witnesses one verification takes (a quorum, not a census) */
#define COSIG_TYPE_ED25519 0x04
#define COSIG_BLOB_LEN 76 /* keyid(4) || timestamp(8, big-endian) || Ed25519 signature(64) */
/* NAME + "+" + 8 hex digits + "+" + base64 of 33 bytes (44 characters) */
#define COSIG_VKEY_MAX (CKPT_ORIGIN_MAX + 1 + 8 + 1 + 44)
#define COSIG_TIME_MAX 0x7fffffffffffffffULL /* C2SP: a timestamp never exceeds 2^63 - 1 */

/* One witness a verifier trusts, from its vkey NAME+KEYIDHEX+BASE64(0x04 || pub32). */
struct witness {
	char name[CKPT_ORIGIN_MAX + 1];
	uint8_t id[4]; /* SHA-256(name || "\n" || 0x04 || pub)[:4] */
	uint8_t pub[32];
};

/* Parse a vkey (s, n bytes, no newline), strictly: the name as checkpoint origins and key
 * names are (ckpt_origin_ok), the key ID as 8 lowercase hex digits equal to the one the
 * name and key give, canonical base64 of exactly 33 bytes whose first is 0x04. */
int witness_parse(const char *s, size_t n, struct witness *w, char *err) AS_MUST_USE;

/* A set of witnesses a verifier trusts: at most COSIG_WITNESS_MAX, none twice (by name and
 * key ID), and no public key twice (cosignature/v1 does not sign the name, so one key under
 * two names would count one signature twice). 0, or AS_EINVAL naming the witness. */
int witness_set_ok(const struct witness *w, size_t nw, char *err) AS_MUST_USE;

/* The message a witness signs for the checkpoint body (its three lines with the final
 * newline, no blank line): "cosignature/v1\ntime T\n" || body. out is the caller's. */
int cosig_message(const uint8_t *body, size_t n, uint64_t time, struct buf *out) AS_MUST_USE;

struct cosig_result {
	size_t count;			  /* distinct witnesses (of w) whose cosignature verified */
	int cosigned[COSIG_WITNESS_MAX];  /* per witness: 1 when its cosignature verified */
	uint64_t time[COSIG_WITNESS_MAX]; /* per witness: the newest verified timestamp */
	size_t bad;			  /* on AS_EBADSIG: the witness whose line failed */
};

/* Check the cosignature lines of the signed checkpoint note (n bytes) for the nw witnesses
 * in w (at most COSIG_WITNESS_MAX, no name and key ID or public key twice: AS_EINVAL).
 * Every signature line must be well formed (as ckpt_verify reads them); lines whose name
 * and key ID are no witness's are ignored (the log's own, other witnesses'). A line that
 * names a witness and carries its key ID but is not 76 bytes, has a timestamp over
 * 2^63 - 1, or does not verify over this note's body is a forgery: AS_EBADSIG naming the
 * witness (r->bad says which). A witness with several valid lines counts once. The log's
 * signature is not checked here: that is ckpt_verify's. AS_ECRYPTO: OpenSSL could not check
 * an Ed25519 signature at all (the verifier's environment, not a forgery). */
int cosig_verify(const uint8_t *note, size_t n, const struct witness *w, size_t nw, struct cosig_result *r,
		 char *err) AS_MUST_USE;

#endif
