/* assent: the operator and reviewer CLI. Until the daemon exists it offers the
 * ledger maintenance commands, which write through the same ledger_append call
 * the gateway's signer uses. */
#define _GNU_SOURCE
#include <getopt.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <jansson.h>
#include <stdarg.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ledger/ledger.h"
#include "common/cbor.h"
#include "ledger/entry.h"
#include "policy/policy.h"
#include "gateway/signer/registry.h"
#include "common/text.h"
#include "gateway/signer/token.h"
#include "common/util.h"

#define LINE_MAX_BYTES (ENTRY_MAX) /* one JSON line: at most 1 MiB */
#define BATCH_DEFAULT 256

static const char usage_text[] =
	"usage: assent [--state DIR] COMMAND ...\n"
	"\n"
	"Commands (reviewers; the daemon must run: assentd, or any assentd --stdio):\n"
	"  pending [--json]          requests you may decide (every page of them)\n"
	"  show ID [--json]          one request with its full context\n"
	"  approve ID [-m TEXT]      approve (approval or confirmation)\n"
	"  reject ID -m TEXT         reject, with the reason the agent will read\n"
	"  answer ID TEXT            answer an input request (\"\" takes its default)\n"
	"  select ID N               pick option N (counting from 1, as show numbers them)\n"
	"  review                    go through the pending requests one by one\n"
	"  whoami                    the reviewer the daemon takes you for (by your uid)\n"
	"  status [--json]           the daemon's pid, pending count, uptime, ledger size,\n"
	"                            entries and commits this run, worker restarts\n"
	"\n"
	"Commands (operators):\n"
	"  ledger append [--batch N] [--checkpoint-every N] [--checkpoint-secs S] < ENTRIES.jsonl\n"
	"      Demo ledgers only: append entries read as JSON lines, each an object with\n"
	"      \"kind\" and the kind's fields (v, seq, time and prev are set by the ledger),\n"
	"      to STATE/ledger when it is a demo ledger or new (its checkpoints' origin is\n"
	"      assent-demo/KEYID, which assent-verify names). A gateway's ledger is refused.\n"
	"      Every line is checked before anything is written; entries are committed N\n"
	"      per durable commit (default 256). Prints {\"seq\", \"leaf_hash\"} per entry.\n"
	"  keygen [--rotate]\n"
	"      Create the ES256 token signing key if there is none (STATE/keys/token-KID.key,\n"
	"      0600; public keys as token-KID.pub and keys/jwks.json), or with --rotate make\n"
	"      a new key the active one: the old private key is deleted and its public key\n"
	"      stays in the JWKS until every token it signed has expired. Prints the kid.\n"
	"  reviewer add NAME [--uid UID]... [--group G]... [--web] [--proxy-id ID]\n"
	"  reviewer token NAME | reviewer list | reviewer remove NAME\n"
	"      Register a reviewer: the Unix uids whose `assent` commands decide as NAME;\n"
	"      --web (or `reviewer token NAME`) prints a token for the web page once;\n"
	"      --proxy-id is the identity a trusted reverse proxy sends for NAME.\n"
	"  admin add NAME | admin list | admin remove NAME\n"
	"      An operator for the admin endpoints; add prints its token once.\n"
	"  agent add NAME [--uid UID]... [--owner REVIEWER] [--audience A]...\n"
	"  agent list | agent remove NAME\n"
	"      Register an agent; add prints its API key once (only a hash is kept).\n"
	"      With --uid, a stdio agent known by that measured uid (no key). --audience:\n"
	"      what it may ask for besides the default \"assent\"; --owner: the reviewer\n"
	"      responsible for it, who can never decide its requests.\n"
	"      Each change is an `identity` entry on the ledger.\n"
	"  ledger checkpoint\n"
	"      Sign a periodic checkpoint of the current tree now (if it grew since the\n"
	"      last periodic one) and print it. (Every commit signs its head anyway.)\n"
	"  policy check FILE\n"
	"      Check a policy (assent.policy(5)): errors as FILE:LINE:COL with the offending\n"
	"      text, warnings for rules that can never match. Exit 0 when it loads, 1 when not.\n"
	"  policy test FILE REQUEST.json\n"
	"      The decision FILE makes for a request (request_feedback's arguments, plus\n"
	"      \"agent\", \"uid\" or \"client\" for who asks) and the rule that made it.\n"
	"      (assentd --policy FILE loads one; SIGHUP reloads it.)\n"
	"\n"
	"The state directory is --state DIR, else $ASSENT_STATE_DIR, else\n"
	"$XDG_STATE_HOME/assent, else ~/.local/state/assent. The ledger is STATE/ledger,\n"
	"keys are in STATE/keys.\n"
	"Exit status: 0 done, 1 refused (reason on stderr), 2 usage or I/O error.\n";

static int die(int code, const char *fmt, ...) AS_PRINTF(2, 3);
static int die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("assent: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return code;
}

struct pending {
	struct buf *recs;
	size_t n, cap;
};

static void pending_free(struct pending *p)
{
	for (size_t i = 0; i < p->n; i++)
		buf_free(&p->recs[i]);
	free(p->recs);
}

/* Parse and check one JSON line into the canonical CBOR of its fields. */
static int line_to_cbor(const char *line, size_t len, size_t lineno, struct buf *out)
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

static int open_ledger(const char *state, const struct ledger_opts *o, struct ledger **l)
{
	char dir[4200], err[AS_ERRLEN];
	snprintf(dir, sizeof dir, "%s/" STATE_LEDGER_DIR, state);
	char keys[4200];
	snprintf(keys, sizeof keys, "%s/" STATE_KEYS_DIR, state);
	struct ledger_opts opts = *o;
	opts.keys_dir = keys;
	int rc = ledger_open(dir, &opts, l, err);
	if (rc != 0)
		return die(rc == AS_ECORRUPT || rc == AS_EINVAL ? 1 : 2, "%s", err); /* EINVAL: demo vs gateway */
	return 0;
}

static int cmd_append(const char *state, int argc, char **argv)
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

static int cmd_checkpoint(const char *state, int argc, char **argv)
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

/* ---- policy check | test ---- */

static int load_policy(const char *path, struct policy **p)
{
	struct buf src;
	char err[AS_ERRLEN];
	buf_init(&src, POL_FILE_MAX + 1);
	int rd = file_read(path, POL_FILE_MAX, &src, err);
	if (rd != 0) {
		buf_free(&src);
		return die(rd == AS_ETOOBIG ? 1 : 2, "%s: %s", path,
			   rd == AS_ETOOBIG ? "over the policy size limit of 262144 bytes" : err);
	}
	struct pol_msgs m;
	int rc = policy_parse((const char *)src.p, src.len, p, &m);
	buf_free(&src);
	for (size_t i = 0; i < m.n; i++) {
		const struct pol_msg *x = &m.m[i];
		fprintf(stderr, "%s:%u:%u: %s: %s%s%s%s\n", path, x->line, x->col, x->warning ? "warning" : "error", x->msg,
			x->text[0] ? ": '" : "", x->text, x->text[0] ? "'" : "");
	}
	if (m.dropped)
		fprintf(stderr, "%s: %zu more messages not shown\n", path, m.dropped);
	return rc == 0 ? 0 : 1;
}

static int cmd_policy(int argc, char **argv)
{
	struct policy *p = NULL;
	if (argc == 3 && !strcmp(argv[1], "check")) {
		int rc = load_policy(argv[2], &p);
		if (rc == 0)
			printf("%s: %zu rules, sha256 %s\n", argv[2], policy_nrules(p), policy_digest(p));
		policy_free(p);
		return rc;
	}
	if (argc != 4 || strcmp(argv[1], "test"))
		return die(2, "usage: assent policy check FILE | assent policy test FILE REQUEST.json");
	json_error_t je;
	json_t *req = json_load_file(argv[3], 0, &je);
	if (!req || !json_is_object(req)) {
		json_decref(req);
		return die(2, "%s: not a JSON object: %s (line %d)", argv[3], je.text, je.line);
	}
	int rc = load_policy(argv[2], &p);
	if (rc != 0) {
		json_decref(req);
		return rc;
	}
	const char *names[16];
	int computed[16];
	struct pol_request r;
	pol_request_from_json(req, &r, names, computed);
	struct pol_decision d;
	policy_eval(p, &r, &d);
	printf("%s (%s line %u)", pol_action_name(d.action), d.by_default ? "default," : "rule on", d.line);
	if (d.action == POL_DENY)
		printf(": %s", d.reason);
	printf("\n");
	if (d.action == POL_ASK) {
		printf("  reviewers: ");
		for (size_t k = 0; k < d.nreviewers; k++)
			printf("%s%s", k ? "," : "", d.reviewers[k]);
		printf("%s; quorum %u", d.nreviewers ? "" : "any", d.quorum);
		if (d.deadline_s)
			printf("; deadline %u s (then %s)", d.deadline_s, d.timeout_denies ? "deny" : "timeout");
		printf("\n");
	}
	if (d.shadowed)
		printf("  shadow: the rule on line %u would %s\n", d.shadow_line, pol_action_name(d.shadow_action));
	printf("  policy sha256 %s\n", policy_digest(p));
	policy_free(p);
	json_decref(req);
	return 0;
}

static int cmd_keygen(const char *state, int argc, char **argv)
{
	int rotate = argc == 2 && !strcmp(argv[1], "--rotate");
	if (argc > 2 || (argc == 2 && !rotate))
		return die(2, "usage: assent keygen [--rotate]");
	char err[AS_ERRLEN], keys[4200];
	struct tok_config cfg;
	if (tok_config_from_env(&cfg, err) != 0)
		return die(2, "%s", err);
	if (cfg.mode != TOK_ES256) {
		tok_config_clear(&cfg);
		return die(1, "tokens are %s by FEEDBACK_SIGN_TOKENS: there is no ES256 key to make",
			   cfg.mode == TOK_OFF ? "disabled" : "HS256-signed");
	}
	snprintf(keys, sizeof keys, "%s/" STATE_KEYS_DIR, state);
	struct ledger_opts o = {0};
	struct ledger *l;
	int rc = open_ledger(state, &o, &l);
	if (rc != 0)
		return rc;
	char kid[TOK_KID_MAX];
	struct tokkeys *tk = NULL;
	if (rotate)
		rc = tokkeys_rotate(keys, l, kid, err);
	else if ((rc = tokkeys_open(keys, &cfg, l, &tk, err)) == 0)
		snprintf(kid, sizeof kid, "%s", tokkeys_kid(tk));
	tokkeys_free(tk);
	tok_config_clear(&cfg);
	ledger_close(l);
	if (rc != 0)
		return die(2, "%s", err);
	printf("active token key: %s\npublic keys: %s/jwks.json and %s/token-%s.pub\n", kid, keys, keys, kid);
	return 0;
}

/* Record an identity change on the ledger (never a secret: name and groups only). */
static int identity_entry(const char *state, const char *event, const char *name, const char *groups_json)
{
	char line[1024];
	json_t *g = groups_json ? json_loads(groups_json, JSON_DECODE_ANY, NULL) : json_array();
	json_t *e = json_pack("{s:s,s:s,s:s,s:o}", "kind", "identity", "event", event, "name", name, "groups",
			      g ? g : json_array());
	char *txt = json_dumps(e, JSON_COMPACT);
	json_decref(e);
	snprintf(line, sizeof line, "%s", txt ? txt : "");
	free(txt);
	struct buf enc;
	struct ledger_opts o = {0};
	struct ledger *l;
	int rc = line_to_cbor(line, strlen(line), 0, &enc);
	if (rc == 0)
		rc = open_ledger(state, &o, &l);
	if (rc == 0) {
		char err[AS_ERRLEN];
		struct ledger_rec r = {enc.p, enc.len};
		struct ledger_pos pos;
		if (ledger_append(l, &r, 1, &pos, err) != 0)
			rc = die(2, "%s", err);
		ledger_close(l);
	}
	buf_free(&enc);
	return rc;
}

static int cmd_identity(const char *state, const char *kind, int argc, char **argv)
{
	char err[AS_ERRLEN];
	if (argc < 2)
		return die(2, "usage: assent %s add|list|remove ...", kind);
	struct registry *r;
	if (mkdir_p(state, 0700, err) != 0 || registry_load(state, &r, err) != 0)
		return die(2, "%s", err);
	const char *sub = argv[1];
	int rc = 0;
	if (!strcmp(sub, "list") && argc == 2) {
		char *s = registry_list_json(r);
		json_t *j = s ? json_loads(s, 0, NULL) : NULL;
		json_t *arr = json_object_get(j, !strcmp(kind, "agent") ? "agents" : !strcmp(kind, "admin") ? "admins" : "reviewers");
		char *out = json_dumps(arr, JSON_INDENT(2) | JSON_ENCODE_ANY);
		printf("%s\n", out ? out : "[]");
		free(out);
		free(s);
		json_decref(j);
	} else if (!strcmp(sub, "remove") && argc == 3) {
		char *groups = NULL;
		const char *g = registry_groups_json(r, kind, argv[2]);
		if (g)
			groups = strdup(g);
		if (registry_remove(r, kind, argv[2], err) != 0)
			rc = die(1, "%s", err);
		else if (registry_save(r, state, err) != 0)
			rc = die(2, "%s", err);
		else
		{
			char what[32];
			snprintf(what, sizeof what, "%s removed", kind);
			rc = identity_entry(state, what, argv[2], groups);
		}
		free(groups);
		if (rc == 0)
			printf("removed %s %s\n", kind, argv[2]);
	} else if (!strcmp(sub, "token") && !strcmp(kind, "reviewer") && argc == 3) {
		char key[REG_KEY_LEN + 1];
		if (registry_reviewer_token(r, argv[2], key, err) != 0)
			rc = die(1, "%s", err);
		else if (registry_save(r, state, err) != 0)
			rc = die(2, "%s", err);
		else
			printf("reviewer %s: a new web token, shown this once (only a hash is kept; the old one no "
			       "longer logs in, and its web sessions end):\n%s\n",
			       argv[2], key);
		explicit_bzero(key, sizeof key);
	} else if (!strcmp(sub, "add") && argc >= 3) {
		const char *name = argv[2], *proxy_id = NULL, *owner = NULL;
		uid_t uids[32];
		const char *multi[32];
		size_t nu = 0, nm = 0;
		int web = 0;
		for (int i = 3; i < argc && rc == 0; i++) {
			const char *opt = argv[i];
			const char *val = i + 1 < argc ? argv[i + 1] : NULL;
			uint64_t v;
			if (!strcmp(kind, "reviewer") && !strcmp(opt, "--web")) {
				web = 1;
				continue;
			}
			if (!strcmp(kind, "admin"))
				rc = die(2, "admin add NAME takes no options");
			else if (!val)
				rc = die(2, "%s add: %s needs a value", kind, opt);
			else if (strcmp(kind, "admin") && !strcmp(opt, "--uid") && nu < 32 && parse_u64(val, &v) == 0 &&
				 v < 0xffffffffu)
				uids[nu++] = (uid_t)v;
			else if (!strcmp(kind, "agent") && !strcmp(opt, "--owner"))
				owner = val;
			else if (!strcmp(kind, "reviewer") && !strcmp(opt, "--proxy-id"))
				proxy_id = val;
			else if (((!strcmp(kind, "reviewer") && !strcmp(opt, "--group")) ||
				  (!strcmp(kind, "agent") && !strcmp(opt, "--audience"))) &&
				 nm < 32)
				multi[nm++] = val;
			else
				rc = die(2, "%s add: bad option '%s %s' (see assent --help)", kind, opt, val);
			i++;
		}
		char key[REG_KEY_LEN + 1];
		if (rc == 0) {
			const struct reg_agent_opts ao = {.audiences = multi, .naud = nm, .uids = uids, .nuids = nu, .owner = owner};
			int a = !strcmp(kind, "agent")	 ? registry_agent_add_opts(r, name, &ao, key, err)
				: !strcmp(kind, "admin") ? registry_admin_add(r, name, key, err)
							 : registry_reviewer_add(r, name, uids, nu, multi, nm, err);
			if (a == 0 && web)
				a = registry_reviewer_token(r, name, key, err);
			if (a == 0 && proxy_id)
				a = registry_reviewer_proxy_id(r, name, proxy_id, err);
			if (a != 0)
				rc = die(1, "%s", err);
		}
		if (rc == 0 && registry_save(r, state, err) != 0)
			rc = die(2, "%s", err);
		if (rc == 0) {
			char what[32];
			snprintf(what, sizeof what, "%s added", kind);
			rc = identity_entry(state, what, name, registry_groups_json(r, kind, name));
		}
		if (rc == 0 && !strcmp(kind, "agent") && nu)
			printf("agent %s added: a stdio agent, known by the uid the gateway measures (no API key)\n", name);
		else if (rc == 0 && !strcmp(kind, "agent"))
			printf("agent %s added. Its API key, shown this once (only a hash is kept):\n%s\n", name, key);
		else if (rc == 0 && !strcmp(kind, "admin"))
			printf("admin %s added. Its token, shown this once (only a hash is kept):\n%s\n", name, key);
		else if (rc == 0 && web)
			printf("reviewer %s added. Its web token, shown this once (only a hash is kept):\n%s\n", name, key);
		else if (rc == 0)
			printf("reviewer %s added\n", name);
		explicit_bzero(key, sizeof key);
	} else {
		rc = die(2, "usage: assent %s add|list|remove ... (see assent --help)", kind);
	}
	registry_free(r);
	return rc;
}

/* ---- reviewer commands over STATE/control.sock ---- */

static int ctl_call(const char *state, json_t *req, json_t **rep)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/" STATE_CONTROL_SOCK, state);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path)
		return die(2, "state directory path too long");
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		json_decref(req);
		/* A daemon that runs but is not this user's to reach is not a daemon that is down. */
		if (e == EACCES || e == EPERM)
			return die(2, "permission denied on %s: uid %u may not reach this daemon (the operator gives reviewers "
				   "a group: ASSENT_CONTROL_GROUP=GROUP, see assentd(1))",
				   path, (unsigned)getuid());
		if (e != ENOENT && e != ECONNREFUSED)
			return die(2, "cannot reach the daemon on %s: %s", path, strerror(e));
		return die(2, "no daemon answers on %s (start it with: assentd --state %s)", path, state);
	}
	char *line = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	FILE *f = fdopen(fd, "r+");
	if (!f || !line || fprintf(f, "%s\n", line) < 0 || fflush(f) != 0) {
		free(line);
		if (f)
			fclose(f);
		return die(2, "cannot talk to the daemon: %s", strerror(errno));
	}
	free(line);
	char *resp = NULL;
	size_t cap = 0;
	ssize_t n = getline(&resp, &cap, f);
	fclose(f);
	json_error_t je;
	*rep = n > 0 ? json_loads(resp, 0, &je) : NULL;
	free(resp);
	if (!*rep)
		return die(2, "the daemon closed the connection without an answer");
	if (!json_is_true(json_object_get(*rep, "ok"))) {
		int rc = die(1, "%s", json_string_value(json_object_get(*rep, "error")) ?: "refused");
		json_decref(*rep);
		*rep = NULL;
		return rc;
	}
	return 0;
}

/* What an agent wrote, as a reviewer's terminal may show it: control, bidirectional
 * and invisible characters written as a marked \uXXXX (text.h), so no escape
 * sequence drives the terminal and no text is shown reordered or hidden. shown_marked
 * counts them for the note print_request ends with. */
static size_t shown_marked;

static void show_text(const char *s, size_t n, int keep_lines)
{
	struct buf b;
	int tty = isatty(STDOUT_FILENO);
	buf_init(&b, 16 * n + 64); /* a byte becomes at most 15: \u001b between the two marks */
	if (s && text_neutralise(s, n, keep_lines, tty ? "\033[7m" : "", tty ? "\033[27m" : "", &b, &shown_marked) == 0)
		fwrite(b.p, 1, b.len, stdout);
	buf_free(&b);
}

static void show_str(const char *s, int keep_lines) { show_text(s ? s : "?", s ? strlen(s) : 1, keep_lines); }

/* A context dumped as JSON: jansson wrote its control characters as escapes (\u001b,
 * \r, \b, \f), visible but easy to miss, so they are marked and counted like the rest;
 * everything else goes through the neutraliser. */
static void show_json(const char *js)
{
	int tty = isatty(STDOUT_FILENO);
	size_t n = strlen(js), start = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		if (js[i] != '\\')
			continue;
		char e = js[i + 1];
		size_t len = e == 'u' ? 6 : 2;
		int ctl = e == 'b' || e == 'f' || e == 'r' ||
			  (e == 'u' && i + 5 < n && js[i + 2] == '0' && js[i + 3] == '0' && (js[i + 4] == '0' || js[i + 4] == '1'));
		if (ctl) {
			show_text(js + start, i - start, 1);
			printf("%s%.*s%s", tty ? "\033[7m" : "", (int)len, js + i, tty ? "\033[27m" : "");
			shown_marked++;
			start = i + len;
		}
		i += len - 1; /* past the escape, so that \\u001b stays the text it is */
	}
	show_text(js + start, n - start, 1);
}

/* Who asked, as the signer recorded it: the measured uid, the agent key, or anonymous. */
static void show_requester(const json_t *rq)
{
	const json_t *uid = json_object_get(rq, "uid");
	const char *agent = json_string_value(json_object_get(rq, "agent"));
	/* HTTP agents on loopback carry the uid measured on their connection as well. */
	char measured[48] = "";
	if (json_is_integer(uid) && (agent || json_is_true(json_object_get(rq, "anonymous"))))
		/* HTTP on loopback, or a stdio agent registered by uid */
		snprintf(measured, sizeof measured, ", uid %lld (measured)", (long long)json_integer_value(uid));
	if (agent) {
		printf("from     agent ");
		show_str(agent, 0);
		printf(" (%s)%s, client ",
		       json_is_string(json_object_get(rq, "agent_by")) ? "registered for its uid" : "its API key", measured);
	} else if (json_is_true(json_object_get(rq, "anonymous")))
		printf("from     an anonymous HTTP client%s, client ", measured);
	else if (json_is_integer(uid))
		printf("from     uid %lld (measured), client ", (long long)json_integer_value(uid));
	else
		printf("from     (not recorded), client ");
	show_str(json_string_value(json_object_get(rq, "client")), 0);
	printf(" (declared)\n");
}

#define SHOW_TEXT_MAX (16u << 10)
#define SHOW_HEX_MAX 256u

/* A subject's bytes as the agent sent them: text when it is UTF-8 (control
 * characters replaced: they could drive the terminal), else a hex dump; long
 * content is cut, and --json has all of it. */
static void print_content(const json_t *o)
{
	const char *b = json_string_value(json_object_get(o, "content_base64"));
	if (!b) {
		if (json_object_get(o, "content_omitted"))
			printf("         (its bytes are too large to show with the rest of the request)\n");
		return;
	}
	size_t n = strlen(b), len = 0;
	uint8_t *p = malloc(n / 4 * 3 + 3);
	if (!p || b64_decode(b, n, p, n / 4 * 3 + 3, &len) != 0) {
		printf("         (its bytes could not be decoded)\n");
		free(p);
		return;
	}
	int text = utf8_valid(p, len) && !memchr(p, 0, len);
	size_t show = len > (text ? SHOW_TEXT_MAX : SHOW_HEX_MAX) ? (text ? SHOW_TEXT_MAX : SHOW_HEX_MAX) : len;
	if (text) {
		while (show < len && show > 0 && (p[show] & 0xC0) == 0x80)
			show--;
		printf("---- %zu bytes of text ----\n", len);
		show_text((const char *)p, show, 1);
		if (show && p[show - 1] != '\n')
			putchar('\n');
	} else {
		printf("---- %zu bytes, binary ----\n", len);
		for (size_t k = 0; k < show; k += 16) {
			printf("%08zx ", k);
			for (size_t j = k; j < k + 16 && j < show; j++)
				printf(" %02x", p[j]);
			putchar('\n');
		}
	}
	if (show < len)
		printf("---- %zu more bytes not shown: `assent show ID --json` has them all ----\n", len - show);
	else
		printf("----\n");
	free(p);
}

static void print_request(const json_t *r)
{
	shown_marked = 0;
	printf("session  ");
	show_str(json_string_value(json_object_get(r, "session_id")), 0);
	printf("\ntype     ");
	show_str(json_string_value(json_object_get(r, "type")), 0);
	printf("\n");
	show_requester(json_object_get(r, "requester"));
	const char *aud = json_string_value(json_object_get(r, "audience"));
	if (aud) {
		printf("audience ");
		show_str(aud, 0);
		printf("\n");
	}
	long long left = json_integer_value(json_object_get(r, "deadline")) - (long long)time(NULL);
	printf("expires  in %lld s\n", left > 0 ? left : 0);
	printf("action   ");
	show_str(json_string_value(json_object_get(r, "action")), 0);
	printf("\n\n");
	show_str(json_string_value(json_object_get(r, "message")), 1);
	printf("\n");
	const json_t *ctx = json_object_get(r, "context");
	if (ctx) {
		/* jansson escapes controls but leaves bidirectional and invisible characters as they are */
		char *c = json_is_string(ctx) ? strdup(json_string_value(ctx)) : json_dumps(ctx, JSON_INDENT(2));
		printf("\ncontext:\n");
		if (json_is_string(ctx))
			show_str(c, 1);
		else if (c)
			show_json(c);
		printf("\n");
		free(c);
	}
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(r, "options"), i, o) {
		printf("  %zu. ", i + 1);
		show_str(json_string_value(o), 0);
		printf("\n");
	}
	const json_t *sub = json_object_get(r, "subject");
	json_array_foreach(sub, i, o) {
		printf("subject  ");
		show_str(json_string_value(json_object_get(o, "name")), 0);
		printf(" sha256:");
		show_str(json_string_value(json_object_get(json_object_get(o, "digest"), "sha256")), 0);
		printf(" (%s)\n", json_is_true(json_object_get(o, "computed")) ? "computed by the gateway" : "asserted by the agent");
		print_content(o);
	}
	if (shown_marked)
		printf("\nnote: %zu control, bidirectional or invisible character%s in this request %s shown as \\uXXXX\n",
		       shown_marked, shown_marked == 1 ? "" : "s", shown_marked == 1 ? "is" : "are");
}

static int cmd_decide(const char *state, const char *sid, const char *outcome, const char *text, long n)
{
	json_t *req = json_pack("{s:s,s:s,s:s}", "cmd", "decide", "session_id", sid, "outcome", outcome);
	if (text)
		json_object_set_new(req, "text", json_string(text));
	if (n > 0)
		json_object_set_new(req, "option", json_integer(n));
	json_t *rep;
	int rc = ctl_call(state, req, &rep);
	if (rc != 0)
		return rc;
	if (json_is_true(json_object_get(rep, "pending")))
		printf("%s: approval %lld of %lld recorded; it waits for more distinct reviewers\n", sid,
		       (long long)json_integer_value(json_object_get(rep, "approvals")),
		       (long long)json_integer_value(json_object_get(rep, "quorum")));
	else
		printf("%s %s%s\n", sid, outcome, json_is_true(json_object_get(rep, "token")) ? " (approval token issued)" : "");
	json_decref(rep);
	return 0;
}

/* Every request the reviewer may decide: the daemon answers in pages (each one
 * frame), fetched here from next_offset until none is left. */
static int pending_all(const char *state, json_t **rep)
{
	int rc = ctl_call(state, json_pack("{s:s}", "cmd", "pending"), rep);
	json_t *all = rc == 0 ? json_object_get(*rep, "requests") : NULL;
	for (int page = 0; rc == 0 && page < 100000 && json_is_integer(json_object_get(*rep, "next_offset")); page++) {
		json_int_t off = json_integer_value(json_object_get(*rep, "next_offset"));
		json_t *next;
		if ((rc = ctl_call(state, json_pack("{s:s,s:I}", "cmd", "pending", "offset", off), &next)) != 0)
			break;
		json_array_extend(all, json_object_get(next, "requests"));
		json_object_del(*rep, "next_offset");
		json_object_del(*rep, "more");
		json_t *no = json_object_get(next, "next_offset");
		if (json_is_integer(no) && json_integer_value(no) > off) {
			json_object_set(*rep, "next_offset", no);
			json_object_set(*rep, "more", json_object_get(next, "more"));
		}
		json_decref(next);
	}
	return rc;
}

static int cmd_review(const char *state)
{
	json_t *rep;
	int rc = pending_all(state, &rep);
	if (rc != 0)
		return rc;
	size_t i;
	json_t *r;
	json_t *reqs = json_object_get(rep, "requests");
	if (json_array_size(reqs) == 0)
		printf("nothing is pending\n");
	json_array_foreach(reqs, i, r) {
		json_t *full;
		const char *id = json_string_value(json_object_get(r, "session_id"));
		if (ctl_call(state, json_pack("{s:s,s:s}", "cmd", "show", "session_id", id), &full) != 0)
			continue; /* decided, timed out or cancelled since the list was made */
		printf("\n==== %zu of %zu ====\n", i + 1, json_array_size(reqs));
		print_request(json_object_get(full, "request"));
		json_decref(full);
		const char *type = json_string_value(json_object_get(r, "type"));
		const char *sid = json_string_value(json_object_get(r, "session_id"));
		int sel = !strcmp(type, "selection"), input = !strcmp(type, "input");
		printf("\n%s> ", sel ? "[number] select, [r]eject, [s]kip" : input ? "[a]nswer, [r]eject, [s]kip"
										   : "[a]pprove, [r]eject, [s]kip");
		fflush(stdout);
		char *line = NULL;
		size_t cap = 0;
		if (getline(&line, &cap, stdin) <= 0) {
			free(line);
			break;
		}
		line[strcspn(line, "\n")] = 0;
		char *text = NULL;
		size_t tc = 0;
		if (line[0] == 'r') {
			printf("reason> ");
			fflush(stdout);
			if (getline(&text, &tc, stdin) > 0) {
				text[strcspn(text, "\n")] = 0;
				rc = cmd_decide(state, sid, "rejected", text, 0);
			}
		} else if (line[0] == 'a' && input) {
			printf("answer> ");
			fflush(stdout);
			if (getline(&text, &tc, stdin) > 0) {
				text[strcspn(text, "\n")] = 0;
				rc = cmd_decide(state, sid, "answered", text, 0);
			}
		} else if (line[0] == 'a' && !sel) {
			rc = cmd_decide(state, sid, "approved", NULL, 0);
		} else if (sel && line[0] >= '1' && line[0] <= '9') {
			rc = cmd_decide(state, sid, "selected", NULL, strtol(line, NULL, 10));
		}
		free(line);
		free(text);
	}
	json_decref(rep);
	return rc;
}

static int cmd_reviewer(const char *state, int argc, char **argv)
{
	const char *cmd = argv[0];
	int json = argc > 1 && !strcmp(argv[argc - 1], "--json");
	if (json)
		argc--;
	json_t *rep;
	int rc;
	if (!strcmp(cmd, "pending") && argc == 1) {
		if ((rc = pending_all(state, &rep)) != 0)
			return rc;
		json_t *reqs = json_object_get(rep, "requests");
		if (json) {
			char *s = json_dumps(reqs, JSON_INDENT(2) | JSON_ENSURE_ASCII); /* no raw bidi or invisible character on a terminal */
			printf("%s\n", s);
			free(s);
		} else {
			size_t i;
			json_t *r;
			if (json_array_size(reqs) == 0)
				printf("nothing is pending\n");
			json_array_foreach(reqs, i, r) {
				long long left = json_integer_value(json_object_get(r, "deadline")) - (long long)time(NULL);
				printf("%s  %-12s %4llds left  ", json_string_value(json_object_get(r, "session_id")),
				       json_string_value(json_object_get(r, "type")), left > 0 ? left : 0);
				const char *msg = json_string_value(json_object_get(r, "message"));
				size_t mn = msg ? strlen(msg) : 0;
				for (mn = mn > 70 ? 70 : mn; msg && mn > 0 && ((unsigned char)msg[mn] & 0xC0) == 0x80; mn--)
					; /* cut on a character boundary */
				show_text(msg ? msg : "", mn, 0);
				printf("\n");
			}
			if (json_integer_value(json_object_get(rep, "more")) > 0)
				printf("... and %lld more\n", (long long)json_integer_value(json_object_get(rep, "more")));
		}
		json_decref(rep);
		return 0;
	}
	if (!strcmp(cmd, "show") && argc == 2) {
		if ((rc = ctl_call(state, json_pack("{s:s,s:s}", "cmd", "show", "session_id", argv[1]), &rep)) != 0)
			return rc;
		if (json) {
			char *s = json_dumps(json_object_get(rep, "request"), JSON_INDENT(2) | JSON_ENSURE_ASCII);
			printf("%s\n", s);
			free(s);
		} else {
			print_request(json_object_get(rep, "request"));
		}
		json_decref(rep);
		return 0;
	}
	if (!strcmp(cmd, "whoami") && argc == 1) {
		if ((rc = ctl_call(state, json_pack("{s:s}", "cmd", "whoami"), &rep)) != 0)
			return rc;
		printf("%s (uid %lld)\n", json_string_value(json_object_get(rep, "reviewer")),
		       (long long)json_integer_value(json_object_get(rep, "uid")));
		json_decref(rep);
		return 0;
	}
	if (!strcmp(cmd, "status") && argc == 1) {
		if ((rc = ctl_call(state, json_pack("{s:s}", "cmd", "status"), &rep)) != 0)
			return rc;
		json_object_del(rep, "ok");
		if (json) {
			char *s = json_dumps(rep, JSON_INDENT(2));
			printf("%s\n", s);
			free(s);
		} else {
			const char *k;
			json_t *v;
			json_object_foreach(rep, k, v) {
				printf("%-24s %lld\n", k, (long long)json_integer_value(v));
			}
		}
		json_decref(rep);
		return 0;
	}
	if (!strcmp(cmd, "approve") && (argc == 2 || (argc == 4 && !strcmp(argv[2], "-m"))))
		return cmd_decide(state, argv[1], "approved", argc == 4 ? argv[3] : NULL, 0);
	if (!strcmp(cmd, "reject") && argc == 4 && !strcmp(argv[2], "-m"))
		return cmd_decide(state, argv[1], "rejected", argv[3], 0);
	if (!strcmp(cmd, "reject"))
		return die(2, "reject needs a reason the agent will read: assent reject ID -m TEXT");
	if (!strcmp(cmd, "answer") && argc == 3)
		return cmd_decide(state, argv[1], "answered", argv[2], 0);
	if (!strcmp(cmd, "select") && argc == 3) {
		uint64_t n;
		if (parse_u64(argv[2], &n) != 0 || n < 1 || n > 64)
			return die(2, "select: '%s' is not an option number (1, 2, ...)", argv[2]);
		return cmd_decide(state, argv[1], "selected", NULL, (long)n);
	}
	if (!strcmp(cmd, "review") && argc == 1)
		return cmd_review(state);
	return die(2, "usage: assent %s ... (see assent --help)", cmd);
}

int main(int argc, char **argv)
{
	const char *state_flag = NULL;
	/* A daemon that closes the control connection early (a worker restarting) is an
	 * error to report, not a signal to die of silently. */
	signal(SIGPIPE, SIG_IGN);
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--state") && i + 1 < argc) {
			state_flag = argv[++i];
		} else if (!strncmp(argv[i], "--state=", 8)) {
			state_flag = argv[i] + 8;
		} else {
			return die(2, "unknown option '%s' (see assent --help)", argv[i]);
		}
	}
	if (i >= argc)
		return die(2, "missing command (see assent --help)");
	char state[4096], err[AS_ERRLEN];
	if (state_dir_resolve(state_flag, state, sizeof state, err) != 0)
		return die(2, "%s", err);
	static const char *const review_cmds[] = {"pending", "show", "approve", "reject", "answer",
						  "select", "review", "whoami", "status"};
	for (size_t k = 0; k < sizeof review_cmds / sizeof *review_cmds; k++)
		if (!strcmp(argv[i], review_cmds[k]))
			return cmd_reviewer(state, argc - i, argv + i);
	if (!strcmp(argv[i], "reviewer") || !strcmp(argv[i], "agent") || !strcmp(argv[i], "admin"))
		return cmd_identity(state, argv[i], argc - i, argv + i);
	if (!strcmp(argv[i], "policy"))
		return cmd_policy(argc - i, argv + i);
	if (!strcmp(argv[i], "keygen"))
		return cmd_keygen(state, argc - i, argv + i);
	if (!strcmp(argv[i], "ledger") && i + 1 < argc) {
		if (!strcmp(argv[i + 1], "append"))
			return cmd_append(state, argc - i - 1, argv + i + 1);
		if (!strcmp(argv[i + 1], "checkpoint"))
			return cmd_checkpoint(state, argc - i - 1, argv + i + 1);
	}
	return die(2, "unknown command '%s' (see assent --help)", argv[i]);
}
