/* Unit tests for the verifiers' edges that the ledger tests leave out (verify/vkeys.c,
 * verify/proof.c, key pinning in verify/ledger_verify.c), on a real ledger in a scratch
 * state directory: which checkpoint key a verification trusts and how it is pinned,
 * and inclusion proofs made, checked and refused field by field. */
#define _GNU_SOURCE
#include <dirent.h>
#include <jansson.h>
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

#include "include/assent/verify.h"
#include "common/cbor.h"
#include "ledger/ledger.h"
#include "ledger/merkle.h"
#include "ledger/note.h"
#include "verify/proof.h"
#include "verify/vkeys.h"
#include "common/util.h"
#include "tests/unit/scratch.h"

#define ENTRIES 6 /* appended after the key entry: a tree of 7 */

struct t {
	char state[64], dir[96], pub[128], other_state[64], other_dir[96], other_pub[128], ckfile[128];
	struct vkeys keys, other;
};

/* A ledger of n request entries (one commit each) in STATE/ledger, keys in STATE/keys. */
static void make_ledger(const char *dir, size_t n)
{
	struct ledger_opts lo = {.map_size = (size_t)16 << 20, .checkpoint_every = 1000000, .checkpoint_secs = 100000};
	struct ledger *l;
	char err[AS_ERRLEN] = "";
	if (ledger_open(dir, &lo, &l, err) != 0)
		fail_msg("ledger_open: %s", err);
	for (size_t i = 0; i < n; i++) {
		struct cv_arena a;
		cv_arena_init(&a, 64);
		struct cv *m = cv_map(&a, 4);
		char msg[64];
		snprintf(msg, sizeof msg, "proof test %zu", i);
		const char *kv[4][2] = {
		    {"kind", "request"}, {"session_id", "fb_proof"}, {"type", "approval"}, {"message", msg}};
		for (int k = 0; k < 4; k++) {
			assert_int_equal(cv_set_text(&a, &m->items[2 * k], kv[k][0], strlen(kv[k][0])), 0);
			assert_int_equal(cv_set_text(&a, &m->items[2 * k + 1], kv[k][1], strlen(kv[k][1])), 0);
		}
		struct buf b;
		buf_init(&b, 4096);
		assert_int_equal(cbor_encode(m, &b, err), 0);
		struct ledger_rec r = {b.p, b.len};
		struct ledger_pos pos;
		if (ledger_append(l, &r, 1, &pos, err) != 0)
			fail_msg("append: %s", err);
		buf_free(&b);
		cv_arena_free(&a);
	}
	ledger_close(l);
}

static int setup(void **state)
{
	struct t *t = calloc(1, sizeof *t);
	if (!t)
		return -1;
	snprintf(t->state, sizeof t->state, "/tmp/assent-verify-test.XXXXXX");
	snprintf(t->other_state, sizeof t->other_state, "/tmp/assent-verify-other.XXXXXX");
	if (!mkdtemp(t->state) || !mkdtemp(t->other_state)) {
		free(t);
		return -1;
	}
	snprintf(t->dir, sizeof t->dir, "%s/ledger", t->state);
	snprintf(t->pub, sizeof t->pub, "%s/keys/checkpoint.pub", t->state);
	snprintf(t->ckfile, sizeof t->ckfile, "%s/checkpoint", t->dir);
	snprintf(t->other_dir, sizeof t->other_dir, "%s/ledger", t->other_state);
	snprintf(t->other_pub, sizeof t->other_pub, "%s/keys/checkpoint.pub", t->other_state);
	make_ledger(t->dir, ENTRIES);
	make_ledger(t->other_dir, 1); /* another ledger, another key */
	char err[AS_ERRLEN];
	const char *p[] = {t->pub}, *q[] = {t->other_pub};
	if (vkeys_load(&t->keys, NULL, p, 1, err) != 0 || vkeys_load(&t->other, NULL, q, 1, err) != 0) {
		free(t);
		return -1;
	}
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;
	vkeys_free(&t->keys);
	vkeys_free(&t->other);
	scratch_rm(t->state);
	scratch_rm(t->other_state);
	free(t);
	return 0;
}

/* SHA-256 of the DER inside the PEM file, computed here without eckey. */
static void pem_spki_sha256(const char *path, char hex[65])
{
	struct buf pem;
	char err[AS_ERRLEN], b64[512] = "";
	assert_int_equal(file_read(path, 4096, &pem, err), 0);
	assert_int_equal(buf_putc(&pem, 0), 0);
	char *s = strstr((char *)pem.p, "-----BEGIN PUBLIC KEY-----\n");
	assert_non_null(s);
	size_t n = 0;
	for (s = strchr(s, '\n') + 1; *s && *s != '-'; s++)
		if (*s != '\n' && n + 1 < sizeof b64)
			b64[n++] = *s;
	uint8_t der[256], h[32];
	size_t dn;
	assert_int_equal(b64_decode(b64, n, der, sizeof der, &dn), 0);
	sha256(der, dn, h);
	hex_encode(h, 32, hex);
	buf_free(&pem);
}

static void test_vkeys(void **state)
{
	struct t *t = *state;
	struct vkeys v;
	char err[AS_ERRLEN] = "", hex[65], want[65];
	/* nothing pinned, nowhere to look */
	assert_int_equal(vkeys_load(&v, NULL, NULL, 0, err), AS_EINVAL);
	assert_non_null(strstr(err, "no checkpoint key pinned"));
	/* the state directory's key, marked as such */
	assert_int_equal(vkeys_load(&v, t->dir, NULL, 0, err), 0);
	assert_int_equal(v.n, 1);
	assert_int_equal(v.from_state, 1);
	assert_int_equal(vkeys_sha256(v.k[0], hex), 0);
	pem_spki_sha256(t->pub, want);
	assert_string_equal(hex, want);
	vkeys_free(&v);
	assert_int_equal(v.n, 0);
	/* a state directory without keys */
	char bare[160];
	snprintf(bare, sizeof bare, "%s/nokeys/ledger", t->state);
	assert_int_equal(vkeys_load(&v, bare, NULL, 0, err), AS_ENOTFOUND);
	assert_non_null(strstr(err, "nokeys/keys/checkpoint.pub"));
	/* --key files win over the state directory */
	const char *two[] = {t->other_pub, t->pub};
	assert_int_equal(vkeys_load(&v, t->dir, two, 2, err), 0);
	assert_int_equal(v.n, 2);
	assert_int_equal(v.from_state, 0);
	assert_int_equal(vkeys_sha256(v.k[0], hex), 0);
	pem_spki_sha256(t->other_pub, want);
	assert_string_equal(hex, want);
	vkeys_free(&v);
	/* a missing file, a file that is no key, too many keys: nothing is kept */
	char missing[160], notkey[160];
	snprintf(missing, sizeof missing, "%s/absent.pub", t->state);
	snprintf(notkey, sizeof notkey, "%s/checkpoint", t->dir);
	const char *m[] = {t->pub, missing}, *nk[] = {notkey};
	assert_int_equal(vkeys_load(&v, NULL, m, 2, err), AS_ENOTFOUND);
	assert_int_equal(v.n, 0);
	assert_int_equal(vkeys_load(&v, NULL, nk, 1, err), AS_EINVAL);
	assert_int_equal(v.n, 0);
	const char *many[VKEYS_MAX + 1];
	for (size_t i = 0; i <= VKEYS_MAX; i++)
		many[i] = t->pub;
	assert_int_equal(vkeys_load(&v, NULL, many, VKEYS_MAX, err), 0);
	assert_int_equal(v.n, VKEYS_MAX);
	vkeys_free(&v);
	assert_int_equal(vkeys_load(&v, NULL, many, VKEYS_MAX + 1, err), AS_EINVAL);
	assert_non_null(strstr(err, "at most 16"));
}

static void ledger_holds(const char *dir, const struct av_ledger_opts *o, int ok, const char *why,
			 struct av_ledger_report *rep)
{
	int rc = av_verify_ledger(dir, o, rep);
	if (rc != 0 || rep->ok != ok || (why && !strstr(rep->reason, why)))
		fail_msg("want ok=%d '%s', got rc %d ok %d '%s'", ok, why ? why : "", rc, rep->ok, rep->reason);
}

/* How the checkpoint key is pinned: a file, the key's digest, a saved checkpoint, or
 * deliberately not at all. */
static void test_key_pinning(void **state)
{
	struct t *t = *state;
	struct av_ledger_report rep;
	char hex[65], upper[65], other_hex[65];
	pem_spki_sha256(t->pub, hex);
	pem_spki_sha256(t->other_pub, other_hex);
	struct av_ledger_opts none = {0};
	assert_int_equal(av_verify_ledger(t->dir, &none, &rep), AS_EINVAL);
	assert_non_null(strstr(rep.reason, "no checkpoint key pinned"));

	struct av_ledger_opts o = {.key_sha256 = hex};
	ledger_holds(t->dir, &o, 1, NULL, &rep);
	assert_string_equal(rep.key_sha256, hex);
	assert_int_equal(rep.key_from_state, 0);
	assert_int_equal(rep.entries, ENTRIES + 1);
	/* the origin names the key: its ID is the digest's first 4 bytes */
	char origin[64];
	snprintf(origin, sizeof origin, "assent/%.8s", hex);
	assert_string_equal(rep.origin, origin);

	o.key_sha256 = other_hex;
	ledger_holds(t->dir, &o, 0, "the checkpoint key in the state directory is not the pinned one", &rep);
	for (size_t i = 0; i < 65; i++)
		upper[i] = hex[i] >= 'a' && hex[i] <= 'f' ? (char)(hex[i] - 32) : hex[i];
	o.key_sha256 = upper; /* pins are lowercase hex, as assent-verify prints them */
	ledger_holds(t->dir, &o, 0, "not the pinned one", &rep);
	/* a key file and a digest: the digest must be one of the files' */
	const char *k[] = {t->other_pub};
	struct av_ledger_opts kd = {.key_paths = k, .nkeys = 1, .key_sha256 = hex};
	ledger_holds(t->dir, &kd, 0, "the checkpoint key given is not the pinned one", &rep);
	/* another ledger's key signed none of these checkpoints */
	struct av_ledger_opts ko = {.key_paths = k, .nkeys = 1};
	ledger_holds(t->dir, &ko, 0, NULL, &rep);
	assert_true(rep.reason[0] != 0);
	/* unpinned on purpose: consistency only, and the report says so */
	struct av_ledger_opts fs = {.key_from_state = 1};
	ledger_holds(t->dir, &fs, 1, NULL, &rep);
	assert_int_equal(rep.key_from_state, 1);
	/* a saved checkpoint another key signed does not pin the state directory's key */
	char other_ck[160];
	snprintf(other_ck, sizeof other_ck, "%s/checkpoint", t->other_dir);
	const char *tr[] = {other_ck};
	struct av_ledger_opts to = {.trusted_paths = tr, .ntrusted = 1};
	ledger_holds(t->dir, &to, 0, "is not signed by the key in the state directory", &rep);
	const char *mine[] = {t->ckfile};
	to.trusted_paths = mine;
	ledger_holds(t->dir, &to, 1, NULL, &rep);
	assert_int_equal(rep.trusted, 1);
	assert_int_equal(rep.key_from_state, 0);
}

/* Witnesses given to av_verify_ledger (the cosignatures themselves: cosig_test.c and
 * tests/integration/witness_verify.sh): unusable options refused, none cosigned reported. */
static void test_witness_options(void **state)
{
	struct t *t = *state;
	struct av_ledger_report rep;
	char hex[65];
	pem_spki_sha256(t->pub, hex);
	const char *w[] = {"witness.example/w1+b2ee8dfa+BGp0RUWGBlqVJr4EoFvshyQKcberIVfI9EentsI+ZzPr",
			   "witness.example/w2+1fcab208+BM8Bp0zdKAYvyw+MuL3lvPIh6d/J8BuYYCKJOyMGBKuj",
			   "witness.example/w1+00000000+BGp0RUWGBlqVJr4EoFvshyQKcberIVfI9EentsI+ZzPr"};
	struct av_ledger_opts o = {.key_sha256 = hex};
	ledger_holds(t->dir, &o, 1, NULL, &rep);
	assert_int_equal(rep.witnesses, 0);
	assert_int_equal(rep.witnessed, 0);
	o.witness_vkeys = w;
	o.nwitnesses = 2;
	ledger_holds(t->dir, &o, 0, "no stored checkpoint is cosigned by 1 of the 2 witnesses given", &rep);
	assert_int_equal(rep.witnesses, 2);
	assert_int_equal(rep.witness_threshold, 1);
	assert_int_equal(rep.best_cosigned, 0);
	assert_string_equal(rep.witness[1].name, "witness.example/w2");
	o.witness_threshold = 3;
	assert_int_equal(av_verify_ledger(t->dir, &o, &rep), AS_EINVAL);
	assert_non_null(strstr(rep.reason, "more than the 2 witnesses"));
	o.witness_threshold = 0;
	o.witness_vkeys = w + 2; /* a key ID that is not the key's */
	o.nwitnesses = 1;
	assert_int_equal(av_verify_ledger(t->dir, &o, &rep), AS_EINVAL);
	assert_non_null(strstr(rep.reason, "does not match the key"));
	const char *twice[] = {w[0], w[0]};
	o.witness_vkeys = twice;
	o.nwitnesses = 2;
	assert_int_equal(av_verify_ledger(t->dir, &o, &rep), AS_EINVAL);
	assert_non_null(strstr(rep.reason, "given twice"));
	o.nwitnesses = AV_WITNESS_MAX + 1;
	assert_int_equal(av_verify_ledger(t->dir, &o, &rep), AS_EINVAL);
	assert_non_null(strstr(rep.reason, "at most 32"));
}

/* ---- inclusion proofs ---- */

static char *make_proof(const struct t *t, uint64_t seq, uint64_t size)
{
	struct buf out;
	char err[AS_ERRLEN] = "";
	buf_init(&out, PROOF_MAX);
	if (proof_make(t->dir, seq, size, t->keys.k, t->keys.n, &out, err) != 0)
		fail_msg("proof_make %llu: %s", (unsigned long long)seq, err);
	assert_int_equal(buf_putc(&out, 0), 0);
	return (char *)out.p;
}

static int check(const struct t *t, const char *proof, const char *ckpt, const struct vkeys *k, char *err)
{
	uint64_t idx, size;
	return proof_check((const uint8_t *)proof, strlen(proof), (const uint8_t *)ckpt, ckpt ? strlen(ckpt) : 0,
			   (k ? k : &t->keys)->k, (k ? k : &t->keys)->n, &idx, &size, err);
}

static void proof_refused(const struct t *t, const char *proof, const char *ckpt, const struct vkeys *k,
			  const char *why)
{
	char err[AS_ERRLEN] = "";
	int rc = check(t, proof, ckpt, k, err);
	if (rc != AS_ECORRUPT || !strstr(err, why))
		fail_msg("want '%s', got %d '%s'", why, rc, err);
}

static void test_proof_every_entry(void **state)
{
	struct t *t = *state;
	for (uint64_t seq = 0; seq <= ENTRIES; seq++) {
		char *p = make_proof(t, seq, 0), err[AS_ERRLEN] = "";
		uint64_t idx = 99, size = 0;
		if (proof_check((const uint8_t *)p, strlen(p), NULL, 0, t->keys.k, t->keys.n, &idx, &size, err) != 0)
			fail_msg("proof of %llu: %s", (unsigned long long)seq, err);
		assert_int_equal(idx, seq);
		assert_int_equal(size, ENTRIES + 1);
		/* by another key, refused */
		proof_refused(t, p, NULL, &t->other, "proof's checkpoint:");
		free(p);
	}
	/* the checkpoint file of the same size may be given instead of the proof's own */
	struct buf ck;
	char err[AS_ERRLEN];
	assert_int_equal(file_read(t->ckfile, CKPT_MAX, &ck, err), 0);
	assert_int_equal(buf_putc(&ck, 0), 0);
	char *p = make_proof(t, 3, 0);
	assert_int_equal(check(t, p, (const char *)ck.p, NULL, err), 0);
	free(p);
	/* an entry past the tree */
	struct buf out;
	buf_init(&out, PROOF_MAX);
	assert_int_not_equal(proof_make(t->dir, ENTRIES + 1, 0, t->keys.k, t->keys.n, &out, err), 0);
	buf_free(&out);
	buf_free(&ck);
}

/* Each field of a good proof changed: refused, for that field's reason. */
static void test_proof_fields(void **state)
{
	struct t *t = *state;
	char *good = make_proof(t, 2, 0), *three = make_proof(t, 3, 0);
	json_t *g = json_loads(good, 0, NULL), *g3 = json_loads(three, 0, NULL);
	assert_non_null(g);
	assert_non_null(g3);
	assert_true(json_array_size(json_object_get(g, "path")) >= 2);
	const char *ck = json_string_value(json_object_get(g, "checkpoint"));
	assert_non_null(ck);
	char *ck_bad = strdup(ck);
	ck_bad[strlen("assent/")] ^= 1; /* the origin line, under the signature */
	char *leaf_up = strdup(json_string_value(json_object_get(g, "leaf_hash")));
	for (char *c = leaf_up; *c; c++)
		if (*c >= 'a' && *c <= 'f')
			*c = (char)(*c - 32);
	char *path0 = strdup(json_string_value(json_array_get(json_object_get(g, "path"), 0)));
	path0[0] = path0[0] == '0' ? '1' : '0';
	json_t *path_bad = json_deep_copy(json_object_get(g, "path"));
	json_array_set_new(path_bad, 0, json_string(path0));
	struct {
		const char *field;
		json_t *value; /* NULL: removed */
		const char *why;
	} c[] = {
	    {"index", json_string("2"), "index, tree_size, leaf_hash or root malformed"},
	    {"index", json_integer(-1), "index, tree_size, leaf_hash or root malformed"},
	    {"tree_size", json_integer(ENTRIES), "tree size or root differs from the signed checkpoint"},
	    {"leaf_hash", json_string(leaf_up), "index, tree_size, leaf_hash or root malformed"},
	    {"leaf_hash", json_incref(json_object_get(g3, "leaf_hash")), "the entry does not hash to leaf_hash"},
	    {"root", json_incref(json_object_get(g3, "leaf_hash")), "tree size or root differs"},
	    {"path", json_string("x"), "path must be an array"},
	    {"path", json_pack("[s]", "zz"), "path[0] is not a lowercase hex SHA-256 hash"},
	    {"path", path_bad, "the path does not lead from entry 2"},
	    {"path", json_array(), "the path does not lead from entry 2"},
	    {"entry", json_string("!!"), "entry is not base64"},
	    {"entry", json_incref(json_object_get(g3, "entry")), "the entry does not hash to leaf_hash"},
	    {"checkpoint", json_null(), "proof carries no checkpoint"},
	    {"checkpoint", json_string(ck_bad), "proof's checkpoint:"},
	    {"origin", json_string("assent/00000000"), "origin does not match the checkpoint's"},
	    {"origin", NULL, "exactly the fields of a proof"},
	    {"extra", json_true(), "exactly the fields of a proof"},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		json_t *m = json_deep_copy(g);
		if (c[i].value)
			json_object_set_new(m, c[i].field, c[i].value);
		else
			json_object_del(m, c[i].field);
		char *s = json_dumps(m, JSON_COMPACT);
		proof_refused(t, s, NULL, NULL, c[i].why);
		free(s);
		json_decref(m);
	}
	/* an entry and its leaf from seq 3, claimed at index 2: the entry names its own seq */
	json_t *m = json_deep_copy(g);
	json_object_set(m, "entry", json_object_get(g3, "entry"));
	json_object_set(m, "leaf_hash", json_object_get(g3, "leaf_hash"));
	char *s = json_dumps(m, JSON_COMPACT);
	proof_refused(t, s, NULL, NULL, "proof: entry 2 is malformed");
	free(s);
	json_decref(m);
	/* a field renamed: as many fields, one missing */
	m = json_deep_copy(g);
	json_object_set(m, "rooot", json_object_get(g, "root"));
	json_object_del(m, "root");
	s = json_dumps(m, JSON_COMPACT);
	proof_refused(t, s, NULL, NULL, "proof has no 'root'");
	free(s);
	json_decref(m);
	/* a checkpoint given that is not the proof's own */
	proof_refused(t, good, ck_bad, NULL, "proof's checkpoint:");
	/* not JSON, duplicate keys, too large */
	proof_refused(t, "{\"index\":", NULL, NULL, "proof is not valid JSON");
	char *dup = NULL;
	assert_true(asprintf(&dup, "{\"index\":2,%s", good + 1) > 0);
	proof_refused(t, dup, NULL, NULL, "proof is not valid JSON");
	free(dup);
	char err[AS_ERRLEN] = "";
	uint64_t idx, size;
	assert_int_equal(
	    proof_check((const uint8_t *)good, PROOF_MAX + 1, NULL, 0, t->keys.k, t->keys.n, &idx, &size, err),
	    AS_ECORRUPT);
	assert_non_null(strstr(err, "over the maximum"));
	free(ck_bad), free(leaf_up), free(path0);
	json_decref(g);
	json_decref(g3);
	free(good), free(three);
}

/* A proof at an older checkpoint holds against that checkpoint only. */
static void test_proof_older_size(void **state)
{
	struct t *t = *state;
	char *latest = make_proof(t, 0, 0);
	json_t *j = json_loads(latest, 0, NULL);
	const char *ck = json_string_value(json_object_get(j, "checkpoint"));
	char *p = make_proof(t, 0, 1); /* the periodic checkpoint at size 1 */
	char err[AS_ERRLEN] = "";
	uint64_t idx, size;
	if (proof_check((const uint8_t *)p, strlen(p), NULL, 0, t->keys.k, t->keys.n, &idx, &size, err) != 0)
		fail_msg("proof at size 1: %s", err);
	assert_int_equal(size, 1);
	/* against a later checkpoint: refused, saying how to make a proof at its size */
	proof_refused(t, p, ck, NULL,
		      "proof: it is for the tree of size 1, the checkpoint given is of size 7: make the proof at that "
		      "size (assent-verify proof LEDGER 0 --size 7 --key PUB.pem), or check it against a checkpoint "
		      "of size 1");
	free(p);
	json_decref(j);
	free(latest);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_vkeys, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_key_pinning, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_witness_options, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_proof_every_entry, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_proof_fields, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_proof_older_size, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
