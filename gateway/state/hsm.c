/* The gateway's keys in a PKCS#11 token (see hsm.h): the configuration, the session and
 * the two keys, opened the same way by assentd and by the assent CLI. */
#include "gateway/state/hsm.h"

#include <string.h>

static int find_keys(struct hsm *h, int want_token, char *err)
{
	GUARD(p11_key_find(h->p, h->cfg.ckpt_key, &h->ckpt, err));
	if (want_token)
		GUARD(p11_key_find(h->p, h->cfg.token_key, &h->tok, err));
	h->signer = (struct ledger_signer){p11_key_public(h->ckpt), p11_note_sign, h->ckpt};
	return 0;
}

int hsm_open(struct hsm *h, int want_token, char *err)
{
	memset(h, 0, sizeof *h);
	GUARD(p11_config_from_env(&h->cfg, err));
	if (!h->cfg.on)
		return 0;
	GUARD(p11_open(&h->cfg, 0, &h->p, err));
	return find_keys(h, want_token, err);
}

int hsm_keygen(struct hsm *h, int made[2], char *err)
{
	memset(h, 0, sizeof *h);
	made[0] = made[1] = 0;
	GUARD(p11_config_from_env(&h->cfg, err));
	if (!h->cfg.on)
		return as_fail(err, AS_EINVAL,
			       "keygen --pkcs11 needs ASSENT_PKCS11_MODULE (and the token, the PIN file)");
	GUARD(p11_open(&h->cfg, 1, &h->p, err));
	const char *labels[2] = {h->cfg.ckpt_key, h->cfg.token_key};
	char e2[AS_ERRLEN];
	for (int i = 0; i < 2; i++) {
		int rc = p11_keygen(h->p, labels[i], e2);
		if (rc == 0)
			made[i] = 1;
		else if (rc != AS_EEXIST)
			return as_fail(err, rc, "%s", e2);
	}
	if (!made[0] && !made[1])
		return as_fail(
		    err, AS_EEXIST,
		    "PKCS#11 token '%s' already holds keys labelled '%s' and '%s': nothing to make (a new token "
		    "key needs a new label, ASSENT_PKCS11_TOKEN_KEY)",
		    h->cfg.token, h->cfg.ckpt_key, h->cfg.token_key);
	return find_keys(h, 1, err);
}

void hsm_close(struct hsm *h)
{
	p11_key_free(h->tok);
	p11_key_free(h->ckpt);
	p11_close(h->p);
	memset(h, 0, sizeof *h);
}
