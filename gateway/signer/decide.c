/* A reviewer's decisions (who may decide, the ledger entry, the answer) and deadlines. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netdb.h>
#include <grp.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "ledger/ledger.h"
#include "gateway/proto/action.h"
#include "gateway/cli/bridge.h"
#include "common/cbor.h"
#include "ledger/entry.h"
#include "gateway/proto/httpcfg.h"
#include "gateway/proto/ipc.h"
#include "gateway/worker/jail.h"
#include "gateway/signer/lim.h"
#include "ledger/merkle.h"
#include "gateway/signer/metrics.h"
#include "gateway/signer/peeruid.h"
#include "policy/policy.h"
#include "gateway/proto/proto.h"
#include "gateway/signer/queue.h"
#include "common/redact.h"
#include "gateway/signer/registry.h"
#include "gateway/signer/token.h"
#include "common/util.h"
#include "gateway/signer/websess.h"
#include "gateway/worker/worker.h"

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
		reply_to(s, o->conn, o->web, ctl_error(PS_UNAVAILABLE, "the decision could not be recorded: %s", err));
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
	json_t *res = result_base(sid, d->outcome, d->approved);
	json_object_set_new(res, "response", d->response ? json_string(d->response) : json_null());
	json_object_set_new(res, "reviewer", json_string(d->reviewer));
	if (!strcmp(d->outcome, "selected"))
		json_object_set_new(res, "selection", json_integer((json_int_t)d->n));
	if (jwt)
		json_object_set_new(res, "approval_token", json_string(jwt));
	free(jwt);
	request_log(s, &o->it, r, d->outcome, d->reviewer, pos->seq);
	reply_to(s, o->conn, o->web,
		 answer_ok(json_pack("{s:b,s:s,s:s,s:b,s:I}", "ok", 1, "session_id", sid, "outcome", d->outcome, "token",
				     d->with_token, "seq", (json_int_t)pos->seq)));
	finish(s, &o->it, res);
	decision_free(d);
}

/* May this reviewer decide under the policy's terms: named, or in a named group? */
int reviewer_allowed(struct signer *s, const char *reviewer, const struct pol_decision *pd)
{
	const char *gj = registry_groups_json(s->reg, "reviewer", reviewer);
	json_t *groups = gj ? json_loads(gj, JSON_DECODE_ANY, NULL) : NULL;
	int ok = 0;
	for (size_t k = 0; k < pd->nreviewers && !ok; k++) {
		const char *want = pd->reviewers[k];
		if (strncmp(want, "group:", 6) != 0) {
			ok = !strcmp(want, reviewer);
			continue;
		}
		size_t i;
		json_t *g;
		json_array_foreach(groups, i, g) {
			if (json_is_string(g) && !strcmp(json_string_value(g), want + 6))
				ok = 1;
		}
	}
	json_decref(groups);
	return ok;
}

/* The reviewer an agent names as responsible for it (assent agent add --owner) never
 * decides its requests, on any channel: an HTTP agent by its key, a stdio agent by the
 * uid it was registered with. j NULL: not the owner. */
static struct answer owner_refusal(const struct signer *s, const struct req *r, const char *reviewer, const char *sid)
{
	const char *agent = NULL;
	uint64_t uid;
	if (!s->reg)
		return (struct answer){PS_OK, NULL};
	if (!strncmp(r->owner, "agent:", 6))
		agent = r->owner + 6;
	else if (!strncmp(r->owner, "uid:", 4) && parse_u64(r->owner + 4, &uid) == 0 && uid <= 0xffffffffu)
		agent = registry_agent_by_uid(s->reg, (uid_t)uid);
	const char *own = agent ? registry_agent_owner(s->reg, agent) : NULL;
	/* The agent registered for the uid measured on an HTTP request is the same agent,
	 * whatever key it used: its owner is held to it too. */
	if ((!own || strcmp(own, reviewer) != 0) && r->uid != (uid_t)-1 && strncmp(r->owner, "uid:", 4) != 0) {
		const char *by_uid = registry_agent_by_uid(s->reg, r->uid);
		const char *own2 = by_uid ? registry_agent_owner(s->reg, by_uid) : NULL;
		if (own2 && !strcmp(own2, reviewer)) {
			agent = by_uid;
			own = own2;
		}
	}
	if (!own || strcmp(own, reviewer) != 0)
		return (struct answer){PS_OK, NULL};
	slog("warning", "decision on %s by %s refused: the owner of agent %s", sid, reviewer, agent);
	return ctl_error(PS_FORBIDDEN, "refused: %s is the owner of agent %s, which asked for %s; a decision must come from "
			 "someone else",
			 reviewer, agent, sid);
}

static struct answer decide_checked(struct signer *s, const struct who *c, const char *sid, const char *outcome, const char *text,
		      uint64_t n)
{
	const char *reviewer = c->reviewer;
	struct pq_item *it = pq_find(s->q, sid);
	if (!it)
		return ctl_error(PS_NOT_FOUND, "no pending request %s (decided, timed out or cancelled?)", sid);
	struct req *r = it->data;
	/* A reviewer outside the rule's set is not shown the request either: they learn no more here. */
	if (r->has_pd && r->pd.nreviewers && !reviewer_allowed(s, reviewer, &r->pd))
		return ctl_error(PS_NOT_FOUND, "no pending request %s that %s may decide (the policy names other reviewers, or it "
				 "was decided, timed out or cancelled)",
				 sid, reviewer);
	struct answer owned = owner_refusal(s, r, reviewer, sid);
	if (owned.j)
		return owned;
	const char *assurance = "reviewer";
	/* Separation of duties: the requester's uid is one person whatever channel they
	 * decide on: measured here (cli), or one of the reviewer's registered uids (web).
	 * A request from the daemon's own uid is everybody's: that uid reads the keys and
	 * writes the registry, so it could have registered any reviewer for itself. */
	uid_t ru = it->requester_uid;
	int self = ru != (uid_t)-1 && ru == s->self_uid;
	int same = self || (c->uid != (uid_t)-1 && c->uid == ru) ||
		   (ru != (uid_t)-1 && registry_reviewer_has_uid(s->reg, reviewer, ru));
	if (self && !s->o->single_user)
		return ctl_error(PS_FORBIDDEN, "refused: %s came from uid %u, the daemon's own (it can read the keys and register "
				 "reviewers), so nobody can decide it as another person (single-user mode is off)",
				 sid, (unsigned)ru);
	if (self && r->has_pd && !r->pd.same_user_ok)
		return ctl_error(PS_FORBIDDEN, "refused: %s came from uid %u, the daemon's own, and the policy (line %u) does not let "
				 "the requester's own uid decide (same-user ok)",
				 sid, (unsigned)ru, r->pd.line);
	if (same && c->web) {
		if (!s->o->single_user || (r->has_pd && !r->pd.same_user_ok))
			return ctl_error(PS_FORBIDDEN, "refused: %s asked for %s (uid %u) and cannot decide it", reviewer, sid,
					 (unsigned)it->requester_uid);
		assurance = "same-user";
	} else if (same) {
		if (!s->o->single_user)
			return ctl_error(PS_FORBIDDEN, "refused: uid %u asked for %s itself; a decision must come from another person "
					 "(single-user mode is off)",
					 (unsigned)c->uid, sid);
		/* With a policy, the rule must say so too: the daemon's opt-in alone is not enough. */
		if (r->has_pd && !r->pd.same_user_ok)
			return ctl_error(PS_FORBIDDEN, "refused: uid %u asked for %s itself, and the policy (line %u) does not let the "
					 "requester's own uid decide (same-user ok)",
					 (unsigned)c->uid, sid, r->pd.line);
		assurance = "same-user";
	}
	/* The terminal (the control socket) and the web are channels; a rule may leave one out. */
	if (r->has_pd && r->pd.channels && !(r->pd.channels & (c->web ? POL_CH_WEB : POL_CH_TERMINAL)))
		return ctl_error(PS_FORBIDDEN, "refused: the policy (line %u) does not take decisions on %s from the %s", r->pd.line, sid,
				 c->web ? "web" : "terminal");
	int yesno = !strcmp(r->type, "approval") || !strcmp(r->type, "confirmation");
	const char *response = text;
	int approved = 0;
	if (!strcmp(outcome, "approved") && yesno) {
		approved = 1;
	} else if (!strcmp(outcome, "rejected")) {
		if (!text || !*text)
			return ctl_error(PS_BAD_REQUEST, "a rejection needs a reason (-m TEXT)");
	} else if (!strcmp(outcome, "answered") && !strcmp(r->type, "input")) {
		if (!text)
			return ctl_error(PS_BAD_REQUEST, "answer needs the text");
		if (!*text && json_is_string(json_object_get(r->view, "default")))
			response = json_string_value(json_object_get(r->view, "default"));
	} else if (!strcmp(outcome, "selected") && !strcmp(r->type, "selection")) {
		if (n < 1 || n > r->noptions)
			return ctl_error(PS_BAD_REQUEST, "option %llu does not exist: choose 1 to %zu", (unsigned long long)n, r->noptions);
		response = r->options[n - 1];
	} else {
		return ctl_error(PS_BAD_REQUEST, "a %s request cannot be %s", r->type, outcome);
	}
	if (approved && r->has_pd && r->pd.quorum > 1) {
		/* A quorum counts people: each reviewer once, whatever channel they use. The
		 * approvals so far are kept here; the decision entry lists them all. */
		for (size_t k = 0; k < r->napprovers; k++)
			if (!strcmp(r->approvers[k], reviewer))
				return ctl_error(PS_BAD_REQUEST, "%s has approved %s already; it needs %zu more distinct reviewer%s", reviewer,
						 sid, (size_t)r->pd.quorum - r->napprovers,
						 r->pd.quorum - r->napprovers == 1 ? "" : "s");
		if (r->napprovers + 1 < r->pd.quorum && r->napprovers < 16) {
			snprintf(r->approvers[r->napprovers++], sizeof r->approvers[0], "%s", reviewer);
			json_t *ap = json_array();
			for (size_t k = 0; k < r->napprovers; k++)
				json_array_append_new(ap, json_string(r->approvers[k]));
			json_object_set_new(r->view, "approvals", ap);
			s->web_bumps++; /* the page shows who approved so far */
			slog("info", "request %s: approval %zu of %u, by %s", sid, r->napprovers, r->pd.quorum, reviewer);
			return answer_ok(json_pack("{s:b,s:s,s:s,s:b,s:I,s:I}", "ok", 1, "session_id", sid, "outcome",
						   "approved", "pending", 1, "approvals", (json_int_t)r->napprovers, "quorum",
						   (json_int_t)r->pd.quorum));
		}
	}
	/* The decision entry names the token it will carry (jti, kid, exp): prepare it first. */
	struct decision *d = calloc(1, sizeof *d);
	if (!d)
		return ctl_error(PS_INTERNAL, "out of memory");
	d->reviewer = strdup(reviewer);
	d->response = response ? strdup(response) : NULL;
	snprintf(d->outcome, sizeof d->outcome, "%s", outcome);
	d->approved = approved;
	d->n = n;
	d->ns = req_subjects(r, d->subj);
	d->tr = (struct tok_request){.aud = req_token_aud(r),
				     .reviewer_name = d->reviewer,
				     .reviewer_channel = c->channel,
				     .subjects = d->subj,
				     .nsubjects = d->ns,
				     .assurance = assurance,
				     .ttl = r->has_pd ? r->pd.token_ttl_s : 0};
	if (r->has_pd) { /* the token names the rule that sent the request to a person */
		snprintf(d->rule, sizeof d->rule, "line %u", r->pd.line);
		d->tr.policy_rule = d->rule;
		d->tr.policy_digest = r->pol_digest;
	}
	snprintf(d->tr.action_sha256, sizeof d->tr.action_sha256, "%s", r->action + 7);
	char err[AS_ERRLEN] = "out of memory";
	d->with_token = approved && s->tcfg.mode != TOK_OFF;
	if (!d->reviewer || (response && !d->response) ||
	    (d->with_token && tok_prepare(s->tk, &d->tr, &d->t, err) != 0)) {
		struct answer e = ctl_error(PS_INTERNAL, "cannot prepare the token: %s", d->reviewer ? err : "out of memory");
		decision_free(d);
		return e;
	}
	struct cv_arena *a = &s->arena;
	cv_arena_reset(a);
	struct cv *m = cv_map(a, 9 + (response ? 1 : 0) + (d->with_token ? 1 : 0));
	size_t i = 0;
	cv_set_text(a, kv(a, m, &i, "kind"), "decision", 8);
	cv_set_text(a, kv(a, m, &i, "session_id"), sid, strlen(sid));
	cv_set_text(a, kv(a, m, &i, "outcome"), outcome, strlen(outcome));
	cv_set_text(a, kv(a, m, &i, "assurance"), assurance, strlen(assurance));
	struct cv *rv = kv(a, m, &i, "reviewer");
	*rv = *cv_map(a, 3);
	cv_set_text(a, &rv->items[0], "name", 4);
	cv_set_text(a, &rv->items[1], reviewer, strlen(reviewer));
	cv_set_text(a, &rv->items[2], "channel", 7);
	cv_set_text(a, &rv->items[3], c->channel, strlen(c->channel));
	if (c->web) { /* how the signer knew the person: session, proxy identity or token */
		cv_set_text(a, &rv->items[4], "via", 3);
		cv_set_text(a, &rv->items[5], c->via, strlen(c->via));
	} else {
		cv_set_text(a, &rv->items[4], "uid", 3);
		cv_set_uint(&rv->items[5], (uint64_t)c->uid);
	}
	cv_set_text(a, kv(a, m, &i, "action"), r->action, strlen(r->action));
	cv_set_uint(kv(a, m, &i, "latency_ms"), now_ms() - it->created_ms);
	if (r->has_pd)
		put_policy(a, kv(a, m, &i, "policy"), &r->pd, r->pol_digest);
	/* What a reviewer typed goes to the ledger with secret-shaped values replaced, as a
	 * request's text does; the agent still gets it as typed (an input may be the secret). */
	struct buf red;
	buf_init(&red, response ? 10 * strlen(response) + 16 : 16);
	struct redact_stats rst = {0};
	if (response && redact_text(response, strlen(response), NULL, &red, &rst) != 0) {
		buf_free(&red);
		decision_free(d);
		return ctl_error(PS_UNAVAILABLE, "the response could not be recorded: too large");
	}
	if (response)
		cv_set_text(a, kv(a, m, &i, "response"), red.len ? (const char *)red.p : "", red.len);
	if (d->with_token)
		put_token(a, kv(a, m, &i, "token"), &d->t);
	if (approved && r->napprovers) { /* a quorum: everyone who approved, this reviewer last */
		struct cv *ap = cv_array(a, r->napprovers + 1);
		for (size_t v = 0; v < r->napprovers; v++)
			cv_set_text(a, &ap->items[v], r->approvers[v], strlen(r->approvers[v]));
		cv_set_text(a, &ap->items[r->napprovers], reviewer, strlen(reviewer));
		*kv(a, m, &i, "approvers") = *ap;
	}
	m->n = i;
	struct op *o = op_add(s, m, decision_done, err);
	buf_free(&red);
	if (!o) {
		decision_free(d);
		return ctl_error(PS_UNAVAILABLE, "the decision could not be recorded: %s", err);
	}
	/* Out of the queue until the entry is on disk: nobody else can decide, cancel or
	 * time it out meanwhile. The reviewer hears back from decision_done. */
	pq_remove(s->q, sid, &o->it);
	o->d = d;
	o->conn = c->reply;
	o->web = c->web;
	d->tr.session_id = o->it.session_id;
	return (struct answer){PS_OK, NULL};
}

/* Every refused decision is logged with who tried, on which channel, and why. */
struct answer decide(struct signer *s, const struct who *c, const char *sid, const char *outcome, const char *text,
		      uint64_t n)
{
	struct answer rep = decide_checked(s, c, sid, outcome, text, n);
	if (rep.j && rep.st != PS_OK)
		slog("warning", "decision %s on %s by %s (%s%s%s, uid %d) refused: %s", outcome, sid, c->reviewer, c->channel,
		     c->web ? " via " : "", c->web ? c->via : "", c->uid == (uid_t)-1 ? -1 : (int)c->uid,
		     json_string_value(json_object_get(rep.j, "error")) ?: "?");
	return rep;
}

/* ---- deadlines ---- */

static void timeout_answer(struct signer *s, struct pq_item *it, uint64_t seq)
{
	const struct req *r = it->data;
	int denies = r->has_pd && r->pd.timeout_denies;
	json_t *res = result_base(it->session_id, denies ? "denied" : "timeout", 0);
	json_object_set_new(res, "error", json_string("timeout"));
	request_log(s, it, it->data, denies ? "denied" : "timeout", NULL, seq);
	finish(s, it, res);
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
			cv_set_text(a, kv(a, m, &i, "kind"), "decision", 8);
			cv_set_text(a, kv(a, m, &i, "session_id"), it.session_id, strlen(it.session_id));
			cv_set_text(a, kv(a, m, &i, "outcome"), "denied", 6);
			cv_set_text(a, kv(a, m, &i, "assurance"), "policy", 6);
			cv_set_text(a, kv(a, m, &i, "response"), why, sizeof why - 1);
			put_policy(a, kv(a, m, &i, "policy"), &r->pd, r->pol_digest);
			char err[AS_ERRLEN];
			struct op *o = op_add(s, m, timeout_done, err);
			if (o)
				o->it = it;
			else
				timeout_answer(s, &it, 0);
			continue;
		}
		struct op *o = append_simple(s, "timeout", it.session_id, "no decision before the deadline", timeout_done);
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
