/* The mcp worker's tools/call: a call of an upstream's tool (the gate) and the gate's other
 * methods, the QA tools, and assent's own tools, each turned into its frame for the signer. */
#define _GNU_SOURCE
#include "gateway/worker/mcp/wmcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/proto/action.h"
#include "gateway/proto/call.h"
#include "gateway/worker/mcp/callrec.h"
#include "gateway/worker/mcp/modern.h"
#include "gateway/worker/mcp/qatools.h"
#include "gateway/proto/proto.h"

static void answer_tool_error(struct mconn *c, const struct mcp_id *id, const char *msg)
{
	mcp_line_result(&c->out, id, mcp_tool_error(msg), NULL);
}

/* The second round of a multi-round input: the answer and the signer's requestState
 * go back to the signer with the retried call's action, which the state must name. A
 * retry without the answer is asked again, with the same state. */
static void input_round(struct mw *w, struct mconn *c, const struct mcp_msg *m, const struct mcp_feedback *fb,
			const struct buf *act, const char *rid, const json_t *state)
{
	char err[AS_ERRLEN];
	int accepted;
	const char *text;
	int rc = mcp_input_response(m->params, &accepted, &text, err);
	if (rc == AS_ENOTFOUND) {
		json_t *opts = json_array();
		for (size_t i = 0; opts && i < fb->noptions; i++)
			json_array_append_new(opts, json_stringn(fb->options[i], fb->option_len[i]));
		json_t *ir =
		    json_pack("{s:s,s:s%,s:o,s:s?,s:O}", "type", mcp_fb_type_name(fb->type), "message", fb->message,
			      fb->message_len, "options", opts, "default", fb->dflt, "requestState", state);
		mcp_line_result(&c->out, &m->id, ir ? mcp_input_required(ir) : NULL, NULL);
		json_decref(ir);
		return;
	}
	if (rc != 0) {
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, err, NULL, NULL);
		return;
	}
	cv_arena_reset(&w->arena);
	struct cv_arena *a = &w->arena;
	struct cv *f = ipc_frame_new(a, F_INPUT, 7), *slot = f ? ipc_put(a, f, "action") : NULL;
	if (slot)
		*slot = (struct cv){.t = CV_BYTES, .s = act->p, .n = act->len};
	rc = !slot || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid)) ||
	     ipc_put_text(a, f, "state", json_string_value(state), json_string_length(state)) ||
	     ipc_put_bool(a, f, "accepted", accepted) || (text && ipc_put_text(a, f, "text", text, strlen(text))) ||
	     (c->http && ipc_put_uint(a, f, "hreq", c->hreq));
	if (rc || json_string_length(state) > PROTO_STATE_MAX ||
	    !wm_tcall_add(w, c->id, rid, T_INPUT, MCP_TASK_NONE, NULL)) {
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS,
			       "requestState is not one this server issued (or the answer is too large)", NULL, NULL);
		return;
	}
	if (wm_send_frame(w, f) != 0) {
		wm_tcall_take(w, c->id, rid, strlen(rid));
		mcp_line_error(&c->out, &m->id, MCP_INTERNAL_ERROR, "the gateway could not take the answer", NULL,
			       NULL);
	}
}

/* A registered blocking call: progress notifications while it waits (progress()). */
static void call_watch(struct mw *w, const struct mconn *c, const char *rid, const struct mcp_msg *m, int gated)
{
	for (size_t i = 0; i < sizeof w->calls / sizeof w->calls[0]; i++) {
		struct call *k = &w->calls[i];
		if (k->used)
			continue;
		k->used = 1;
		k->conn = c->id;
		snprintf(k->rid, sizeof k->rid, "%s", rid);
		k->token = m->progress_token;
		k->started = mono_ms();
		k->next_progress = k->started + PROGRESS_EVERY_MS;
		k->progress_sent = 0;
		k->gated = gated;
		break;
	}
}

/* A 2026-07-28 request's multi-round parts (SEP-2322): params.inputResponses (an object,
 * or absent) and params.requestState (a state the signer minted, or absent). 0, or
 * AS_EINVAL with err naming what is wrong (a protocol error). Other revisions have none. */
static int retry_parts(const struct mconn *c, const struct mcp_msg *m, const json_t **input, const char **state,
		       char *err)
{
	*input = NULL;
	*state = NULL;
	if (!c->modern)
		return 0;
	const json_t *in = json_object_get(m->params, "inputResponses"),
		     *st = json_object_get(m->params, "requestState");
	if (in && !json_is_object(in))
		return as_fail(err, AS_EINVAL, "params.inputResponses: expected an object");
	if (st && (!json_is_string(st) || !json_string_length(st) || json_string_length(st) > PROTO_GATE_STATE_MAX))
		return as_fail(err, AS_EINVAL, "params.requestState: expected a string of 1 to %d bytes",
			       PROTO_GATE_STATE_MAX);
	*input = in;
	*state = json_string_value(st);
	return 0;
}

/* F_CALL's multi-round fields: the client's declared capabilities for the server's
 * inputRequests (PROTO_CAP_*; 2026-07-28 clients only) and the requestState it returns. */
static int put_retry(struct cv_arena *a, struct cv *f, const struct mconn *c, const char *state)
{
	unsigned caps = (c->client.sampling ? PROTO_CAP_SAMPLING : 0) | (c->client.elicitation ? PROTO_CAP_ELICIT : 0) |
			(c->client.roots ? PROTO_CAP_ROOTS : 0);
	return (c->modern && ipc_put_uint(a, f, "caps", caps | PROTO_CAP_MODERN)) ||
	       (state && ipc_put_text(a, f, "state", state, strlen(state)));
}

/* A call of an upstream's tool (the gate): its canonical call to the signer, which
 * decides it and, when it may go, has the upstream's worker forward it. */
static int gated_call(struct mw *w, struct mconn *c, const struct mcp_msg *m)
{
	const json_t *name = json_object_get(m->params, "name");
	const json_t *route = json_is_string(name) ? json_object_get(w->routes, json_string_value(name)) : NULL;
	if (!route)
		return 0;
	const json_t *args = json_object_get(m->params, "arguments");
	char err[AS_ERRLEN], rid[PROTO_RID_MAX + 1], client[ACTION_CLIENT_MAX + 1];
	if (args && !json_is_null(args) && !json_is_object(args)) {
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, "tools/call: params.arguments: expected an object",
			       NULL, NULL);
		return 1;
	}
	const json_t *input;
	const char *state;
	if (retry_parts(c, m, &input, &state, err) != 0) {
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, err, NULL, NULL);
		return 1;
	}
	struct buf call;
	buf_init(&call, CALL_MAX);
	if (call_encode_input("tools/call", json_string_value(json_array_get(route, 1)),
			      json_string_value(json_array_get(route, 2)), json_is_object(args) ? args : NULL, input,
			      &call, err) != 0) {
		buf_free(&call);
		if (input) /* its answers are malformed: a protocol error, as SEP-2322 asks */
			mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, err, NULL, NULL);
		else
			answer_tool_error(c, &m->id, err);
		return 1;
	}
	wm_id_json(&m->id, rid);
	action_client(client, c->client.name, c->client.client_version);
	/* A client that asks for a task gets one: the call may wait for a reviewer for long. */
	enum mcp_task_era era = mcp_task_wanted(m, c->modern, c->client.tasks);
	if (era && !wm_tcall_add(w, c->id, rid, T_CREATE, era, NULL)) {
		buf_free(&call);
		answer_tool_error(c, &m->id, "too many task calls at once; try again");
		return 1;
	}
	cv_arena_reset(&w->arena);
	struct cv_arena *a = &w->arena;
	struct cv *f = ipc_frame_new(a, F_CALL, 8);
	if (!f || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid)) ||
	    ipc_put_bytes(a, f, "call", call.p, call.len) || ipc_put_text(a, f, "client", client, strlen(client)) ||
	    (c->http && ipc_put_uint(a, f, "hreq", c->hreq)) || (era && ipc_put_bool(a, f, "task", 1)) ||
	    put_retry(a, f, c, state)) {
		if (era)
			wm_tcall_take(w, c->id, rid, strlen(rid));
		buf_free(&call);
		answer_tool_error(c, &m->id, "the call is too large");
		return 1;
	}
	wm_send_frame(w, f);
	buf_free(&call);
	if (!era)
		call_watch(w, c, rid, m, 1);
	return 1;
}

/* What the gate adds to the server's capabilities: the tools list changes, and the
 * upstreams' resources, prompts and completions are served. In 2026-07-28 a change is heard
 * only on a subscriptions/listen stream (listen.h), which carries the three lists' changes;
 * that revision has no resources/subscribe. */
void wm_gate_caps(const struct mw *w, json_t *caps, int modern)
{
	json_object_set_new(json_object_get(caps, "tools"), "listChanged", json_true());
	if (json_array_size(json_object_get(w->more, "resources")) ||
	    json_array_size(json_object_get(w->more, "resourceTemplates")))
		json_object_set_new(caps, "resources", modern ? json_pack("{s:b}", "listChanged", 1) : json_object());
	if (json_array_size(json_object_get(w->more, "prompts")))
		json_object_set_new(caps, "prompts", modern ? json_pack("{s:b}", "listChanged", 1) : json_object());
	if (json_is_true(json_object_get(w->more, "completions")))
		json_object_set_new(caps, "completions", json_object());
	if (!modern && json_is_true(json_object_get(w->more, "subscribe")) && json_object_get(caps, "resources"))
		json_object_set_new(json_object_get(caps, "resources"), "subscribe", json_true());
}

/* The upstream that serves uri: the one that listed it, else the first whose template's
 * literal start it has; NULL: none. */
static const char *resource_upstream(const struct mw *w, const char *uri)
{
	const char *up = json_string_value(json_object_get(json_object_get(w->more, "resource_routes"), uri));
	size_t i;
	json_t *x;
	json_array_foreach(json_object_get(w->more, "template_routes"), i, x)
	{
		const char *pre = json_string_value(json_array_get(x, 0));
		if (!up && pre && *pre && !strncmp(uri, pre, strlen(pre)))
			up = json_string_value(json_array_get(x, 1));
	}
	return up;
}

/* A request of the gate's other methods, as the signer will forward it (F_CALL). */
static void gate_send(struct mw *w, struct mconn *c, const struct mcp_msg *m, const char *method, const char *up,
		      const char *name, const json_t *obj)
{
	char err[AS_ERRLEN], rid[PROTO_RID_MAX + 1], client[ACTION_CLIENT_MAX + 1];
	const json_t *input = NULL;
	const char *state = NULL;
	if (!strcmp(method, "prompts/get") && retry_parts(c, m, &input, &state, err) != 0) {
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, err, NULL, NULL);
		return;
	}
	struct buf call;
	buf_init(&call, CALL_MAX);
	if (call_encode_input(method, up, name, obj, input, &call, err) != 0) {
		buf_free(&call);
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, err, NULL, NULL);
		return;
	}
	wm_id_json(&m->id, rid);
	action_client(client, c->client.name, c->client.client_version);
	cv_arena_reset(&w->arena);
	struct cv_arena *a = &w->arena;
	struct cv *f = ipc_frame_new(a, F_CALL, 7);
	if (!f || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid)) ||
	    ipc_put_bytes(a, f, "call", call.p, call.len) || ipc_put_text(a, f, "client", client, strlen(client)) ||
	    (c->http && ipc_put_uint(a, f, "hreq", c->hreq)) || put_retry(a, f, c, state))
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, "the request is too large", NULL, NULL);
	else
		wm_send_frame(w, f);
	buf_free(&call);
}

/* The upstreams' resources, templates, prompts and completions (the gate): lists from the
 * catalog, the rest through the signer. 0 when m is none of them. */
int wm_gated_other(struct mw *w, struct mconn *c, const struct mcp_msg *m)
{
	static const struct {
		const char *method, *key;
	} lists[] = {{"resources/list", "resources"},
		     {"resources/templates/list", "resourceTemplates"},
		     {"prompts/list", "prompts"}};
	if (!w->more || !m->method)
		return 0;
	for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
		if (!strcmp(m->method, lists[i].method)) {
			mcp_line_result(&c->out, &m->id,
					json_pack("{s:O}", lists[i].key, json_object_get(w->more, lists[i].key)), NULL);
			return 1;
		}
	const json_t *p = m->params;
	/* 2026-07-28 has no subscriptions: there they are methods not found, as the revision says */
	int sub = (!strcmp(m->method, "resources/subscribe") || !strcmp(m->method, "resources/unsubscribe")) &&
		  !(c->stateless || mcp_is_modern(m));
	if (sub || !strcmp(m->method, "resources/read")) {
		const char *uri = json_string_value(json_object_get(p, "uri"));
		const char *up = uri ? resource_upstream(w, uri) : NULL;
		if (!up)
			mcp_line_error(&c->out, &m->id, -32002, "Resource not found", json_pack("{s:s?}", "uri", uri),
				       NULL);
		else
			gate_send(w, c, m, m->method, up, uri, NULL);
		return 1;
	}
	if (!strcmp(m->method, "prompts/get")) {
		const char *nm = json_string_value(json_object_get(p, "name"));
		const json_t *rt = nm ? json_object_get(json_object_get(w->more, "prompt_routes"), nm) : NULL;
		const json_t *args = json_object_get(p, "arguments");
		if (!rt)
			mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, "Unknown prompt", NULL, NULL);
		else
			gate_send(w, c, m, "prompts/get", json_string_value(json_array_get(rt, 0)),
				  json_string_value(json_array_get(rt, 1)), json_is_object(args) ? args : NULL);
		return 1;
	}
	if (!strcmp(m->method, "completion/complete")) {
		const json_t *ref = json_object_get(p, "ref");
		const char *type = json_string_value(json_object_get(ref, "type")), *up = NULL;
		json_t *q = json_deep_copy(p);
		/* the agent's _meta (its revision's envelope, its progress token) is about its
		 * connection to assent: a server that speaks 2026-07-28 would take the envelope for
		 * a request of that revision under 2025 headers, and refuse it */
		if (json_is_object(q))
			json_object_del(q, "_meta");
		if (type && !strcmp(type, "ref/prompt")) {
			const json_t *rt = json_object_get(json_object_get(w->more, "prompt_routes"),
							   json_string_value(json_object_get(ref, "name")) ?: "");
			up = json_string_value(json_array_get(rt, 0));
			if (up) /* the server knows its prompt by its own name */
				json_object_set(json_object_get(q, "ref"), "name", json_array_get(rt, 1));
		} else if (type && !strcmp(type, "ref/resource")) {
			const char *uri = json_string_value(json_object_get(ref, "uri"));
			up = uri ? resource_upstream(w, uri) : NULL;
		}
		if (!up || !json_is_object(q))
			mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS,
				       "completion/complete: no such prompt or resource", NULL, NULL);
		else
			gate_send(w, c, m, "completion/complete", up, NULL, q);
		json_decref(q);
		return 1;
	}
	return 0;
}

/* request_feedback's F_REQUEST in w's arena: the action's canonical CBOR as mcp_feedback_action
 * encoded it, once (the signer hashes these very bytes and decodes them once: proto.h), the
 * subjects' bytes and the call's fields. NULL when the frame cannot hold them. */
static struct cv *request_frame(struct mw *w, const struct mconn *c, const struct mcp_feedback *fb,
				const struct buf *act, const char *rid, enum mcp_task_era era, int elicit)
{
	struct cv_arena *a = &w->arena;
	struct cv *f = ipc_frame_new(a, F_REQUEST, 9);
	struct cv *slot = f ? ipc_put(a, f, "action") : NULL;
	if (slot)
		*slot = (struct cv){.t = CV_BYTES, .s = act->p, .n = act->len};
	/* The subjects' bytes, so that the signer hashes them itself and a
	 * reviewer can read them: one item per subject, null for a digest only. */
	struct cv *arr = slot && fb->nsubjects ? cv_array(a, fb->nsubjects) : NULL;
	for (size_t i = 0; arr && i < fb->nsubjects; i++) {
		if (!fb->subjects[i].content)
			arr->items[i].t = CV_NULL;
		else if (cv_set_bytes(a, &arr->items[i], fb->subjects[i].content, fb->subjects[i].content_len))
			arr = NULL;
	}
	struct cv *cs = arr ? ipc_put(a, f, "contents") : NULL;
	if (cs)
		*cs = *arr;
	else if (fb->nsubjects)
		slot = NULL;
	char client[ACTION_CLIENT_MAX + 1];
	action_client(client, c->client.name, c->client.client_version);
	if (!slot || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid)) ||
	    ipc_put_uint(a, f, "timeout", fb->timeout) || ipc_put_bool(a, f, "wait", fb->wait) ||
	    (era && ipc_put_bool(a, f, "task", 1)) || (elicit && ipc_put_bool(a, f, "elicit", 1)) ||
	    ipc_put_text(a, f, "client", client, strlen(client)) || (c->http && ipc_put_uint(a, f, "hreq", c->hreq)))
		return NULL;
	return f;
}

/* assent's request_feedback: checked, redacted and encoded as its action, then to the signer
 * (F_REQUEST), or the second round of a multi-round input. */
static void request_feedback(struct mw *w, struct mconn *c, const struct mcp_msg *m, const json_t *args,
			     const char *rid)
{
	char err[AS_ERRLEN];
	struct cv *f = NULL;
	struct mcp_feedback fb;
	struct buf act;
	buf_init(&act, MCP_ACTION_MAX);
	int rc = mcp_check_request_feedback(args, &fb, err);
	if (rc == 0 && !fb.timeout) /* the client's own FEEDBACK_TIMEOUT_SECONDS, through its bridge */
		fb.timeout = c->dflt_timeout;
	enum mcp_task_era era = mcp_task_wanted(m, c->modern, c->client.tasks);
	if (rc == 0 && era && !wm_tcall_add(w, c->id, rid, T_CREATE, era, NULL))
		rc = as_fail(err, AS_ENOMEM, "too many task calls at once; try again");
	if (era)
		fb.wait = 0; /* a task is collected, never waited on */
	if (rc == 0)	     /* marks that say what they hide: what a reviewer reads (common/redact.h) */
		rc = mcp_feedback_redact(&fb, &mcp_view_rules, 0, err);
	if (rc == 0)
		rc = mcp_feedback_action(&fb, &act, err);
	const json_t *state = json_object_get(m->params, "requestState");
	if (rc == 0 && c->modern && json_is_string(state)) { /* a multi-round input's second round */
		if (era)
			wm_tcall_take(w, c->id, rid, strlen(rid));
		input_round(w, c, m, &fb, &act, rid, state);
		mcp_feedback_free(&fb);
		buf_free(&act);
		return;
	}
	/* The client's user may answer an input or selection itself, when the policy says so. */
	int elicit =
	    c->modern && c->client.elicitation && !era && (fb.type == MCP_FB_INPUT || fb.type == MCP_FB_SELECTION);
	if (rc == 0 && !(f = request_frame(w, c, &fb, &act, rid, era, elicit)))
		rc = as_fail(err, AS_ENOMEM, "request too large");
	int wait = rc == 0 && fb.wait;
	mcp_feedback_free(&fb);
	if (rc != 0) {
		if (era)
			wm_tcall_take(w, c->id, rid, strlen(rid));
		buf_free(&act);
		answer_tool_error(c, &m->id, err);
		return;
	}
	wm_send_frame(w, f); /* before act is freed: the frame's action points into it */
	buf_free(&act);
	if (wait)
		call_watch(w, c, rid, m, 0);
}

static int qa_call(struct mw *w, struct mconn *c, const struct mcp_msg *m, const char *name);

static void tools_call_do(struct mw *w, struct mconn *c, const struct mcp_msg *m)
{
	enum mcp_tool tool;
	const json_t *args;
	char err[AS_ERRLEN];
	if (w->routes && gated_call(w, c, m))
		return;
	const char *qname = json_string_value(json_object_get(m->params, "name"));
	if (qname && qa_call(w, c, m, qname))
		return;
	if (mcp_tools_call(m->params, &tool, &args, err) != 0) {
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, err, NULL, NULL);
		return;
	}
	char rid[PROTO_RID_MAX + 1];
	wm_id_json(&m->id, rid);
	cv_arena_reset(&w->arena);
	struct cv_arena *a = &w->arena;
	struct cv *f = NULL;
	switch (tool) {
	case MCP_TOOL_REQUEST_FEEDBACK:
		request_feedback(w, c, m, args, rid);
		return;
	case MCP_TOOL_GET_FEEDBACK: {
		char sid[MCP_SESSION_ID_MAX + 1];
		uint32_t secs;
		if (mcp_check_get_feedback(args, sid, &secs, err) != 0) {
			answer_tool_error(c, &m->id, err);
			return;
		}
		f = ipc_frame_new(a, F_COLLECT, 4);
		if (!f || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid)) ||
		    ipc_put_text(a, f, "sid", sid, strlen(sid)) || ipc_put_uint(a, f, "wait", secs))
			return;
		wm_send_frame(w, f);
		return;
	}
	case MCP_TOOL_LIST_PENDING:
		if (mcp_check_list_pending(args, err) != 0) {
			answer_tool_error(c, &m->id, err);
			return;
		}
		f = ipc_frame_new(a, F_LIST, 2);
		if (!f || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid)))
			return;
		wm_send_frame(w, f);
		return;
	case MCP_TOOL_SUBMIT_FEEDBACK:
		answer_tool_error(
		    c, &m->id,
		    "submit_feedback is for reviewers: an agent cannot decide its own request (a reviewer "
		    "answers with `assent approve|reject|answer|select` or the review UI)");
		return;
	default:
		mcp_line_error(&c->out, &m->id, MCP_INVALID_PARAMS, "unknown tool", NULL, NULL);
	}
}

/* The tools agents see after assent's own: the QA tools, then the upstreams' (objects separated
 * by commas, as F_CATALOG sends them). 1 when the list changed. */
int wm_set_catalog(struct mw *w, const char *up, size_t upn)
{
	size_t qn = w->qa_defs ? strlen(w->qa_defs) : 0;
	struct buf b;
	buf_init(&b, qn + upn + 2);
	int rc =
	    (qn && buf_put(&b, w->qa_defs, qn)) || (qn && upn && buf_putc(&b, ',')) || (upn && buf_put(&b, up, upn));
	int changed = rc || !w->catalog || b.len != w->catalogn || memcmp(w->catalog, b.p, b.len);
	free(w->catalog);
	w->catalog = !rc && b.len ? strndup((const char *)b.p, b.len) : NULL;
	w->catalogn = w->catalog ? b.len : 0;
	buf_free(&b);
	return changed;
}

/* The QA tools' definitions (qatools.c) before the upstreams' tools. */
void wm_qa_defs_make(struct mw *w)
{
	free(w->qa_defs);
	w->qa_defs = qatools_defs(w->qa);
	wm_set_catalog(w, NULL, 0);
}

/* 1 when name is a QA tool (answered here or by the signer later), else 0. */
static int qa_call(struct mw *w, struct mconn *c, const struct mcp_msg *m, const char *name)
{
	enum qa_tool t = qatools_which(w->qa, name);
	if (t == QA_NONE)
		return 0;
	const json_t *args = json_object_get(m->params, "arguments");
	char err[AS_ERRLEN] = "", rid[PROTO_RID_MAX + 1];
	wm_id_json(&m->id, rid);
	cv_arena_reset(&w->arena);
	struct cv_arena *a = &w->arena;
	struct cv *f = ipc_frame_new(a, F_QA, 11);
	char decl[ACTION_CLIENT_MAX + 1];
	action_client(decl, c->client.name, c->client.client_version);
	int rc = !f || ipc_put_uint(a, f, "conn", c->id) || ipc_put_text(a, f, "rid", rid, strlen(rid)) ||
		 (decl[0] && ipc_put_text(a, f, "client", decl, strlen(decl)));
	if (!rc)
		rc = qatools_fields(t, name, a, f, args, err);
	if (err[0] || rc) {
		answer_tool_error(c, &m->id, err[0] ? err : "the report is too large");
		return 1;
	}
	callrec_flush(w->rec); /* the calls before a report are the signer's (and the recorder's) first */
	wm_send_frame(w, f);
	return 1;
}

/* Every tools/call, timed and classified for the call records: its answer is either written
 * at once (a refusal, parsed back from the line just written: our own JSON) or comes later
 * in F_RESULT (on_frame). */
void wm_tools_call(struct mw *w, struct mconn *c, const struct mcp_msg *m)
{
	if (!w->rec) {
		tools_call_do(w, c, m);
		return;
	}
	char rid[PROTO_RID_MAX + 1];
	wm_id_json(&m->id, rid);
	const char *name = json_string_value(json_object_get(m->params, "name"));
	const json_t *route = name && w->routes ? json_object_get(w->routes, name) : NULL;
	char decl[ACTION_CLIENT_MAX + 1];
	action_client(decl, c->client.name, c->client.client_version);
	callrec_begin(w->rec, c->id, rid, m->params, json_string_value(json_array_get(route, 1)), decl);
	size_t before = c->out.len;
	tools_call_do(w, c, m);
	size_t ridn = strlen(rid);
	if (c->out.len > before && callrec_open(w->rec, c->id, rid, ridn)) {
		json_t *line = json_loadb((const char *)c->out.p + before, c->out.len - before, 0, NULL);
		const json_t *res = json_object_get(line, "result"), *e = json_object_get(line, "error");
		/* the size of the answer itself: the line's envelope (its id) is no part of it */
		callrec_end(w->rec, c->id, rid, ridn, res, e,
			    res || e ? json_dumpb(res ? res : e, NULL, 0, JSON_COMPACT) : 0);
		json_decref(line);
	}
}
