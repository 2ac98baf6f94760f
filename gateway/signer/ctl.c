/* A reviewer's commands over the control socket: one handler per F_CTL_* frame type
 * (gateway/proto/proto.h), each a row of the review worker's dispatch table (loop.c). */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Whether the reviewer behind c is still connected, asked of the socket itself at the
 * moment a command is acted on: a frame the worker sent after the reviewer left is
 * about a connection that has ended, even if the epoll turn has not come yet. */
static int ctl_gone(struct signer *s, struct conn *c)
{
	size_t i = (size_t)(c - s->conns);
	struct pollfd p = {.fd = s->ctl_fd[i], .events = POLLRDHUP};
	if (s->ctl_fd[i] >= 0 && s->ctl_id[i] == c->id && poll(&p, 1, 0) == 0)
		return 0;
	conn_end(s, c);
	return 1;
}

/* A command on a control connection (its fields passed its type's table in
 * gateway/proto/frames.c before the handler ran): the connection is one the signer
 * handed over, and its reviewer is still there. */
static int ctl_begin(struct signer *s, struct ipc_frame *f, struct conn **c, char *err)
{
	GUARD(get_conn(s, f, W_REVIEW, c, err));
	if (ctl_gone(s, *c))
		return as_fail(err, AS_ENOTFOUND, "a command on connection %llu, whose reviewer has left: refused",
			       (unsigned long long)(*c)->id);
	return 0;
}

/* The registered reviewer of the uid measured on c; NULL: none, and c is told so. */
static const char *ctl_reviewer(struct signer *s, const struct conn *c)
{
	reload_registry(s);
	const char *reviewer = registry_reviewer_by_uid(s->reg, c->uid);
	if (!reviewer)
		ctl_reply(
		    s, c->id,
		    ctl_error(
			PS_UNAUTHORIZED,
			"uid %u is not a registered reviewer (an operator runs: assent reviewer add NAME --uid %u)",
			(unsigned)c->uid, (unsigned)c->uid));
	return reviewer;
}

/* The request id a command names (the "sid" field), as a string. */
static int ctl_sid(const struct cv *b, char id[65], char *err)
{
	const char *sid;
	size_t n;
	GUARD(ipc_get_text(b, "sid", 64, &sid, &n, err));
	snprintf(id, 65, "%.*s", (int)n, sid);
	return 0;
}

int h_ctl_whoami(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	GUARD(ctl_begin(s, f, &c, err));
	const char *reviewer = ctl_reviewer(s, c);
	if (reviewer)
		ctl_reply(
		    s, c->id,
		    answer_ok(json_pack("{s:b,s:s,s:I}", "ok", 1, "reviewer", reviewer, "uid", (json_int_t)c->uid)));
	return 0;
}

/* The daemon's counters, for `assent status`. */
static json_t *status_reply(const struct signer *s)
{
	return json_pack("{s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "ok", 1, "pid", (json_int_t)getpid(), "pending",
			 (json_int_t)pq_count(s->q), "uptime_seconds", (json_int_t)((now_ms() - s->started_ms) / 1000),
			 "ledger_size", (json_int_t)ledger_size(s->ledger), "entries_written", (json_int_t)s->committed,
			 "commits", (json_int_t)s->commits, "mcp_worker_restarts",
			 (json_int_t)s->w[W_MCP].restarts_total, "review_worker_restarts",
			 (json_int_t)s->w[W_REVIEW].restarts_total);
}

int h_ctl_status(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	GUARD(ctl_begin(s, f, &c, err));
	if (ctl_reviewer(s, c))
		ctl_reply(s, c->id, answer_ok(status_reply(s)));
	return 0;
}

int h_ctl_pending(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	uint64_t offset = 0; /* the page from this request on */
	GUARD(ctl_begin(s, f, &c, err));
	if (cv_get(f->body, "offset"))
		GUARD(ipc_get_uint(f->body, "offset", PQ_MAX, &offset, err));
	const char *reviewer = ctl_reviewer(s, c);
	if (!reviewer)
		return 0;
	json_t *rep = list_reply_page(s, NULL, reviewer, (size_t)offset);
	json_object_set_new(rep, "ok", json_true());
	ctl_reply(s, c->id, answer_ok(rep));
	return 0;
}

int h_ctl_show(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	char id[65];
	GUARD(ctl_begin(s, f, &c, err));
	GUARD(ctl_sid(f->body, id, err));
	const char *reviewer = ctl_reviewer(s, c);
	if (!reviewer)
		return 0;
	struct pq_item *it = pq_find(s->q, id);
	ctl_reply(s, c->id,
		  it && reviewer_may_see(s, reviewer, it->data) ? answer_ok(show_reply(it->data))
								: ctl_error(PS_NOT_FOUND, "no pending request %s", id));
	return 0;
}

int h_ctl_reveal(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	char id[65];
	GUARD(ctl_begin(s, f, &c, err));
	GUARD(ctl_sid(f->body, id, err));
	const char *reviewer = ctl_reviewer(s, c);
	if (reviewer) {
		struct who w = {reviewer, "cli", NULL, c->uid, c->id, 0, NULL};
		reveal(s, &w, id);
	}
	return 0;
}

int h_ctl_decide(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	const char *outcome, *text = NULL;
	size_t outn, textn = 0;
	uint64_t n = 0;
	char id[65], oc[17];
	GUARD(ctl_begin(s, f, &c, err));
	GUARD(ctl_sid(f->body, id, err));
	GUARD(ipc_get_text(f->body, "outcome", 16, &outcome, &outn, err));
	if (cv_get(f->body, "text"))
		GUARD(ipc_get_text(f->body, "text", 16384, &text, &textn, err));
	if (cv_get(f->body, "n"))
		GUARD(ipc_get_uint(f->body, "n", 64, &n, err));
	const char *reviewer = ctl_reviewer(s, c);
	if (!reviewer)
		return 0;
	snprintf(oc, sizeof oc, "%.*s", (int)outn, outcome);
	char *tx = text ? strndup(text, textn) : NULL;
	struct who w = {reviewer, "cli", NULL, c->uid, c->id, 0, NULL};
	struct answer rep = text && !tx ? ctl_error(PS_INTERNAL, "out of memory") : decide(s, &w, id, oc, tx, n);
	free(tx);
	if (rep.j) /* none: a decision, answered once it is on disk */
		ctl_reply(s, c->id, rep);
	return 0;
}
