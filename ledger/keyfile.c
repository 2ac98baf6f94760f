/* The ledger's checkpoint key: a file key in STATE/keys (made on first open, recorded as the
 * ledger's `key` entry), or a PKCS#11 signer's, whose public half is published beside a mark
 * that stops a later open without the token from making a file key in its place. */
#define _GNU_SOURCE
#include "ledger/ledger_int.h"

#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/eckey.h"
#include "common/util.h"
#include "ledger/entry.h"
#include "ledger/headsign.h"
#include "ledger/note.h"

static void keys_dir_of(const struct ledger *l, const struct ledger_opts *o, char kdir[4096])
{
	char tmp[4096];
	if (o && o->keys_dir) {
		snprintf(kdir, 4096, "%s", o->keys_dir);
	} else {
		snprintf(tmp, sizeof tmp, "%s", l->dir);
		snprintf(kdir, 4096, "%s/keys", dirname(tmp));
	}
}

/* An external signer's key; a private key file left beside it would be a second key. */
static int ext_key(struct ledger *l, const struct ledger_opts *o, const char *kdir, char *err)
{
	char priv[4200];
	snprintf(priv, sizeof priv, "%s/checkpoint.key", kdir);
	if (access(priv, F_OK) == 0)
		return as_fail(err, AS_EEXIST,
			       "%s exists but the checkpoint key is in a PKCS#11 token: a ledger has one checkpoint "
			       "key (move the file away if the ledger was never signed with it)",
			       priv);
	l->key = (struct eckey *)o->signer->key;
	l->sign = o->signer->sign;
	l->sign_ctx = o->signer->ctx;
	l->ext = 1;
	return 0;
}

/* Once the ledger is known to be this key's: its public half to checkpoint.pub (what
 * verifiers pin, e.g. --key-from-state), and the mark that stops an open without the
 * signer from making a file key in its place. */
int ledger_key_publish(struct ledger *l, const struct ledger_opts *o, char *err)
{
	char kdir[4096], path[4200];
	keys_dir_of(l, o, kdir);
	struct buf pem;
	buf_init(&pem, 4096);
	snprintf(path, sizeof path, "%s/checkpoint.pub", kdir);
	int rc = eckey_public_pem(l->key, &pem);
	if (rc == 0)
		rc = file_write_atomic(path, pem.p, pem.len, 0644, err);
	else
		as_fail(err, rc, "cannot encode the checkpoint key");
	buf_free(&pem);
	static const char mark[] = "the checkpoint key is in a PKCS#11 token: no key file is made here\n";
	snprintf(path, sizeof path, "%s/" LEDGER_EXT_MARK, kdir);
	if (rc == 0)
		rc = file_write_atomic(path, mark, sizeof mark - 1, 0644, err);
	return rc;
}

/* Without the signer, a key directory whose checkpoint key is outside it is refused
 * rather than given a new key (which would replace checkpoint.pub). */
static int ext_marked(const char *kdir, char *err)
{
	char mark[4200];
	snprintf(mark, sizeof mark, "%s/" LEDGER_EXT_MARK, kdir);
	if (access(mark, F_OK) != 0)
		return 0;
	return as_fail(err, AS_EINVAL,
		       "the checkpoint key of %s is in a PKCS#11 token (%s): set ASSENT_PKCS11_MODULE, "
		       "ASSENT_PKCS11_TOKEN and ASSENT_PKCS11_PIN_FILE; no key file is made in its place",
		       kdir, mark);
}

int ledger_key_open(struct ledger *l, const struct ledger_opts *o, int *created, char *err)
{
	char kdir[4096], priv[4200], pub[4200];
	keys_dir_of(l, o, kdir);
	GUARD(mkdir_p(kdir, 0700, err));
	if (o && o->signer)
		return ext_key(l, o, kdir, err);
	snprintf(priv, sizeof priv, "%s/checkpoint.key", kdir);
	snprintf(pub, sizeof pub, "%s/checkpoint.pub", kdir);
	*created = access(priv, F_OK) != 0;
	if (*created)
		GUARD(ext_marked(kdir, err));
	GUARD(eckey_load_or_create(priv, pub, &l->key, err));
	GUARD(headsign_open(l->key, &l->hs, err));
	l->sign = headsign_sign;
	l->sign_ctx = l->hs;
	return 0;
}

void ledger_key_free(struct ledger *l)
{
	headsign_free(l->hs);
	if (!l->ext)
		eckey_free(l->key);
	l->hs = NULL;
	l->key = NULL;
}

/* Record a newly created checkpoint key as the ledger's `key` entry. */
int ledger_key_record(struct ledger *l, char *err)
{
	uint8_t id[4];
	char hex[9];
	struct buf enc;
	buf_init(&enc, 8192);
	int rc = note_key_id(l->key, id);
	hex_encode(id, 4, hex);
	if (rc == 0)
		rc = entry_key_fields("checkpoint", hex, "created", l->key, &enc, err);
	if (rc == 0) {
		struct ledger_rec r = {enc.p, enc.len};
		struct ledger_pos p;
		rc = ledger_append(l, &r, 1, &p, err);
	}
	buf_free(&enc);
	return rc;
}
