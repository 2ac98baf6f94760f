/* assent policy check | test: a policy file's diagnostics, and the decision it makes for a
 * request; assent upstreams check: an upstreams file (assent.upstreams(5)) as the gate reads it. */
#define _GNU_SOURCE
#include "gateway/cli/cli.h"

#include <getopt.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <stdarg.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gateway/state/upstreams.h"

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
		fprintf(stderr, "%s:%u:%u: %s: %s%s%s%s\n", path, x->line, x->col, x->warning ? "warning" : "error",
			x->msg, x->text[0] ? ": '" : "", x->text, x->text[0] ? "'" : "");
	}
	if (m.dropped)
		fprintf(stderr, "%s: %zu more messages not shown\n", path, m.dropped);
	return rc == 0 ? 0 : 1;
}

int cmd_policy(int argc, char **argv)
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
	if (d.on_declared)
		printf("  on the client name the agent declared (not proven)\n");
	if (d.on_annotation)
		printf("  on a tool annotation, as the upstream declared it (not proven)\n");
	printf("  policy sha256 %s\n", policy_digest(p));
	policy_free(p);
	json_decref(req);
	return 0;
}

/* ---- upstreams check ---- */

/* Names only: an environment's and a header's values are the servers' credentials. */
static void print_names(const char *what, const struct up_pair *p, size_t n)
{
	if (!n)
		return;
	printf("    %s:", what);
	for (size_t i = 0; i < n; i++)
		printf(" %s", p[i].key);
	printf(" (values not shown)\n");
}

/* Where the daemon's exec would find a command: a path with a slash (relative to the
 * server's cwd), else each directory of the server's PATH (its env's, else assentd's, as
 * gate.c's server_env gives it). 1 when found and executable. */
static int command_found(const struct upstream *x)
{
	char path[4200];
	if (strchr(x->command, '/')) {
		snprintf(path, sizeof path, "%s%s%s", x->command[0] != '/' && x->cwd ? x->cwd : "",
			 x->command[0] != '/' && x->cwd ? "/" : "", x->command);
		return access(path, X_OK) == 0;
	}
	const char *p = getenv("PATH");
	for (size_t i = 0; i < x->nenv; i++)
		if (!strcmp(x->env[i].key, "PATH"))
			p = x->env[i].value;
	if (!p)
		p = "/usr/local/bin:/usr/bin:/bin";
	while (*p) {
		size_t n = strcspn(p, ":");
		snprintf(path, sizeof path, "%.*s%s%s", (int)n, p, n ? "/" : "./", x->command);
		struct stat st;
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0)
			return 1;
		p += n + (p[n] == ':');
	}
	return 0;
}

int cmd_upstreams(int argc, char **argv)
{
	if (argc != 3 || strcmp(argv[1], "check"))
		return die(2, "usage: assent upstreams check FILE");
	struct upstreams *u;
	char err[AS_ERRLEN];
	int rc = upstreams_load(argv[2], &u, err);
	if (rc != 0)
		return die(rc == AS_EINVAL || rc == AS_ETOOBIG ? 1 : 2, "%s", err); /* 2: cannot read it */
	printf("%s: %zu upstream server%s\n", argv[2], u->n, u->n == 1 ? "" : "s");
	size_t warned = 0;
	for (size_t i = 0; i < u->n; i++) {
		const struct upstream *x = &u->u[i];
		if (x->kind == UP_STDIO) {
			printf("  %s: stdio: %s", x->name, x->command);
			for (size_t k = 0; k < x->nargs; k++)
				printf(" %s", x->args[k]);
			printf("\n");
			if (x->cwd)
				printf("    cwd: %s\n", x->cwd);
			if (x->has_uid)
				printf("    runs as uid %u\n", (unsigned)x->uid);
			print_names("env", x->env, x->nenv);
			if (!command_found(x)) {
				warned++;
				fprintf(stderr,
					"assent: warning: %s: command '%s' is not found on the server's PATH (or "
					"not executable): the daemon would start it again and again, with backoff\n",
					x->name, x->command);
			}
		} else {
			printf("  %s: Streamable HTTP: %s://%s%s%s:%u%s%s\n", x->name, x->scheme,
			       strchr(x->host, ':') ? "[" : "", x->host, strchr(x->host, ':') ? "]" : "", x->port,
			       x->path, x->ca ? "" : (strcmp(x->scheme, "https") ? "" : " (system CA store)"));
			if (x->ca)
				printf("    CA pinned: %s\n", x->ca);
			print_names("headers", x->headers, x->nheaders);
		}
	}
	upstreams_free(u);
	if (warned)
		printf("%zu warning%s (see above): the file is valid\n", warned, warned == 1 ? "" : "s");
	return 0;
}
