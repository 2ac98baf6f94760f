/* ledger/export.h: a ledger from a source, written in the LMDB layout of ledger/store.h. */
#define _GNU_SOURCE
#include "ledger/export.h"

#include <lmdb.h>

#include "common/util.h"
#include "ledger/store.h"

struct exp {
	MDB_txn *txn;
	MDB_dbi entries, ckpts;
	uint64_t n, nck;
};

static int exp_put(MDB_txn *txn, MDB_dbi db, uint64_t k64, const uint8_t *p, size_t n, char *err)
{
	uint8_t k[8];
	be64_put(k, k64);
	MDB_val key = {8, k}, val = {n, (void *)p};
	int rc = mdb_put(txn, db, &key, &val, 0);
	return rc ? as_fail(err, AS_EIO, "writing the export: %s", mdb_strerror(rc)) : 0;
}

static int exp_entry(void *arg, uint64_t seq, const uint8_t *p, size_t n, char *err)
{
	struct exp *x = arg;
	if (seq != x->n)
		return as_fail(err, AS_ECORRUPT, "the shared ledger sent entry %llu where %llu was due",
			       (unsigned long long)seq, (unsigned long long)x->n);
	x->n++;
	return exp_put(x->txn, x->entries, seq, p, n, err);
}

static int exp_ckpt(void *arg, uint64_t size, const uint8_t *note, size_t n, int periodic, char *err)
{
	(void)periodic;
	struct exp *x = arg;
	x->nck++;
	return exp_put(x->txn, x->ckpts, size, note, n, err);
}

int ledger_export_dir(const char *dir, export_pull pull, void *ctx, uint64_t *entries, uint64_t *ckpts, char *err)
{
	MDB_env *env = NULL;
	struct exp x = {0};
	int rc = mkdir_p(dir, 0700, err), m = 0;
	if (rc == 0 && (m = mdb_env_create(&env)) == 0 && (m = mdb_env_set_maxdbs(env, STORE_MAXDBS)) == 0 &&
	    (m = mdb_env_set_mapsize(env, (size_t)64 << 30)) == 0 &&
	    (m = mdb_env_open(env, dir, MDB_NOTLS, 0600)) == 0 && (m = mdb_txn_begin(env, NULL, 0, &x.txn)) == 0 &&
	    (m = mdb_dbi_open(x.txn, STORE_DB_ENTRIES, MDB_CREATE, &x.entries)) == 0)
		m = mdb_dbi_open(x.txn, STORE_DB_CHECKPOINTS, MDB_CREATE, &x.ckpts);
	if (rc == 0 && m != 0)
		rc = as_fail(err, AS_EIO, "%s: %s", dir, mdb_strerror(m));
	MDB_stat st;
	if (rc == 0 && mdb_stat(x.txn, x.entries, &st) == 0 && st.ms_entries)
		rc = as_fail(err, AS_EEXIST, "%s holds a ledger already: export into a new directory", dir);
	static const struct ledger_sync_take take = {exp_entry, exp_ckpt};
	if (rc == 0)
		rc = pull(ctx, &take, &x, err);
	if (rc == 0) {
		m = mdb_txn_commit(x.txn);
		x.txn = NULL;
		rc = m ? as_fail(err, AS_EIO, "%s: %s", dir, mdb_strerror(m)) : 0;
	}
	if (x.txn)
		mdb_txn_abort(x.txn);
	if (env)
		mdb_env_close(env);
	*entries = x.n;
	*ckpts = x.nck;
	return rc;
}
