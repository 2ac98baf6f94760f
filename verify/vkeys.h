/* The checkpoint keys a verifier trusts: the --key files, or else the public
 * key in the state directory beside the ledger (DIR/../keys/checkpoint.pub), when the
 * caller pins it some other way or was asked to use it unpinned. */
#ifndef ASSENT_VKEYS_H
#define ASSENT_VKEYS_H

#include "common/eckey.h"

#define VKEYS_MAX 16

struct vkeys {
	struct eckey *k[VKEYS_MAX];
	size_t n;
	int from_state; /* no --key given: the key came from the state directory */
};

/* The keys at paths; with none, the state directory's key when dir is not NULL (the
 * caller decides whether that is pinned), else AS_EINVAL naming the ways to pin one. */
int vkeys_load(struct vkeys *v, const char *dir, const char *const *paths, size_t n, char *err);
/* Lowercase hex SHA-256 of the key's DER SubjectPublicKeyInfo (the first 4 bytes are
 * its signed-note key ID): what --key-sha256 pins. */
int vkeys_sha256(const struct eckey *k, char hex[65]);
void vkeys_free(struct vkeys *v);

#endif
