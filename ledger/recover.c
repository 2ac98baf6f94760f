/* The write-ahead log as the ledger uses it (ledger_int.h): opened and, when this process is
 * the only one with the ledger open, recovered; reset every second with records, after every
 * commit not in the log, and at close, when the last process removes it. ledger/wal.c has the
 * log itself and why this is as durable as LMDB's own two syncs. */
#define _GNU_SOURCE
#include "ledger/ledger_int.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "ledger/wal.h"

int ledger_wal_open(struct ledger *l, int *alone, char *err)
{
	GUARD(wal_open(l->dir, &l->wal, alone, err));
	int restored = 0, rc = 0;
	if (*alone && (rc = wal_read(l->wal, err)) == 0 && (rc = wal_restore_base(l->wal, &restored, err)) == 0 &&
	    restored)
		fprintf(stderr,
			"assent: ledger %s: the machine restarted since its last sync: its synced base (LMDB "
			"transaction %llu) is restored, and its write-ahead log is applied on top\n",
			l->dir, (unsigned long long)wal_base(l->wal));
	if (rc != 0) {
		wal_free(l->wal);
		l->wal = NULL;
	}
	return rc;
}

/* Under LMDB's write lock (a write transaction begun and aborted around it). */
static int reset_locked(struct ledger *l, char *err)
{
	MDB_txn *t;
	int m = mdb_txn_begin(l->env, NULL, 0, &t);
	if (m != 0)
		return ledger_lmdb_fail(err, m, "begin");
	int rc = wal_reset(l->wal, l->env, &l->pin, err);
	mdb_txn_abort(t);
	if (rc == 0)
		l->wal_at = now_unix_ms();
	return rc;
}

static int apply_log(struct ledger *l, char *err)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(l->env, NULL, 0, &txn);
	if (rc != 0)
		return ledger_lmdb_fail(err, rc, "begin");
	struct tree_state s;
	const struct ledger_sync src = {.ctx = l->wal, .pull = wal_pull};
	rc = tree_load(l, txn, &s, err);
	uint64_t had = s.m.size;
	if (rc == 0)
		rc = tree_trusted(l, txn, &s, 0, err);
	if (rc == 0)
		rc = sync_import(l, &src, "the write-ahead log's", txn, &s, 0, err);
	if (rc == 0 && s.m.size > had)
		rc = tree_save(l, txn, &s, err);
	if (rc == 0 && s.m.size > had) {
		int c = mdb_txn_commit(txn);
		rc = c ? ledger_lmdb_fail(err, c, "commit") : 0;
	} else {
		mdb_txn_abort(txn);
	}
	if (rc == 0 && s.m.size > had)
		fprintf(stderr, "assent: ledger %s: %llu entries (%llu commits) applied from its write-ahead log\n",
			l->dir, (unsigned long long)(s.m.size - had), (unsigned long long)wal_applied(l->wal));
	if (rc == 0)
		l->size = s.m.size;
	return rc;
}

int ledger_wal_recover(struct ledger *l, int alone, char *err)
{
	int rc = alone ? apply_log(l, err) : 0;
	if (rc == 0 && alone)
		rc = wal_shared(l->wal, err);
	if (rc == 0 && l->sync) { /* cluster mode: LMDB syncs its own commits; no log */
		int m = mdb_env_sync(l->env, 1);
		rc = m ? ledger_lmdb_fail(err, m, "sync") : 0;
		if (rc == 0)
			(void)wal_remove_if_alone(l->wal);
		wal_free(l->wal);
		l->wal = NULL;
		return rc;
	}
	if (rc == 0) {
		int m = mdb_env_set_flags(l->env, MDB_NOSYNC, 1);
		rc = m ? ledger_lmdb_fail(err, m, "setting MDB_NOSYNC") : reset_locked(l, err);
	}
	return rc;
}

int ledger_wal_sync(struct ledger *l, char *err)
{
	return l->wal ? reset_locked(l, err) : 0;
}

void ledger_wal_close(struct ledger *l)
{
	if (!l->wal)
		return;
	char err[AS_ERRLEN];
	if (reset_locked(l, err) != 0)
		fprintf(stderr, "assent: warning: %s\n", err);
	else
		(void)wal_remove_if_alone(l->wal);
	if (l->pin)
		mdb_txn_abort(l->pin);
	l->pin = NULL;
	wal_free(l->wal);
	l->wal = NULL;
}

void ledger_release_pages(struct ledger *l)
{
	unsigned flags = 0;
	char want[4200], line[4600];
	/* Only a read-only map (no MDB_WRITEMAP): dropping its pages loses nothing. LMDB does not say
	 * where it mapped the file (mdb_env_info's address is a fixed map's), /proc/self/maps does. */
	if (!l || mdb_env_get_flags(l->env, &flags) != 0 || (flags & MDB_WRITEMAP))
		return;
	snprintf(want, sizeof want, " %s/data.mdb\n", l->dir);
	FILE *f = fopen("/proc/self/maps", "re");
	while (f && fgets(line, sizeof line, f)) {
		unsigned long a, b;
		size_t n = strlen(line), w = strlen(want);
		if (n > w && !strcmp(line + n - w, want) && sscanf(line, "%lx-%lx", &a, &b) == 2 && b > a)
			(void)madvise((void *)a, b - a, MADV_DONTNEED);
	}
	if (f)
		fclose(f);
}
