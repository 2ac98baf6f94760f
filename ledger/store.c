/* Read-only access to a ledger's LMDB environment. */
#include "ledger/store.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

static int open_env(const char *dir, unsigned flags, MDB_env **env)
{
	int rc = mdb_env_create(env);
	if (rc != 0)
		return rc;
	mdb_env_set_maxdbs(*env, STORE_MAXDBS);
	rc = mdb_env_open(*env, dir, flags, 0);
	if (rc != 0) {
		mdb_env_close(*env);
		*env = NULL;
	}
	return rc;
}

int store_open_ro(const char *dir, MDB_env **env, MDB_txn **txn, MDB_dbi *entries, MDB_dbi *ckpts, int *nolock,
		  char *err)
{
	char path[4096];
	struct stat st;
	*nolock = 0;
	if (stat(dir, &st) != 0)
		return as_fail(err, errno == ENOENT ? AS_ENOTFOUND : AS_EIO, "cannot read ledger directory %s: %s", dir,
			       strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return as_fail(err, AS_EIO, "%s is not a directory", dir);
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	if (stat(path, &st) != 0)
		return as_fail(err, errno == ENOENT ? AS_ENOTFOUND : AS_EIO, "no ledger in %s (%s: %s)", dir, path,
			       strerror(errno));
	if (access(path, R_OK) != 0)
		return as_fail(err, AS_EIO, "cannot read %s: %s", path, strerror(errno));
	/* No lock.mdb: no process has the environment open (a writer creates it), and
	 * LMDB would create it as ours with mode 0000, locking the daemon's user out. */
	snprintf(path, sizeof path, "%s/lock.mdb", dir);
	int rc = access(path, F_OK) != 0 ? EACCES : open_env(dir, MDB_RDONLY, env);
	if (rc == EACCES || rc == EROFS || rc == EPERM) {
		/* No lock.mdb, or no write access to it: read without LMDB's reader table. */
		rc = open_env(dir, MDB_RDONLY | MDB_NOLOCK, env);
		*nolock = 1;
	}
	if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH || rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND)
		return as_fail(err, AS_ECORRUPT, "%s/data.mdb is not a valid LMDB environment: %s", dir,
			       mdb_strerror(rc));
	if (rc != 0)
		return as_fail(err, AS_EIO, "cannot open ledger %s: %s", dir, mdb_strerror(rc));
	rc = mdb_txn_begin(*env, NULL, MDB_RDONLY, txn);
	if (rc == 0) {
		rc = mdb_dbi_open(*txn, STORE_DB_ENTRIES, 0, entries);
		if (rc == 0)
			rc = mdb_dbi_open(*txn, STORE_DB_CHECKPOINTS, 0, ckpts);
		if (rc != 0)
			mdb_txn_abort(*txn);
	}
	if (rc != 0) {
		mdb_env_close(*env);
		*env = NULL;
		if (rc == MDB_NOTFOUND)
			return as_fail(err, AS_ECORRUPT, "%s holds no assent ledger (named databases missing)", dir);
		if (rc == MDB_INCOMPATIBLE || rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_INVALID)
			return as_fail(err, AS_ECORRUPT, "ledger %s is damaged: %s", dir, mdb_strerror(rc));
		return as_fail(err, AS_EIO, "cannot read ledger %s: %s", dir, mdb_strerror(rc));
	}
	return 0;
}
