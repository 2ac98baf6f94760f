/* Cluster mode's side of the ledger (ledger.h, struct ledger_sync): importing what other
 * replicas appended to the shared ledger into this mirror, and handing this commit's entries
 * to the shared store. Nothing from the shared store is taken on trust: PostgreSQL, and
 * whoever can write to it, could hand over anything. An imported entry must be the next
 * seq, chain to the mirror's head, be a well-formed entry of a known kind and not go back
 * in time; the tree the imported entries make must be the one a checkpoint signed with this
 * ledger's own key covers. So what a replica mirrors is what some holder of the key signed. */
#define _GNU_SOURCE
#include "ledger/ledger_int.h"

#include <stdlib.h>
#include <string.h>

#include "ledger/entry.h"
#include "ledger/headsign.h"
#include "ledger/note.h"
#include "ledger/store.h"
#include "ledger/tiles.h"

struct pull {
	struct ledger *l;
	const char *src; /* "the cluster's", "the write-ahead log's": what error messages name */
	MDB_txn *txn;
	struct tree_state *s;
	uint64_t signed_to; /* the largest size a verified checkpoint covered */
	uint64_t first;	    /* the mirror's size before the pull */
};

static int entry_time(const struct cv *e, uint64_t *t)
{
	for (size_t i = 0; i < e->n; i++) {
		const struct cv *k = &e->items[2 * i], *v = &e->items[2 * i + 1];
		if (k->t == CV_TEXT && k->n == 4 && !memcmp(k->s, "time", 4) && v->t == CV_UINT) {
			*t = v->u;
			return 0;
		}
	}
	return -1;
}

static int take_entry(void *arg, uint64_t seq, const uint8_t *p, size_t n, char *err)
{
	struct pull *c = arg;
	struct tree_state *s = c->s;
	char e2[AS_ERRLEN] = "";
	if (seq != s->m.size)
		return as_fail(err, AS_ECORRUPT, "%s ledger sent entry %llu where entry %llu was due", c->src,
			       (unsigned long long)seq, (unsigned long long)s->m.size);
	if (n == 0 || n > ENTRY_MAX)
		return as_fail(err, AS_ECORRUPT, "%s entry %llu is %zu bytes", c->src, (unsigned long long)seq, n);
	struct cv *e = NULL;
	uint64_t t = 0;
	cv_arena_reset(&c->l->arena);
	if (cbor_decode(p, n, &c->l->arena, &e, e2) != 0 || entry_check(e, seq, s->head, e2) != 0)
		return as_fail(err, AS_ECORRUPT, "%s entry %llu is refused: %s", c->src, (unsigned long long)seq, e2);
	if (entry_time(e, &t) != 0 || t < s->last_time)
		return as_fail(err, AS_ECORRUPT, "%s entry %llu goes back in time", c->src, (unsigned long long)seq);
	uint8_t k[8], leaf[32];
	be64_put(k, seq);
	MDB_val key = {8, k}, val = {n, (void *)p};
	int rc = mdb_put(c->txn, c->l->entries, &key, &val, MDB_APPEND | MDB_NOOVERWRITE);
	if (rc != 0)
		return as_fail(err, AS_EIO, "ledger %s: storing %s entry %llu: %s", c->l->dir, c->src,
			       (unsigned long long)seq, mdb_strerror(rc));
	merkle_leaf_hash(p, n, leaf);
	GUARD(tile_put(c->txn, c->l->tiles, &s->m, leaf, err));
	merkle_append(&s->m, leaf);
	memcpy(s->head, leaf, 32);
	s->last_time = t;
	return 0;
}

/* The root of the first `size` entries as this transaction holds them. */
static int root_at(struct pull *c, uint64_t size, uint8_t root[32], char *err)
{
	if (size == c->s->m.size) {
		merkle_root(&c->s->m, root);
		return 0;
	}
	struct tile_reader r;
	tile_reader_init(&r, c->txn, c->l->entries);
	if (tile_range_hash(&r, 0, size, root) != 0)
		return as_fail(err, AS_ECORRUPT, "ledger %s: %s", c->l->dir, r.err);
	return 0;
}

static int take_ckpt(void *arg, uint64_t size, const uint8_t *note, size_t n, int periodic, char *err)
{
	struct pull *c = arg;
	struct tree_state *s = c->s;
	struct checkpoint cp;
	uint8_t root[32];
	char e2[AS_ERRLEN] = "";
	/* OpenSSL's copy of the key when there is one: about 20 times faster than mbedTLS here, and
	 * this runs under the cluster's append lock, once per commit that imports. */
	int bad = n > CKPT_MAX || (c->l->hs ? ckpt_verify_with(note, n, c->l->key, headsign_verify, c->l->hs, &cp, e2)
					    : ckpt_verify(note, n, &c->l->key, 1, &cp, e2));
	if (bad)
		return as_fail(err, AS_ECORRUPT, "%s checkpoint at %llu does not verify with this ledger's key: %s",
			       c->src, (unsigned long long)size, e2);
	if (cp.size != size || size > s->m.size || size <= c->first)
		return as_fail(err, AS_ECORRUPT,
			       "%s checkpoint stored at %llu covers %llu entries (the mirror had %llu, now %llu)",
			       c->src, (unsigned long long)size, (unsigned long long)cp.size,
			       (unsigned long long)c->first, (unsigned long long)s->m.size);
	if (strcmp(cp.origin, c->l->origin) != 0)
		return as_fail(err, AS_ECORRUPT, "%s checkpoint at %llu has origin %s, not %s", c->src,
			       (unsigned long long)size, cp.origin, c->l->origin);
	GUARD(root_at(c, size, root, err));
	if (memcmp(root, cp.root, 32) != 0)
		return as_fail(err, AS_ECORRUPT, "%s entries up to %llu are not the tree its checkpoint signs", c->src,
			       (unsigned long long)size);
	uint8_t k[8];
	be64_put(k, size);
	MDB_val key = {8, k}, val = {n, (void *)note};
	int rc = mdb_put(c->txn, c->l->ckpts, &key, &val, 0);
	if (rc == 0 && !periodic && s->head_ck && s->head_ck != size) {
		be64_put(k, s->head_ck);
		rc = mdb_del(c->txn, c->l->ckpts, &key, NULL);
		rc = rc == MDB_NOTFOUND ? 0 : rc;
	}
	if (rc != 0)
		return as_fail(err, AS_EIO, "ledger %s: storing %s checkpoint: %s", c->l->dir, c->src,
			       mdb_strerror(rc));
	if (periodic) {
		s->ckpt_size = size;
		s->ckpt_time = now_unix_ms();
	} else {
		s->head_ck = size;
	}
	if (size > c->signed_to)
		c->signed_to = size;
	return 0;
}

int sync_import(struct ledger *l, const struct ledger_sync *src, const char *name, MDB_txn *txn, struct tree_state *s,
		int lock, char *err)
{
	struct pull c = {.l = l, .src = name, .txn = txn, .s = s, .signed_to = s->m.size, .first = s->m.size};
	static const struct ledger_sync_take take = {take_entry, take_ckpt};
	GUARD(src->pull(src->ctx, s->m.size, lock, &take, &c, err));
	if (c.signed_to != s->m.size) {
		if (src->release)
			src->release(src->ctx);
		return as_fail(err, AS_ECORRUPT,
			       "%s ledger has %llu entries, but its checkpoints sign only %llu: refusing "
			       "to extend it (run assent-verify on an export)",
			       name, (unsigned long long)s->m.size, (unsigned long long)c.signed_to);
	}
	if (s->m.size > c.first) {
		merkle_root(&s->m, l->root);
		l->known = 1;
		l->size = s->m.size;
		if (s->m.size > l->high)
			l->high = s->m.size;
	}
	return 0;
}

int sync_pull(struct ledger *l, MDB_txn *txn, struct tree_state *s, int lock, char *err)
{
	return sync_import(l, l->sync, "the cluster's", txn, s, lock, err);
}

#define CLAIM_MAX 320

static int text_of(const struct cv *v, const char **s, size_t *n)
{
	if (!v || v->t != CV_TEXT || v->n > 128)
		return -1;
	*s = (const char *)v->s;
	*n = v->n;
	return 0;
}

/* What entry e takes once for the whole cluster (ledger.h, struct ledger_sync push); "" none.
 * -1 when its kind takes something and the fields to name it are not there: that commit fails
 * rather than go unclaimed. A reviewer is named by the name in the entry's reviewer map; a
 * passkey credential by its id's SHA-256 (an id may be up to 1,023 bytes). */
static int claim_of(const struct cv *e, char out[CLAIM_MAX])
{
	static const struct {
		const char *kind, *claim, *second; /* second: a field appended after the session id */
	} map[] = {{"decision", "end", NULL},	    {"timeout", "end", NULL},	  {"cancelled", "end", NULL},
		   {"abandoned", "dispatch", NULL}, /* an approved call never sent: its dispatch is taken */
		   {"dispatch", "dispatch", NULL},  {"outcome", "outcome", NULL}, {"approval", "approval", "reviewer"},
		   {"request", "request", NULL}};
	const char *sid, *x, *k;
	size_t sn, xn, kn;
	out[0] = 0;
	if (text_of(cv_get(e, "kind"), &k, &kn) != 0)
		return 0;
	if (kn == 7 && !memcmp(k, "passkey", 7)) {
		const struct cv *id = cv_get(e, "credential_id");
		if (text_of(cv_get(e, "event"), &x, &xn) != 0 || !id || id->t != CV_TEXT)
			return -1;
		uint8_t h[32];
		char hex[65];
		sha256(id->s, id->n, h);
		hex_encode(h, 32, hex);
		snprintf(out, CLAIM_MAX, "passkey:%.*s:%s", (int)xn, x, hex);
		return 0;
	}
	for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
		if (strlen(map[i].kind) != kn || memcmp(map[i].kind, k, kn) != 0)
			continue;
		if (text_of(cv_get(e, "session_id"), &sid, &sn) != 0)
			return -1;
		if (!map[i].second) {
			snprintf(out, CLAIM_MAX, "%s:%.*s", map[i].claim, (int)sn, sid);
			return 0;
		}
		const struct cv *who = cv_get(e, map[i].second);
		if (who && who->t == CV_MAP)
			who = cv_get(who, "name");
		if (text_of(who, &x, &xn) != 0)
			return -1;
		snprintf(out, CLAIM_MAX, "%s:%.*s:%.*s", map[i].claim, (int)sn, sid, (int)xn, x);
		return 0;
	}
	return 0;
}

int sync_push(struct ledger *l, MDB_txn *txn, uint64_t from, const struct tree_state *s, const struct buf *note,
	      int periodic, char *err)
{
	size_t n = (size_t)(s->m.size - from);
	struct ledger_rec *ents = calloc(n ? n : 1, sizeof *ents);
	char(*claims)[CLAIM_MAX] = calloc(n ? n : 1, CLAIM_MAX);
	const char **cl = calloc(n ? n : 1, sizeof *cl);
	int rc = ents && claims && cl ? 0 : as_fail(err, AS_ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		uint8_t k[8];
		be64_put(k, from + i);
		MDB_val key = {8, k}, val;
		if ((rc = mdb_get(txn, l->entries, &key, &val)) != 0) {
			rc = as_fail(err, AS_EIO, "ledger %s: re-reading entry %llu: %s", l->dir,
				     (unsigned long long)(from + i), mdb_strerror(rc));
			break;
		}
		ents[i] = (struct ledger_rec){val.mv_data, val.mv_size};
		struct cv *e = NULL;
		cv_arena_reset(&l->arena);
		if (cbor_decode(val.mv_data, val.mv_size, &l->arena, &e, NULL) != 0 || claim_of(e, claims[i]) != 0) {
			rc = as_fail(err, AS_EINVAL, "entry %llu names nothing the cluster can take once for it",
				     (unsigned long long)(from + i));
			break;
		}
		cl[i] = claims[i][0] ? claims[i] : NULL;
	}
	if (rc == 0)
		rc = l->sync->push(l->sync->ctx, from, ents, cl, n, note->p, note->len, periodic, err);
	else
		sync_release(l);
	free(ents);
	free(claims);
	free(cl);
	return rc;
}

void sync_release(struct ledger *l)
{
	l->sync->release(l->sync->ctx);
}

/* ledger.h; here beside the pull it drives (ledger.c keeps the appends). */
int ledger_catch_up(struct ledger *l, char *err)
{
	if (!l->sync)
		return 0;
	MDB_txn *txn;
	int rc = mdb_txn_begin(l->env, NULL, 0, &txn);
	if (rc != 0)
		return ledger_lmdb_fail(err, rc, "begin");
	struct tree_state s;
	rc = tree_load(l, txn, &s, err);
	if (rc == 0)
		rc = tree_trusted(l, txn, &s, 0, err);
	uint64_t mirrored = s.m.size, high = l->high, size = l->size;
	if (rc == 0 && (rc = sync_pull(l, txn, &s, 0, err)) == 0) {
		sync_release(l); /* nothing to store there: the read ends */
		if (s.m.size > mirrored)
			rc = tree_save(l, txn, &s, err);
	}
	if (rc == 0 && s.m.size > mirrored) {
		int c = mdb_txn_commit(txn);
		rc = c ? ledger_lmdb_fail(err, c, "commit") : 0;
	} else {
		mdb_txn_abort(txn);
	}
	if (rc == 0 && s.m.size > mirrored) {
		l->size = s.m.size;
		if (l->sync->imported)
			l->sync->imported(l->sync->ctx, mirrored, s.m.size);
	} else if (rc != 0) { /* what the pull saw is not in the mirror: as before it */
		l->known = 0;
		l->high = high;
		l->size = size;
	}
	return rc;
}
