/* assent ledger append | checkpoint: demo ledgers, written through the same ledger_append the signer uses. */
#define _GNU_SOURCE
#include "gateway/cli/cli.h"
#include "gateway/proto/workers.h"
#include "gateway/signer/cluster.h"

#include <getopt.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <stdarg.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void pending_free(struct pending *p)
{
	for (size_t i = 0; i < p->n; i++)
		buf_free(&p->recs[i]);
	free(p->recs);
}

/* Parse and check one JSON line into the canonical CBOR of its fields. */
int line_to_cbor(const char *line, size_t len, size_t lineno, struct buf *out)
{
	json_error_t je;
	json_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return die(1, "line %zu: not valid JSON: %s (column %d)", lineno, je.text, je.column);
	struct cv_arena a;
	cv_arena_init(&a, ENTRY_MAX);
	struct cv *v;
	char err[AS_ERRLEN];
	struct buf scratch;
	buf_init(&scratch, ENTRY_MAX + 256);
	buf_init(out, ENTRY_MAX);
	static const uint8_t zero[32];
	int rc = json_is_object(j) ? 0 : as_fail(err, AS_EINVAL, "expected a JSON object");
	if (rc == 0)
		rc = cv_from_json(&a, j, &v, err);
	if (rc == 0)
		rc = cbor_encode(v, out, err);
	if (rc == 0) /* the same checks ledger_append makes, before anything is written */
		rc = entry_build(v, 0, 0, zero, &scratch, err);
	json_decref(j);
	cv_arena_free(&a);
	buf_free(&scratch);
	if (rc != 0) {
		buf_free(out);
		return die(1, "line %zu: %s", lineno, err);
	}
	return 0;
}

static int read_entries(FILE *in, struct pending *p)
{
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int rc = 0;
	while ((len = getline(&line, &cap, in)) >= 0) {
		lineno++;
		if ((size_t)len > LINE_MAX_BYTES) {
			rc = die(1, "line %zu: longer than %u bytes", lineno, LINE_MAX_BYTES);
			break;
		}
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			len--;
		if (len == 0)
			continue;
		if (p->n == p->cap) {
			size_t nc = p->cap ? p->cap * 2 : 64;
			struct buf *nr = realloc(p->recs, nc * sizeof *nr);
			if (!nr) {
				rc = die(2, "out of memory");
				break;
			}
			p->recs = nr;
			p->cap = nc;
		}
		if ((rc = line_to_cbor(line, (size_t)len, lineno, &p->recs[p->n])) != 0)
			break;
		p->n++;
	}
	free(line);
	if (rc == 0 && ferror(in))
		rc = die(2, "cannot read standard input");
	return rc;
}

static struct hsm keys_hsm;
static int keys_state; /* 0: not opened yet, 1: open (or off), -1: failed */

static void keys_close(void)
{
	hsm_close(&keys_hsm);
}

struct hsm *cli_keys(int want_token, int made[2], char *err)
{
	if (keys_state == 1)
		return &keys_hsm;
	if (keys_state == -1) {
		as_fail(err, AS_EINVAL, "the PKCS#11 token could not be opened");
		return NULL;
	}
	int rc = made ? hsm_keygen(&keys_hsm, made, err) : hsm_open(&keys_hsm, want_token, err);
	if (rc != 0) {
		hsm_close(&keys_hsm);
		keys_state = -1;
		return NULL;
	}
	keys_state = 1;
	atexit(keys_close);
	return &keys_hsm;
}

/* assent-cluster, beside this program. */
static int cluster_exe(char *exe, size_t cap)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return -1;
	self[n] = 0;
	char *sl = strrchr(self, '/');
	snprintf(exe, cap, "%.*s/%s", sl ? (int)(sl - self) : 1, sl ? self : ".", CLUSTER_EXE);
	return 0;
}

int open_ledger(const char *state, const struct ledger_opts *o, struct ledger **l)
{
	char dir[4200], err[AS_ERRLEN];
	snprintf(dir, sizeof dir, "%s/" STATE_LEDGER_DIR, state);
	char keys[4200];
	snprintf(keys, sizeof keys, "%s/" STATE_KEYS_DIR, state);
	struct ledger_opts opts = *o;
	opts.keys_dir = keys;
	struct hsm *h = cli_keys(0, NULL, err);
	if (!h)
		return die(2, "%s", err);
	if (h->cfg.on)
		opts.signer = &h->signer;
	if (opts.demo != 1) { /* a cluster replica's mirror takes entries only through the cluster */
		char exe[4200];
		if (cluster_exe(exe, sizeof exe) != 0)
			return die(2, "cannot find this program's directory");
		if (cluster_cli_sync(state, exe, &opts.sync, err) != 0)
			return die(2, "%s", err);
	}
	int rc = ledger_open(dir, &opts, l, err);
	if (rc != 0)
		return die(rc == AS_ECORRUPT || rc == AS_EINVAL ? 1 : 2, "%s", err); /* EINVAL: demo vs gateway */
	return 0;
}

int cmd_append(const char *state, int argc, char **argv)
{
	/* A demo ledger only: entries chosen on the command line must never sit in a
	 * gateway's ledger under its key (ledger_open refuses a gateway's ledger). */
	struct ledger_opts o = {.demo = 1};
	uint64_t batch = BATCH_DEFAULT, v;
	static const struct option lo[] = {{"batch", required_argument, NULL, 'b'},
					   {"checkpoint-every", required_argument, NULL, 'e'},
					   {"checkpoint-secs", required_argument, NULL, 's'},
					   {NULL, 0, NULL, 0}};
	int c;
	optind = 1;
	opterr = 0; /* our own one-line messages, not getopt's */
	int li = 0;
	while ((c = getopt_long(argc, argv, ":", lo, &li)) != -1) {
		if (c == '?' || c == ':')
			return die(2, "ledger append: %s option '%s' (see assent --help)",
				   c == '?' ? "unknown" : "missing the value of", argv[optind - 1]);
		if (parse_u64(optarg, &v) != 0 || v == 0 || v > UINT32_MAX)
			return die(2, "ledger append: --%s: '%s' is not a positive number", lo[li].name, optarg);
		if (c == 'b')
			batch = v;
		else if (c == 'e')
			o.checkpoint_every = v;
		else
			o.checkpoint_secs = (uint32_t)v;
	}
	if (optind != argc)
		return die(2, "ledger append: unexpected argument '%s'", argv[optind]);
	struct pending p = {0};
	int rc = read_entries(stdin, &p);
	struct ledger *l = NULL;
	if (rc == 0)
		rc = open_ledger(state, &o, &l);
	struct ledger_rec *recs = rc == 0 ? calloc(batch, sizeof *recs) : NULL;
	struct ledger_pos *pos = rc == 0 ? calloc(batch, sizeof *pos) : NULL;
	if (rc == 0 && (!recs || !pos))
		rc = die(2, "out of memory");
	for (size_t i = 0; rc == 0 && i < p.n; i += batch) {
		size_t n = p.n - i < batch ? p.n - i : batch;
		for (size_t k = 0; k < n; k++) {
			recs[k].cbor = p.recs[i + k].p;
			recs[k].len = p.recs[i + k].len;
		}
		char err[AS_ERRLEN];
		int a = ledger_append(l, recs, n, pos, err);
		if (a != 0) {
			rc = die(a == AS_EINVAL ? 1 : 2, "%s", err);
			break;
		}
		for (size_t k = 0; k < n; k++) {
			char hex[65];
			hex_encode(pos[k].leaf, 32, hex);
			printf("{\"seq\":%llu,\"leaf_hash\":\"%s\"}\n", (unsigned long long)pos[k].seq, hex);
		}
	}
	free(recs);
	free(pos);
	pending_free(&p);
	if (l)
		ledger_close(l);
	if (fflush(stdout) != 0 && rc == 0)
		rc = die(2, "cannot write standard output");
	return rc;
}

int cmd_checkpoint(const char *state, int argc, char **argv)
{
	(void)argv;
	if (argc != 1)
		return die(2, "ledger checkpoint takes no arguments");
	struct ledger_opts o = {.demo = LEDGER_EITHER};
	struct ledger *l;
	int rc = open_ledger(state, &o, &l);
	if (rc != 0)
		return rc;
	char err[AS_ERRLEN], path[4200];
	rc = ledger_checkpoint(l, err);
	ledger_close(l);
	if (rc != 0)
		return die(2, "%s", err);
	snprintf(path, sizeof path, "%s/ledger/checkpoint", state);
	struct buf b;
	if (file_read(path, 4096, &b, err) != 0)
		return die(1, "ledger is empty: no checkpoint to print");
	fwrite(b.p, 1, b.len, stdout);
	buf_free(&b);
	return 0;
}

/* assent ledger export [--cluster URL] DIR: a cluster's shared ledger (docs/cluster.md) into a
 * new directory in the LMDB layout, through assent-cluster beside this binary. */
int cmd_export(int argc, char **argv)
{
	const char *url = getenv("ASSENT_CLUSTER"), *dir = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--cluster") && i + 1 < argc)
			url = argv[++i];
		else if (argv[i][0] != '-' && !dir)
			dir = argv[i];
		else
			return die(2, "ledger export: unknown argument '%s' (assent ledger export [--cluster URL] DIR)",
				   argv[i]);
	}
	if (!dir || !url || !*url)
		return die(2,
			   "ledger export: the cluster's URL (--cluster or ASSENT_CLUSTER) and a new DIR are needed");
	char exe[4200], err[AS_ERRLEN];
	if (cluster_exe(exe, sizeof exe) != 0)
		return die(2, "cannot find this program's directory");
	uint64_t ents = 0, cks = 0;
	if (cluster_export(url, exe, dir, &ents, &cks, err) != 0)
		return die(1, "ledger export: %s", err);
	printf("exported %llu entries and %llu checkpoints to %s: check them with assent-verify ledger %s --key "
	       "checkpoint.pub\n",
	       (unsigned long long)ents, (unsigned long long)cks, dir, dir);
	return 0;
}
