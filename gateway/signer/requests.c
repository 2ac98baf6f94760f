/* Requests from the mcp worker: checked against the signer's own state, limited per principal, queued. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- frames from the mcp worker ---- */

void conn_end(struct signer *s, struct conn *c)
{
	ctl_unwatch(s, (size_t)(c - s->conns)); /* the reviewer sees the end too */
	gate_conn_end(s, c->id);
	s->ended[s->ended_at++ % (sizeof s->ended / sizeof *s->ended)] = c->id;
	c->used = 0;
}

static int text_of(const struct cv *v, char *out, size_t max)
{
	if (!v || v->t != CV_TEXT || v->n >= max)
		return -1;
	memcpy(out, v->s, v->n);
	out[v->n] = 0;
	return 0;
}

/* One subject: "computed" is the worker's claim; the signer holds it true only for
 * bytes it hashed itself and that match the digest and size recorded. */
static int check_subject(const struct cv *x, const struct cv *c, size_t i, struct req *r, char *err)
{
	const struct cv *name = cv_get(x, "name"), *hex = cv_get(cv_get(x, "digest"), "sha256"),
			*comp = cv_get(x, "computed"), *size = cv_get(x, "size");
	uint8_t want[32], got[32];
	if (hex_decode((const char *)hex->s, hex->n, want, 32) != 0)
		return as_fail(err, AS_ECORRUPT, "action.subject[%zu] malformed", i);
	if (comp->t == CV_TRUE) {
		if (c->t != CV_BYTES || !size || size->u != c->n)
			return as_fail(err, AS_ECORRUPT, "action.subject[%zu] is computed but its bytes are missing",
				       i);
		sha256(c->s, c->n, got);
		if (memcmp(got, want, 32) != 0)
			return as_fail(err, AS_ECORRUPT, "action.subject[%zu]: the bytes do not hash to its digest", i);
		if (!(r->content[i] = malloc(c->n ? c->n : 1)))
			return as_fail(err, AS_ENOMEM, "out of memory");
		memcpy(r->content[i], c->s, c->n);
		r->content_len[i] = c->n;
	} else if (c->t != CV_NULL || size) {
		return as_fail(err, AS_ECORRUPT, "action.subject[%zu] is asserted yet comes with bytes or a size", i);
	}
	json_array_append_new(r->subjects,
			      json_pack("{s:s%,s:s%,s:b}", "name", (const char *)name->s, name->n, "sha256",
					(const char *)hex->s, hex->n, "computed", comp->t == CV_TRUE));
	return 0;
}

/* The action is the worker's claim of what the agent asked. Its shape, sizes and
 * characters are the field table's (action_check, the table the worker built it by);
 * here, what only the signer can check: the type's terms and the subjects' bytes. */
static int check_action(const struct cv *a, const struct cv *contents, struct req *r, char *err)
{
	GUARD(action_check(a, err));
	const struct cv *t = cv_get(a, "type"), *o = cv_get(a, "options"), *aud = cv_get(a, "audience"),
			*sub = cv_get(a, "subject");
	if (text_of(t, r->type, sizeof r->type) != 0 ||
	    (strcmp(r->type, "approval") && strcmp(r->type, "input") && strcmp(r->type, "selection") &&
	     strcmp(r->type, "confirmation")))
		return as_fail(err, AS_ECORRUPT, "action.type is not approval, input, selection or confirmation");
	_Static_assert(MCP_AUDIENCE_MAX < sizeof r->audience, "the signer keeps every audience the table allows");
	r->audience[0] = 0;
	if (aud)
		text_of(aud, r->audience, sizeof r->audience);
	if ((strcmp(r->type, "selection") == 0) != (o != NULL))
		return as_fail(err, AS_ECORRUPT, "action.options must be 1-32 texts for a selection, and only then");
	if (o && !(r->options = calloc(o->n, sizeof *r->options)))
		return as_fail(err, AS_ENOMEM, "out of memory");
	for (size_t i = 0; o && i < o->n; i++) {
		if (!(r->options[i] = strndup((const char *)o->items[i].s, o->items[i].n)))
			return as_fail(err, AS_ENOMEM, "out of memory");
		r->noptions++;
	}
	r->subjects = json_array();
	if ((sub != NULL) != (contents != NULL) || (contents && contents->n != sub->n))
		return as_fail(err, AS_ECORRUPT, "contents must hold one item per action.subject, and only then");
	for (size_t i = 0; sub && i < sub->n; i++)
		GUARD(check_subject(&sub->items[i], &contents->items[i], i, r, err));
	return 0;
}

/* The request entry is on disk: now it is pending, and a reviewer may see it. */
void request_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	struct req *r = o->it.data;
	if (!pos) {
		request_refused(s, o->conn, r, err);
		return;
	}
	if (o->cancelled || (o->it.blocking && !conn_get(s, o->conn, W_MCP))) {
		append_simple(s, "cancelled", o->it.session_id,
			      o->cancelled ? "the agent cancelled the call" : "the agent disconnected", NULL);
		req_free(r);
		return;
	}
	if (pq_add(s->q, &o->it) != 0) {
		append_simple(s, "cancelled", o->it.session_id, "the queue of pending requests is full", NULL);
		request_refused(s, o->conn, r, "the queue of pending requests is full");
		return;
	}
	slog("info", "request %s (%s) from %s queued, deadline in %llu s", o->it.session_id, r->type, r->owner,
	     (unsigned long long)((o->it.deadline_ms - o->it.created_ms) / 1000));
	rec_event(s, "approval.requested", o->it.session_id,
		  json_pack("{s:s,s:s,s:s?,s:I,s:s?,s:s?}", "type", r->type, "requester", r->owner, "audience",
			    r->audience[0] ? r->audience : NULL, "deadline_s",
			    (json_int_t)((o->it.deadline_ms - o->it.created_ms) / 1000), "upstream",
			    r->gate ? r->gate->upstream : NULL, "tool", r->gate ? r->gate->tool : NULL));
	no_reviewer_warning(s, NULL);
	r->told |= NOTIFY_REQUEST; /* it waits for a person: its decision is told too (notify.c) */
	phase_run(s, PH_QUEUED, &(struct phase_ev){.it = &o->it, .r = r});
	if (r->mrtr) {
		mrtr_offer(s, o);
	} else if (!o->it.blocking) {
		json_t *res = result_base(o->it.session_id, "pending", 0);
		no_reviewer_warning(s, res);
		json_object_set_new(res, "deadline", json_integer((json_int_t)(o->it.deadline_ms / 1000)));
		char origin[512], link[600];
		if (review_origin(s, origin, sizeof origin)) { /* an HTTP client has no assentd.json to read it from */
			snprintf(link, sizeof link, "%s/review#%s", origin, o->it.session_id);
			json_object_set_new(res, "review_url", json_string(link));
		}
		send_result(s, o->conn, r->rid, res, 0);
		json_decref(res);
	}
}

/* The audiences an agent may ask for, on every path (allow, ask, deny): the default
 * one, and those the registry lists for its API key (HTTP) or for the uid the signer
 * measured (stdio, assent agent add --uid). Anonymous clients and unregistered uids
 * get the default only. A refusal names the audience and what is allowed, and
 * nothing is recorded (as for an unknown key). NULL: allowed. */
static json_t *audience_refusal(struct signer *s, const struct conn *c, const struct req *r)
{
	reload_registry(s); /* evaluate() reads it next: a stdio agent registered by uid is that agent */
	if (!r->audience[0] || !strcmp(r->audience, POL_DEFAULT_AUDIENCE))
		return NULL;
	const char *agent = !s->reg   ? NULL
			    : c->http ? (c->agent[0] ? c->agent : NULL)
				      : registry_agent_by_uid(s->reg, c->uid);
	if (agent && registry_agent_allows(s->reg, agent, r->audience))
		return NULL;
	json_t *e;
	if (agent)
		e = json_sprintf("audience \"%s\" refused: agent %s may ask for \"%s\" and %s only (an operator adds "
				 "one: assent agent add NAME --audience A)",
				 r->audience, agent, POL_DEFAULT_AUDIENCE,
				 registry_groups_json(s->reg, "agent", agent));
	else if (c->http)
		e = json_sprintf("audience \"%s\" refused: an anonymous client may ask for the default audience \"%s\" "
				 "only (an API key names more: assent agent add NAME --audience A)",
				 r->audience, POL_DEFAULT_AUDIENCE);
	else
		e = json_sprintf(
		    "audience \"%s\" refused: uid %u is no registered agent, so it may ask for the default "
		    "audience \"%s\" only (an operator registers it: assent agent add NAME --uid %u "
		    "--audience %s)",
		    r->audience, (unsigned)c->uid, POL_DEFAULT_AUDIENCE, (unsigned)c->uid, r->audience);
	slog("warning", "request from %s refused: audience \"%s\" not allowed", c->owner, r->audience);
	return json_pack("{s:o}", "error", e);
}

struct owner_count {
	const char *owner;
	size_t pending, blocking;
	uid_t anon_uid; /* an anonymous client: all anonymous sessions of this measured uid count as one */
};

/* Each anonymous session owns its requests (listing, collecting), but sessions cost
 * nothing to make: for the limits, anonymous clients count by the uid the signer measured. */
static int same_principal(const struct req *r, const struct owner_count *oc)
{
	if (!strcmp(r->owner, oc->owner))
		return 1;
	return oc->anon_uid != (uid_t)-1 && r->uid == oc->anon_uid && !strncmp(r->owner, "anonymous", 9);
}

static void count_owner(const struct pq_item *it, void *arg)
{
	struct owner_count *oc = arg;
	if (!same_principal(it->data, oc))
		return;
	oc->pending++;
	oc->blocking += it->blocking != 0;
}

/* One principal (a uid, an agent key, an anonymous client) may hold at most
 * ASSENT_MAX_PENDING_PER_AGENT requests pending, ASSENT_MAX_BLOCKING_PER_AGENT of
 * them as calls held open: past either, the call is answered with an error naming
 * the limit (and logged), and the queue stays for everyone else. */

/* get_feedback calls of this owner waiting now. */
static size_t waiters_of(const struct signer *s, const char *owner)
{
	size_t n = 0;
	for (size_t i = 0; i < sizeof s->waiters / sizeof s->waiters[0]; i++)
		n += s->waiters[i].used && !strcmp(s->waiters[i].owner, owner);
	return n;
}

/* How many calls one principal may hold open: ASSENT_MAX_BLOCKING_PER_AGENT; over HTTP,
 * where each holds one of ASSENT_HTTP_MAX_CONNECTIONS, a quarter of them at most. */
static unsigned blocking_limit(const struct signer *s, const struct conn *c)
{
	unsigned max = s->lim.c.blocking_per_agent;
	if (c->http && s->http.conns_max / 4 < max)
		max = s->http.conns_max / 4 ? s->http.conns_max / 4 : 1;
	return max;
}

int request_over_limit(struct signer *s, const struct conn *c, uid_t uid, const char *rid, size_t ridn, int wait)
{
	struct owner_count oc = {c->owner, 0, 0, !strncmp(c->owner, "anonymous", 9) ? uid : (uid_t)-1};
	pq_each(s->q, count_owner, &oc);
	oc.blocking += waiters_of(s, c->owner);	 /* get_feedback calls held open count too */
	for (size_t i = 0; i < s->nbatch; i++) { /* requests not yet on disk count too */
		const struct op *o = s->batch[i];
		if (o->it.data && !o->d && !o->own && same_principal(o->it.data, &oc)) {
			oc.pending++;
			oc.blocking += o->it.blocking != 0;
		}
	}
	/* Over HTTP each waiting call holds one of ASSENT_HTTP_MAX_CONNECTIONS: one
	 * principal gets a quarter of them at most. */
	unsigned blocking_max = blocking_limit(s, c);
	char msg[300], who[96];
	if (oc.anon_uid != (uid_t)-1)
		snprintf(who, sizeof who, "the anonymous clients of uid %u", (unsigned)oc.anon_uid);
	else
		snprintf(who, sizeof who, "%s", c->owner);
	if (oc.pending >= s->lim.c.pending_per_agent) {
		snprintf(msg, sizeof msg,
			 "%s: %zu requests pending, the limit (ASSENT_MAX_PENDING_PER_AGENT=%u): wait "
			 "for decisions or cancel some",
			 who, oc.pending, s->lim.c.pending_per_agent);
		lim_log(s, LIM_PENDING, "request refused: %s", msg);
	} else if (wait && oc.blocking >= blocking_max) {
		snprintf(msg, sizeof msg,
			 "%s: %zu calls waiting for a decision, the limit (ASSENT_MAX_BLOCKING_PER_AGENT=%u%s): "
			 "ask with wait: false and collect with get_feedback",
			 who, oc.blocking, blocking_max,
			 blocking_max < s->lim.c.blocking_per_agent
			     ? ", a quarter of ASSENT_HTTP_MAX_CONNECTIONS over HTTP"
			     : "");
		lim_log(s, LIM_BLOCKING, "request refused: %s", msg);
	} else {
		return 0;
	}
	char r[PROTO_RID_MAX + 1];
	snprintf(r, sizeof r, "%.*s", (int)ridn, rid);
	json_t *j = json_pack("{s:s}", "error", msg);
	send_result(s, c->id, r, j, 1);
	json_decref(j);
	return 1;
}

_Static_assert(ACTION_CLIENT_MAX < sizeof((struct req *)0)->client &&
		   ACTION_CLIENT_MAX < sizeof((struct conn *)0)->client,
	       "the signer keeps every client name the table allows");

/* A client name as declared (shown to reviewers): the worker turned what a terminal
 * would act on into '?', so anything else is an attack. */
int client_ok(const char *s, size_t n, char *err)
{
	size_t at;
	uint32_t cp;
	if (text_check(TEXT_LINE, s, n, &at, &cp) != 0)
		return as_fail(err, AS_ECORRUPT, "client: character U+%04X at byte %zu is not allowed", (unsigned)cp,
			       at);
	return 0;
}

/* What an F_REQUEST frame says, its fields as the table (frames.c) let them in. */
struct request_in {
	struct conn *c;
	const char *rid, *client;
	size_t ridn, clientn;
	uint64_t timeout;
	int wait, task;	       /* the caller holds the call open; the worker delivers the result as a task */
	int elicit;	       /* 2026-07-28: its client can show an elicitation form (mrtr.c) */
	const uint8_t *action; /* the action's canonical CBOR, as received */
	size_t actionn;
	const struct cv *contents;
	uid_t uid; /* who asked, as measured */
};

static int request_read(struct signer *s, struct ipc_frame *f, struct request_in *in, char *err)
{
	const struct cv *rid = cv_get(f->body, "rid"), *client = cv_get(f->body, "client"),
			*act = cv_get(f->body, "action"), *hreq = cv_get(f->body, "hreq");
	GUARD(get_conn(s, f, W_MCP, &in->c, err));
	in->rid = (const char *)rid->s;
	in->ridn = rid->n;
	in->client = (const char *)client->s;
	in->clientn = client->n;
	GUARD(client_ok(in->client, in->clientn, err));
	in->timeout = cv_get(f->body, "timeout")->u;
	in->wait = cv_get(f->body, "wait")->t == CV_TRUE;
	const struct cv *task = cv_get(f->body, "task");
	in->task = task && task->t == CV_TRUE;
	in->elicit = cv_get(f->body, "elicit") && cv_get(f->body, "elicit")->t == CV_TRUE;
	in->action = act->s;
	in->actionn = act->n;
	in->contents = cv_get(f->body, "contents");
	/* Who asked: measured on the unix socket (SO_PEERCRED), or on this HTTP request's
	 * own TCP connection when it came over loopback (inet_diag, in h_http_auth). */
	in->uid = in->c->uid;
	if (in->c->http) {
		if (!hreq)
			return as_fail(err, AS_ECORRUPT, "IPC: missing field \"hreq\" (a request of an HTTP session)");
		GUARD(measured_take(s, hreq->u, in->c->id, &in->uid, err));
	}
	return 0;
}

static struct req *request_new(const struct request_in *in)
{
	struct req *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->conn = in->c->id;
	r->uid = in->uid;
	memcpy(r->rid, in->rid, in->ridn);
	snprintf(r->client, sizeof r->client, "%.*s", (int)in->clientn, in->client);
	snprintf(r->owner, sizeof r->owner, "%s", in->c->owner);
	/* Recorded with the request: a restart keeps it only when its caller collects later. */
	r->collect = in->task ? "task" : in->wait ? "wait" : "poll";
	return r;
}

/* The policy's terms (when one is loaded) and the deadline they and the agent set. */
void request_terms(struct signer *s, const struct conn *c, struct req *r, uint64_t timeout, struct pq_item *it)
{
	if (timeout > s->lim.c.max_timeout_s) /* timeout_override is capped, never refused */
		timeout = s->lim.c.max_timeout_s;
	pq_new_session_id(it->session_id);
	it->created_ms = now_ms();
	if (s->pol) {
		struct pol_decision pd;
		evaluate(s, c, r, &pd);
		r->pd = pd;
		r->has_pd = 1;
		snprintf(r->pol_digest, sizeof r->pol_digest, "%s", policy_digest(s->pol));
		/* The policy's deadline bounds the agent's: an override may shorten it only. */
		if (r->pd.deadline_s && (!timeout || timeout > r->pd.deadline_s))
			timeout = r->pd.deadline_s;
	}
	it->deadline_ms = it->created_ms + 1000u * (timeout ? timeout : s->timeout_s);
	if (!strcmp(r->collect, "wait")) /* its agent waits: events it records meanwhile are inside it */
		rec_note_waiting(s, r->conn, r->rid);
	/* DEBUG: what decided it and for how long, never the message, context or arguments. */
	if (log_min > 0)
		return;
	char what[200];
	if (r->gate)
		snprintf(what, sizeof what, "%s %s__%s", r->gate->method, r->gate->upstream, r->gate->tool);
	else
		snprintf(what, sizeof what, "request_feedback %s", r->type);
	unsigned long long left = (it->deadline_ms - it->created_ms) / 1000;
	if (r->has_pd)
		slog("debug", "policy: %s (%s): %s by %s %u, deadline %llu s", it->session_id, what,
		     pol_action_name(r->pd.action), r->pd.by_default ? "the default, line" : "rule", r->pd.line, left);
	else
		slog("debug", "policy: none loaded: %s (%s) waits for a person, deadline %llu s", it->session_id, what,
		     left);
}

/* Refused for what the agent asked (an audience it may not ask for): answered, not recorded. */
static int request_answered(struct signer *s, struct req *r, struct op_held *h, json_t *why)
{
	send_result(s, r->conn, r->rid, why, 1);
	json_decref(why);
	held_free(h);
	req_free(r);
	return 0;
}

/* The action: the worker encoded it once (mcp_feedback_action); its digest is of these
 * very bytes, which the decoder proved canonical, and they are decoded once, into a
 * record the request entry is built in and kept until its commit (op_add_held). */
static int request_action(const struct request_in *in, struct req *r, struct op_held **h, const struct cv **action,
			  char *err)
{
	uint8_t d[32];
	char hex[65];
	/* Items: at most one per byte, and the entry's own fields around them. */
	char why[AS_ERRLEN] = "";
	int rc = held_decode(in->action, in->actionn, MCP_ACTION_MAX + 256, h, action, why);
	if (rc != 0)
		return as_fail(err, rc == AS_ENOMEM ? rc : AS_ECORRUPT, "action: not one canonical CBOR item: %s", why);
	sha256(in->action, in->actionn, d);
	hex_encode(d, 32, hex);
	snprintf(r->action, sizeof r->action, "sha256:%s", hex);
	rc = check_action(*action, in->contents, r, err);
	if (rc != 0) {
		held_free(*h);
		*h = NULL;
	}
	return rc;
}

int h_request(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct request_in in;
	GUARD(request_read(s, f, &in, err));
	struct conn *c = in.c;
	if (request_over_limit(s, c, in.uid, in.rid, in.ridn, in.wait))
		return 0;
	struct req *r = request_new(&in);
	if (!r)
		return AS_ENOMEM;
	struct op_held *h = NULL;
	const struct cv *action;
	int rc = request_action(&in, r, &h, &action, err);
	if (rc != 0) {
		req_free(r);
		return rc;
	}
	json_t *refused = audience_refusal(s, c, r);
	if (refused)
		return request_answered(s, r, h, refused);
	struct pq_item it = {0};
	r->view = cv_to_json(action); /* what a reviewer is shown, and what the policy reads */
	request_terms(s, c, r, in.timeout, &it);
	it.requester_id = c->id;
	it.requester_uid = in.uid;
	it.blocking = in.wait;
	it.data = r;
	if (in.elicit && mrtr_applies(r)) { /* its client's user may answer: offered, then collected */
		r->mrtr = 1;
		it.blocking = 0;
	}
	/* A stdio agent registered by uid is that agent (assent agent add NAME --uid UID). */
	const char *uid_agent = !c->http && s->reg ? registry_agent_by_uid(s->reg, c->uid) : NULL;
	struct cv *m = request_entry(held_arena(h), action, c, r, &it, uid_agent, cluster_replica(s));
	request_view(r, c, &it, uid_agent);
	char e2[AS_ERRLEN] = "out of memory";
	int decided = r->has_pd && r->pd.action != POL_ASK;
	struct op *o = NULL;
	if (m)
		o = op_add_held(s, h, m, decided ? NULL : request_done, e2);
	else
		held_free(h);
	if (!o) {
		request_refused(s, c->id, r, e2);
		return 0;
	}
	if (decided) { /* allowed or denied at once: the decision follows in the same commit */
		policy_decide(s, c, &it, r);
		return 0;
	}
	o->it = it;
	o->conn = c->id;
	return 0;
}

int h_collect(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	uint64_t wait = cv_get(f->body, "wait")->u;
	GUARD(get_conn(s, f, W_MCP, &c, err));
	char r[PROTO_RID_MAX + 1], id[MCP_SESSION_ID_MAX + 1];
	frame_text(f, "rid", r, sizeof r);
	frame_text(f, "sid", id, sizeof id);
	/* A request belongs to its requester (the measured uid), not to a connection. */
	for (size_t i = 0; i < s->ndone; i++) {
		struct done *d = done_at(s, i);
		if (d->result && !strcmp(d->sid, id) && !strcmp(d->owner, c->owner)) {
			send_result(s, c->id, r, d->result, 0);
			return 0;
		}
	}
	struct pq_item *it = pq_find(s->q, id);
	if (!it || strcmp(((struct req *)it->data)->owner, c->owner) != 0) {
		json_t *j = json_pack("{s:s}", "error", "no request of yours has this session_id");
		send_result(s, c->id, r, j, 1);
		json_decref(j);
		return 0;
	}
	if (wait == 0) {
		json_t *res = result_base(id, "pending", 0);
		json_object_set_new(res, "deadline", json_integer((json_int_t)(shown_deadline_ms(it) / 1000)));
		send_result(s, c->id, r, res, 0);
		json_decref(res);
		return 0;
	}
	/* A waiting get_feedback is a call held open: it counts in its principal's blocking
	 * limit, so one agent cannot take every waiter slot (or connection) from the others. */
	struct owner_count oc = {c->owner, 0, 0, (uid_t)-1};
	pq_each(s->q, count_owner, &oc);
	size_t held = oc.blocking + waiters_of(s, c->owner);
	unsigned max = blocking_limit(s, c);
	if (held >= max) {
		char msg[300];
		snprintf(msg, sizeof msg,
			 "%s has %zu calls waiting for a decision, the limit (ASSENT_MAX_BLOCKING_PER_AGENT=%u%s): "
			 "call get_feedback with wait_seconds 0, or fewer at once",
			 c->owner, held, max,
			 max < s->lim.c.blocking_per_agent ? ", a quarter of ASSENT_HTTP_MAX_CONNECTIONS over HTTP"
							   : "");
		lim_log(s, LIM_BLOCKING, "get_feedback refused: %s", msg);
		json_t *j = json_pack("{s:s}", "error", msg);
		send_result(s, c->id, r, j, 1);
		json_decref(j);
		return 0;
	}
	for (size_t i = 0; i < sizeof s->waiters / sizeof s->waiters[0]; i++) {
		struct waiter *w = &s->waiters[i];
		if (w->used)
			continue;
		*w = (struct waiter){.conn = c->id, .until = now_ms() + 1000 * wait, .used = 1};
		snprintf(w->owner, sizeof w->owner, "%s", c->owner);
		snprintf(w->rid, sizeof w->rid, "%s", r);
		snprintf(w->sid, sizeof w->sid, "%.*s", (int)(sizeof w->sid - 1), id); /* a queued sid: PQ_SID_LEN */
		return 0;
	}
	json_t *j = json_pack("{s:s}", "error", "too many get_feedback calls waiting; try again");
	send_result(s, c->id, r, j, 1);
	json_decref(j);
	return 0;
}

struct find_ctx {
	uint64_t conn;
	const char *rid;
	char sid[PQ_SID_LEN + 1];
};

static void find_rid(const struct pq_item *it, void *arg)
{
	struct find_ctx *fc = arg;
	const struct req *r = it->data;
	if (it->blocking && r->conn == fc->conn && !strcmp(r->rid, fc->rid))
		snprintf(fc->sid, sizeof fc->sid, "%s", it->session_id);
}

int h_cancel(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	GUARD(get_conn(s, f, W_MCP, &c, err));
	char r[PROTO_RID_MAX + 1];
	frame_text(f, "rid", r, sizeof r);
	gate_cancel(s, c->id, r); /* a gated call already forwarded: its server is told */
	struct find_ctx fc = {c->id, r, ""};
	pq_each(s->q, find_rid, &fc);
	struct pq_item out;
	if (fc.sid[0] && pq_remove(s->q, fc.sid, &out) == 0)
		request_cancelled(s, &out, "the agent cancelled the call");
	for (size_t i = 0; i < s->nbatch; i++) { /* not yet on disk: cancelled once it is */
		struct op *o = s->batch[i];
		if (o->it.data && o->it.blocking && !o->d && !o->own && o->conn == c->id &&
		    !strcmp(((struct req *)o->it.data)->rid, r))
			o->cancelled = 1;
	}
	return 0;
}

int h_conn_closed(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	uint64_t id = cv_get(f->body, "conn")->u;
	struct conn *c = conn_get(s, id, s->cur);
	if (!c && conn_ended(s, id))
		return 0;
	/* The signer ends connections itself too (a reviewer hanging up, a swept session):
	 * the worker's notice of one may come after more than the ended ring remembers.
	 * A connection handed out once and live for no worker now is stale, not an attack. */
	if (!c && id && id <= s->next_conn) {
		int live = 0;
		for (size_t i = 0; i < MAX_CONNS && !live; i++)
			live = s->conns[i].used && s->conns[i].id == id;
		if (!live)
			return 0;
	}
	if (!c)
		return as_fail(err, AS_ECORRUPT, "closes connection %llu, which it was never given",
			       (unsigned long long)id);
	if (s->cur == W_MCP)
		fail_conn_requests(s, id, "the agent disconnected");
	conn_end(s, c);
	return 0;
}

int h_log(void *ctx, struct ipc_frame *f, char *err)
{
	(void)err;
	const struct cv *lv = cv_get(f->body, "level"), *tx = cv_get(f->body, "text");
	const char *txt = (const char *)tx->s;
	size_t lvn = lv->n, txtn = tx->n;
	char lvl[PROTO_LOG_LEVEL_MAX + 1];
	snprintf(lvl, sizeof lvl, "%.*s", (int)lvn, (const char *)lv->s);
	char msg[1024];
	snprintf(msg, sizeof msg, "%.*s", (int)txtn, txt);
	wlog_line(lvl, ((struct signer *)ctx)->w[((struct signer *)ctx)->cur].kind, msg);
	return 0;
}

int h_hello(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	const struct cv *k = cv_get(f->body, "kind");
	const char *kind = (const char *)k->s;
	size_t n = k->n;
	if (strlen(s->w[s->cur].kind) != n || memcmp(kind, s->w[s->cur].kind, n) != 0)
		return as_fail(err, AS_ECORRUPT, "hello from the %s worker says it is '%.*s'", s->w[s->cur].kind,
			       (int)n, kind);
	s->w[s->cur].state = S_READY;
	/* An upstream worker says hello before its server has run at all: its backoff starts
	 * over only once the server answers (h_up_tools), so a command that does not exist
	 * waits 1, 2, 4 ... 30 s between starts, not a second each. */
	if (!IS_UP(s->cur))
		s->w[s->cur].restarts = 0;
	gate_hello(s, s->cur); /* the mcp worker learns the upstreams' tools */
	return 0;
}
