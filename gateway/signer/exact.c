/* What the view hides, kept (issue 28); revealed by h_ctl_reveal in ctl.c. A gated call whose view masks
 * anything has its exact canonical call kept in STATE/exact/ (the retained store, named
 * by the digest the ledger's request entry carries, so assent-verify exact checks one
 * against the other), and a reviewer who may see a pending request can ask for its exact
 * arguments (`assent show --full`): a `reveal` entry names who, on disk before the
 * answer. Why a store and not the ledger: the ledger is what auditors are handed and
 * exports whole; the masked values are secrets, so they stay in a directory only the
 * daemon's user reads (0700), bound to the ledger by digest, never beside it in clear. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <limits.h>
#include <unistd.h>

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int exact_keep(struct signer *s, const uint8_t *call, size_t n, const char *digest, char *err)
{
	char dir[PATH_MAX], path[PATH_MAX + 96], tmp[PATH_MAX + 104];
	snprintf(dir, sizeof dir, "%s/" STATE_EXACT_DIR, s->o->state);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return as_fail(err, AS_EIO, "%s: %s", dir, strerror(errno));
	/* "sha256:HEX" -> sha256-HEX.cbor, a name with no ':' for any file system */
	snprintf(path, sizeof path, "%s/sha256-%s.cbor", dir, digest + 7);
	if (access(path, F_OK) == 0) /* the same call, kept before: its bytes are its name */
		return 0;
	snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return as_fail(err, AS_EIO, "%s: %s", tmp, strerror(errno));
	int bad = write_all(fd, call, n) != 0 || fdatasync(fd) != 0;
	close(fd);
	if (bad || rename(tmp, path) != 0) {
		unlink(tmp);
		return as_fail(err, AS_EIO, "%s: %s", path, strerror(errno));
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) { /* the name is durable too, before the entry that refers to it */
		(void)fsync(dfd);
		close(dfd);
	}
	return 0;
}
