/* Scratch directories for unit tests that need real files (keys, LMDB ledgers):
 * scratch_rm removes one with everything in it (0, or what rmdir or unlink says). Header-only: tests link nothing more.
 */
#ifndef ASSENT_TESTS_SCRATCH_H
#define ASSENT_TESTS_SCRATCH_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static inline int scratch_rm(const char *p)
{
	struct stat top;
	if (lstat(p, &top) != 0)
		return 0; /* nothing to remove */
	if (!S_ISDIR(top.st_mode))
		return unlink(p);
	DIR *d = opendir(p);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char q[4096];
		int n = snprintf(q, sizeof q, "%s/%s", p, e->d_name);
		if (n < 0 || (size_t)n >= sizeof q)
			continue;
		struct stat st;
		if (lstat(q, &st) == 0 && S_ISDIR(st.st_mode))
			scratch_rm(q);
		else
			unlink(q);
	}
	if (d)
		closedir(d);
	return rmdir(p);
}

#endif
