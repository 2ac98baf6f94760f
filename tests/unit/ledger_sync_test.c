/* Unit tests for cluster mode's ledger side (ledger/sync.c, struct ledger_sync): two
 * ledgers in two directories with one checkpoint key append to one shared store (an
 * in-memory sequencer standing in for PostgreSQL) and each imports the other's entries.
 * What the shared store hands over is refused unless it is the next entry, chains, and
 * is the tree a checkpoint signed with the ledger's own key covers; a refused pull or a
 * failed push appends nothing anywhere. Both mirrors and the store verify as one ledger. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cbor.h"
#include "common/eckey.h"
#include "common/util.h"
#include "include/assent/verify.h"
#include "ledger/ledger.h"
#include "ledger/note.h"
#include "tests/unit/scratch.h"

/* ---- the fake shared store ---- */

#define MAXE 64
struct shared {
	struct buf e[MAXE];
	size_t n;
	struct buf ck[MAXE]; /* checkpoint notes; ck_size[i] their sizes */
	uint64_t ck_size[MAXE];
	int ck_periodic[MAXE];
	size_t nck;
	int locked, fail_push, pulls, pushes;
	char taken[MAXE][320]; /* claims, as PostgreSQL's assent_claims keeps them */
	size_t ntaken;
};

static int f_pull(void *ctx, uint64_t have, int lock, const struct ledger_sync_take *take, void *arg, char *err)
{
	struct shared *sh = ctx;
	(void)lock;
	sh->pulls++;
	assert_false(sh->locked);
	sh->locked = 1;
	for (size_t i = have; i < sh->n; i++) {
		int rc = take->entry(arg, i, sh->e[i].p, sh->e[i].len, err);
		if (rc != 0) {
			sh->locked = 0; /* the implementation releases after a refusal */
			return rc;
		}
	}
	for (size_t i = 0; i < sh->nck; i++) {
		if (sh->ck_size[i] <= have)
			continue;
		int rc = take->ckpt(arg, sh->ck_size[i], sh->ck[i].p, sh->ck[i].len, sh->ck_periodic[i], err);
		if (rc != 0) {
			sh->locked = 0;
			return rc;
		}
	}
	return 0;
}

static void ck_put(struct shared *sh, uint64_t size, const uint8_t *note, size_t n, int periodic)
{
	size_t k = sh->nck;
	for (size_t i = 0; i < sh->nck; i++)
		if (sh->ck_size[i] == size)
			k = i;
	if (k == sh->nck) {
		assert_true(sh->nck < MAXE);
		buf_init(&sh->ck[sh->nck++], 8192);
	}
	buf_reset(&sh->ck[k]);
	assert_int_equal(buf_put(&sh->ck[k], note, n), 0);
	sh->ck_size[k] = size;
	sh->ck_periodic[k] = periodic;
}

static int f_push(void *ctx, uint64_t from, const struct ledger_rec *ents, const char *const *claims, size_t n,
		  const uint8_t *note, size_t nlen, int periodic, char *err)
{
	struct shared *sh = ctx;
	assert_true(sh->locked);
	sh->locked = 0;
	if (sh->fail_push)
		return as_fail(err, AS_EIO, "the shared store is unreachable");
	size_t before = sh->ntaken;
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; claims[i] && k < sh->ntaken; k++)
			if (!strcmp(sh->taken[k], claims[i])) {
				sh->ntaken = before; /* the transaction rolls back */
				return as_fail(err, AS_EEXIST, "another replica took it first (%s)", claims[i]);
			}
		if (claims[i])
			snprintf(sh->taken[sh->ntaken++], sizeof sh->taken[0], "%s", claims[i]);
	}
	assert_int_equal(from, sh->n);
	for (size_t i = 0; i < n; i++) {
		assert_true(sh->n < MAXE);
		buf_init(&sh->e[sh->n], 1 << 16);
		assert_int_equal(buf_put(&sh->e[sh->n], ents[i].cbor, ents[i].len), 0);
		sh->n++;
	}
	ck_put(sh, sh->n, note, nlen, periodic);
	sh->pushes++;
	return 0;
}

static void f_release(void *ctx)
{
	struct shared *sh = ctx;
	sh->locked = 0;
}

static void shared_free(struct shared *sh)
{
	for (size_t i = 0; i < sh->n; i++)
		buf_free(&sh->e[i]);
	for (size_t i = 0; i < sh->nck; i++)
		buf_free(&sh->ck[i]);
}

/* ---- two replicas ---- */

struct t {
	char root[64];
	char dir[2][128]; /* ROOT/a/ledger, ROOT/b/ledger */
	char keys[128];	  /* ROOT/keys: one key for both */
	char pub[160];
	struct shared sh;
	struct ledger_sync sync;
};

static int setup(void **state)
{
	struct t *t = calloc(1, sizeof *t);
	if (!t)
		return -1;
	strcpy(t->root, "/tmp/assent-sync-test.XXXXXX");
	if (!mkdtemp(t->root)) {
		free(t);
		return -1;
	}
	snprintf(t->dir[0], sizeof t->dir[0], "%s/a/ledger", t->root);
	snprintf(t->dir[1], sizeof t->dir[1], "%s/b/ledger", t->root);
	snprintf(t->keys, sizeof t->keys, "%s/keys", t->root);
	snprintf(t->pub, sizeof t->pub, "%s/checkpoint.pub", t->keys);
	t->sync = (struct ledger_sync){.ctx = &t->sh, .pull = f_pull, .push = f_push, .release = f_release};
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;
	shared_free(&t->sh);
	scratch_rm(t->root);
	free(t);
	return 0;
}

static struct ledger *open_r(struct t *t, int r, char *err)
{
	struct ledger_opts o = {.keys_dir = t->keys, .map_size = (size_t)64 << 20, .sync = &t->sync};
	struct ledger *l = NULL;
	return ledger_open(t->dir[r], &o, &l, err) == 0 ? l : NULL;
}

/* Append the entry m, then free the arena it lives in. */
static int append_map(struct ledger *l, const struct cv *m, struct cv_arena *a, char *err)
{
	struct buf b;
	buf_init(&b, 1 << 16);
	assert_int_equal(cbor_encode(m, &b, err), 0);
	struct ledger_rec rec = {b.p, b.len};
	struct ledger_pos pos;
	int rc = ledger_append(l, &rec, 1, &pos, err);
	buf_free(&b);
	cv_arena_free(a);
	return rc;
}

/* An entry of kind with session_id sid and one more text field. */
static int append_kind(struct ledger *l, const char *kind, const char *sid, const char *k3, const char *v3, char *err)
{
	struct cv_arena a;
	cv_arena_init(&a, 32);
	struct cv *m = cv_map(&a, 3);
	const char *kv[3][2] = {{"kind", kind}, {"session_id", sid}, {k3, v3}};
	for (int i = 0; i < 3; i++) {
		assert_int_equal(cv_set_text(&a, &m->items[2 * i], kv[i][0], strlen(kv[i][0])), 0);
		assert_int_equal(cv_set_text(&a, &m->items[2 * i + 1], kv[i][1], strlen(kv[i][1])), 0);
	}
	return append_map(l, m, &a, err);
}

/* An approval of sid by reviewer (its reviewer a map, as decide.c writes it), or a passkey
 * enrolment of credential id cred by reviewer (when sid is NULL). */
static void kvt(struct cv_arena *a, struct cv *m, size_t *i, const char *k, const char *v)
{
	assert_int_equal(cv_set_text(a, &m->items[2 * *i], k, strlen(k)), 0);
	assert_int_equal(cv_set_text(a, &m->items[2 * *i + 1], v, strlen(v)), 0);
	(*i)++;
}

static void kvu(struct cv_arena *a, struct cv *m, size_t *i, const char *k, uint64_t v)
{
	assert_int_equal(cv_set_text(a, &m->items[2 * *i], k, strlen(k)), 0);
	cv_set_uint(&m->items[2 * *i + 1], v);
	(*i)++;
}

static int append_special(struct ledger *l, const char *sid, const char *reviewer, const char *cred, char *err)
{
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *m = cv_map(&a, 5), *rv = cv_map(&a, 2);
	size_t i = 0, j = 0;
	kvt(&a, rv, &j, "name", reviewer);
	kvt(&a, rv, &j, "channel", "cli");
	if (sid) {
		kvt(&a, m, &i, "kind", "approval");
		kvt(&a, m, &i, "session_id", sid);
		kvu(&a, m, &i, "n", 1);
		kvu(&a, m, &i, "quorum", 2);
		assert_int_equal(cv_set_text(&a, &m->items[2 * i], "reviewer", 8), 0);
		m->items[2 * i++ + 1] = *rv;
	} else {
		kvt(&a, m, &i, "kind", "passkey");
		kvt(&a, m, &i, "event", "removed");
		kvt(&a, m, &i, "reviewer", reviewer);
		kvt(&a, m, &i, "credential_id", cred);
	}
	m->n = i;
	return append_map(l, m, &a, err);
}

static int append_msg(struct ledger *l, const char *msg, char *err)
{
	struct cv_arena a;
	cv_arena_init(&a, 32);
	struct cv *m = cv_map(&a, 4);
	char sid[64];
	snprintf(sid, sizeof sid, "req-%s", msg); /* session ids are never reused */
	const char *kv[4][2] = {{"kind", "request"}, {"session_id", sid}, {"type", "tool_call"}, {"message", msg}};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(cv_set_text(&a, &m->items[2 * i], kv[i][0], strlen(kv[i][0])), 0);
		assert_int_equal(cv_set_text(&a, &m->items[2 * i + 1], kv[i][1], strlen(kv[i][1])), 0);
	}
	return append_map(l, m, &a, err);
}

static void verify_dir(const struct t *t, const char *dir, uint64_t size)
{
	const char *keys[] = {t->pub};
	struct av_ledger_opts vo = {.key_paths = keys, .nkeys = 1};
	struct av_ledger_report rep;
	assert_int_equal(av_verify_ledger(dir, &vo, &rep), 0);
	if (!rep.ok)
		fail_msg("%s: %s", dir, rep.reason);
	assert_int_equal(rep.entries, size);
}

/* A: key entry + 2; B opens (imports 3, records no key entry of its own), appends 2; A's
 * next append imports B's 2 first. Both mirrors hold the store's entries, byte for byte. */
static void test_two_replicas_one_chain(void **state)
{
	struct t *t = *state;
	char err[AS_ERRLEN] = "";
	struct ledger *a = open_r(t, 0, err);
	assert_non_null(a);
	assert_int_equal(t->sh.n, 1); /* the `key` entry, stored there first */
	assert_int_equal(append_msg(a, "a1", err), 0);
	assert_int_equal(append_msg(a, "a2", err), 0);
	struct ledger *b = open_r(t, 1, err);
	if (!b)
		fail_msg("open b: %s", err);
	assert_int_equal(ledger_size(b), 3);
	assert_int_equal(t->sh.n, 3); /* no second key entry */
	assert_int_equal(append_msg(b, "b1", err), 0);
	assert_int_equal(append_msg(b, "b2", err), 0);
	assert_int_equal(append_msg(a, "a3", err), 0);
	assert_int_equal(ledger_size(a), 6);
	assert_int_equal(t->sh.n, 6);
	assert_int_equal(ledger_catch_up(b, err), 0);
	assert_int_equal(ledger_size(b), 6);
	assert_false(t->sh.locked);
	ledger_close(a);
	ledger_close(b);
	verify_dir(t, t->dir[0], 6);
	verify_dir(t, t->dir[1], 6);
}

/* Changes to the shared store that the key did not sign are refused, and nothing is appended. */
static void tamper_case(struct t *t, void (*tamper)(struct shared *), const char *want)
{
	char err[AS_ERRLEN] = "";
	struct ledger *a = open_r(t, 0, err);
	assert_non_null(a);
	assert_int_equal(append_msg(a, "a1", err), 0);
	ledger_close(a);
	tamper(&t->sh);
	size_t before = t->sh.n;
	struct ledger *b = open_r(t, 1, err);
	assert_null(b);
	if (!strstr(err, want))
		fail_msg("expected '%s' in: %s", want, err);
	assert_int_equal(t->sh.n, before);
	assert_false(t->sh.locked);
}

static void flip_entry(struct shared *sh)
{
	sh->e[1].p[sh->e[1].len - 1] ^= 1; /* the message's last byte */
}
static void drop_checkpoints(struct shared *sh)
{
	sh->nck = 0; /* the buffers stay for shared_free */
	for (size_t i = 0; i < MAXE && sh->ck[i].p; i++)
		buf_free(&sh->ck[i]);
}
static void swap_entries(struct shared *sh)
{
	struct buf x = sh->e[0];
	sh->e[0] = sh->e[1];
	sh->e[1] = x;
}
static void forge_checkpoint(struct shared *sh)
{
	sh->ck[sh->nck - 1].p[20] ^= 1; /* in the signed body: the signature no longer verifies */
}
static void extra_entry(struct shared *sh)
{
	/* an entry nobody signed, appended after the head checkpoint: a copy of entry 1 */
	buf_init(&sh->e[sh->n], 1 << 16);
	assert_int_equal(buf_put(&sh->e[sh->n], sh->e[1].p, sh->e[1].len), 0);
	sh->n++;
}

static void test_altered_entry_refused(void **state)
{
	tamper_case(*state, flip_entry, "not the tree its checkpoint signs");
}
static void test_unsigned_entries_refused(void **state)
{
	tamper_case(*state, drop_checkpoints, "checkpoints sign only 0");
}
static void test_reordered_entries_refused(void **state)
{
	tamper_case(*state, swap_entries, "refused");
}
static void test_forged_checkpoint_refused(void **state)
{
	tamper_case(*state, forge_checkpoint, "does not verify with this ledger's key");
}
static void test_entry_without_chain_refused(void **state)
{
	tamper_case(*state, extra_entry, "refused");
}

/* A push that fails (PostgreSQL gone) appends nothing to the mirror either; the next works. */
static void test_failed_push_appends_nothing(void **state)
{
	struct t *t = *state;
	char err[AS_ERRLEN] = "";
	struct ledger *a = open_r(t, 0, err);
	assert_non_null(a);
	assert_int_equal(append_msg(a, "a1", err), 0);
	t->sh.fail_push = 1;
	assert_int_equal(append_msg(a, "a2", err), AS_EIO);
	assert_non_null(strstr(err, "unreachable"));
	assert_int_equal(ledger_size(a), 2);
	assert_int_equal(t->sh.n, 2);
	t->sh.fail_push = 0;
	assert_int_equal(append_msg(a, "a3", err), 0);
	assert_int_equal(ledger_size(a), 3);
	ledger_close(a);
	verify_dir(t, t->dir[0], 3);
}

/* Two replicas end one request at once: the first decision takes "end:SID"; the second, a
 * timeout from the other replica, is refused by the shared store and appended nowhere. So are
 * a second outcome of one call; another request's end is not. */
static void test_claims_taken_once(void **state)
{
	struct t *t = *state;
	char err[AS_ERRLEN] = "";
	struct ledger *a = open_r(t, 0, err), *b = open_r(t, 1, err);
	assert_true(a && b);
	assert_int_equal(append_kind(a, "decision", "req-x", "outcome", "approved", err), 0);
	uint64_t n = t->sh.n;
	assert_int_equal(append_kind(b, "timeout", "req-x", "reason", "deadline", err), AS_EEXIST);
	assert_non_null(strstr(err, "end:req-x"));
	assert_int_equal(t->sh.n, n);
	assert_int_equal(ledger_size(b), n - 1); /* the whole commit failed: nor is a's decision imported */
	assert_int_equal(append_kind(b, "outcome", "req-x", "status", "ok", err), 0);
	assert_int_equal(ledger_size(b), n + 1); /* a's decision, then b's outcome */
	assert_int_equal(append_kind(a, "outcome", "req-x", "status", "ok", err), AS_EEXIST);
	assert_non_null(strstr(err, "outcome:req-x"));
	assert_int_equal(append_kind(a, "cancelled", "req-y", "reason", "r", err), 0); /* another request: free */
	/* an approved call that never left is abandoned once its approval is in: it takes the
	 * dispatch (the approval holds the end), and only once */
	assert_int_equal(append_kind(a, "decision", "req-w", "outcome", "approved", err), 0);
	assert_int_equal(append_kind(b, "abandoned", "req-w", "reason", "r", err), 0);
	assert_int_equal(append_kind(a, "abandoned", "req-w", "reason", "r", err), AS_EEXIST);
	assert_non_null(strstr(err, "dispatch:req-w"));
	/* one approval a reviewer (named in the entry's reviewer map), whichever replica */
	assert_int_equal(append_special(a, "req-z", "alice", NULL, err), 0);
	assert_int_equal(append_special(b, "req-z", "bob", NULL, err), 0);
	assert_int_equal(append_special(b, "req-z", "alice", NULL, err), AS_EEXIST);
	assert_non_null(strstr(err, "approval:req-z:alice"));
	assert_int_equal(ledger_catch_up(a, err), 0);
	verify_dir(t, t->dir[0], t->sh.n); /* what follows is a claim's test, not a whole passkey story */
	/* a credential removed once, however long its id (claimed by its SHA-256) */
	char cred[400];
	memset(cred, 'Q', sizeof cred - 1);
	cred[sizeof cred - 1] = 0;
	assert_int_equal(append_special(a, NULL, "alice", cred, err), 0);
	assert_int_equal(append_special(b, NULL, "bob", cred, err), AS_EEXIST);
	assert_non_null(strstr(err, "passkey:removed:"));
	ledger_close(a);
	ledger_close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_two_replicas_one_chain, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_altered_entry_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unsigned_entries_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reordered_entries_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_forged_checkpoint_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_entry_without_chain_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failed_push_appends_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_claims_taken_once, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
