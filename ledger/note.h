/* Checkpoints in the C2SP tlog-checkpoint format, signed as C2SP signed notes with
 * ECDSA P-256 (key type 0x02: key ID = first 4 bytes of SHA-256 of the DER
 * SubjectPublicKeyInfo; signature = DER ECDSA-Sig-Value: deterministic from ckpt_sign,
 * low-s from the ledger writer's OpenSSL signer). */
#ifndef ASSENT_NOTE_H
#define ASSENT_NOTE_H

#include <stddef.h>
#include <stdint.h>

#include "common/eckey.h"
#include "common/util.h"
#include "common/attr.h"

#define CKPT_MAX 4096 /* largest checkpoint text we parse */
#define CKPT_ORIGIN_MAX 255
#define CKPT_MAX_SIGS 100

struct checkpoint {
	char origin[CKPT_ORIGIN_MAX + 1];
	uint64_t size;
	uint8_t root[32];
};

/* A signature line starts with an em dash and a space, then the key name (the origin). */
#define NOTE_SIG_PREFIX "\xe2\x80\x94 "

int note_key_id(const struct eckey *k, uint8_t id[4]) AS_MUST_USE;
/* Whether s (n bytes) may be an origin: 1-255 printable ASCII characters, no space or '+'
 * (it doubles as the signature's key name). */
int ckpt_origin_ok(const char *s, size_t n) AS_MUST_USE;

/* ---- signing: ledger/note_sign.c, never in libassent-verify.a ---- */
/* Body plus one signature line named after the origin. */
int ckpt_sign(const struct eckey *k, const struct checkpoint *c, struct buf *out, char *err) AS_MUST_USE;
/* The same with another signer of k's key: sign writes the DER ECDSA signature of
 * SHA-256(msg) (at most ECKEY_SIG_MAX bytes); k gives the key ID. */
typedef int (*note_sign_fn)(void *ctx, const void *msg, size_t n, uint8_t *sig, size_t *siglen);
int ckpt_sign_with(const struct eckey *k, note_sign_fn sign, void *ctx, const struct checkpoint *c, struct buf *out,
		   char *err) AS_MUST_USE;

/* ---- parsing and verifying: ledger/note.c ---- */
/* Parse the body only, without checking any signature (for display). */
int ckpt_parse(const uint8_t *text, size_t n, struct checkpoint *out, char *err) AS_MUST_USE;
/* The same, and the length of the signed body (its lines with the final newline, without
 * the blank line): what the log and witnesses sign (ledger/cosig.c). */
int ckpt_parse_body(const uint8_t *text, size_t n, struct checkpoint *out, size_t *body_len, char *err) AS_MUST_USE;
/* Parse and verify: at least one signature line by one of keys, named as the
 * origin, must verify; a line whose key ID matches a key but does not verify
 * fails the whole note. Lines by unknown keys (witnesses) are ignored. */
int ckpt_verify(const uint8_t *text, size_t n, struct eckey *const *keys, size_t nkeys, struct checkpoint *out,
		char *err) AS_MUST_USE;
/* The same with one key, whose signatures vfn checks (0: it verifies) in place of mbedTLS:
 * the ledger writer's OpenSSL copy of its own key (ledger/headsign.h), when it imports
 * checkpoints that other replicas signed (ledger/sync.c). */
typedef int (*note_verify_fn)(void *ctx, const void *msg, size_t n, const uint8_t *sig, size_t siglen);
int ckpt_verify_with(const uint8_t *text, size_t n, struct eckey *key, note_verify_fn vfn, void *vctx,
		     struct checkpoint *out, char *err) AS_MUST_USE;

#endif
