/* assent-verify's commands: ledger, checkpoint, exact, export, proof, token (verify/main.c
 * parses the arguments and calls them; commands.h). Commands that read an LMDB file run
 * the read in a child process: LMDB trusts its file, and a damaged one can crash the
 * reader (NOTES.md); we report that as damage instead of dying with it. */
#define _GNU_SOURCE
#include "verify/commands.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cbor.h"
#include "ledger/cosig.h"
#include "ledger/entry.h"
#include "ledger/merkle.h"
#include "ledger/note.h"
#include "ledger/store.h"
#include "verify/consist.h"
#include "verify/exact.h"
#include "verify/proof.h"

const char *prog = "assent-verify";

int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (see %s --help)\n", prog);
	va_end(ap);
	return EXIT_USAGE;
}

int not_holds(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return EXIT_NOT;
}

/* Run fn in a child; a child killed by a signal means LMDB met a damaged file. */
int isolated(int (*fn)(void *), void *arg, const char *dir)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: cannot fork: %s\n", prog, strerror(errno));
		return EXIT_USAGE;
	}
	if (pid == 0) {
		struct rlimit no_core = {0, 0};
		setrlimit(RLIMIT_CORE, &no_core);
		/* A damaged file can also send LMDB round a loop: bound the reader's CPU time
		 * (a minute, plus a second per 8 MB of data.mdb, far above what reading takes). */
		char path[4200];
		struct stat st;
		snprintf(path, sizeof path, "%s/data.mdb", dir);
		rlim_t secs = 60 + (stat(path, &st) == 0 ? (rlim_t)st.st_size / (8u << 20) : 0);
		struct rlimit cpu = {secs, secs + 5};
		setrlimit(RLIMIT_CPU, &cpu);
		int rc = fn(arg);
		fflush(NULL);
		_exit(rc);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return EXIT_USAGE;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return not_holds("ledger %s is damaged: reading it killed the LMDB reader (signal %d, %s)", dir, WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
}

int load_keys(struct vkeys *v, const char *dir, const struct keyopts *k)
{
	char err[AS_ERRLEN], hex[65];
	int rc = vkeys_load(v, k->from_state || k->sha256 ? dir : NULL, k->keys, k->nkeys, err);
	if (rc != 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return EXIT_USAGE;
	}
	if (k->sha256) {
		for (size_t i = 0; i < v->n; i++)
			if (vkeys_sha256(v->k[i], hex) == 0 && !strcmp(hex, k->sha256))
				return 0;
		vkeys_free(v);
		fprintf(stderr, "%s: the checkpoint key is not the one --key-sha256 pins\n", prog);
		return EXIT_NOT;
	}
	if (v->from_state)
		fprintf(stderr,
			"%s: note: checkpoint key read from the state directory unpinned (--key-from-state): "
			"this shows consistency only\n",
			prog);
	return 0;
}

/* ---- witnesses ---- */

/* The witnesses wo names, parsed into w (COSIG_WITNESS_MAX of them); EXIT_USAGE said. */
static int parse_witnesses(const struct witopts *wo, struct witness *w)
{
	char err[AS_ERRLEN];
	for (size_t i = 0; i < wo->n; i++)
		if (witness_parse(wo->vkeys[i], strlen(wo->vkeys[i]), &w[i], err) != 0)
			return usage_error("--witness: %s", err);
	if (witness_set_ok(w, wo->n, err) != 0)
		return usage_error("--witness: %s", err);
	return 0;
}

static size_t threshold_of(const struct witopts *wo)
{
	return wo->threshold ? wo->threshold : 1;
}

/* The ledger report's witness fields, into the JSON report o. */
static void witness_json(json_t *o, const struct av_ledger_report *r)
{
	json_object_set_new(o, "witnesses", json_integer((json_int_t)r->witnesses));
	json_object_set_new(o, "witness_threshold", json_integer((json_int_t)r->witness_threshold));
	json_object_set_new(o, "witnessed_size",
			    r->witnessed ? json_integer((json_int_t)r->witnessed_size) : json_null());
	json_object_set_new(o, "witnessed_by", json_integer((json_int_t)r->witnessed_by));
	json_object_set_new(o, "after_witnessed",
			    r->witnessed && r->ok ? json_integer((json_int_t)r->after_witnessed) : json_null());
	json_t *a = json_array();
	for (size_t i = 0; i < r->witnesses; i++) {
		json_t *w = json_object();
		json_object_set_new(w, "name", json_string(r->witness[i].name));
		json_object_set_new(w, "cosigned", json_boolean(r->witness[i].cosigned));
		json_object_set_new(
		    w, "time", r->witness[i].cosigned ? json_integer((json_int_t)r->witness[i].time) : json_null());
		json_array_append_new(a, w);
	}
	json_object_set_new(o, "cosignatures", a);
}

/* One line on f: which witnesses cosigned, and when. */
static void print_cosigners(FILE *f, const char *what, const struct witness *w, size_t nw, size_t need,
			    const struct cosig_result *r)
{
	fprintf(f, "%s cosigned by %zu of %zu witnesses (threshold %zu):", what, r->count, nw, need);
	for (size_t i = 0; i < nw; i++)
		if (r->cosigned[i])
			fprintf(f, " %s at %llu", w[i].name, (unsigned long long)r->time[i]);
	fputc('\n', f);
}

/* ---- ledger ---- */

int run_ledger(void *p)
{
	struct ledger_args *a = p;
	struct av_ledger_report r;
	int rc = av_verify_ledger(a->dir, &a->o, &r);
	if (rc != 0) {
		fprintf(stderr, "%s: %s\n", prog, r.reason);
		return EXIT_USAGE;
	}
	char leaf[65], root[65];
	hex_encode(r.head_leaf, 32, leaf);
	hex_encode(r.root, 32, root);
	if (a->json) {
		json_t *o = json_object();
		json_object_set_new(o, "ok", json_boolean(r.ok));
		if (r.ok) {
			json_object_set_new(o, "entries", json_integer((json_int_t)r.entries));
			json_object_set_new(o, "head_seq",
					    r.entries ? json_integer((json_int_t)r.head_seq) : json_null());
			json_object_set_new(o, "head_leaf_hash", r.entries ? json_string(leaf) : json_null());
			json_object_set_new(o, "root", json_string(root));
			json_object_set_new(o, "checkpoints_verified", json_integer((json_int_t)r.checkpoints));
			json_object_set_new(o, "trusted_consistent", json_integer((json_int_t)r.trusted));
			json_object_set_new(o, "origin", json_string(r.origin));
		} else {
			json_object_set_new(o, "bad_seq",
					    r.has_bad_seq ? json_integer((json_int_t)r.bad_seq) : json_null());
			json_object_set_new(o, "reason", json_string(r.reason));
		}
		json_object_set_new(o, "signed_size",
				    r.tail_known ? json_integer((json_int_t)r.signed_size) : json_null());
		json_object_set_new(o, "unsigned_tail",
				    r.tail_known ? json_integer((json_int_t)r.unsigned_tail) : json_null());
		json_object_set_new(o, "demo", json_boolean(r.demo));
		json_object_set_new(o, "key_sha256", json_string(r.key_sha256));
		json_object_set_new(o, "key_from_state_dir", json_boolean(r.key_from_state));
		json_object_set_new(o, "read_without_lock", json_boolean(r.nolock));
		if (r.witnesses)
			witness_json(o, &r);
		json_dumpf(o, stdout, JSON_COMPACT);
		fputc('\n', stdout);
		json_decref(o);
	}
	if (!r.ok) {
		/* How much no signature covers, when it can be told (the tail's own reason says it). */
		char tail[96] = "";
		if (r.tail_known && strncmp(r.reason, "unsigned tail", 13) != 0)
			snprintf(tail, sizeof tail, " (%llu entries after the last signed checkpoint, size %llu)",
				 (unsigned long long)r.unsigned_tail, (unsigned long long)r.signed_size);
		if (strstr(r.reason, "OpenSSL offers no Ed25519")) /* this host's fault, not the ledger's */
			return (fprintf(stderr, "%s: %s\n", prog, r.reason), EXIT_USAGE);
		if (!strncmp(r.reason, "no stored checkpoint is cosigned", 32))
			return not_holds("ledger %s not witnessed: %s", a->dir, r.reason);
		if (r.has_bad_seq)
			return not_holds("ledger %s tampered at seq %llu: %s%s", a->dir, (unsigned long long)r.bad_seq,
					 r.reason, tail);
		return not_holds("ledger %s tampered: %s%s", a->dir, r.reason, tail);
	}
	if (!a->json) {
		if (r.entries)
			printf("ledger intact: %llu entries, head seq %llu, head leaf %s, root %s, %llu signed "
			       "checkpoints verified, %llu trusted checkpoints consistent, %llu entries after the last "
			       "signed checkpoint (size %llu)%s%s\n",
			       (unsigned long long)r.entries, (unsigned long long)r.head_seq, leaf, root,
			       (unsigned long long)r.checkpoints, (unsigned long long)r.trusted,
			       (unsigned long long)r.unsigned_tail, (unsigned long long)r.signed_size,
			       r.demo ? ", a demo ledger: origin " : "", r.demo ? r.origin : "");
		else
			printf("ledger intact: 0 entries, root %s\n", root);
		if (r.witnesses)
			printf("witnessed: size %llu cosigned by %zu of %zu witnesses (threshold %zu); %llu entries "
			       "after the last witnessed checkpoint\n",
			       (unsigned long long)r.witnessed_size, r.witnessed_by, r.witnesses, r.witness_threshold,
			       (unsigned long long)r.after_witnessed);
	}
	if (r.unsigned_tail)
		fprintf(stderr,
			"%s: note: an unsigned tail of %llu entries (from seq %llu) passed by --allow-unsigned-tail: "
			"no signature covers them\n",
			prog, (unsigned long long)r.unsigned_tail, (unsigned long long)r.signed_size);
	if (r.key_from_state)
		fprintf(
		    stderr,
		    "%s: note: checkpoint key read from the state directory unpinned (--key-from-state): this "
		    "shows the ledger consistent with itself, not that it is the gateway's; pin the key with --key, "
		    "--key-sha256 %s or --trusted\n",
		    prog, r.key_sha256);
	if (r.nolock)
		fprintf(stderr,
			"%s: note: read without LMDB's lock (lock.mdb missing or not writable); verify a stopped "
			"ledger or a copy\n",
			prog);
	return EXIT_HOLDS;
}

/* ---- checkpoint ---- */

/* The newest stored checkpoint a key in keys signed and the witnesses in w cosigned (at
 * least the threshold), printed; a newer one the key did not sign, or a forged cosignature
 * on one, fails. */
static int print_witnessed(const struct dir_args *a, MDB_cursor *cur, struct vkeys *keys, const struct witness *w)
{
	MDB_val k, v;
	struct checkpoint cp;
	struct cosig_result r;
	char err[AS_ERRLEN];
	size_t need = threshold_of(&a->w), best = 0, newer = 0;
	int g;
	for (g = mdb_cursor_get(cur, &k, &v, MDB_LAST); g == 0; g = mdb_cursor_get(cur, &k, &v, MDB_PREV), newer++) {
		if (ckpt_verify(v.mv_data, v.mv_size, keys->k, keys->n, &cp, err) != 0)
			return not_holds("checkpoint of %s: %s", a->dir, err);
		if (cosig_verify(v.mv_data, v.mv_size, w, a->w.n, &r, err) != 0)
			return not_holds("checkpoint of %s at size %llu: %s", a->dir, (unsigned long long)cp.size, err);
		if (r.count > best)
			best = r.count;
		if (r.count >= need)
			break;
	}
	if (g == MDB_NOTFOUND && newer == 0)
		return not_holds("ledger %s has no checkpoint yet", a->dir);
	if (g != 0 && g != MDB_NOTFOUND)
		return not_holds("ledger %s is damaged: %s", a->dir, mdb_strerror(g));
	if (g != 0)
		return not_holds("no stored checkpoint of %s is cosigned by %zu of the %zu witnesses given (the most "
				 "any carries: %zu)",
				 a->dir, need, a->w.n, best);
	fwrite(v.mv_data, 1, v.mv_size, stdout);
	char what[64];
	snprintf(what, sizeof what, "%s: size %llu", prog, (unsigned long long)cp.size);
	print_cosigners(stderr, what, w, a->w.n, need, &r);
	if (newer)
		fprintf(stderr, "%s: note: %zu newer checkpoints are not yet cosigned by %zu witnesses\n", prog, newer,
			need);
	return EXIT_HOLDS;
}

int run_checkpoint(void *p)
{
	struct dir_args *a = p;
	struct vkeys keys;
	struct witness w[COSIG_WITNESS_MAX];
	if (parse_witnesses(&a->w, w))
		return EXIT_USAGE;
	int lk = load_keys(&keys, a->dir, &a->k);
	if (lk)
		return lk;
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi ent, ck;
	int nolock, rc;
	char err[AS_ERRLEN];
	if ((rc = store_open_ro(a->dir, &env, &txn, &ent, &ck, &nolock, err)) != 0) {
		vkeys_free(&keys);
		return rc == AS_ECORRUPT ? not_holds("%s", err) : (fprintf(stderr, "%s: %s\n", prog, err), EXIT_USAGE);
	}
	MDB_cursor *cur;
	MDB_val k, v;
	int out = EXIT_NOT;
	struct checkpoint cp;
	if (mdb_cursor_open(txn, ck, &cur) == 0) {
		if (a->w.n)
			out = print_witnessed(a, cur, &keys, w);
		else if (mdb_cursor_get(cur, &k, &v, MDB_LAST) != 0)
			fprintf(stderr, "%s: ledger %s has no checkpoint yet\n", prog, a->dir);
		else if (ckpt_verify(v.mv_data, v.mv_size, keys.k, keys.n, &cp, err) != 0)
			fprintf(stderr, "%s: latest checkpoint of %s: %s\n", prog, a->dir, err);
		else {
			fwrite(v.mv_data, 1, v.mv_size, stdout);
			out = EXIT_HOLDS;
		}
		mdb_cursor_close(cur);
	}
	mdb_txn_abort(txn);
	mdb_env_close(env);
	vkeys_free(&keys);
	return out;
}

/* The witnesses' cosignatures on a checkpoint text the log's key signed: at least the
 * threshold, else EXIT_NOT said; what names it in messages. */
static int check_cosigned(const char *what, const struct buf *text, const struct witopts *wo, const struct witness *w,
			  FILE *f)
{
	struct cosig_result r;
	char err[AS_ERRLEN];
	size_t need = threshold_of(wo);
	if (cosig_verify(text->p, text->len, w, wo->n, &r, err) != 0)
		return not_holds("%s: %s", what, err);
	if (r.count < need)
		return not_holds("%s is cosigned by %zu of the %zu witnesses given, fewer than %zu", what, r.count,
				 wo->n, need);
	print_cosigners(f, what, w, wo->n, need, &r);
	return EXIT_HOLDS;
}

int checkpoint_check_cmd(const char *file, const struct keyopts *k, const struct witopts *wo)
{
	struct witness w[COSIG_WITNESS_MAX];
	if (k->nkeys == 0)
		return usage_error("checkpoint --check needs --key PUB.pem (the checkpoint key you trust)");
	if (parse_witnesses(wo, w))
		return EXIT_USAGE;
	struct vkeys keys;
	if (load_keys(&keys, NULL, k))
		return EXIT_USAGE;
	struct buf t;
	struct checkpoint cp;
	char err[AS_ERRLEN];
	int ex = EXIT_HOLDS;
	if (file_read(file, CKPT_MAX, &t, err) != 0) {
		vkeys_free(&keys);
		fprintf(stderr, "%s: %s\n", prog, err);
		return EXIT_USAGE;
	}
	if (ckpt_verify(t.p, t.len, keys.k, keys.n, &cp, err) != 0)
		ex = not_holds("checkpoint %s: %s", file, err);
	else
		printf("checkpoint signed: %s at size %llu\n", cp.origin, (unsigned long long)cp.size);
	if (ex == EXIT_HOLDS && wo->n)
		ex = check_cosigned("checkpoint", &t, wo, w, stdout);
	vkeys_free(&keys);
	buf_free(&t);
	return ex;
}

/* ---- exact ---- */

int run_exact(void *p)
{
	struct exact_args *a = p;
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi ent, ck;
	int nolock, rc;
	char err[AS_ERRLEN];
	if ((rc = store_open_ro(a->dir, &env, &txn, &ent, &ck, &nolock, err)) != 0)
		return rc == AS_ECORRUPT ? not_holds("%s", err) : (fprintf(stderr, "%s: %s\n", prog, err), EXIT_USAGE);
	DIR *d = opendir(a->exact);
	int out = EXIT_HOLDS;
	size_t checked = 0;
	struct dirent *de;
	if (!d) {
		fprintf(stderr, "%s: %s: %s\n", prog, a->exact, strerror(errno));
		out = EXIT_USAGE;
	}
	while (d && out == EXIT_HOLDS && (de = readdir(d))) {
		size_t nl = strlen(de->d_name);
		if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp."))
			continue;
		char path[PATH_MAX + 300], digest[80];
		if (nl != 7 + 64 + 5 || strncmp(de->d_name, "sha256-", 7) || strcmp(de->d_name + 71, ".cbor")) {
			out = not_holds("%s: %s is not a retained call's name (sha256-HEX.cbor)", a->exact, de->d_name);
			break;
		}
		snprintf(path, sizeof path, "%s/%s", a->exact, de->d_name);
		snprintf(digest, sizeof digest, "sha256:%.64s", de->d_name + 7);
		if (exact_one(txn, ent, path, digest, err) != 0)
			out = not_holds("exact call %s: %s", de->d_name, err);
		checked++;
	}
	if (d)
		closedir(d);
	if (out == EXIT_HOLDS && exact_missing(txn, ent, a->exact, err) != 0)
		out = not_holds("%s", err);
	if (out == EXIT_HOLDS)
		printf("%zu exact call%s match%s the ledger's request entries and their views\n", checked,
		       checked == 1 ? "" : "s", checked == 1 ? "es" : "");
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return out;
}

/* ---- export ---- */

int run_export(void *p)
{
	struct dir_args *a = p;
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi ent, ck;
	int nolock, rc;
	char err[AS_ERRLEN];
	if ((rc = store_open_ro(a->dir, &env, &txn, &ent, &ck, &nolock, err)) != 0)
		return rc == AS_ECORRUPT ? not_holds("%s", err) : (fprintf(stderr, "%s: %s\n", prog, err), EXIT_USAGE);
	MDB_cursor *cur;
	MDB_val k, v;
	uint8_t kb[8];
	be64_put(kb, a->from);
	k.mv_size = 8;
	k.mv_data = kb;
	struct cv_arena ar;
	cv_arena_init(&ar, ENTRY_MAX);
	int out = EXIT_HOLDS, g;
	if (mdb_cursor_open(txn, ent, &cur) != 0) {
		out = not_holds("cannot read entries of %s", a->dir);
		goto done;
	}
	for (g = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); g == 0; g = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size != 8) {
			out = not_holds("ledger %s: an entry key is not 8 bytes", a->dir);
			break;
		}
		uint64_t seq = be64_get(k.mv_data);
		if (a->has_to && seq > a->to)
			break;
		struct cv *e;
		cv_arena_reset(&ar);
		if (v.mv_size > ENTRY_MAX || cbor_decode(v.mv_data, v.mv_size, &ar, &e, err) != 0 ||
		    entry_check(e, seq, NULL, err) != 0) {
			out = not_holds("ledger %s tampered at seq %llu: %s", a->dir, (unsigned long long)seq,
					v.mv_size > ENTRY_MAX ? "entry too large" : err);
			break;
		}
		uint8_t leaf[32];
		char hex[65];
		merkle_leaf_hash(v.mv_data, v.mv_size, leaf);
		hex_encode(leaf, 32, hex);
		json_t *o = json_object();
		json_object_set_new(o, "seq", json_integer((json_int_t)seq));
		json_object_set_new(o, "leaf_hash", json_string(hex));
		json_object_set_new(o, "entry", cv_to_json(e));
		if (json_dumpf(o, stdout, JSON_COMPACT) != 0 || fputc('\n', stdout) == EOF) {
			json_decref(o);
			out = EXIT_USAGE;
			break;
		}
		json_decref(o);
	}
	if (out == EXIT_HOLDS && g != 0 && g != MDB_NOTFOUND)
		out = not_holds("ledger %s is damaged: %s", a->dir, mdb_strerror(g));
	mdb_cursor_close(cur);
done:
	cv_arena_free(&ar);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	if (fflush(stdout) != 0)
		return EXIT_USAGE;
	return out;
}

/* ---- proof ---- */

/* A proof made from the ledger in dir (rc: its maker's): printed, or why not; out is freed. */
static int print_made(int rc, const char *dir, struct buf *out, const char *err)
{
	int ex = EXIT_HOLDS;
	if (rc == AS_ECORRUPT)
		ex = not_holds("ledger %s: %s", dir, err);
	else if (rc != 0)
		ex = (fprintf(stderr, "%s: %s\n", prog, err), EXIT_USAGE);
	else
		fwrite(out->p, 1, out->len, stdout);
	buf_free(out);
	return ex;
}

int run_proof(void *p)
{
	struct dir_args *a = p;
	struct vkeys keys;
	int lk = load_keys(&keys, a->dir, &a->k);
	if (lk)
		return lk;
	struct buf out;
	buf_init(&out, PROOF_MAX);
	char err[AS_ERRLEN];
	int rc = proof_make(a->dir, a->seq, a->size, keys.k, keys.n, &out, err);
	vkeys_free(&keys);
	return print_made(rc, a->dir, &out, err);
}

int proof_check_cmd(const char *file, const char *ckfile, const struct keyopts *k)
{
	if (k->nkeys == 0)
		return usage_error("proof --check needs --key PUB.pem (the checkpoint key you trust)");
	struct vkeys keys;
	if (load_keys(&keys, NULL, k))
		return EXIT_USAGE;
	struct buf pf, ck;
	char err[AS_ERRLEN];
	buf_init(&ck, 0);
	if (file_read(file, PROOF_MAX, &pf, err) != 0) {
		vkeys_free(&keys);
		fprintf(stderr, "%s: %s\n", prog, err);
		return EXIT_USAGE;
	}
	if (ckfile && file_read(ckfile, CKPT_MAX, &ck, err) != 0) {
		vkeys_free(&keys);
		buf_free(&pf);
		fprintf(stderr, "%s: %s\n", prog, err);
		return EXIT_USAGE;
	}
	uint64_t idx = 0, size = 0;
	int rc = proof_check(pf.p, pf.len, ckfile ? ck.p : NULL, ck.len, keys.k, keys.n, &idx, &size, err);
	vkeys_free(&keys);
	json_t *entry = rc == 0 ? proof_entry_json(pf.p, pf.len) : NULL;
	buf_free(&pf);
	buf_free(&ck);
	if (rc != 0)
		return not_holds("%s", err);
	printf("proof holds: entry %llu is in the signed tree of size %llu\n", (unsigned long long)idx,
	       (unsigned long long)size);
	char *js = entry ? json_dumps(entry, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (js) /* what it proves: the entry itself, as `export` prints entries */
		printf("entry %llu: %s\n", (unsigned long long)idx, js);
	free(js);
	json_decref(entry);
	return EXIT_HOLDS;
}

/* ---- consistency proofs ---- */

int run_consistency(void *p)
{
	struct dir_args *a = p;
	struct buf out;
	buf_init(&out, CONSIST_TEXT_MAX);
	char err[AS_ERRLEN];
	int rc = consist_make(a->dir, a->old_size, a->new_size, &out, err);
	return print_made(rc, a->dir, &out, err);
}

int consistency_cmd(const char *oldf, const char *newf, const char *prooff, const struct keyopts *k,
		    const struct witopts *wo)
{
	struct witness w[COSIG_WITNESS_MAX];
	if (k->nkeys == 0)
		return usage_error("consistency needs --key PUB.pem (the checkpoint key you trust)");
	if (parse_witnesses(wo, w))
		return EXIT_USAGE;
	struct vkeys keys;
	if (load_keys(&keys, NULL, k))
		return EXIT_USAGE;
	struct buf o, n, pf;
	char err[AS_ERRLEN];
	buf_init(&o, 0);
	buf_init(&n, 0);
	buf_init(&pf, 0);
	int rc = file_read(oldf, CKPT_MAX, &o, err);
	if (rc == 0)
		rc = file_read(newf, CKPT_MAX, &n, err);
	if (rc == 0)
		rc = file_read(prooff, CONSIST_TEXT_MAX, &pf, err);
	struct checkpoint a, b;
	int ex = EXIT_HOLDS;
	if (rc != 0)
		ex = (fprintf(stderr, "%s: %s\n", prog, err), EXIT_USAGE);
	else if (consist_check(o.p, o.len, n.p, n.len, pf.p, pf.len, keys.k, keys.n, &a, &b, err) != 0)
		ex = not_holds("%s", err);
	else
		printf("consistent: %s at size %llu is a prefix of the tree at size %llu\n", a.origin,
		       (unsigned long long)a.size, (unsigned long long)b.size);
	if (ex == EXIT_HOLDS && wo->n)
		ex = check_cosigned("the old checkpoint", &o, wo, w, stdout);
	vkeys_free(&keys);
	buf_free(&o);
	buf_free(&n);
	buf_free(&pf);
	return ex;
}

/* ---- token ---- */

int run_token(void *p)
{
	struct token_args *a = p;
	struct av_token_result r;
	int rc = av_verify_token((const char *)a->tok.p, a->tok.len, &a->o, &r);
	if (rc == AS_EBADSIG)
		return not_holds("token not valid: %s", r.reason);
	if (rc != 0) {
		fprintf(stderr, "%s: %s\n", prog, r.reason);
		return EXIT_USAGE;
	}
	if (a->json) {
		fputs(r.claims_json, stdout);
		fputc('\n', stdout);
	} else {
		json_error_t je;
		json_t *c = json_loads(r.claims_json, 0, &je);
		const char *who = json_string_value(json_object_get(json_object_get(c, "reviewer"), "name"));
		printf("token valid: session %s approved (%s%s%s) for %s, expires at %lld\n",
		       json_string_value(json_object_get(c, "session_id")),
		       json_string_value(json_object_get(c, "assurance")), who ? " by " : "", who ? who : "", a->o.aud,
		       (long long)json_integer_value(json_object_get(c, "exp")));
		json_decref(c);
	}
	free(r.claims_json);
	return EXIT_HOLDS;
}

int read_token(const char *arg, struct buf *out)
{
	buf_init(out, AV_TOKEN_MAX + 1);
	if (arg && strcmp(arg, "-") != 0) {
		/* Keep at most one byte over the maximum: enough for the check to refuse it. */
		size_t n = strlen(arg);
		return buf_put(out, arg, n < out->max ? n : out->max) == 0 ? 0 : -1;
	}
	uint8_t b[4096];
	size_t n;
	while ((n = fread(b, 1, sizeof b, stdin)) > 0) {
		size_t room = out->max - out->len;
		if (buf_put(out, b, n < room ? n : room) != 0)
			return -1;
		if (n > room)
			break;
	}
	while (out->len &&
	       (out->p[out->len - 1] == '\n' || out->p[out->len - 1] == '\r' || out->p[out->len - 1] == ' '))
		out->len--;
	return 0;
}
