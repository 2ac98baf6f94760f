/* mint: issue an approval token the way the signer does, for tests that need tokens
 * without a daemon: append a request and its approving decision (naming the token's
 * jti, kid and exp) in one group commit, then sign the token naming that entry.
 *   mint --state DIR --aud AUD [--subject FILE]... [--asserted NAME=HEX]...
 *        [--ttl S] [--now UNIX] [--session ID] [--reviewer NAME]
 * Prints {"token","seq","leaf_hash","session_id","kid","jti","action_sha256"}.
 * Token mode comes from FEEDBACK_SIGN_TOKENS / FEEDBACK_TOKEN_SECRET. */
#define _GNU_SOURCE
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ledger/ledger.h"
#include "common/cbor.h"
#include "ledger/merkle.h"
#include "gateway/state/token.h"
#include "common/util.h"

static void die(const char *what, const char *err)
{
	fprintf(stderr, "mint: %s: %s\n", what, err);
	exit(2);
}

static void put(struct cv_arena *a, struct cv *slot, const char *s, size_t n)
{
	if (cv_set_text(a, slot, s, n) != 0)
		die("encode", "out of memory");
}

static void set_text(struct cv_arena *a, struct cv *kv, const char *k, const char *v)
{
	put(a, &kv[0], k, strlen(k));
	put(a, &kv[1], v, strlen(v));
}

int main(int argc, char **argv)
{
	const char *state = NULL, *aud = NULL, *session = NULL, *reviewer = "alice";
	const char *files[16], *asserted[16];
	size_t nfiles = 0, nasserted = 0;
	uint64_t ttl = 0, now = 0;
	static const struct option lo[] = {
	    {"state", 1, NULL, 's'},	{"aud", 1, NULL, 'a'},	    {"subject", 1, NULL, 'f'},
	    {"asserted", 1, NULL, 'x'}, {"ttl", 1, NULL, 't'},	    {"now", 1, NULL, 'n'},
	    {"session", 1, NULL, 'i'},	{"reviewer", 1, NULL, 'r'}, {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			state = optarg;
			break;
		case 'a':
			aud = optarg;
			break;
		case 'f':
			if (nfiles < 16)
				files[nfiles++] = optarg;
			break;
		case 'x':
			if (nasserted < 16)
				asserted[nasserted++] = optarg;
			break;
		case 't':
			if (parse_u64(optarg, &ttl))
				die("--ttl", optarg);
			break;
		case 'n':
			if (parse_u64(optarg, &now))
				die("--now", optarg);
			break;
		case 'i':
			session = optarg;
			break;
		case 'r':
			reviewer = optarg;
			break;
		default:
			die("usage", "see the comment at the top of tests/tools/mint.c");
		}
	}
	if (!state || !aud)
		die("usage", "--state and --aud are required");
	char err[AS_ERRLEN], dir[4200], keys[4200], sid[64];
	snprintf(dir, sizeof dir, "%s/ledger", state);
	snprintf(keys, sizeof keys, "%s/keys", state);
	if (!session) {
		snprintf(sid, sizeof sid, "req-%lld-%d", (long long)time(NULL), (int)(clock() & 0xffff));
		session = sid;
	}
	struct tok_config cfg;
	if (tok_config_from_env(&cfg, err) != 0)
		die("config", err);
	struct ledger *l;
	struct ledger_opts lo2 = {.keys_dir = keys};
	if (ledger_open(dir, &lo2, &l, err) != 0)
		die("ledger", err);
	struct tokkeys *tk;
	if (tokkeys_open(keys, &cfg, l, &tk, err) != 0)
		die("keys", err);

	struct tok_subject subj[32];
	size_t ns = 0;
	for (size_t i = 0; i < nfiles; i++) {
		struct buf b;
		uint8_t h[32];
		if (file_read(files[i], 1 << 30, &b, err) != 0)
			die("subject", err);
		sha256(b.p, b.len, h);
		buf_free(&b);
		subj[ns].name = files[i];
		hex_encode(h, 32, subj[ns].sha256);
		subj[ns++].computed = 1;
	}
	for (size_t i = 0; i < nasserted; i++) {
		const char *eq = strchr(asserted[i], '=');
		if (!eq || strlen(eq + 1) != 64)
			die("--asserted", "expected NAME=HEX64");
		subj[ns].name = strndup(asserted[i], (size_t)(eq - asserted[i]));
		memcpy(subj[ns].sha256, eq + 1, 65);
		subj[ns++].computed = 0;
	}

	/* The request entry; its canonical CBOR is the action the token is bound to. */
	struct cv_arena a;
	cv_arena_init(&a, 4096);
	struct cv *req = cv_map(&a, 6);
	set_text(&a, &req->items[0], "kind", "request");
	set_text(&a, &req->items[2], "session_id", session);
	set_text(&a, &req->items[4], "type", "approval");
	set_text(&a, &req->items[6], "message", "mint: test approval");
	set_text(&a, &req->items[8], "audience", aud);
	struct cv *sa = cv_array(&a, ns);
	for (size_t i = 0; i < ns; i++) {
		struct cv *m = &sa->items[i];
		m->t = CV_MAP;
		m->n = 3;
		m->items = cv_alloc(&a, 6);
		set_text(&a, &m->items[0], "name", subj[i].name);
		set_text(&a, &m->items[2], "sha256", subj[i].sha256);
		set_text(&a, &m->items[4], "source", subj[i].computed ? "computed" : "asserted");
	}
	put(&a, &req->items[10], "subject", 7);
	req->items[11] = *sa;
	struct buf reqb, decb;
	buf_init(&reqb, 1 << 20);
	buf_init(&decb, 1 << 20);
	if (cbor_encode(req, &reqb, err) != 0)
		die("encode", err);
	struct tok_request tr = {.aud = aud,
				 .session_id = session,
				 .reviewer_name = reviewer,
				 .reviewer_channel = "cli",
				 .subjects = subj,
				 .nsubjects = ns,
				 .assurance = "reviewer",
				 .ttl = (uint32_t)ttl,
				 .now = now};
	uint8_t ah[32];
	sha256(reqb.p, reqb.len, ah);
	hex_encode(ah, 32, tr.action_sha256);
	struct tok_ticket t;
	if (tok_prepare(tk, &tr, &t, err) != 0)
		die("prepare", err);

	struct cv *dec = cv_map(&a, 6);
	set_text(&a, &dec->items[0], "kind", "decision");
	set_text(&a, &dec->items[2], "session_id", session);
	set_text(&a, &dec->items[4], "outcome", "approved");
	set_text(&a, &dec->items[6], "assurance", "reviewer");
	struct cv *rv = cv_map(&a, 2);
	set_text(&a, &rv->items[0], "name", reviewer);
	set_text(&a, &rv->items[2], "channel", "cli");
	put(&a, &dec->items[8], "reviewer", 8);
	dec->items[9] = *rv;
	struct cv *tkm = cv_map(&a, 3);
	set_text(&a, &tkm->items[0], "jti", t.jti);
	set_text(&a, &tkm->items[2], "kid", t.kid);
	put(&a, &tkm->items[4], "exp", 3);
	cv_set_uint(&tkm->items[5], t.exp);
	put(&a, &dec->items[10], "token", 5);
	dec->items[11] = *tkm;
	if (cbor_encode(dec, &decb, err) != 0)
		die("encode", err);
	struct ledger_rec recs[2] = {{reqb.p, reqb.len}, {decb.p, decb.len}};
	struct ledger_pos pos[2];
	if (ledger_append(l, recs, 2, pos, err) != 0)
		die("append", err);
	char *jwt;
	if (tok_issue(tk, &tr, &t, pos[1].seq, pos[1].leaf, &jwt, err) != 0)
		die("issue", err);
	char lh[65];
	hex_encode(pos[1].leaf, 32, lh);
	json_t *o = json_pack("{s:s,s:I,s:s,s:s,s:s,s:s,s:s}", "token", jwt, "seq", (json_int_t)pos[1].seq, "leaf_hash",
			      lh, "session_id", session, "kid", t.kid, "jti", t.jti, "action_sha256", tr.action_sha256);
	json_dumpf(o, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(o);
	free(jwt);
	tokkeys_free(tk);
	tok_config_clear(&cfg);
	ledger_close(l);
	buf_free(&reqb);
	buf_free(&decb);
	cv_arena_free(&a);
	return 0;
}
