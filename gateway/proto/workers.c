/* The uid each kind of worker runs as under a root signer (gateway/proto/workers.h). */
#include "gateway/proto/workers.h"

#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <string.h>

#include "common/util.h"

int jail_worker_uid(const char *base_text, unsigned index, uid_t *uid, char *err)
{
	uint64_t base = JAIL_WORKER_UID_DEFAULT;
	if (base_text && *base_text && parse_u64(base_text, &base) != 0)
		return as_fail(err, AS_EINVAL, "ASSENT_WORKER_UID must be a number, not '%.32s'", base_text);
	if (index >= JAIL_WORKER_KINDS)
		return as_fail(err, AS_EINVAL, "jail: worker kind %u, at most %u", index, JAIL_WORKER_KINDS - 1);
	uint64_t top = base + JAIL_WORKER_KINDS - 1;
	if (base == 0 || top >= (uint64_t)(uid_t)-1 || (base <= 65535 && top >= 65534))
		return as_fail(
		    err, AS_EINVAL,
		    "ASSENT_WORKER_UID %llu: the workers' uids %llu-%llu must not include 0, 65534 (nobody), "
		    "65535 or 4294967295",
		    (unsigned long long)base, (unsigned long long)base, (unsigned long long)top);
	uid_t u = (uid_t)(base + index);
	/* An account of that number may have processes (or get some), which could signal the
	 * worker: only accounts made for assent's workers, named assent*, are accepted. */
	const struct passwd *pw = getpwuid(u);
	if (pw && strncmp(pw->pw_name, "assent", 6) != 0)
		return as_fail(err, AS_EINVAL,
			       "worker uid %u is the account '%.32s': set ASSENT_WORKER_UID to a range no account "
			       "uses (%u to %u are taken from it)",
			       (unsigned)u, pw->pw_name, (unsigned)base, (unsigned)top);
	const struct group *gr = getgrgid((gid_t)u);
	if (gr && strncmp(gr->gr_name, "assent", 6) != 0)
		return as_fail(err, AS_EINVAL,
			       "worker gid %u is the group '%.32s': set ASSENT_WORKER_UID to a range no group uses",
			       (unsigned)u, gr->gr_name);
	*uid = u;
	return 0;
}
