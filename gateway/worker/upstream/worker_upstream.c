/* The upstream worker (issue 15): one jailed process per upstream MCP server, the only
 * process that reads what that server says. It speaks MCP as a client over the server's
 * stdio pipes (descriptors WORKER_UP_IN_FD and WORKER_UP_OUT_FD, made by the signer,
 * which started the server), tells the signer the server's tools, and forwards a call
 * only when the signer's F_DISPATCH names it, once. A hostile server can reach this
 * process and nothing else: it holds no other upstream's pipes, no agent's connection,
 * no key, and every frame it sends is checked by the signer. */
#define _GNU_SOURCE
#include "gateway/worker/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/text.h"
#include "gateway/proto/call.h"
#include "gateway/proto/frames.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/proto.h"
#include "gateway/worker/jail.h"
#include "gateway/worker/mcp/mcp.h"
#include "gateway/worker/upstream/uphttp.h"
#include "gateway/worker/wio.h"

#include "gateway/worker/upstream/upw.h"

void misbehaved(struct uw *w, const char *fmt, ...)
{
	uint64_t now = mono_ms();
	if (now - w->log_window > 60000) {
		w->log_window = now;
		w->logs = 0;
	}
	if (++w->logs > 20)
		return;
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	ipc_log(w->ipcfd, "warning", "upstream %s: %s%s", w->name, msg,
		w->logs == 20 ? " (more such lines this minute are not logged)" : "");
}

int send_frame(struct uw *w, struct cv *f)
{
	char err[AS_ERRLEN];
	int rc = ipc_conn_send(&w->ipc, f, -1, err);
	if (rc != 0)
		ipc_log(w->ipcfd, "error", "upstream %s worker: %s", w->name, err);
	return rc;
}

/* One JSON-RPC message to the server: a line on its stdin, or a POST. */
int to_server(struct uw *w, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	const json_t *id = json_object_get(msg, "id"), *params = json_object_get(msg, "params");
	uint64_t cid = json_is_integer(id) && json_object_get(msg, "method") ? (uint64_t)json_integer_value(id) : 0;
	/* a 2026-07-28 request (its _meta says so): over HTTP, stateless, with its routing headers */
	const char *v = json_string_value(json_object_get(json_object_get(params, "_meta"), UP_META_VERSION)),
		   *name = json_string_value(json_object_get(params, "name"));
	char method[40], nm[CALL_URI_MAX + 1];
	int modern = v && !strcmp(v, UP_MODERN);
	snprintf(method, sizeof method, "%s", json_string_value(json_object_get(msg, "method")) ?: "");
	snprintf(nm, sizeof nm, "%s", name ? name : json_string_value(json_object_get(params, "uri")) ?: "");
	json_decref(msg);
	if (!s)
		return AS_ENOMEM;
	if (w->http) {
		int rc = modern ? uphttp_send_modern(w->http, s, strlen(s), cid, method, nm[0] ? nm : NULL)
				: uphttp_send(w->http, s, strlen(s), cid);
		free(s);
		if (rc != 0)
			misbehaved(w, "%u requests wait for a connection to the server", UPHTTP_QUEUE);
		return rc;
	}
	int rc = buf_put(&w->tx, s, strlen(s));
	if (rc == 0)
		rc = buf_putc(&w->tx, '\n');
	free(s);
	if (rc != 0)
		misbehaved(w, "the server reads too slowly: %u bytes wait for it", UP_OUT_MAX);
	return rc;
}

static void on_init(struct uw *w, const json_t *res)
{
	const json_t *v = json_object_get(res, "protocolVersion");
	if (!json_is_string(v)) {
		misbehaved(w, "initialize: its result has no protocolVersion");
		exit(3); /* restarted with backoff */
	}
	w->ready = 1;
	if (w->http)
		uphttp_protocol(w->http, json_string_value(v));
	const json_t *caps = json_object_get(res, "capabilities");
	w->has[0] = 1;
	w->has[1] = w->has[2] = json_is_object(json_object_get(caps, "resources"));
	w->has[3] = json_is_object(json_object_get(caps, "prompts"));
	w->completions = json_is_object(json_object_get(caps, "completions"));
	w->subscribe = json_is_true(json_object_get(json_object_get(caps, "resources"), "subscribe"));
	int rc = to_server(w, json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", "notifications/initialized"));
	/* Does it speak 2026-07-28 too? Most servers answer -32601 (over HTTP, an error status):
	 * it does not. A url server is asked statelessly, beside its 2025-06-18 session. */
	rc |= to_server(w,
			json_pack("{s:s,s:s,s:s,s:{s:{s:s,s:{}}}}", "jsonrpc", "2.0", "id", "assent-discover", "method",
				  "server/discover", "params", "_meta", UP_META_VERSION, UP_MODERN, UP_META_CAPS));
	(void)rc;
	list_start(w);
	ipc_log(w->ipcfd, "info", "upstream %s: initialized (protocol %.20s)", w->name, json_string_value(v));
}

/* server/discover's answer: 2026-07-28 among its supportedVersions, or not (an error). */
static void on_discover(struct uw *w, const json_t *res)
{
	size_t i;
	const json_t *v;
	json_array_foreach(json_object_get(res, "supportedVersions"), i, v)
	{
		if (json_is_string(v) && !strcmp(json_string_value(v), UP_MODERN))
			w->modern = 1;
	}
	if (w->modern)
		ipc_log(w->ipcfd, "info", "upstream %s: speaks " UP_MODERN " too: its 2026 clients' calls go so",
			w->name);
}

static int inflight_take(struct uw *w, uint64_t cid)
{
	for (size_t i = 0; i < w->ninflight; i++)
		if (w->inflight[i] == cid) {
			w->inflight[i] = w->inflight[--w->ninflight];
			return 1;
		}
	return 0;
}

/* The server answered a dispatched call: its result as CBOR, or its error's words. */
static void on_call_answer(struct uw *w, uint64_t cid, const json_t *msg)
{
	const json_t *res = json_object_get(msg, "result"), *e = json_object_get(msg, "error");
	cv_arena_reset(&w->arena);
	struct cv *f = ipc_frame_new(&w->arena, F_UP_RESULT, 3);
	struct buf enc;
	buf_init(&enc, PROTO_UP_RESULT_MAX);
	char err[AS_ERRLEN], what[PROTO_UP_ERROR_MAX];
	int rc = f ? ipc_put_uint(&w->arena, f, "cid", cid) : AS_ENOMEM;
	if (json_is_object(res) && call_value_encode(res, PROTO_UP_RESULT_MAX, &enc, err) == 0) {
		rc |= ipc_put_bytes(&w->arena, f, "result", enc.p, enc.len);
	} else {
		if (json_is_object(res))
			snprintf(what, sizeof what, "its result cannot be forwarded: %s", err);
		else if (json_is_object(e))
			snprintf(what, sizeof what, "the server answered with error %lld: %.600s",
				 (long long)json_integer_value(json_object_get(e, "code")),
				 json_string_value(json_object_get(e, "message")) ?: "(no message)");
		else
			snprintf(what, sizeof what, "the server's answer has neither a result object nor an error");
		size_t n = text_cut(what, strlen(what), sizeof what - 1);
		rc |= ipc_put_text(&w->arena, f, "error", what, n);
	}
	if (rc == 0)
		send_frame(w, f);
	buf_free(&enc);
}

/* A call's progress (its token is the call's number) or a log message, to the signer, which
 * gives it to the agent of that call; at most UP_NOTES_PER_S a second, the rest dropped. */
static void relay_note(struct uw *w, const char *method, const json_t *params)
{
	uint64_t now = mono_ms(), cid = 0;
	if (now - w->note_window >= 1000) {
		w->note_window = now;
		w->notes = 0;
	}
	if (!json_is_object(params) || ++w->notes > UP_NOTES_PER_S) {
		if (w->notes == UP_NOTES_PER_S + 1)
			misbehaved(w, "more than %u notifications a second: the rest of this second's are dropped",
				   UP_NOTES_PER_S);
		return;
	}
	if (!strcmp(method, "notifications/progress")) {
		const json_t *t = json_object_get(params, "progressToken");
		int known = 0;
		for (size_t i = 0; json_is_integer(t) && i < w->ninflight; i++)
			known |= w->inflight[i] == (uint64_t)json_integer_value(t);
		if (!known)
			return; /* progress of a call not in flight: nobody to tell */
		cid = (uint64_t)json_integer_value(t);
	}
	struct buf enc;
	buf_init(&enc, PROTO_UP_NOTE_MAX);
	char err[AS_ERRLEN];
	cv_arena_reset(&w->arena);
	struct cv *f = ipc_frame_new(&w->arena, F_UP_NOTE, 3);
	if (f && call_value_encode(params, PROTO_UP_NOTE_MAX, &enc, err) == 0 &&
	    !ipc_put_uint(&w->arena, f, "cid", cid) && !ipc_put_text(&w->arena, f, "method", method, strlen(method)) &&
	    !ipc_put_bytes(&w->arena, f, "params", enc.p, enc.len))
		send_frame(w, f);
	buf_free(&enc);
}

/* A server's request of the client (sampling, elicitation, roots) to the signer, which
 * relays it to the client of the call it belongs to. 0, or -1 when it cannot be sent. */
static int ask_client(struct uw *w, const char *method, const json_t *id, const json_t *params)
{
	char *sid = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
	json_t *p = json_is_object(params) ? json_incref((json_t *)params) : json_object();
	struct buf enc;
	buf_init(&enc, PROTO_UP_NOTE_MAX);
	char err[AS_ERRLEN];
	cv_arena_reset(&w->arena);
	struct cv *f = ipc_frame_new(&w->arena, F_UP_ASK, 3);
	int rc = !sid || strlen(sid) > PROTO_RID_MAX || !f || call_value_encode(p, PROTO_UP_NOTE_MAX, &enc, err) ||
		 ipc_put_text(&w->arena, f, "sid", sid, strlen(sid)) ||
		 ipc_put_text(&w->arena, f, "method", method, strlen(method)) ||
		 ipc_put_bytes(&w->arena, f, "params", enc.p, enc.len);
	if (rc == 0)
		send_frame(w, f);
	json_decref(p);
	free(sid);
	buf_free(&enc);
	return rc ? -1 : 0;
}

/* The client's answer (through the signer) to the server's request sid. */
static void on_answer(struct uw *w, struct ipc_frame *f)
{
	size_t sn, n;
	int res = cv_get(f->body, "result") != NULL;
	const char *sid = frame_get_text(f->body, "sid", &sn);
	const uint8_t *p = frame_get_bytes(f->body, res ? "result" : "error", &n);
	char err[AS_ERRLEN];
	if (!p)
		return; /* neither */
	json_t *id = json_loadb(sid, sn, JSON_DECODE_ANY, NULL);
	struct cv_arena a;
	cv_arena_init(&a, n + 16);
	struct cv *v;
	json_t *body = cbor_decode(p, n, &a, &v, err) == 0 ? call_value_json(v) : NULL;
	cv_arena_free(&a);
	if (id && json_is_object(body)) {
		int rc = to_server(
		    w, json_pack("{s:s,s:o,s:o}", "jsonrpc", "2.0", "id", id, res ? "result" : "error", body));
		(void)rc;
	} else {
		json_decref(id);
		json_decref(body);
	}
}

static void on_message(struct uw *w, const char *line, size_t n)
{
	json_error_t je;
	json_t *m = json_loadb(line, n, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(m)) {
		misbehaved(w, "it wrote a line that is not a JSON-RPC message (%.80s)", m ? "not an object" : je.text);
		json_decref(m);
		return;
	}
	const json_t *id = json_object_get(m, "id"), *method = json_object_get(m, "method");
	if (json_is_string(method) && id) { /* a request of the server's own */
		const char *mth = json_string_value(method);
		if ((!strcmp(mth, "sampling/createMessage") || !strcmp(mth, "elicitation/create") ||
		     !strcmp(mth, "roots/list")) &&
		    ask_client(w, mth, id, json_object_get(m, "params")) == 0) {
			json_decref(m);
			return; /* the signer relays it to the client of the call, and its answer back */
		}
		json_t *ans = !strcmp(mth, "ping")
				  ? json_pack("{s:s,s:O,s:{}}", "jsonrpc", "2.0", "id", id, "result")
				  : json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
					      -32601, "message", "assent does not relay this request to its agents");
		int rc = to_server(w, ans);
		(void)rc;
	} else if (json_is_string(method)) { /* a notification */
		const char *nm = json_string_value(method);
		if (!strcmp(nm, "notifications/progress") || !strcmp(nm, "notifications/message") ||
		    !strcmp(nm, "notifications/resources/updated"))
			relay_note(w, nm, json_object_get(m, "params"));
		else if (w->ready && (!strcmp(nm, "notifications/tools/list_changed") ||
				      !strcmp(nm, "notifications/resources/list_changed") ||
				      !strcmp(nm, "notifications/prompts/list_changed")))
			list_start(w); /* the whole catalog again: a list in progress is dropped */
	} else if (json_is_string(id)) {
		char list_id[40];
		snprintf(list_id, sizeof list_id, "assent-list-%u-%u", w->list_seq, w->phase);
		const json_t *res = json_object_get(m, "result");
		if (!strcmp(json_string_value(id), "assent-init") && !w->ready) {
			on_init(w, res);
		} else if (!strcmp(json_string_value(id), "assent-discover")) {
			on_discover(w, res);
		} else if (!strcmp(json_string_value(id), list_id) && w->phase < 4) {
			if (json_is_object(res)) {
				on_list(w, res);
			} else {
				list_failed(w);
			}
		} else if (!strncmp(json_string_value(id), "assent-list-", 12)) {
			/* an answer to a list a change notice replaced */
		} else {
			misbehaved(w, "an answer to a request assent never made");
		}
	} else if (json_is_integer(id) && json_integer_value(id) > 0 &&
		   inflight_take(w, (uint64_t)json_integer_value(id))) {
		on_call_answer(w, (uint64_t)json_integer_value(id), m);
	} else {
		misbehaved(w, "an answer to no call in flight");
	}
	json_decref(m);
}

/* ---- a line over UP_LINE_MAX: skipped, but the call it answers is told so at once ----
 * Without this, a call whose result is one line over the bound waited for
 * ASSENT_UPSTREAM_CALL_TIMEOUT (300 s) and ended "outcome unknown", though the server had
 * answered. The line's id is read from its first or last bytes as the mcp worker reads an
 * agent's over-long line (mcp_peek_id); only the id of a call in flight counts, so a server
 * can only fail its own calls this way, which it can anyway. */

static void skip_keep(struct uw *w, const uint8_t *p, size_t n)
{
	const size_t cap = sizeof w->skip_tail;
	if (n >= cap) {
		memcpy(w->skip_tail, p + n - cap, cap);
		w->skip_tlen = cap;
		return;
	}
	size_t keep = w->skip_tlen + n > cap ? cap - n : w->skip_tlen;
	memmove(w->skip_tail, w->skip_tail + w->skip_tlen - keep, keep);
	memcpy(w->skip_tail + keep, p, n);
	w->skip_tlen = keep + n;
}

/* The skipped line ended: the call it answered, if it names one in flight, fails now. */
static void skip_done(struct uw *w)
{
	struct mcp_id id;
	int found = mcp_peek_id(w->skip_head, w->skip_hlen, w->skip_tail, w->skip_tlen, &id);
	w->skip_hlen = w->skip_tlen = 0;
	if (!found || id.t != MCP_ID_INT || id.i <= 0 || !inflight_take(w, (uint64_t)id.i))
		return;
	char what[128];
	snprintf(what, sizeof what, "its answer is a line over %u bytes: not forwarded", UP_LINE_MAX);
	cv_arena_reset(&w->arena);
	struct cv *f = frame_up_failed(&w->arena, (uint64_t)id.i, what, 0);
	if (f)
		send_frame(w, f);
}

/* What the server wrote: whole lines are messages; a line over UP_LINE_MAX is skipped
 * to its end. 0, or -1 when the server closed its stdout. */
static int server_read(struct uw *w)
{
	uint8_t tmp[65536];
	for (int turns = 0; turns < 64; turns++) {
		ssize_t r = read(w->out_fd, tmp, sizeof tmp);
		if (r == 0)
			return -1;
		if (r < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		size_t off = 0, n = (size_t)r;
		while (off < n) {
			uint8_t *nl = memchr(tmp + off, '\n', n - off);
			size_t seg = nl ? (size_t)(nl - (tmp + off)) : n - off;
			if (w->skipping) {
				skip_keep(w, tmp + off, seg);
				if (nl) {
					w->skipping = 0;
					skip_done(w);
				}
			} else if (buf_put(&w->rx, tmp + off, seg) != 0) {
				misbehaved(w, "a line over %u bytes: skipped", UP_LINE_MAX);
				w->skip_hlen = w->rx.len < sizeof w->skip_head ? w->rx.len : sizeof w->skip_head;
				memcpy(w->skip_head, w->rx.p, w->skip_hlen);
				w->skip_tlen = 0;
				skip_keep(w, tmp + off, seg);
				buf_reset(&w->rx);
				w->skipping = !nl;
				if (nl)
					skip_done(w);
			} else if (nl) {
				size_t len = w->rx.len;
				while (len && (w->rx.p[len - 1] == '\r' || w->rx.p[len - 1] == ' '))
					len--;
				if (len)
					on_message(w, (const char *)w->rx.p, len);
				buf_reset(&w->rx);
			}
			off += seg + (nl ? 1 : 0);
		}
	}
	return 0;
}

static int server_flush(struct uw *w)
{
	while (w->tx.len) {
		ssize_t r = write(w->in_fd, w->tx.p, w->tx.len);
		if (r < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		memmove(w->tx.p, w->tx.p + r, w->tx.len - (size_t)r);
		w->tx.len -= (size_t)r;
	}
	return 0;
}

/* The signer's dispatch: forward this call, once. The signer numbers dispatches upward, so
 * a repeated or older number is refused, and the bytes must hash to the digest named. */
/* A 2026-07-28 client's tools/call or prompts/get, to a server that speaks that revision:
 * the per-request _meta (the revision, and the capabilities the agent's client declared,
 * which decide what the server may ask it), the retry's inputResponses, and the server's
 * own requestState (SEP-2322). */
static void modern_params(json_t *params, unsigned caps, const json_t *input, const char *us, size_t usn)
{
	json_t *cc = json_object(), *meta = json_object_get(params, "_meta");
	if (caps & PROTO_CAP_SAMPLING)
		json_object_set_new(cc, "sampling", json_object());
	if (caps & PROTO_CAP_ELICIT)
		json_object_set_new(cc, "elicitation", json_object());
	if (caps & PROTO_CAP_ROOTS)
		json_object_set_new(cc, "roots", json_object());
	if (!meta) {
		meta = json_object();
		json_object_set_new(params, "_meta", meta);
	}
	json_object_set_new(meta, UP_META_VERSION, json_string(UP_MODERN));
	json_object_set_new(meta, UP_META_CAPS, cc);
	if (input)
		json_object_set(params, "inputResponses", (json_t *)input);
	if (us)
		json_object_set_new(params, "requestState", json_stringn(us, usn));
}

static void on_dispatch(struct uw *w, struct ipc_frame *f)
{
	size_t n, dn, usn;
	uint64_t cid = frame_get_uint(f->body, "cid"), caps = frame_get_uint(f->body, "caps");
	const uint8_t *p = frame_get_bytes(f->body, "call", &n);
	const char *dg = frame_get_text(f->body, "digest", &dn), *us = frame_get_text(f->body, "state", &usn);
	char err[AS_ERRLEN], digest[PROTO_DIGEST_MAX + 1];
	call_digest(p, n, digest);
	struct cv_arena a;
	cv_arena_init(&a, CALL_MAX);
	struct cv *c = NULL;
	const char *why = NULL;
	if (cid <= w->last_cid || cid > (1ull << 53))
		why = "its number was used before";
	else if (dn != strlen(digest) || memcmp(dg, digest, dn))
		why = "its bytes do not hash to the digest it names";
	else if (cbor_decode(p, n, &a, &c, err) != 0 || call_check(c, err) != 0)
		why = "it is not a call";
	else if (w->ninflight >= UP_INFLIGHT)
		why = "too many calls are in flight to this server";
	json_t *args = why ? NULL : call_args_json(c), *input = why ? NULL : call_input_json(c);
	if (!why && !args)
		why = "out of memory";
	if (!why && (input || us) && !w->modern)
		why = "this server does not speak 2026-07-28: the call's inputResponses cannot be given to it";
	if (why) {
		json_decref(args);
		json_decref(input);
		ipc_log(w->ipcfd, "error", "upstream %s worker: dispatch %llu refused: %s", w->name,
			(unsigned long long)cid, why);
		cv_arena_reset(&w->arena);
		struct cv *r = frame_up_failed(&w->arena, cid, why, 0);
		if (r)
			send_frame(w, r);
		cv_arena_free(&a);
		return;
	}
	w->last_cid = cid;
	static char name[CALL_URI_MAX + 1];
	call_name(c, name, sizeof name);
	const char *method = call_method(c);
	json_t *params;
	if (!strcmp(method, "tools/call")) /* its progress comes back under the call's number */
		params = json_pack("{s:s,s:o,s:{s:I}}", "name", name, "arguments", args, "_meta", "progressToken",
				   (json_int_t)cid);
	else if (!strcmp(method, "prompts/get"))
		params = json_pack("{s:s,s:o}", "name", name, "arguments", args);
	else if (!strcmp(method, "resources/read") || !strcmp(method, "resources/subscribe") ||
		 !strcmp(method, "resources/unsubscribe"))
		params = (json_decref(args), json_pack("{s:s}", "uri", name));
	else
		params = args; /* completion/complete: its params as the agent sent them, routed */
	int mrtr = !strcmp(method, "tools/call") || !strcmp(method, "prompts/get");
	if (params && mrtr && w->modern && ((caps & PROTO_CAP_MODERN) || input))
		modern_params(params, (unsigned)caps, input, us, usn);
	json_decref(input);
	w->inflight[w->ninflight++] = cid;
	int rc = to_server(w, json_pack("{s:s,s:I,s:s,s:o}", "jsonrpc", "2.0", "id", (json_int_t)cid, "method", method,
					"params", params));
	if (rc != 0) {
		inflight_take(w, cid);
		static const char full[] = "the server is not reading: the call was not sent";
		cv_arena_reset(&w->arena);
		struct cv *r = frame_up_failed(&w->arena, cid, full, 0);
		if (r)
			send_frame(w, r);
	}
	cv_arena_free(&a);
}

/* The agent cancelled a call in flight: the server is told, and its answer is not awaited. */
static void on_cancel(struct uw *w, struct ipc_frame *f)
{
	uint64_t cid = frame_get_uint(f->body, "cid");
	if (!inflight_take(w, cid))
		return;
	int rc =
	    to_server(w, json_pack("{s:s,s:s,s:{s:I,s:s}}", "jsonrpc", "2.0", "method", "notifications/cancelled",
				   "params", "requestId", (json_int_t)cid, "reason", "the agent cancelled the call"));
	(void)rc;
}

/* The configuration comes first, before the jail: {name, url?}. */
static int read_config(struct uw *w, struct cv_arena *a, char *err)
{
	struct ipc_frame f;
	GUARD(ipc_config(&w->ipc, w->ipcfd, a, &f, err));
	size_t nn;
	const char *nm = frame_get_text(f.body, "name", &nn);
	int rc = nm ? 0 : as_fail(err, AS_ECORRUPT, "its configuration has no name");
	if (rc == 0)
		snprintf(w->name, sizeof w->name, "%.*s", (int)nn, nm);
	const struct cv *url = rc == 0 ? frame_get(f.body, "url", CV_MAP) : NULL;
	if (url) /* reads the CA file: before the jail */
		rc = uphttp_new(url, &w->http, err);
	ipc_frame_close_fds(&f);
	return rc;
}

/* A url upstream's call whose POST ended without its answer. */
static void http_fail(void *arg, uint64_t cid, int unknown, const char *why)
{
	struct uw *w = arg;
	if (!cid || !inflight_take(w, cid))
		return; /* answered already, or no call */
	cv_arena_reset(&w->arena);
	struct cv *r = frame_up_failed(&w->arena, cid, why, unknown);
	if (r)
		send_frame(w, r);
}

static int http_waiting(void *arg, uint64_t cid)
{
	const struct uw *w = arg;
	for (size_t i = 0; i < w->ninflight; i++)
		if (w->inflight[i] == cid)
			return 1;
	return 0;
}

static void http_msg(void *arg, const char *json, size_t n)
{
	on_message(arg, json, n);
}

/* Sockets for the url upstream's connections, asked of the signer (which alone connects). */
static void ask_sockets(struct uw *w)
{
	for (unsigned n = uphttp_wanted(w->http, w->asked); n > 0; n--) {
		cv_arena_reset(&w->arena);
		struct cv *f = ipc_frame_new(&w->arena, F_UP_CONNECT, 0);
		if (!f || send_frame(w, f) != 0)
			return;
		w->asked++;
	}
}

static void on_frame(void *arg, struct ipc_frame *f)
{
	struct uw *w = arg;
	if (f->type == F_DISPATCH)
		on_dispatch(w, f);
	else if (f->type == F_UP_CANCEL)
		on_cancel(w, f);
	else if (f->type == F_UP_ANSWER)
		on_answer(w, f);
	else if (f->type == F_UP_SOCKET && w->http && f->nfds == 1) {
		uphttp_attach(w->http, f->fds[0]); /* its connection's now */
		f->fds[0] = -1;
		w->asked -= w->asked > 0;
	}
}

int worker_upstream_main(int ipcfd)
{
	static struct uw w;
	w.ipcfd = ipcfd;
	w.in_fd = WORKER_UP_IN_FD;
	w.out_fd = WORKER_UP_OUT_FD;
	char err[AS_ERRLEN];
	cv_arena_init(&w.arena, 1u << 16);
	buf_init(&w.rx, UP_LINE_MAX);
	buf_init(&w.tx, UP_OUT_MAX);
	if (ipc_conn_init(&w.ipc, ipcfd, err) != 0)
		return 2;
	struct cv_arena a;
	cv_arena_init(&a, 1u << 20);
	if (read_config(&w, &a, err) != 0) {
		ipc_log(ipcfd, "error", "upstream worker: %s", err);
		return 2;
	}
	/* Non-blocking before the jail: a server that stops reading must not stop this worker. */
	if (!w.http && (fcntl(w.in_fd, F_SETFL, O_NONBLOCK) != 0 || fcntl(w.out_fd, F_SETFL, O_NONBLOCK) != 0)) {
		ipc_log(ipcfd, "error", "upstream %s worker: its pipes: %s", w.name, strerror(errno));
		return 2;
	}
	struct jail_opts jo = {.max_fds = 16};
	if (jail_enter(&jo, err) != 0) {
		ipc_log(ipcfd, "error", "upstream %s worker: cannot enter the jail: %s", w.name, err);
		return 2;
	}
	struct cv *hello = frame_hello(&a, "upstream");
	if (!hello)
		return 2;
	send_frame(&w, hello);
	/* assent relays sampling, elicitation and roots to the client of the call they belong to */
	int rc = to_server(&w, json_pack("{s:s,s:s,s:s,s:{s:s,s:{s:{},s:{},s:{}},s:{s:s,s:s}}}", "jsonrpc", "2.0", "id",
					 "assent-init", "method", "initialize", "params", "protocolVersion",
					 UP_PROTOCOL, "capabilities", "sampling", "elicitation", "roots", "clientInfo",
					 "name", "assent", "version", ASSENT_VERSION));
	if (rc != 0)
		return 2;
	w.init_at = mono_ms();
	struct uphttp_cb hcb = {http_msg, http_fail, http_waiting, &w};
	for (;;) {
		struct pollfd pf[3 + UPHTTP_CONNS] = {
		    {.fd = ipcfd, .events = (short)(POLLIN | (ipc_pending(&w.ipc) ? POLLOUT : 0))},
		    {.fd = w.http ? -1 : w.out_fd, .events = POLLIN},
		    {.fd = !w.http && w.tx.len ? w.in_fd : -1, .events = POLLOUT},
		};
		size_t nh = 0;
		if (w.http) {
			ask_sockets(&w);
			nh = uphttp_fds(w.http, pf + 3);
		}
		int to = w.http ? uphttp_timeout(w.http) : -1; /* a resume of a call's stream due sooner */
		if (heap_idle(poll(pf, 3 + nh, to >= 0 && to < 1000 ? to : 1000)) < 0 && errno != EINTR)
			return 2;
		if (w.http && uphttp_io(w.http, pf + 3, nh, &hcb, err) != 0) {
			ipc_log(ipcfd, "warning", "upstream %s: the server ended the session: starting over", w.name);
			int fr = ipc_flush(&w.ipc, err);
			(void)fr;
			return 3;
		}
		if (w.http && err[0]) /* a connection failed (TLS, HTTP): said, then another is asked for */
			misbehaved(&w, "%s", err);
		if (!w.ready && mono_ms() - w.init_at > UP_INIT_MS) {
			ipc_log(ipcfd, "warning", "upstream %s: no answer to initialize in %u s", w.name,
				UP_INIT_MS / 1000);
			return 3;
		}
		if ((pf[0].revents & POLLOUT) && ipc_flush(&w.ipc, err) != 0)
			return 0;
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			int r = wio_frames(&w.ipc, &a, on_frame, &w, err);
			if (r != 0)
				return r == 1 ? 0 : 2; /* 1: the signer went away */
		}
		if (w.http) { /* messages queued by this turn's frames leave now */
			ask_sockets(&w);
			struct pollfd none[UPHTTP_CONNS];
			size_t n2 = uphttp_fds(w.http, none);
			for (size_t i = 0; i < n2; i++)
				none[i].revents = 0;
			if (uphttp_io(w.http, none, n2, &hcb, err) != 0)
				return 3;
			if (err[0])
				misbehaved(&w, "%s", err);
			continue;
		}
		if ((pf[1].revents & (POLLIN | POLLHUP | POLLERR)) && server_read(&w) != 0) {
			ipc_log(ipcfd, "warning", "upstream %s: the server closed its output (it exited?)", w.name);
			int fr = ipc_flush(&w.ipc, err);
			(void)fr; /* its last results go first, if they can */
			return 3;
		}
		if (w.tx.len && server_flush(&w) != 0) {
			ipc_log(ipcfd, "warning", "upstream %s: the server closed its input (it exited?)", w.name);
			return 3;
		}
	}
}
