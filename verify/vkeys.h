/* The checkpoint keys a verifier trusts: the --key files, or else the public
 * key in the state directory beside the ledger (DIR/../keys/checkpoint.pub). */
#ifndef ASSENT_VKEYS_H
#define ASSENT_VKEYS_H

#include "eckey.h"

#define VKEYS_MAX 16

struct vkeys {
	struct eckey *k[VKEYS_MAX];
	size_t n;
	int from_state; /* no --key given: the key came from the state directory */
};

/* dir may be NULL when there is no state directory to fall back on. */
int vkeys_load(struct vkeys *v, const char *dir, const char *const *paths, size_t n, char *err);
void vkeys_free(struct vkeys *v);

#endif
