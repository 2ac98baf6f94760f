/* Signing keys in a PKCS#11 token (an HSM; SoftHSM2 in tests): the module is dlopen'ed,
 * a user session logged in with the PIN from a file, and ECDSA P-256 keys found by
 * label. The private key never leaves the token; its public key comes back as an eckey
 * so kid, JWKS, note key id and the ledger's key entry work as with files.
 * Private-key side: not in the verify library (Makefile SIGNING_OBJ). */
#ifndef ASSENT_P11_H
#define ASSENT_P11_H

#include <stddef.h>
#include <stdint.h>

#include "common/eckey.h"
#include "common/attr.h"

#define P11_LABEL_MAX 64   /* a key label we accept (CKA_LABEL has no limit of its own) */
#define P11_TOKEN_MAX 32   /* CK_TOKEN_INFO.label: 32 bytes, blank-padded */
#define P11_PIN_MAX 128	   /* the PIN file holds one line at most this long */
#define P11_POINT_MAX 128  /* CKA_EC_POINT of P-256: 67 bytes as a DER OCTET STRING */
#define P11_PARAMS_MAX 128 /* CKA_EC_PARAMS: 10 bytes for the named curve */
#define P11_TOKEN_KEY_DEFAULT "assent-token"
#define P11_CKPT_KEY_DEFAULT "assent-checkpoint"

/* ASSENT_PKCS11_MODULE (absolute path; unset or empty: on = 0, keys are files),
 * ASSENT_PKCS11_TOKEN (token label), ASSENT_PKCS11_PIN_FILE (user PIN; refused when
 * the group or others have any access), ASSENT_PKCS11_TOKEN_KEY, ASSENT_PKCS11_CHECKPOINT_KEY. */
struct p11_config {
	int on;
	char module[4096];
	char token[P11_TOKEN_MAX + 1];
	char pin_file[4096];
	char token_key[P11_LABEL_MAX + 1];
	char ckpt_key[P11_LABEL_MAX + 1];
};
int p11_config_from_env(struct p11_config *c, char *err) AS_MUST_USE;

struct p11;	/* a loaded module with one logged-in session */
struct p11_key; /* a private key handle in that session and its public key */

/* Load the module, initialise it, find the token by label, open a session (read-write
 * when rw, to generate keys) and log in as the user. Each failure names its cause. The
 * session belongs to this process: a forked child that calls p11_sign gets AS_EINVAL. */
int p11_open(const struct p11_config *c, int rw, struct p11 **out, char *err) AS_MUST_USE;
/* Logs out, closes the session and finalises the module (not in a forked child). */
void p11_close(struct p11 *p);

/* The key pair labelled label: a P-256 private key that can sign and the public key
 * beside it; a probe signature is checked with mbedTLS under that public key. Owned by
 * the caller (p11_key_free), valid while p is open. */
int p11_key_find(struct p11 *p, const char *label, struct p11_key **out, char *err) AS_MUST_USE;
void p11_key_free(struct p11_key *k);
const struct eckey *p11_key_public(const struct p11_key *k);
/* ECDSA over a SHA-256 hash in the token: r || s (JWS ES256 form) with the low s. */
int p11_sign_rs(struct p11_key *k, const uint8_t hash[32], uint8_t rs[64]) AS_MUST_USE;
/* Sign SHA-256(msg) as a DER ECDSA-Sig-Value with the low s: a note_sign_fn (ledger/note.h). */
int p11_note_sign(void *k, const void *msg, size_t n, uint8_t *sig, size_t *siglen) AS_MUST_USE;

/* Generate a P-256 key pair labelled label in the token (private: sensitive, not
 * extractable, sign only; public: verify), AS_EEXIST when any object has that label. */
int p11_keygen(struct p11 *p, const char *label, char *err) AS_MUST_USE;

/* ---- parsing what the module returns (fuzz/p11_point.c) ---- */
/* CKA_EC_POINT: a DER OCTET STRING holding 0x04 || X || Y of P-256 (some modules give
 * the bare point: accepted too). 0 or AS_EINVAL. */
int p11_parse_point(const uint8_t *der, size_t n, uint8_t x[32], uint8_t y[32]) AS_MUST_USE;
/* CKA_EC_PARAMS: 0 when it names P-256 (OID 1.2.840.10045.3.1.7), AS_EINVAL otherwise. */
int p11_params_p256(const uint8_t *der, size_t n) AS_MUST_USE;

#endif
