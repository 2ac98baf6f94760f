/* Fuzz target: the policy language. The input is a policy, then optionally a NUL
 * byte and a request as JSON (request_feedback's arguments plus agent, uid, client).
 * Properties (abort when violated): parsing never crashes, is deterministic (the
 * same rules, digest and diagnostics twice), reports an error for every refusal
 * and none on success; a loaded policy always decides (a rule line, an action in
 * range, a deny with its reason, a quorum of 1 to 16, a shadowed decision that
 * asks), and evaluation is deterministic. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/assent/err.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *cur_data;
static size_t cur_size;

static void fail(const char *why)
{
	fprintf(stderr, "policy: property violated: %s\n", why);
	fprintf(stderr, "input (%zu bytes): %.*s\n", cur_size, cur_size > 2048 ? 2048 : (int)cur_size,
		(const char *)cur_data);
	abort();
}

static void check_msgs(const struct pol_msgs *m)
{
	if (m->n > POL_MSGS_MAX || m->n + m->dropped != m->errors + m->warnings)
		fail("diagnostic counts do not add up");
	for (size_t i = 0; i < m->n; i++) {
		if (!memchr(m->m[i].msg, 0, sizeof m->m[i].msg) || !memchr(m->m[i].text, 0, sizeof m->m[i].text) ||
		    !m->m[i].msg[0])
			fail("a diagnostic is empty or not terminated");
		for (const char *p = m->m[i].text; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				fail("a diagnostic's text has a control character");
	}
}

static void check_decision(const struct pol_decision *d)
{
	if ((unsigned)d->action > POL_ASK || d->line == 0)
		fail("no rule decided, or an action out of range");
	if (!memchr(d->reason, 0, sizeof d->reason) || (d->action == POL_DENY && !d->reason[0]))
		fail("a deny without its reason");
	if (d->quorum < 1 || d->quorum > 16 || d->nreviewers > POL_LIST_MAX)
		fail("a quorum or reviewer count out of range");
	if (d->shadowed && (d->action != POL_ASK || !d->shadow_line))
		fail("a shadowed decision that does not ask");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cur_data = data;
	cur_size = size;
	const uint8_t *nul = memchr(data, 0, size);
	size_t plen = nul ? (size_t)(nul - data) : size;
	char *src = malloc(plen + 1);
	if (!src)
		return 0;
	memcpy(src, data, plen);
	src[plen] = 0;
	struct pol_msgs m1, m2;
	struct policy *p1 = NULL, *p2 = NULL;
	int rc1 = policy_parse(src, plen, &p1, &m1), rc2 = policy_parse(src, plen, &p2, &m2);
	check_msgs(&m1);
	if (rc1 != rc2 || m1.errors != m2.errors || m1.warnings != m2.warnings || (!p1) != (!p2))
		fail("parsing is not deterministic");
	if ((rc1 == 0) != (p1 != NULL) || (rc1 == 0) != (m1.errors == 0) ||
	    (rc1 != 0 && rc1 != AS_EINVAL && rc1 != AS_ENOMEM))
		fail("a result and its diagnostics disagree");
	if (p1 && (policy_nrules(p1) != policy_nrules(p2) || strcmp(policy_digest(p1), policy_digest(p2)) ||
		   policy_nrules(p1) == 0 || policy_nrules(p1) > POL_RULES_MAX))
		fail("the same source gave different policies");
	if (p1 && nul) {
		json_error_t je;
		json_t *req = json_loadb((const char *)nul + 1, size - plen - 1, 0, &je);
		if (json_is_object(req)) {
			const char *names[16];
			int computed[16];
			struct pol_request r;
			struct pol_decision d1, d2;
			pol_request_from_json(req, &r, names, computed);
			policy_eval(p1, &r, &d1);
			policy_eval(p2, &r, &d2);
			check_decision(&d1);
			if (memcmp(&d1, &d2, sizeof d1) != 0)
				fail("evaluation is not deterministic");
		}
		json_decref(req);
	}
	policy_free(p1);
	policy_free(p2);
	free(src);
	return 0;
}
