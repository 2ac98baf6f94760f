/* A reviewer's decisions: what the rule (decision.c) needs to know, then the ledger entry,
 * the token and the answers; and deadlines. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"
#include "gateway/signer/decision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a reviewer's commands ---- */

static void decision_free(struct decision *d)
{
	if (!d)
		return;
	free(d->reviewer);
	free(d->response);
	free(d);
}

/* The decision is on disk: now the token, then the answers (agent and reviewer). */
static void decision_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	struct decision *d = o->d;
	const char *sid = o->it.session_id;
	if (!pos) {
		slog("error", "decision on %s not recorded: %s", sid, err);
		if (o->conn) /* 0: the requester answered itself (mrtr.c); it hears from finish() */
			reply_to(s, o->conn, o->web,
				 ctl_error(PS_UNAVAILABLE, "the decision could not be recorded: %s", err));
		phase_run(s, PH_UNRECORDED, &(struct phase_ev){.it = &o->it, .r = o->it.data, .sid = sid});
		if (pq_add(s->q, &o->it) != 0) /* still pending; its deadline still holds */
			req_free(o->it.data);
		decision_free(d);
		return;
	}
	struct req *r = o->it.data;
	char *jwt = NULL;
	char e2[AS_ERRLEN];
	if (d->with_token && tok_issue(s->tk, &d->tr, &d->t, pos->seq, pos->leaf, &jwt, e2) != 0)
		slog("error", "token for %s: %s", sid, e2);
	struct ending e = {.status = d->outcome,
			   .approved = d->approved,
			   .decided = 1,
			   .reviewer = d->reviewer,
			   .response = d->response,
			   .token = jwt};
	json_t *res = ending_json(sid, &e);
	if (!strcmp(d->outcome, "selected"))
		json_object_set_new(res, "selection", json_integer((json_int_t)d->n));
	if (d->tr.assurance && !strcmp(d->tr.assurance, "self-attested")) /* the requester's own word */
		json_object_set_new(res, "assurance", json_string("self-attested"));
	r->why = strcmp(d->outcome, "rejected") ? NULL : d->response; /* told to the webhooks */
	request_log(s, &o->it, r, d->outcome, d->reviewer, pos->seq);
	r->why = NULL;
	r->seq = pos->seq;
	if (o->conn)
		reply_to(s, o->conn, o->web,
			 answer_ok(json_pack("{s:b,s:s,s:s,s:b,s:I}", "ok", 1, "session_id", sid, "outcome", d->outcome,
					     "token", d->with_token, "seq", (json_int_t)pos->seq)));
	finish(s, &o->it, &e, res);
	free(jwt);
	decision_free(d);
}

/* The reviewer's groups, as the registry lists them: *g points into *doc; the caller
 * frees both. */
static void reviewer_groups(const struct signer *s, const char *reviewer, json_t **doc, const char ***g, size_t *n)
{
	const char *gj = s->reg ? registry_groups_json(s->reg, "reviewer", reviewer) : NULL;
	*doc = gj ? json_loads(gj, JSON_DECODE_ANY, NULL) : NULL;
	*n = 0;
	*g = json_array_size(*doc) ? calloc(json_array_size(*doc), sizeof **g) : NULL;
	size_t i;
	json_t *e;
	if (*g)
		json_array_foreach(*doc, i, e)
		{
			if (json_is_string(e))
				(*g)[(*n)++] = json_string_value(e);
		}
}

/* May this reviewer decide under the policy's terms: named, or in a named group? */
int reviewer_allowed(struct signer *s, const char *reviewer, const struct pol_decision *pd)
{
	json_t *doc;
	const char **g;
	size_t n;
	reviewer_groups(s, reviewer, &doc, &g, &n);
	int ok = decision_reviewer_named(pd, reviewer, g, n);
	free(g);
	json_decref(doc);
	return ok;
}

/* The agents a request came from, and the reviewer each names as its owner: an HTTP
 * agent by its key, a stdio agent by the uid it was registered with. */
static void owner_facts(const struct signer *s, const struct req *r, struct decision_in *in)
{
	uint64_t uid;
	if (!s->reg)
		return;
	if (!strncmp(r->owner, "agent:", 6))
		in->agents[0] = r->owner + 6;
	else if (!strncmp(r->owner, "uid:", 4) && parse_u64(r->owner + 4, &uid) == 0 && uid <= 0xffffffffu)
		in->agents[0] = registry_agent_by_uid(s->reg, (uid_t)uid);
	/* The agent registered for the uid measured on an HTTP request is the same agent,
	 * whatever key it used: its owner is held to it too. */
	if (r->uid != (uid_t)-1 && strncmp(r->owner, "uid:", 4) != 0)
		in->agents[1] = registry_agent_by_uid(s->reg, r->uid);
	for (size_t i = 0; i < DECISION_AGENTS; i++)
		in->agent_owners[i] = in->agents[i] ? registry_agent_owner(s->reg, in->agents[i]) : NULL;
}

/* What the rule needs to know (decision.h), from the request, the reviewer as the
 * signer measured them, the daemon's options and the registry. */
static void decision_inputs(const struct signer *s, const struct who *c, const struct pq_item *it,
			    struct decision_in *in)
{
	const struct req *r = it->data;
	json_t *def = json_object_get(r->view, "default");
	in->type = r->type;
	in->requester_uid = it->requester_uid;
	in->pd = r->has_pd ? &r->pd : NULL;
	in->options = r->options;
	in->noptions = r->noptions;
	in->input_default = json_is_string(def) ? json_string_value(def) : NULL;
	in->approvers = r->approvers;
	in->napprovers = r->napprovers;
	in->reviewer = c->reviewer;
	in->web = c->web;
	in->reviewer_uid = c->uid;
	in->self_uid = s->self_uid;
	in->single_user = s->o->single_user;
	if (s->reg && it->requester_uid != (uid_t)-1)
		in->reviewer_has_requester_uid = registry_reviewer_has_uid(s->reg, c->reviewer, it->requester_uid);
	owner_facts(s, r, in);
}

static int put_reviewer(struct cv_arena *a, struct cv *rv, const struct who *c);

/* The approvals a request shows its reviewers. */
static void approvals_view(struct req *r)
{
	json_t *ap = json_array();
	for (size_t k = 0; k < r->napprovers; k++)
		json_array_append_new(ap, json_string(r->approvers[k]));
	json_object_set_new(r->view, "approvals", ap);
}

/* The approval entry is on disk (or could not be written): now the reviewer hears of it.
 * Not written: the approval no longer counts, if the request is still pending. */
static void approval_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	const char *sid = o->it.session_id;
	if (pos) {
		reply_to(s, o->conn, o->web, answer_ok(o->answer));
		return;
	}
	const char *reviewer = json_string_value(json_object_get(o->answer, "reviewer"));
	struct pq_item *it = pq_find(s->q, sid);
	struct req *r = it ? it->data : NULL;
	for (size_t k = 0; r && reviewer && k < r->napprovers; k++)
		if (!strcmp(r->approvers[k], reviewer)) {
			memmove(&r->approvers[k], &r->approvers[k + 1],
				(r->napprovers - k - 1) * sizeof r->approvers[0]);
			r->napprovers--;
			approvals_view(r);
			s->web_bumps++;
			break;
		}
	json_decref(o->answer);
	slog("error", "approval of %s not recorded: %s", sid, err);
	reply_to(s, o->conn, o->web, ctl_error(PS_UNAVAILABLE, "the approval could not be recorded: %s", err));
}

/* One approval of a quorum, counted at once (the same reviewer cannot count twice in
 * one turn) and ledgered as an `approval` entry, so that a restart keeps it: the request
 * stays pending for the others, and the reviewer hears back once the entry is on disk. */
static struct answer quorum_count(struct signer *s, const struct who *c, struct req *r, const char *sid, const char *rd)
{
	struct cv_arena *a = &s->arena;
	cv_arena_reset(a);
	struct cv *m = cv_map(a, 7);
	size_t i = 0;
	int rc = kv_text(a, m, &i, "kind", "approval", 8) | kv_text(a, m, &i, "session_id", sid, strlen(sid)) |
		 put_reviewer(a, kv(a, m, &i, "reviewer"), c) | kv_uint(a, m, &i, "n", r->napprovers + 1) |
		 kv_uint(a, m, &i, "quorum", r->pd.quorum);
	if (rd) /* the passkey's assertion of this approval (passkey.c checked it) */
		rc |= passkey_put(a, m, &i, c->pk, rd);
	m->n = i;
	char err[AS_ERRLEN] = "out of memory";
	struct op *o = rc == 0 ? op_add(s, m, approval_done, err) : NULL;
	if (!o)
		return ctl_error(PS_UNAVAILABLE, "the approval could not be recorded: %s", err);
	snprintf(r->approvers[r->napprovers++], sizeof r->approvers[0], "%s", c->reviewer);
	approvals_view(r);
	s->web_bumps++; /* the page shows who approved so far */
	slog("info", "request %s: approval %zu of %u, by %s", sid, r->napprovers, r->pd.quorum, c->reviewer);
	snprintf(o->it.session_id, sizeof o->it.session_id, "%s", sid); /* it.data stays NULL: no request */
	o->conn = c->reply;
	o->web = c->web;
	o->answer = json_pack("{s:b,s:s,s:s,s:b,s:I,s:I,s:s}", "ok", 1, "session_id", sid, "outcome", "approved",
			      "pending", 1, "approvals", (json_int_t)r->napprovers, "quorum", (json_int_t)r->pd.quorum,
			      "reviewer", c->reviewer);
	return (struct answer){PS_OK, NULL};
}

/* The decision and its token's ticket: the entry names the token it will carry (jti,
 * kid, exp), so the ticket comes first. NULL: *rep says why. */
static struct decision *decision_new(struct signer *s, const struct who *c, const struct req *r,
				     const struct decision_verdict *v, const char *outcome, uint64_t n,
				     struct answer *rep)
{
	struct decision *d = calloc(1, sizeof *d);
	if (!d) {
		*rep = ctl_error(PS_INTERNAL, "out of memory");
		return NULL;
	}
	d->reviewer = strdup(c->reviewer);
	d->response = v->response ? strdup(v->response) : NULL;
	snprintf(d->outcome, sizeof d->outcome, "%s", outcome);
	d->approved = v->approved;
	d->n = n;
	d->ns = req_subjects(r, d->subj);
	d->tr = (struct tok_request){.aud = req_token_aud(r),
				     .reviewer_name = d->reviewer,
				     .reviewer_channel = c->channel,
				     .subjects = d->subj,
				     .nsubjects = d->ns,
				     .assurance = v->assurance,
				     .ttl = r->has_pd ? r->pd.token_ttl_s : 0};
	if (r->has_pd) { /* the token names the rule that sent the request to a person */
		snprintf(d->rule, sizeof d->rule, "line %u", r->pd.line);
		d->tr.policy_rule = d->rule;
		d->tr.policy_digest = r->pol_digest;
	}
	snprintf(d->tr.action_sha256, sizeof d->tr.action_sha256, "%s", r->action + 7);
	char err[AS_ERRLEN] = "out of memory";
	/* a gated call gets a token only when its rule asks for one (token yes) */
	d->with_token = v->approved && s->tcfg.mode != TOK_OFF && (!r->gate || r->pd.call_token);
	if (!d->reviewer || (v->response && !d->response) ||
	    (d->with_token && tok_prepare(s->tk, &d->tr, &d->t, err) != 0)) {
		*rep = ctl_error(PS_INTERNAL, "cannot prepare the token: %s", d->reviewer ? err : "out of memory");
		decision_free(d);
		return NULL;
	}
	return d;
}

/* The reviewer as the entry names them: name, channel, and how the signer knew them. */
static int put_reviewer(struct cv_arena *a, struct cv *rv, const struct who *c)
{
	GUARD(slot_map(a, rv, 3));
	size_t i = 0;
	return kv_text(a, rv, &i, "name", c->reviewer, strlen(c->reviewer)) |
	       kv_text(a, rv, &i, "channel", c->channel, strlen(c->channel)) |
	       (c->web ? kv_text(a, rv, &i, "via", c->via, strlen(c->via)) /* session, proxy identity or token */
		       : kv_uint(a, rv, &i, "uid", (uint64_t)c->uid));
}

/* The decision entry, queued for the next commit (*o). j NULL, or the reviewer's answer
 * when it cannot be. */
static struct answer decision_entry(struct signer *s, const struct who *c, const char *sid, const struct pq_item *it,
				    const struct decision *d, const char *assurance, const char *rd, struct op **o)
{
	const struct req *r = it->data;
	const char *response = d->response;
	struct cv_arena *a = &s->arena;
	cv_arena_reset(a);
	struct cv *m = cv_map(a, 11 + (response ? 1 : 0) + (d->with_token ? 1 : 0));
	size_t i = 0;
	int rc = kv_text(a, m, &i, "kind", "decision", 8) | kv_text(a, m, &i, "session_id", sid, strlen(sid)) |
		 kv_text(a, m, &i, "outcome", d->outcome, strlen(d->outcome)) |
		 kv_text(a, m, &i, "assurance", assurance, strlen(assurance)) |
		 put_reviewer(a, kv(a, m, &i, "reviewer"), c) |
		 kv_text(a, m, &i, "action", r->action, strlen(r->action)) |
		 kv_uint(a, m, &i, "latency_ms", now_ms() - it->created_ms);
	if (r->has_pd)
		rc |= put_policy(a, kv(a, m, &i, "policy"), &r->pd, r->pol_digest);
	/* What a reviewer typed goes to the ledger with secret-shaped values replaced, as a
	 * request's text does; the agent still gets it as typed (an input may be the secret). */
	struct buf red;
	buf_init(&red, response ? 10 * strlen(response) + 16 : 16);
	struct redact_stats rst = {0};
	if (response && redact_text(response, strlen(response), NULL, &red, &rst) != 0) {
		buf_free(&red);
		return ctl_error(PS_UNAVAILABLE, "the response could not be recorded: too large");
	}
	if (response)
		rc |= kv_text(a, m, &i, "response", red.len ? (const char *)red.p : "", red.len);
	if (d->with_token)
		rc |= put_token(a, kv(a, m, &i, "token"), &d->t);
	if (d->approved && r->napprovers) { /* a quorum: everyone who approved, this reviewer last */
		struct cv *ap = cv_array(a, r->napprovers + 1), *slot = kv(a, m, &i, "approvers");
		if (!ap || !slot)
			rc = AS_ENOMEM;
		for (size_t v = 0; rc == 0 && v < r->napprovers; v++)
			rc = slot_text(a, &ap->items[v], r->approvers[v], strlen(r->approvers[v]));
		if (rc == 0)
			rc = slot_text(a, &ap->items[r->napprovers], c->reviewer, strlen(c->reviewer));
		if (rc == 0)
			*slot = *ap;
	}
	if (rd) /* the passkey's assertion of this decision (passkey.c checked it) */
		rc |= passkey_put(a, m, &i, c->pk, rd);
	m->n = i;
	char err[AS_ERRLEN] = "out of memory";
	*o = rc == 0 ? op_add(s, m, decision_done, err) : NULL;
	buf_free(&red);
	return *o ? (struct answer){PS_OK, NULL}
		  : ctl_error(PS_UNAVAILABLE, "the decision could not be recorded: %s", err);
}

/* An accepted decision: prepared, queued for the ledger, and out of the queue until
 * the entry is on disk. j NULL: the reviewer hears back from decision_done. */
static struct answer decision_record(struct signer *s, const struct who *c, const char *sid, const struct pq_item *it,
				     const struct decision_verdict *v, const char *outcome, uint64_t n, const char *rd)
{
	struct answer rep = {PS_OK, NULL};
	struct decision *d = decision_new(s, c, it->data, v, outcome, n, &rep);
	if (!d)
		return rep;
	struct op *o = NULL;
	rep = decision_entry(s, c, sid, it, d, v->assurance, rd, &o);
	if (rep.j) {
		decision_free(d);
		return rep;
	}
	if (d->approved) /* a gated call's dispatch entry joins this commit */
		phase_run(s, PH_APPROVING, &(struct phase_ev){.it = it, .r = it->data, .sid = sid});
	/* Nobody else can decide, cancel or time it out meanwhile. */
	pq_remove(s->q, sid, &o->it);
	o->d = d;
	o->conn = c->reply;
	o->web = c->web;
	d->tr.session_id = o->it.session_id;
	return (struct answer){PS_OK, NULL};
}

/* What a refusal is, typed (the answer's words are decision_message's): a reviewer the
 * rule does not name learns no more than of a request that is not there. */
static enum proto_status refusal_status(enum decision_reason r)
{
	switch (r) {
	case DECISION_NOT_NAMED:
		return PS_NOT_FOUND;
	case DECISION_OWNER:
	case DECISION_SELF_SINGLE:
	case DECISION_SELF_POLICY:
	case DECISION_SAME_WEB:
	case DECISION_SAME_SINGLE:
	case DECISION_SAME_POLICY:
	case DECISION_CHANNEL:
		return PS_FORBIDDEN;
	default: /* the decision itself cannot be done as asked */
		return PS_BAD_REQUEST;
	}
}

/* A rule with assurance passkey: an approval needs the reviewer's assertion of exactly this
 * decision (the page's); a refusal may come without one (one that has one is checked). The
 * terminal and /review/mcp cannot give one: they are told where the page is. */
static struct answer passkey_gate(struct signer *s, const struct who *c, const struct pq_item *it,
				  const struct decision_verdict *v, const char *outcome, const char *text, char rd[65])
{
	const struct req *r = it->data;
	int yes = v->approved || v->reason == DECISION_QUORUM_WAIT;
	if (!c->pk && !yes)
		return (struct answer){PS_OK, NULL};
	if (!c->pk) {
		char link[400];
		passkey_link(s, it->session_id, link, sizeof link);
		return ctl_error(
		    PS_FORBIDDEN,
		    "refused: request %s needs the reviewer's passkey (policy line %u, assurance passkey): "
		    "approve it on the review page, %s",
		    it->session_id, r->pd.line, link);
	}
	char err[AS_ERRLEN];
	if (passkey_check(s, c->reviewer, it, outcome, text, c->pk, rd, err) != 0)
		return ctl_error(PS_FORBIDDEN, "refused: passkey: %s", err);
	return (struct answer){PS_OK, NULL};
}

static struct answer decide_checked(struct signer *s, const struct who *c, const char *sid, const char *outcome,
				    const char *text, uint64_t n)
{
	struct pq_item *it = pq_find(s->q, sid);
	if (!it)
		return ctl_error(PS_NOT_FOUND, "no pending request %s (decided, timed out or cancelled?)", sid);
	struct req *r = it->data;
	struct decision_in in = {.sid = sid, .outcome = outcome, .text = text, .n = n};
	json_t *groups_doc = NULL;
	const char **groups = NULL;
	if (r->has_pd && r->pd.nreviewers) /* only a rule that names reviewers asks for groups */
		reviewer_groups(s, c->reviewer, &groups_doc, &groups, &in.ngroups);
	in.groups = groups;
	decision_inputs(s, c, it, &in);
	struct decision_verdict v;
	decision_make(&in, &v);
	struct answer rep;
	char rd[65] = "";
	/* an assertion sent for a request whose rule asks none is not ledgered: nobody checked it */
	const char *pk_rd = r->has_pd && r->pd.passkey && c->pk ? rd : NULL;
	if (v.reason == DECISION_OWNER)
		slog("warning", "decision on %s by %s refused: the owner of agent %s", sid, c->reviewer, v.agent);
	if (decision_refused(&v)) {
		char msg[DECISION_MSG_MAX];
		decision_message(&in, &v, msg, sizeof msg);
		rep = ctl_error(refusal_status(v.reason), "%s", msg);
	} else if (r->has_pd && r->pd.passkey && (rep = passkey_gate(s, c, it, &v, outcome, text, rd)).j) {
		/* refused: a passkey rule's approval without, or with a bad, assertion */
	} else if (v.reason == DECISION_QUORUM_WAIT) {
		rep = quorum_count(s, c, r, sid, pk_rd);
	} else {
		rep = decision_record(s, c, sid, it, &v, outcome, n, pk_rd);
	}
	free(groups);
	json_decref(groups_doc);
	return rep;
}

/* What the page shows a web reviewer of one request it lists: why they may not give its
 * yes (approve, answer, select), and whether they may still reject it; "" and 1 when
 * nothing stands in the way. The rule's own words, as a click would have them. */
int decide_may(struct signer *s, const struct who *c, const struct pq_item *it, char *why, size_t n)
{
	const struct req *r = it->data;
	const char *yes = !strcmp(r->type, "input")	  ? "answered"
			  : !strcmp(r->type, "selection") ? "selected"
							  : "approved";
	struct decision_in in = {.sid = it->session_id, .outcome = yes, .text = "", .n = 1};
	json_t *groups_doc = NULL;
	const char **groups = NULL;
	if (r->has_pd && r->pd.nreviewers)
		reviewer_groups(s, c->reviewer, &groups_doc, &groups, &in.ngroups);
	in.groups = groups;
	decision_inputs(s, c, it, &in);
	struct decision_verdict v;
	decision_make(&in, &v);
	why[0] = 0;
	if (v.reason >= DECISION_NOT_NAMED && (v.reason <= DECISION_CHANNEL || v.reason == DECISION_APPROVED_ALREADY))
		decision_message(&in, &v, why, n);
	in.outcome = "rejected";
	in.text = "-";
	decision_make(&in, &v);
	free(groups);
	json_decref(groups_doc);
	return !decision_refused(&v) || v.reason < DECISION_NOT_NAMED || v.reason > DECISION_CHANNEL;
}

struct answer decide_self_attested(struct signer *s, struct pq_item *it, const char *outcome, const char *text,
				   uint64_t n)
{
	struct req *r = it->data;
	/* Who answered: the requester itself, through its MCP client (the ledger says so). */
	struct who w = {.reviewer = r->owner, .channel = "client", .via = "", .uid = r->uid, .reply = 0, .web = 0};
	struct decision_in in = {.sid = it->session_id, .outcome = outcome, .text = text, .n = n};
	decision_inputs(s, &w, it, &in);
	struct decision_verdict v;
	decision_self_attested(&in, &v);
	if (decision_refused(&v)) {
		char msg[DECISION_MSG_MAX];
		decision_message(&in, &v, msg, sizeof msg);
		return ctl_error(PS_BAD_REQUEST, "%s", msg[0] ? msg : "this answer cannot be given here");
	}
	char sid[PQ_SID_LEN + 1];
	snprintf(sid, sizeof sid, "%s", it->session_id); /* it moves out of the queue */
	return decision_record(s, &w, sid, it, &v, outcome, n, NULL);
}

/* Every refused decision is logged with who tried, on which channel, and why. */
struct answer decide(struct signer *s, const struct who *c, const char *sid, const char *outcome, const char *text,
		     uint64_t n)
{
	struct answer rep = decide_checked(s, c, sid, outcome, text, n);
	const char *why = rep.j ? json_string_value(json_object_get(rep.j, "error")) : NULL;
	if (why && !strncmp(why, "refused: ", 9)) /* the reviewer's words begin so; the line says it once */
		why += 9;
	if (rep.j && rep.st != PS_OK)
		slog("warning", "decision %s on %s by %s (%s%s%s, uid %d) refused: %s", outcome, sid, c->reviewer,
		     c->channel, c->web ? " via " : "", c->web ? c->via : "", c->uid == (uid_t)-1 ? -1 : (int)c->uid,
		     why ? why : "?");
	return rep;
}

/* ---- deadlines ---- */

/* While nobody can decide (no reviewer registered for this state directory), every request that
 * waits for a person can only time out: its answers say so, and the log, loudly (first runs
 * that start a second daemon elsewhere, with no reviewer, must not look like slow reviewers). */
int no_reviewer_warning(struct signer *s, json_t *res)
{
	if (!s->reg || registry_reviewer_name(s->reg, 0))
		return 0;
	char msg[600];
	snprintf(msg, sizeof msg,
		 "no reviewer is registered for this state directory (%s): requests that wait for a person can only "
		 "time out; an operator adds one with: assent --state %s reviewer add NAME --uid UID",
		 s->o->state, s->o->state);
	if (res)
		json_object_set_new(res, "warning", json_string(msg));
	else
		slog("warning", "%s", msg);
	return 1;
}

static void timeout_answer(struct signer *s, struct pq_item *it, uint64_t seq)
{
	const struct req *r = it->data;
	int denies = r->has_pd && r->pd.timeout_denies;
	struct ending e = {.status = denies ? "denied" : "timeout", .error = "timeout"};
	json_t *res = ending_json(it->session_id, &e);
	no_reviewer_warning(s, res);
	request_log(s, it, it->data, e.status, NULL, seq);
	finish(s, it, &e, res);
}

/* A passed deadline is answered even when its entry could not be written: the
 * caller must not wait forever, and nothing was approved. */
static void timeout_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	if (!pos)
		slog("error", "ledger: timeout entry for %s: %s", o->it.session_id, err);
	timeout_answer(s, &o->it, pos ? pos->seq : 0);
}

void expire(struct signer *s)
{
	uint64_t now = now_ms();
	struct pq_item it;
	while (pq_pop_expired(s->q, now, &it) == 0) {
		struct req *r = it.data;
		if (r->has_pd && r->pd.timeout_denies) { /* the policy says a passed deadline is a denial */
			struct cv_arena *a = &s->arena;
			cv_arena_reset(a);
			struct cv *m = cv_map(a, 6);
			size_t i = 0;
			static const char why[] = "no decision before the deadline: the policy denies on timeout";
			int rc = kv_text(a, m, &i, "kind", "decision", 8) |
				 kv_text(a, m, &i, "session_id", it.session_id, strlen(it.session_id)) |
				 kv_text(a, m, &i, "outcome", "denied", 6) |
				 kv_text(a, m, &i, "assurance", "policy", 6) |
				 kv_text(a, m, &i, "response", why, sizeof why - 1) |
				 put_policy(a, kv(a, m, &i, "policy"), &r->pd, r->pol_digest);
			char err[AS_ERRLEN];
			struct op *o = rc == 0 ? op_add(s, m, timeout_done, err) : NULL;
			if (o)
				o->it = it;
			else
				timeout_answer(s, &it, 0);
			continue;
		}
		/* A restart queues what was pending (restore.c): a deadline may have passed meanwhile. */
		const char *why = it.deadline_ms < s->started_ms ? "the deadline passed while the daemon was down"
								 : "no decision before the deadline";
		struct op *o = append_simple(s, "timeout", it.session_id, why, timeout_done);
		if (o)
			o->it = it;
		else
			timeout_answer(s, &it, 0);
	}
	for (size_t i = 0; i < sizeof s->waiters / sizeof s->waiters[0]; i++) {
		struct waiter *w = &s->waiters[i];
		if (!w->used || w->until > now)
			continue;
		struct pq_item *p = pq_find(s->q, w->sid);
		json_t *res = result_base(w->sid, "pending", 0);
		if (p)
			json_object_set_new(res, "deadline", json_integer((json_int_t)(p->deadline_ms / 1000)));
		send_result(s, w->conn, w->rid, res, 0);
		json_decref(res);
		w->used = 0;
	}
}
