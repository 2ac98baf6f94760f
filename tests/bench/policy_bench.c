/* make bench: the policy language's cost (assent.policy(5)), in-process.
 *
 *   policy_bench          a generated 1,000-rule policy (999 rules and the default), mixed
 *                         conditions: type lists, audience and client globs, agent, context
 *                         fields (= < > <=, nested paths), POSIX regular expressions on the
 *                         message and context, risk levels, shadow rules. Most rules pass their
 *                         first conditions for the benchmark request and fail a later one (a
 *                         glob, a regex, a number), as rules about the same audience do. Prints
 *                         the parse time, then evaluations per second for a request decided by
 *                         the first rule, by rule 500, by rule 999, and by the default.
 *   policy_bench --dump   prints the generated policy (assent policy check reads it).
 *   policy_bench --sign [SECONDS]
 *                         approval tokens signed per second through the signer's own issuance
 *                         (tok_prepare + tok_issue: a fresh jti from getrandom, the claims, and
 *                         OpenSSL's ES256 with the key held or mbedTLS's HMAC), ES256
 *                         and HS256, one JSON line: {"es256_per_s":N,"hs256_per_s":N}. The policy
 *                         end-to-end bench runs it to have "the ES256 signing rate alone".
 *
 * Figures only; nothing passes or fails on time. Exits 2 when something does not work (the
 * policy does not parse, a request is decided by another rule than the one meant). */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "include/assent/err.h"
#include "policy/policy.h"
#include "gateway/state/token.h"

#define NRULES 1000 /* rules, the default included */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *m)
{
	fprintf(stderr, "policy_bench: %s\n", m);
	exit(2);
}

/* ---- the policy ---- */

struct gen {
	char *p;
	size_t len, cap;
	unsigned line; /* lines written so far */
};

static void emit(struct gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(struct gen *g, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(g->p + g->len, g->cap - g->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			die("vsnprintf");
		if ((size_t)n + 2 < g->cap - g->len) {
			g->len += (size_t)n;
			g->p[g->len++] = '\n';
			g->p[g->len] = 0;
			g->line++;
			return;
		}
		g->cap *= 2;
		if (!(g->p = realloc(g->p, g->cap)))
			die("out of memory");
	}
}

/* One of ten kinds of rule; none matches the benchmark request (policy_eval checks). */
static void filler(struct gen *g, int i)
{
	switch (i % 10) {
	case 0: /* type and audience hold; the path regex does not */
		emit(g,
		     "allow type approval,confirmation audience \"prod-eu-*\" context.path ~ \"^/srv/app%d/\" "
		     "token-ttl 600",
		     i);
		break;
	case 1: /* type holds; the message regex does not */
		emit(
		    g,
		    "deny type approval message ~ \"DROP[[:space:]]+TABLE[[:space:]]+t%d([^0-9]|$)\" reason \"dropping "
		    "table t%d is refused\"",
		    i, i);
		break;
	case 2: /* another agent */
		emit(g, "ask agent bot-%d audience \"prod-*\" reviewers group:ops,alice deadline 900 on-timeout deny",
		     i);
		break;
	case 3: /* another type */
		emit(g, "allow type confirmation context.readonly = true context.env = \"stage-%d\"", i);
		break;
	case 4: /* audience and risk hold; the cost does not */
		emit(g, "ask audience \"prod-eu-*\" risk >= high context.cost > %d reviewers group:finance quorum 2",
		     1000 + i);
		break;
	case 5: /* a nested context field */
		emit(g, "deny context.user.name = \"u%d\" context.env = production reason \"user u%d is suspended\"", i,
		     i);
		break;
	case 6: /* the client glob (or the uid) */
		if (i % 20 == 6)
			emit(g, "ask client \"ide-%d*\" type input reviewers alice", i);
		else
			emit(g, "allow uid %d type confirmation,input", 2000 + i);
		break;
	case 7: /* type holds; the command regex does not */
		emit(g,
		     "ask type approval context.cmd ~ \"^kubectl (delete|drain) .* -n ns-%d$\" reviewers bob,carol "
		     "deadline "
		     "1800",
		     i);
		break;
	case 8: /* another audience; a number */
		emit(g, "allow type approval audience \"staging-%d\" context.replicas <= 2", i);
		break;
	case 9: /* a shadow rule whose regex does not hold */
		emit(g, "shadow deny type approval context.path ~ \"^/etc/svc%d\" reason \"system configuration\"", i);
		break;
	}
}

struct target {
	const char *name, *casev;
	int index;     /* rule index (0-based) the request is meant to stop at; -1: the default */
	unsigned line; /* its line in the source */
};

static char *make_policy(struct target *t, size_t nt, size_t *len)
{
	struct gen g = {.cap = 1 << 16};
	if (!(g.p = malloc(g.cap)))
		die("out of memory");
	g.p[0] = 0;
	emit(&g, "# generated by tests/bench/policy_bench.c: %d rules, the default last", NRULES);
	for (int i = 0; i < NRULES - 1; i++) {
		size_t k;
		for (k = 0; k < nt && t[k].index != i; k++)
			;
		if (k < nt) {
			const char *act = i == 0 ? "allow" : i < NRULES / 2 ? "deny" : "ask";
			const char *opt = i == 0	   ? "token-ttl 300"
					  : i < NRULES / 2 ? "reason \"mid-policy rule\""
							   : "reviewers group:ops deadline 600";
			emit(&g, "%s type approval audience \"prod-eu-*\" context.case = %s %s", act, t[k].casev, opt);
			t[k].line = g.line;
		} else {
			filler(&g, i);
		}
	}
	emit(&g, "default ask deadline 3600");
	for (size_t k = 0; k < nt; k++)
		if (t[k].index < 0)
			t[k].line = g.line;
	*len = g.len;
	return g.p;
}

static json_t *request(const char *casev)
{
	json_error_t je;
	json_t *j =
	    json_pack_ex(&je, 0, "{s:s,s:s,s:s,s:s,s:s,s:i,s:{s:s,s:s,s:s,s:i,s:s,s:{s:s,s:s},s:b,s:i,s:s}}", "type",
			 "approval", "audience", "prod-eu-1", "agent", "deploy-bot", "client", "claude-code", "message",
			 "kubectl delete deployment web-frontend -n shop-prod", "uid", 1000, "context", "path",
			 "/srv/shop/releases/2026-11-30", "cmd", "kubectl delete deployment web-frontend -n shop-prod",
			 "risk", "high", "cost", 42, "env", "production", "user", "name", "carol", "team", "web",
			 "readonly", 0, "replicas", 3, "case", casev);
	if (!j)
		die(je.text);
	return j;
}

static void bench_policy(void)
{
	struct target t[] = {
	    {"first rule matches (rule 1)", "first", 0, 0},
	    {"rule 500 matches", "mid", 499, 0},
	    {"rule 999 matches (the last before the default)", "last", NRULES - 2, 0},
	    {"no rule matches: the default (rule 1000)", "none", -1, 0},
	};
	size_t nt = sizeof t / sizeof t[0], len;
	char *src = make_policy(t, nt, &len);

	struct pol_msgs m;
	struct policy *p = NULL;
	double best = 1e9, first = 0;
	for (int k = 0; k < 5; k++) {
		struct policy *q = NULL;
		memset(&m, 0, sizeof m);
		double t0 = now_s();
		int rc = policy_parse(src, len, &q, &m);
		double el = now_s() - t0;
		if (rc != 0) {
			for (size_t i = 0; i < m.n; i++)
				fprintf(stderr, "policy_bench: line %u col %u: %s (%s)\n", m.m[i].line, m.m[i].col,
					m.m[i].msg, m.m[i].text);
			die("the generated policy does not parse");
		}
		if (k == 0)
			first = el;
		if (el < best)
			best = el;
		if (p)
			policy_free(p);
		p = q;
	}
	if (policy_nrules(p) != NRULES) {
		fprintf(stderr, "policy_bench: %zu rules parsed, %d meant\n", policy_nrules(p), NRULES);
		exit(2);
	}

	printf("== policy evaluation (in-process; a generated policy of %zu rules, %zu bytes) ==\n", policy_nrules(p),
	       len);
	printf("%-52s %12.2f\n", "parse, ms (first of 5)", first * 1e3);
	printf("%-52s %12.2f\n", "parse, ms (best of 5)", best * 1e3);
	if (m.warnings)
		printf("(%zu warnings from the parser)\n", m.warnings);
	printf("%-52s %12s %12s\n", "", "evals/s", "ns/eval");
	for (size_t k = 0; k < nt; k++) {
		json_t *j = request(t[k].casev);
		const char *names[16];
		int computed[16];
		struct pol_request r;
		pol_request_from_json(j, &r, names, computed);
		struct pol_decision d;
		policy_eval(p, &r, &d);
		if (d.line != t[k].line || (t[k].index < 0) != !!d.by_default || d.shadowed) {
			fprintf(stderr,
				"policy_bench: %s: decided by line %u (default %d, shadowed %d), line %u meant\n",
				t[k].name, d.line, d.by_default, d.shadowed, t[k].line);
			exit(2);
		}
		/* a batch big enough to be timed, then as many batches as fit in half a second */
		long n = 0, batch = 1;
		double t0 = now_s(), el;
		for (;;) {
			for (long i = 0; i < batch; i++)
				policy_eval(p, &r, &d);
			n += batch;
			el = now_s() - t0;
			if (el >= 0.5)
				break;
			if (el < 0.05)
				batch *= 2;
		}
		printf("%-52s %12.0f %12.0f\n", t[k].name, n / el, el * 1e9 / n);
		json_decref(j);
	}
	policy_free(p);
	free(src);
}

/* ---- token signing alone ---- */

static double sign_rate(const struct tokkeys *k, const char *digest, double seconds)
{
	char err[AS_ERRLEN];
	struct tok_request r = {.aud = "default",
				.session_id = "req-00112233445566778899aabbccddeeff",
				.policy_rule = "2",
				.policy_digest = digest,
				.assurance = "policy"};
	memset(r.action_sha256, 'a', 64);
	uint8_t leaf[32] = {1};
	long n = 0;
	double t0 = now_s(), el;
	do {
		struct tok_ticket tk;
		char *jwt = NULL;
		if (tok_prepare(k, &r, &tk, err) != 0 || tok_issue(k, &r, &tk, (uint64_t)n + 1, leaf, &jwt, err) != 0) {
			fprintf(stderr, "policy_bench: signing failed: %s\n", err);
			exit(2);
		}
		free(jwt);
		n++;
		el = now_s() - t0;
	} while (el < seconds);
	return n / el;
}

static void bench_sign(double seconds)
{
	char dir[] = "/tmp/assent-pbench.XXXXXX", err[AS_ERRLEN], keys[64];
	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(keys, sizeof keys, "%s/keys", dir);
	const char *digest = "5d41402abc4b2a76b9719d911017c592aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

	struct tok_config ce = {.mode = TOK_ES256};
	snprintf(ce.iss, sizeof ce.iss, "assent");
	struct tokkeys *ke = NULL;
	if (tokkeys_open(keys, &ce, NULL, &ke, err) != 0) {
		fprintf(stderr, "policy_bench: ES256 key: %s\n", err);
		exit(2);
	}
	uint8_t secret[48];
	for (size_t i = 0; i < sizeof secret; i++)
		secret[i] = (uint8_t)(i * 37 + 11);
	struct tok_config ch = {.mode = TOK_HS256, .secret = secret, .secret_len = sizeof secret};
	snprintf(ch.iss, sizeof ch.iss, "assent");
	struct tokkeys *kh = NULL;
	if (tokkeys_open(keys, &ch, NULL, &kh, err) != 0) {
		fprintf(stderr, "policy_bench: HS256 secret: %s\n", err);
		exit(2);
	}
	sign_rate(ke, digest, seconds / 10); /* warm up */
	double es = sign_rate(ke, digest, seconds), hs = sign_rate(kh, digest, seconds);
	tokkeys_free(ke);
	tokkeys_free(kh);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		die("cannot remove the key directory");
	printf("{\"es256_per_s\":%.0f,\"hs256_per_s\":%.0f,\"seconds\":%.2f}\n", es, hs, seconds);
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "--sign")) {
		double s = argc >= 3 ? atof(argv[2]) : 1.0;
		bench_sign(s > 0 ? s : 1.0);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "--dump")) { /* the generated policy, for assent policy check */
		struct target t[] = {{"", "first", 0, 0}, {"", "mid", 499, 0}, {"", "last", NRULES - 2, 0}};
		size_t len;
		char *src = make_policy(t, 3, &len);
		fwrite(src, 1, len, stdout);
		free(src);
		return 0;
	}
	if (argc != 1) {
		fprintf(stderr, "usage: policy_bench [--sign [SECONDS] | --dump]\n");
		return 2;
	}
	bench_policy();
	return 0;
}
