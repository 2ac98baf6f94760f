/* Loading the checkpoint keys a verifier trusts. */
#define _GNU_SOURCE
#include "verify/vkeys.h"

#include "ledger/merkle.h"

#include <libgen.h>
#include <stdio.h>
#include <string.h>

int vkeys_load(struct vkeys *v, const char *dir, const char *const *paths, size_t n, char *err)
{
	memset(v, 0, sizeof *v);
	if (n > VKEYS_MAX)
		return as_fail(err, AS_EINVAL, "at most %d --key options", VKEYS_MAX);
	for (size_t i = 0; i < n; i++) {
		int rc = eckey_load_public(paths[i], &v->k[i], err);
		if (rc != 0) {
			vkeys_free(v);
			return rc == AS_ENOTFOUND ? AS_ENOTFOUND : AS_EINVAL;
		}
		v->n++;
	}
	if (n > 0)
		return 0;
	if (!dir)
		return as_fail(
		    err, AS_EINVAL,
		    "no checkpoint key pinned: pass --key PUB.pem, --key-sha256 HEX or --trusted SAVED.checkpoint "
		    "(or --key-from-state, which proves consistency only)");
	char tmp[4096], path[4200];
	snprintf(tmp, sizeof tmp, "%s", dir);
	snprintf(path, sizeof path, "%s/keys/checkpoint.pub", dirname(tmp));
	int rc = eckey_load_public(path, &v->k[0], err);
	if (rc != 0)
		return as_fail(err, rc == AS_ENOTFOUND ? AS_ENOTFOUND : AS_EINVAL,
			       "no checkpoint key: pass --key PUB.pem (%s not usable)", path);
	v->n = 1;
	v->from_state = 1;
	return 0;
}

void vkeys_free(struct vkeys *v)
{
	for (size_t i = 0; i < v->n; i++)
		eckey_free(v->k[i]);
	v->n = 0;
}

int vkeys_sha256(const struct eckey *k, char hex[65])
{
	uint8_t spki[ECKEY_SPKI_MAX], h[32];
	size_t n;
	GUARD(eckey_spki(k, spki, &n));
	sha256(spki, n, h);
	hex_encode(h, 32, hex);
	return 0;
}
