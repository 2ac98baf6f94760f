/* What reviewers and requesters see of pending requests: lists and views, paged to fit a frame. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include "common/redact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t json_size(const json_t *j)
{
	return json_dumpb(j, NULL, 0, JSON_COMPACT);
}

/* Add v to a page, or count it as one more when it does not fit (v is taken either way). */
void page_add(json_t *arr, json_t *v, size_t *used, size_t *more, size_t max_items)
{
	size_t n = json_size(v);
	if (*more || json_array_size(arr) >= max_items || *used + n > VIEW_PAGE_BYTES) {
		(*more)++;
		json_decref(v);
		return;
	}
	*used += n;
	json_array_append_new(arr, v);
}

/* A reviewer sees what they may decide: a rule that names its reviewers hides its
 * requests from everyone else (their existence too, in lists, show and recent). */
int reviewer_may_see(struct signer *s, const char *reviewer, const struct req *r)
{
	return !reviewer || !r->has_pd || !r->pd.nreviewers || reviewer_allowed(s, reviewer, &r->pd);
}

struct list_ctx {
	struct signer *s;
	const char *owner;    /* an agent's own list; NULL: a reviewer's */
	const char *reviewer; /* a reviewer's list: only what they may decide */
	json_t *arr;
	size_t more, offset, skipped, used;
};

static void list_one(const struct pq_item *it, void *arg)
{
	struct list_ctx *l = arg;
	const struct req *r = it->data;
	if (l->owner && strcmp(r->owner, l->owner) != 0)
		return;
	if (!l->owner && !reviewer_may_see(l->s, l->reviewer, r))
		return;
	if (l->skipped < l->offset) {
		l->skipped++;
		return;
	}
	if (l->more || json_array_size(l->arr) == LIST_MAX) {
		l->more++;
		return;
	}
	const char *msg = json_string_value(json_object_get(r->view, "message"));
	size_t n = strlen(msg);
	if (n > LIST_MESSAGE_MAX) /* cut on a character boundary */
		for (n = LIST_MESSAGE_MAX; n > 0 && ((unsigned char)msg[n] & 0xC0) == 0x80; n--)
			;
	json_t *v = json_pack("{s:s,s:s,s:s%,s:I,s:I}", "session_id", it->session_id, "type", r->type, "message", msg,
			      n, "created", (json_int_t)(it->created_ms / 1000), "deadline",
			      (json_int_t)(shown_deadline_ms(it) / 1000));
	if (n < strlen(msg))
		json_object_set_new(v, "message_truncated", json_true());
	if (r->audience[0])
		json_object_set_new(v, "audience", json_string(r->audience));
	if (!l->owner)
		json_object_set(v, "requester", json_object_get(r->view, "requester"));
	page_add(l->arr, v, &l->used, &l->more, LIST_MAX);
}

/* owner: an agent's own requests; else the reviewer's (what they may decide). From
 * the offset-th on, in deadline order. */
json_t *list_reply_page(struct signer *s, const char *owner, const char *reviewer, size_t offset)
{
	struct list_ctx l = {.s = s, .owner = owner, .reviewer = reviewer, .arr = json_array(), .offset = offset};
	pq_each(s->q, list_one, &l);
	size_t shown = json_array_size(l.arr);
	json_t *j = json_pack("{s:o}", "requests", l.arr);
	if (l.more) {
		json_object_set_new(j, "more", json_integer((json_int_t)l.more));
		json_object_set_new(j, "next_offset", json_integer((json_int_t)(offset + shown)));
	}
	return j;
}

static json_t *list_reply(struct signer *s, const char *owner)
{
	return list_reply_page(s, owner, NULL, 0);
}

/* A view over max bytes of JSON (a context of escapes: each byte may print as six)
 * loses its context, with a note saying so, so that it fits in an answer. */
/* Marks in the strings of v ("[secret: N chars]", common/redact.h), and what they hide. */
static void count_marks(const json_t *v, size_t *spans, size_t *chars, int depth)
{
	size_t i;
	const char *k;
	json_t *x;
	if (depth > 64)
		return;
	if (json_is_string(v)) {
		const char *p = json_string_value(v);
		size_t n = json_string_length(v);
		for (size_t at = 0; at < n; at++) {
			size_t mk = p[at] == '[' ? redact_mark_len(p + at, n - at) : 0;
			if (mk > REDACT_MARK_LEN || (mk && p[at + 1] == 's')) {
				(*spans)++;
				*chars += strtoul(p + at + 9, NULL, 10);
				at += mk - 1;
			}
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x)
		{
			count_marks(x, spans, chars, depth + 1);
		}
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, x)
		{
			count_marks(x, spans, chars, depth + 1);
		}
	}
}

void view_note_masks(json_t *view)
{
	if (json_object_get(view, "masked")) /* a gated call's view counts its own (gate.c) */
		return;
	static const char *const keys[] = {"message", "context", "options", "default"};
	size_t spans = 0, chars = 0;
	for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
		count_marks(json_object_get(view, keys[k]), &spans, &chars, 0);
	if (spans)
		json_object_set_new(view, "masked",
				    json_pack("{s:I,s:I}", "spans", (json_int_t)spans, "chars", (json_int_t)chars));
}

void view_fit(json_t *v, size_t max)
{
	size_t n = json_size(v);
	if (n <= max || !json_object_get(v, "context"))
		return;
	json_object_del(v, "context");
	json_object_set_new(
	    v, "context_omitted",
	    json_sprintf("the context is too large to show here (the request is %zu bytes as JSON)", n));
}

/* A request as a reviewer sees it, with the subjects' bytes (base64) when they fit in a reply. */
json_t *show_reply(const struct req *r)
{
	json_t *v = json_deep_copy(r->view);
	json_t *subs = json_object_get(v, "subject"), *x;
	size_t i, total = 0;
	for (i = 0; i < 16; i++)
		total += r->content_len[i];
	int fits = total / 3 * 4 < IPC_FRAME_MAX / 2; /* the rest of the view takes at most the other half */
	view_fit(v, IPC_FRAME_MAX / 2);
	json_array_foreach(subs, i, x)
	{
		if (i >= 16 || !r->content[i])
			continue;
		if (!fits) {
			json_object_set_new(x, "content_omitted", json_string("too large to show here with the rest"));
			continue;
		}
		struct buf b;
		buf_init(&b, IPC_FRAME_MAX);
		if (b64_encode(r->content[i], r->content_len[i], &b) == 0)
			json_object_set_new(x, "content_base64", json_stringn((const char *)b.p, b.len));
		buf_free(&b);
	}
	return json_pack("{s:b,s:o}", "ok", 1, "request", v);
}

int h_list(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	GUARD(get_conn(s, f, W_MCP, &c, err));
	char r[PROTO_RID_MAX + 1];
	frame_text(f, "rid", r, sizeof r);
	json_t *res = list_reply(s, c->owner);
	send_result(s, c->id, r, res, 0);
	json_decref(res);
	return 0;
}

/* The risk a reviewer is shown (the page's badge, a webhook's body): what the policy's risk
 * condition reads, the context's risk, else its risk_level (issue 17); NULL when neither. */
const char *view_risk(const json_t *view)
{
	const json_t *ctx = json_object_get(view, "context");
	const json_t *risk = json_object_get(ctx, "risk");
	if (!json_is_string(risk))
		risk = json_object_get(ctx, "risk_level");
	return json_string_value(risk);
}
