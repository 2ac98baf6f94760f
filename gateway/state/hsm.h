/* The gateway's keys in a PKCS#11 token (DESIGN.md "Keys"): what assentd and the assent
 * CLI open when ASSENT_PKCS11_MODULE is set, in place of the key files in STATE/keys.
 * The checkpoint key becomes the ledger's external signer (ledger_opts.signer), the
 * token key tok_config.hsm. Nothing falls back to files: each failure is an error. */
#ifndef ASSENT_HSM_H
#define ASSENT_HSM_H

#include "common/p11.h"
#include "ledger/ledger.h"

struct hsm {
	struct p11_config cfg; /* cfg.on = 0: keys are files, nothing below is open */
	struct p11 *p;
	struct p11_key *ckpt, *tok;  /* tok NULL when not asked for */
	struct ledger_signer signer; /* the checkpoint key, for ledger_opts.signer */
};

/* Read the configuration; when it is on, open the token and find the checkpoint key
 * and, when want_token, the token key. h is zeroed first; hsm_close it in any case. */
int hsm_open(struct hsm *h, int want_token, char *err) AS_MUST_USE;
/* assent keygen --pkcs11: in a read-write session, generate each of the two key pairs
 * whose label the token does not hold yet (made[i] = 1: the checkpoint key, then the
 * token key), then find both as hsm_open does. AS_EEXIST when both existed already. */
int hsm_keygen(struct hsm *h, int made[2], char *err) AS_MUST_USE;
/* Drops the keys, logs out and finalises the module (in the process that opened it). */
void hsm_close(struct hsm *h);

#endif
