/* The policy (policy/): decide at once, or ask with its terms; loading it at start. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the policy (policy/): decide at once, or ask with its terms ---- */

/* The subjects of a request as a token and the policy name them (at most 16). */
size_t req_subjects(const struct req *r, struct tok_subject out[16])
{
	size_t ns = 0, k;
	json_t *x;
	json_array_foreach(r->subjects, k, x)
	{
		if (ns == 16)
			break;
		out[ns].name = json_string_value(json_object_get(x, "name"));
		snprintf(out[ns].sha256, sizeof out[ns].sha256, "%s", json_string_value(json_object_get(x, "sha256")));
		out[ns++].computed = json_is_true(json_object_get(x, "computed"));
	}
	return ns;
}

/* Whom a token for r is for: the policy's token-audience, else the request's, else "assent". */
const char *req_token_aud(const struct req *r)
{
	return r->has_pd && r->pd.token_audience[0] ? r->pd.token_audience : r->audience[0] ? r->audience : "assent";
}

/* The token a decision entry names: {jti, kid, exp}. 0, or AS_ENOMEM (fields.c). */
int put_token(struct cv_arena *a, struct cv *slot, const struct tok_ticket *t)
{
	GUARD(slot_map(a, slot, 3));
	size_t i = 0;
	return kv_text(a, slot, &i, "jti", t->jti, strlen(t->jti)) |
	       kv_text(a, slot, &i, "kid", t->kid, strlen(t->kid)) | kv_uint(a, slot, &i, "exp", t->exp);
}

/* A gated call as the policy reads it: its upstream, tool, exact arguments and annotations. */
static void gate_evaluate(const struct req *r, struct pol_request *q)
{
	q->upstream = r->gate->upstream;
	q->tool = r->gate->tool[0] ? r->gate->tool : NULL; /* a resources/read names no tool */
	q->args = r->gate->args;
	q->annotations = r->gate->ann;
	q->message = NULL;
	q->context = NULL;
}

void evaluate(struct signer *s, const struct conn *c, const struct req *r, struct pol_decision *d)
{
	struct tok_subject subj[16];
	const char *names[16];
	int computed[16];
	size_t ns = req_subjects(r, subj);
	for (size_t k = 0; k < ns; k++) {
		names[k] = subj[k].name;
		computed[k] = subj[k].computed;
	}
	char client[160];
	snprintf(client, sizeof client, "%s", r->client);
	client[strcspn(client, "/")] = 0; /* "name/version": rules match the name */
	struct pol_request q = {.type = r->type,
				.audience = r->audience[0] ? r->audience : NULL,
				.message = json_string_value(json_object_get(r->view, "message")),
				.agent = c->http ? (c->agent[0] ? c->agent : NULL)
					 : s->reg
					     ? registry_agent_by_uid(s->reg, c->uid) /* measured: as good as a key */
					     : NULL,
				.uid = r->uid == (uid_t)-1 ? -1 : (long long)r->uid, /* measured, on either transport */
				.client = client,
				.context = json_object_get(r->view, "context"),
				.nsubjects = ns,
				.subject_names = names,
				.subject_computed = computed};
	if (r->gate) /* a gated call: the call's conditions, never a request's */
		gate_evaluate(r, &q);
	policy_eval(s->pol, &q, d);
}

/* The policy's citation in an entry: {rule, digest, decision[, shadow {rule, would}]}.
 * 0, or AS_ENOMEM (fields.c). */
int put_policy(struct cv_arena *a, struct cv *slot, const struct pol_decision *d, const char *digest)
{
	struct cv *m = cv_map(a, 3 + (d->shadowed ? 1 : 0) + (d->on_declared ? 1 : 0) + (d->on_annotation ? 1 : 0));
	size_t i = 0;
	const char *act = pol_action_name(d->action);
	int rc = kv_uint(a, m, &i, "rule", d->line) | kv_text(a, m, &i, "digest", digest, strlen(digest)) |
		 kv_text(a, m, &i, "decision", act, strlen(act));
	if (d->on_annotation) { /* it matched a tool annotation: the upstream's word, not a fact */
		struct cv *t = kv(a, m, &i, "on_annotation");
		if (t)
			t->t = CV_TRUE;
		else
			rc = AS_ENOMEM;
	}
	if (d->on_declared) { /* the rule matched a name the agent declared, not one anyone checked */
		struct cv *t = kv(a, m, &i, "on_declared_client");
		if (t)
			t->t = CV_TRUE;
		else
			rc = AS_ENOMEM;
	}
	if (d->shadowed) {
		struct cv *sh = kv(a, m, &i, "shadow");
		size_t j = 0;
		const char *w = pol_action_name(d->shadow_action);
		rc |= slot_map(a, sh, 2);
		if (rc == 0)
			rc = kv_uint(a, sh, &j, "rule", d->shadow_line) | kv_text(a, sh, &j, "would", w, strlen(w));
	}
	if (!slot || !m)
		return AS_ENOMEM;
	*slot = *m;
	return rc ? AS_ENOMEM : 0;
}

struct pdecided { /* a decision the policy made at once, waiting for its commit */
	struct tok_request tr;
	struct tok_ticket t;
	struct tok_subject subj[16];
	char rule[24];
	int with_token;
};

static void policy_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	struct req *r = o->it.data;
	struct pdecided *pd = o->own;
	o->own = NULL;
	int allow = r->pd.action == POL_ALLOW;
	json_t *res;
	if (!pos) {
		slog("error", "policy decision on %s not recorded: %s", o->it.session_id, err);
		char msg[200];
		snprintf(msg, sizeof msg, "the gateway could not record the decision%s", cluster_hint(s));
		res = json_pack("{s:s}", "error", msg);
		send_result(s, r->conn, r->rid, res, 1);
		json_decref(res);
		req_free(r);
		free(pd);
		return;
	}
	char *jwt = NULL;
	char e2[AS_ERRLEN];
	if (pd->with_token && tok_issue(s->tk, &pd->tr, &pd->t, pos->seq, pos->leaf, &jwt, e2) != 0)
		slog("error", "token for %s: %s", o->it.session_id, e2);
	struct ending e = {.status = allow ? "approved" : "denied",
			   .approved = allow,
			   .decided = 1,
			   .response = allow ? NULL : r->pd.reason,
			   .token = jwt};
	res = ending_json(o->it.session_id, &e);
	json_object_set_new(res, "policy",
			    json_pack("{s:I,s:s}", "rule", (json_int_t)r->pd.line, "digest", r->pol_digest));
	request_log(s, &o->it, r, e.status, NULL, pos->seq);
	r->seq = pos->seq;
	o->it.blocking = 1; /* decided at once: every caller hears now, waiting or not */
	finish(s, &o->it, &e, res);
	free(jwt);
	free(pd);
}

int policy_decide(struct signer *s, const struct conn *c, const struct pq_item *it, struct req *r)
{
	(void)c;
	int allow = r->pd.action == POL_ALLOW;
	struct pdecided *pd = calloc(1, sizeof *pd);
	char err[AS_ERRLEN] = "out of memory";
	if (pd) {
		snprintf(pd->rule, sizeof pd->rule, "line %u", r->pd.line);
		size_t ns = req_subjects(r, pd->subj);
		pd->tr = (struct tok_request){.aud = req_token_aud(r),
					      .session_id = it->session_id,
					      .policy_rule = pd->rule,
					      .policy_digest = r->pol_digest,
					      .subjects = pd->subj,
					      .nsubjects = ns,
					      .assurance = "policy",
					      .ttl = r->pd.token_ttl_s};
		snprintf(pd->tr.action_sha256, sizeof pd->tr.action_sha256, "%s", r->action + 7);
		pd->with_token = allow && s->tcfg.mode != TOK_OFF && !r->gate; /* a call allowed by rule: no token */
	}
	if (!pd || (pd->with_token && tok_prepare(s->tk, &pd->tr, &pd->t, err) != 0)) {
		request_refused(s, r->conn, r, err);
		free(pd);
		return AS_ENOMEM;
	}
	struct cv_arena *a = &s->arena;
	cv_arena_reset(a);
	struct cv *m = cv_map(a, 8);
	size_t i = 0;
	int rc = kv_text(a, m, &i, "kind", "decision", 8) |
		 kv_text(a, m, &i, "session_id", it->session_id, strlen(it->session_id)) |
		 kv_text(a, m, &i, "outcome", allow ? "approved" : "denied", allow ? 8 : 6) |
		 kv_text(a, m, &i, "assurance", "policy", 6) |
		 put_policy(a, kv(a, m, &i, "policy"), &r->pd, r->pol_digest) |
		 kv_text(a, m, &i, "action", r->action, strlen(r->action));
	if (!allow)
		rc |= kv_text(a, m, &i, "response", r->pd.reason, strlen(r->pd.reason));
	if (pd->with_token)
		rc |= put_token(a, kv(a, m, &i, "token"), &pd->t);
	struct op *o = NULL;
	if (rc == 0) {
		m->n = i;
		o = op_add(s, m, policy_done, err);
	} else {
		snprintf(err, AS_ERRLEN, "out of memory");
	}
	if (!o) {
		request_refused(s, r->conn, r, err);
		free(pd);
		return AS_ENOMEM;
	}
	o->it = *it;
	o->conn = r->conn;
	o->own = pd;			      /* policy_done's own record */
	pd->tr.session_id = o->it.session_id; /* *it is the caller's, gone by the commit */
	return 0;
}

/* Load --policy FILE: at start (a bad one stops the daemon) and on SIGHUP (a bad one
 * leaves the running one in force). Each load is a policy_load entry. */
int load_policy(struct signer *s, char *err)
{
	if (!s->o->policy)
		return 0;
	struct buf src;
	buf_init(&src, POL_FILE_MAX + 1);
	int rc = file_read(s->o->policy, POL_FILE_MAX, &src, err);
	if (rc != 0) {
		buf_free(&src);
		return rc;
	}
	struct policy *p;
	struct pol_msgs m;
	rc = policy_parse((const char *)src.p, src.len, &p, &m);
	for (size_t i = 0; i < m.n; i++)
		slog(m.m[i].warning ? "warning" : "error", "policy %s:%u:%u: %s%s%s%s", s->o->policy, m.m[i].line,
		     m.m[i].col, m.m[i].msg, m.m[i].text[0] ? ": '" : "", m.m[i].text, m.m[i].text[0] ? "'" : "");
	unsigned line = 0;
	/* Every option is enforced; a feature added to the language later and not yet here
	 * is refused at load (never applied weaker): list it in the mask below. */
	if (rc == 0 && policy_uses(p, 0, &line)) {
		policy_free(p);
		buf_free(&src);
		return as_fail(err, AS_EINVAL, "policy %s: line %u uses what this daemon does not enforce",
			       s->o->policy, line);
	}
	if (rc != 0) {
		buf_free(&src);
		return as_fail(err, AS_EINVAL, "policy %s has %zu errors (above)", s->o->policy, m.errors);
	}
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct cv *e = cv_map(&a, 5);
	size_t i = 0;
	char path[4096];
	snprintf(path, sizeof path, "%s", s->o->policy);
	rc = kv_text(&a, e, &i, "kind", "policy_load", 11) | kv_text(&a, e, &i, "digest", policy_digest(p), 64) |
	     kv_text(&a, e, &i, "source", (const char *)src.p, src.len) |
	     kv_text(&a, e, &i, "path", path, strlen(path)) | kv_uint(&a, e, &i, "rules", policy_nrules(p));
	if (rc != 0)
		rc = as_fail(err, AS_ENOMEM, "out of memory");
	else
		rc = op_add(s, e, NULL, err) ? 0 : AS_ENOMEM;
	cv_arena_free(&a);
	buf_free(&src);
	if (rc != 0) {
		policy_free(p);
		return rc;
	}
	commit_batch(s);
	/* Requests already pending keep the terms they were asked under. */
	policy_free(s->pol);
	s->pol = p;
	slog("info", "policy %s loaded: %zu rules, sha256 %s", s->o->policy, policy_nrules(p), policy_digest(p));
	return 0;
}
