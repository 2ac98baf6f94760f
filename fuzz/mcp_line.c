/* Fuzz target: one line of the MCP stdio transport through everything the jailed
 * mcp worker does with it without the signer: parse and classify, dispatch by
 * method, validate request_feedback arguments, redact and bound, encode the
 * canonical action, build every answer line. Properties (abort when violated):
 *   - every produced line is one JSON-RPC 2.0 object: valid JSON, a single '\n'
 *     at its end, at most MCP_OUT_MAX bytes;
 *   - a message that must be answered always gets a line (no builder fails);
 *   - every failure fills err with printable ASCII (it reaches the client);
 *   - redaction is idempotent (text, JSON values, a whole request), and a bounded
 *     context is within its bound;
 *   - what the validator and redaction accept, the action encoder accepts, and
 *     its bytes are canonical CBOR that decodes and re-encodes to the same bytes;
 *   - 2026-07-28 (modern.h): a request's _meta is accepted or refused with -32602 /
 *     -32022 and a message; every answer line made a 2026-07-28 one stays one JSON
 *     object with exactly one resultType; an error line's code reads back; headers
 *     that repeat the body agree with it;
 *   - subscriptions/listen (listen.h): a filter is refused with -32602 and a message, or
 *     acknowledged first with its own id and nothing it did not ask for; then a change of
 *     every kind reaches it stamped with that id, and the subscription goes with its connection. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cbor.h"
#include "gateway/worker/mcp/listen.h"
#include "gateway/worker/mcp/mcp.h"
#include "gateway/worker/mcp/modern.h"
#include "common/redact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *cur_data;
static size_t cur_size;

static void fail(const char *why, const char *detail)
{
	fprintf(stderr, "mcp_line: property violated: %s\n", why);
	if (detail)
		fprintf(stderr, "mcp_line: detail: %.*s\n", 2048, detail);
	fprintf(stderr, "input (%zu bytes): %.*s\n", cur_size, cur_size > 2048 ? 2048 : (int)cur_size,
		(const char *)cur_data);
	abort();
}

static void check_err(const char *err, const char *what)
{
	if (!memchr(err, 0, AS_ERRLEN) || err[0] == 0 || (err[0] == 'X' && err[1] == 'X'))
		fail("a failure left no error message", what);
}

static void check_ascii_err(const char *err, const char *what)
{
	check_err(err, what);
	for (const char *p = err; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			fail("a parse error message is not printable ASCII", err);
}

/* The lines appended to out since `from`: each one a JSON-RPC object alone on its line. */
static void check_lines(const struct buf *out, size_t from)
{
	if (out->len > out->max)
		fail("buffer past its max", NULL);
	size_t i = from;
	while (i < out->len) {
		const char *p = (const char *)out->p + i;
		const char *nl = memchr(p, '\n', out->len - i);
		if (!nl)
			fail("a line does not end with a newline", NULL);
		size_t n = (size_t)(nl - p);
		if (n + 1 > MCP_OUT_MAX)
			fail("a line is over MCP_OUT_MAX", NULL);
		json_error_t je;
		json_t *j = json_loadb(p, n, JSON_REJECT_DUPLICATES, &je);
		if (!j || !json_is_object(j))
			fail("a built line is not a JSON object", je.text);
		const json_t *v = json_object_get(j, "jsonrpc");
		if (!json_is_string(v) || strcmp(json_string_value(v), "2.0"))
			fail("a built line lacks jsonrpc 2.0", NULL);
		json_decref(j);
		i += n + 1;
	}
}

static void must(int rc, const char *err, const char *what)
{
	if (rc != 0)
		fail(what, err);
}

/* Redacting twice gives what redacting once gave. */
static void check_text_idempotent(const char *s, size_t n, const struct redact_rules *r)
{
	struct buf a, b;
	buf_init(&a, 10 * n + 16);
	buf_init(&b, 10 * (10 * n + 16) + 16);
	if (redact_text(s, n, r, &a, NULL) != 0)
		fail("redact_text failed with room for any output", NULL);
	if (redact_text(a.len ? (const char *)a.p : "", a.len, r, &b, NULL) != 0)
		fail("redact_text failed on its own output", NULL);
	if (a.len != b.len || (a.len && memcmp(a.p, b.p, a.len) != 0)) {
		char *d = malloc(a.len + b.len + 8);
		if (d) {
			snprintf(d, a.len + b.len + 8, "%.*s | %.*s", (int)a.len, a.p ? (const char *)a.p : "",
				 (int)b.len, b.p ? (const char *)b.p : "");
		}
		fail("redact_text is not idempotent", d);
	}
	buf_free(&a);
	buf_free(&b);
}

static void check_json_idempotent(const json_t *v, const struct redact_rules *r, size_t bound)
{
	json_t *c = json_deep_copy(v);
	if (!c)
		return;
	if (redact_json(c, r, NULL) != 0) {
		json_decref(c);
		return; /* deeper than REDACT_DEPTH_MAX: refused, nothing to compare */
	}
	char *once = json_dumps(c, JSON_COMPACT | JSON_ENCODE_ANY);
	if (redact_json(c, r, NULL) != 0)
		fail("redact_json refused its own output", once);
	char *twice = json_dumps(c, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!once || !twice || strcmp(once, twice) != 0)
		fail("redact_json is not idempotent", once);
	free(once);
	free(twice);
	size_t total = 0, now = 0;
	json_t *before = c;
	must(redact_json_size(c, &total), NULL, "redact_json_size failed");
	must(redact_bound(&c, bound), NULL, "redact_bound failed");
	must(redact_json_size(c, &now), NULL, "redact_json_size failed on the bound value");
	if (now > bound || (total > bound) != (c != before) || (total <= bound && now != total))
		fail("redact_bound broke its bound", NULL);
	json_decref(c);
}

/* The canonical action of an accepted request: decodes, and re-encodes to the same bytes. */
static void check_action(const struct buf *act)
{
	struct cv_arena a;
	struct cv *v = NULL;
	struct buf again;
	char err[AS_ERRLEN];
	cv_arena_init(&a, MCP_ACTION_MAX + 4096);
	buf_init(&again, MCP_ACTION_MAX);
	if (cbor_decode(act->p, act->len, &a, &v, err) != 0)
		fail("the action is not canonical CBOR", err);
	if (!cv_get(v, "type") || !cv_get(v, "message"))
		fail("the action lacks type or message", NULL);
	if (cbor_encode(v, &again, err) != 0 || again.len != act->len || memcmp(again.p, act->p, act->len) != 0)
		fail("the action does not re-encode to the same bytes", err);
	buf_free(&again);
	cv_arena_free(&a);
}

static const char *const op_keys[] = {"ticket", "x-vault-token"};
static const char *const op_prefixes[] = {"acme_", "glpat-"};
static const struct redact_rules op_rules = {op_keys, 2, op_prefixes, 2, 0};

static json_t *request_feedback(const json_t *args, const struct redact_rules *r)
{
	struct mcp_feedback f;
	char err[AS_ERRLEN];
	memset(err, 'X', sizeof err);
	int rc = mcp_check_request_feedback(args, &f, err);
	if (rc != 0) {
		check_err(err, "mcp_check_request_feedback");
		if (f.message || f.context || f.options)
			fail("a refused request kept memory", NULL);
		return mcp_tool_error(err);
	}
	/* a small bound, so that the fuzzer reaches truncation with short inputs */
	memset(err, 'X', sizeof err);
	rc = mcp_feedback_redact(&f, r, 2048, err);
	if (rc != 0) {
		check_err(err, "mcp_feedback_redact");
		if (rc != AS_ETOOBIG)
			fail("redaction of an accepted request failed other than by size", err);
		mcp_feedback_free(&f);
		return mcp_tool_error(err);
	}
	size_t sz = 0;
	if (f.context && (redact_json_size(f.context, &sz) != 0 || sz > 2048))
		fail("a redacted context is over its bound", NULL);
	char *ctx1 = f.context ? json_dumps(f.context, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	size_t mlen = f.message_len;
	char *msg1 = malloc(mlen + 1);
	if (!msg1)
		abort();
	memcpy(msg1, f.message, mlen + 1);
	must(mcp_feedback_redact(&f, r, 2048, err), err, "redacting a redacted request failed");
	char *ctx2 = f.context ? json_dumps(f.context, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	if (f.message_len != mlen || memcmp(msg1, f.message, mlen) != 0 || (ctx1 && (!ctx2 || strcmp(ctx1, ctx2))))
		fail("request redaction is not idempotent", msg1);
	free(ctx1);
	free(ctx2);
	free(msg1);
	struct buf act;
	buf_init(&act, MCP_ACTION_MAX);
	memset(err, 'X', sizeof err);
	must(mcp_feedback_action(&f, &act, err), err, "an accepted request has no action");
	check_action(&act);
	buf_free(&act);
	json_t *res = mcp_tool_result(json_pack("{s:s, s:s, s:b, s:s}", "session_id", "req-0", "status",
						f.wait ? "approved" : "pending", "approved", f.wait, "type",
						mcp_fb_type_name(f.type)));
	mcp_feedback_free(&f);
	return res;
}

static void answer_tools_call(struct buf *out, const struct mcp_msg *m, const struct redact_rules *r)
{
	enum mcp_tool tool;
	const json_t *args;
	char err[AS_ERRLEN];
	memset(err, 'X', sizeof err);
	if (mcp_tools_call(m->params, &tool, &args, err) != 0) {
		check_err(err, "mcp_tools_call");
		must(mcp_line_error(out, &m->id, MCP_INVALID_PARAMS, err, NULL, err), err, "no error line");
		return;
	}
	json_t *res = NULL;
	char sid[MCP_SESSION_ID_MAX + 1];
	uint32_t w;
	switch (tool) {
	case MCP_TOOL_REQUEST_FEEDBACK:
		res = request_feedback(args, r);
		break;
	case MCP_TOOL_GET_FEEDBACK:
		memset(err, 'X', sizeof err);
		if (mcp_check_get_feedback(args, sid, &w, err) != 0) {
			check_err(err, "mcp_check_get_feedback");
			res = mcp_tool_error(err);
		} else {
			if (w > MCP_WAIT_MAX || !sid[0])
				fail("get_feedback accepted a bad wait or session id", sid);
			res = mcp_tool_result(
			    json_pack("{s:s, s:s, s:b}", "session_id", sid, "status", "pending", "approved", 0));
		}
		break;
	case MCP_TOOL_LIST_PENDING:
		memset(err, 'X', sizeof err);
		if (mcp_check_list_pending(args, err) != 0) {
			check_err(err, "mcp_check_list_pending");
			res = mcp_tool_error(err);
		} else {
			res = mcp_tool_result(json_pack("{s:[]}", "requests"));
		}
		break;
	default:
		res = mcp_tool_error("submit_feedback: only a reviewer may decide; agents are refused");
		break;
	}
	if (!res)
		fail("no tool result", NULL);
	must(mcp_line_result(out, &m->id, res, err), err, "no result line");
}

/* The id a line's params._meta[LISTEN_META_ID] (notifications) or result._meta (the end) carries. */
static int stamped_with(const json_t *line, const struct mcp_id *id)
{
	const json_t *p = json_object_get(line, "params");
	const json_t *meta = json_object_get(p ? p : json_object_get(line, "result"), "_meta");
	json_t *want = mcp_id_json(id);
	int same = json_equal(json_object_get(meta, LISTEN_META_ID), want);
	json_decref(want);
	return same;
}

static struct buf *listen_fuzz_out(void *ctx, uint64_t conn)
{
	return conn == 1 ? ctx : NULL;
}

static void listen_fuzz_sent(void *ctx, uint64_t conn, const struct mcp_id *id)
{
	(void)ctx, (void)conn, (void)id;
}

static void listen_checks(struct listen_set *ls, struct buf *out, const struct mcp_msg *m)
{
	int open = listen_request(ls, out, 1, "fuzz", m, LISTEN_TOOLS | LISTEN_PROMPTS | LISTEN_RESOURCES, "fuzz");
	const char *first = (const char *)out->p, *nl = memchr(first, '\n', out->len);
	if (!nl)
		fail("subscriptions/listen wrote no line", NULL);
	int code = mcp_line_error_code(first, (size_t)(nl - first));
	json_t *ack = json_loadb(first, (size_t)(nl - first), 0, NULL);
	const json_t *granted = json_object_get(json_object_get(ack, "params"), "notifications");
	const json_t *asked = json_object_get(m->params, "notifications");
	if (code && (open || (code != MCP_INVALID_PARAMS && code != LISTEN_LIMIT && code != MCP_INVALID_REQUEST)))
		fail("a refused subscriptions/listen with an unexpected code, or left open", NULL);
	if (!code && (!stamped_with(ack, &m->id) || !json_is_object(granted) ||
		      json_object_get(granted, "resourceSubscriptions")))
		fail("an acknowledgement without the listen id, or granting resourceSubscriptions", NULL);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)granted, k, v)
	{
		if (!json_is_true(v) || !json_is_true(json_object_get(asked, k)))
			fail("an acknowledgement grants what was not asked for", k);
	}
	json_decref(ack);
	if (!code && !open && out->len == (size_t)(nl - first) + 1)
		fail("a subscription granted nothing and was not ended", NULL);
	if (!open)
		return;
	size_t from = out->len;
	const struct listen_io io = {out, listen_fuzz_out, listen_fuzz_sent};
	listen_notify_lists(ls, &io, LISTEN_TOOLS | LISTEN_PROMPTS | LISTEN_RESOURCES);
	if (out->len == from)
		fail("a granted subscription heard none of the changes", NULL);
	for (const char *p = (const char *)out->p + from, *end = (const char *)out->p + out->len; p < end;) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		json_t *j = json_loadb(p, (size_t)(e - p), 0, NULL);
		if (!stamped_with(j, &m->id))
			fail("a change on a listen stream is not stamped with its id", NULL);
		json_decref(j);
		p = e + 1;
	}
	listen_conn_gone(ls, 1);
	if (listen_count(ls, 1))
		fail("a subscription outlived its connection", NULL);
}

/* subscriptions/listen's lines, checked on their own; then those that are not its (already
 * complete) result go on to the 2026-07-28 checks with the rest. */
static void answer_listen(struct buf *out, const struct mcp_msg *m)
{
	static struct listen_set ls;
	struct buf lo;
	buf_init(&lo, MCP_OUT_MAX);
	listen_checks(&ls, &lo, m);
	check_lines(&lo, 0);
	for (const char *p = (const char *)lo.p, *end = p + lo.len; p < end;) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		json_t *j = json_loadb(p, (size_t)(e - p), 0, NULL);
		if (!json_object_get(j, "result") && buf_put(out, p, (size_t)(e - p) + 1) != 0)
			fail("no room for a listen line", NULL);
		json_decref(j);
		p = e + 1;
	}
	buf_free(&lo);
}

static void answer_request(struct buf *out, const struct mcp_msg *m)
{
	char err[AS_ERRLEN];
	json_t *res = NULL;
	if (!mcp_method_known(m->method, m->method_len, MCP_MSG_REQUEST)) {
		if (m->m != MCP_M_UNKNOWN)
			fail("an unknown method was looked up as known", m->method);
		must(mcp_line_error(out, &m->id, MCP_METHOD_NOT_FOUND, "Method not found", NULL, err), err,
		     "no method-not-found line");
		return;
	}
	if (m->progress_token.t != MCP_ID_NONE)
		must(mcp_line_progress(out, &m->progress_token, 1, -1, "waiting for a reviewer", err), err,
		     "no progress line");
	switch (m->m) {
	case MCP_M_INITIALIZE: {
		struct mcp_client c;
		memset(err, 'X', sizeof err);
		if (mcp_initialize(m->params, "fuzz", &c, &res, err) != 0) {
			check_err(err, "mcp_initialize");
			must(mcp_line_error(out, &m->id, MCP_INVALID_PARAMS, err, NULL, err), err, "no error line");
			return;
		}
		if (strcmp(c.version, MCP_VERSION_LATEST) && strcmp(c.version, MCP_VERSION_PREVIOUS))
			fail("negotiated a version we do not speak", c.version);
		break;
	}
	case MCP_M_LOGGING_SET_LEVEL: {
		enum mcp_log_level lv;
		memset(err, 'X', sizeof err);
		if (mcp_log_set_level(m->params, &lv, err) != 0) {
			check_err(err, "mcp_log_set_level");
			must(mcp_line_error(out, &m->id, MCP_INVALID_PARAMS, err, NULL, err), err, "no error line");
			return;
		}
		must(mcp_line_log(out, lv, "assent", json_string(mcp_log_level_name(lv)), err), err, "no log line");
		res = json_object();
		break;
	}
	case MCP_M_TOOLS_LIST: {
		/* the fast path writes the same bytes as building the result */
		size_t mark = out->len;
		must(mcp_line_tools_list(out, &m->id, err), err, "no tools/list line");
		struct buf slow;
		buf_init(&slow, MCP_OUT_MAX);
		must(mcp_line_result(&slow, &m->id, mcp_tools_list(), err), err, "no tools/list result line");
		if (slow.len != out->len - mark || memcmp(slow.p, out->p + mark, slow.len) != 0)
			fail("mcp_line_tools_list differs from mcp_line_result(mcp_tools_list())", NULL);
		buf_free(&slow);
		return;
	}
	case MCP_M_TOOLS_CALL:
		answer_tools_call(out, m, NULL);
		answer_tools_call(out, m, &op_rules);
		return;
	case MCP_M_LISTEN:
		answer_listen(out, m);
		return;
	default:
		res = json_object();
		break;
	}
	if (!res)
		fail("no result for a known method", m->method);
	must(mcp_line_result(out, &m->id, res, err), err, "no result line");
}

/* The 2026-07-28 layer over a request and the lines answer_request made for it. */
static void check_modern(struct buf *out, const struct mcp_msg *m)
{
	char err[AS_ERRLEN];
	struct mcp_modern mm;
	int code;
	json_t *data;
	memset(err, 'X', sizeof err);
	if (mcp_modern_meta(m->params, &mm, &code, &data, err) != 0) {
		check_err(err, "mcp_modern_meta");
		if (code != MCP_INVALID_PARAMS && !(code == MCP_UNSUPPORTED_VERSION && data))
			fail("a refused _meta has an unexpected code or no data", err);
		size_t at = out->len;
		must(mcp_line_error(out, &m->id, code, err, data, err), err, "no error line for a refused _meta");
		if (mcp_line_error_code((const char *)out->p + at, out->len - at) != code)
			fail("an error line's code does not read back", NULL);
		if (mcp_http_status(code) != 400)
			fail("a refused _meta is not HTTP 400", NULL);
	} else if (strlen(mm.client.name) > MCP_NAME_MAX || strcmp(mm.version, MCP_VERSION_STATELESS)) {
		fail("an accepted _meta with an unexpected version or an unbounded client name", NULL);
	}
	/* Every line so far, made a 2026-07-28 one (check_lines then refuses a duplicate key). */
	for (size_t i = 0; i < out->len;) {
		const char *nl = memchr(out->p + i, '\n', out->len - i);
		size_t n = (size_t)(nl - (const char *)out->p) + 1 - i, before = out->len;
		int was_error = mcp_line_error_code((const char *)out->p + i, n) != 0;
		must(mcp_line_complete(out, i, MCP_LIST_CACHE_HINTS, err), err, "mcp_line_complete failed");
		if (was_error && out->len != before)
			fail("mcp_line_complete changed an error line", NULL);
		n += out->len - before;
		json_t *j = json_loadb((const char *)out->p + i, n - 1, JSON_REJECT_DUPLICATES, NULL);
		const json_t *res = json_object_get(j, "result");
		if (!j || (res && (!json_is_object(res) || !json_is_string(json_object_get(res, "resultType")) ||
				   strcmp(json_string_value(json_object_get(res, "resultType")), "complete"))))
			fail("a result line made a 2026-07-28 one is not JSON or has no resultType \"complete\"", NULL);
		json_decref(j);
		i += n;
	}
	/* Headers that repeat the body agree with it. */
	struct mh_verdict v = {.modern = 1};
	snprintf(v.protocol, sizeof v.protocol, "%s", MCP_VERSION_STATELESS);
	const json_t *nm = m->params ? json_object_get(m->params, "name") : NULL,
		     *uri = m->params ? json_object_get(m->params, "uri") : NULL;
	char name[600] = "";
	const json_t *nv = json_is_string(nm) ? nm : uri;
	/* A header's value carries no surrounding whitespace (it is compared without it): a name
	 * that begins or ends with some cannot be repeated exactly, and is left out here. */
	const char *nvs = json_string_value(nv);
	size_t nvn = json_is_string(nv) ? json_string_length(nv) : 0;
	int padded = nvn && (strchr(" \t", nvs[0]) || strchr(" \t", nvs[nvn - 1]));
	if (json_is_string(nv) && !padded && nvn < sizeof name - 4)
		snprintf(name, sizeof name, " %s\t", nvs);
	v.method_hdr = m->method;
	v.name_hdr = name;
	const json_t *meta = m->params ? json_object_get(m->params, "_meta") : NULL;
	const json_t *mv = json_is_object(meta) ? json_object_get(meta, MCP_META_VERSION) : NULL;
	int named = !json_is_string(mv) || !strcmp(json_string_value(mv), MCP_VERSION_STATELESS);
	size_t mn = m->method ? strlen(m->method) : 0;
	int mpad = mn && (strchr(" \t", m->method[0]) || strchr(" \t", m->method[mn - 1])); /* as names above */
	if (named && !mpad && !padded && strlen(name) == (json_is_string(nv) ? json_string_length(nv) + 2 : 0) &&
	    mcp_http_headers_agree(&v, m, err, sizeof err) != 0)
		fail("headers that repeat the body do not agree with it", err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cur_data = data;
	cur_size = size;
	struct mcp_msg m;
	struct buf out;
	char err[AS_ERRLEN];
	buf_init(&out, MCP_OUT_MAX);
	memset(err, 'X', sizeof err);
	int rc = mcp_parse_line((const char *)data, size, &m, err);
	if (rc != 0) {
		check_ascii_err(err, "mcp_parse_line");
		if (m.kind != MCP_MSG_INVALID)
			fail("a failed parse is not MCP_MSG_INVALID", err);
		if (m.code != MCP_PARSE_ERROR && m.code != MCP_INVALID_REQUEST && m.code != MCP_INVALID_PARAMS &&
		    m.code != MCP_INTERNAL_ERROR)
			fail("a failed parse has an unexpected code", err);
		if (m.answer)
			must(mcp_line_invalid(&out, &m, err, err), err, "no error line for an invalid message");
	} else if (m.kind == MCP_MSG_REQUEST) {
		if (m.id.t != MCP_ID_INT && m.id.t != MCP_ID_STR)
			fail("a request without a usable id", NULL);
		answer_request(&out, &m);
		check_modern(&out, &m);
	} else if (m.kind == MCP_MSG_NOTIFICATION && m.m == MCP_M_CANCELLED) {
		struct mcp_id rid;
		char reason[MCP_REASON_MAX + 1];
		if (mcp_cancelled(m.params, &rid, reason, err) == 0 && strlen(reason) > MCP_REASON_MAX)
			fail("a cancel reason over its bound", NULL);
	} else if (m.kind == MCP_MSG_NOTIFICATION && m.m == MCP_M_ASSENT_DEFAULTS) {
		uint32_t t;
		int drc = mcp_defaults(m.params, &t, err);
		if (drc == 0 && (t < 1 || t > MCP_TIMEOUT_MAX))
			fail("a default timeout out of its range", NULL);
		if (drc != 0)
			check_ascii_err(err, "notifications/assent/defaults");
	} else if (m.kind != MCP_MSG_NOTIFICATION && m.kind != MCP_MSG_RESPONSE) {
		fail("parse succeeded with an unknown kind", NULL);
	}
	check_lines(&out, 0);

	/* Redaction over whatever came in: the raw bytes as text, and the parsed value. */
	check_text_idempotent((const char *)data, size, NULL);
	check_text_idempotent((const char *)data, size, &op_rules);
	if (m.root)
		check_json_idempotent(m.root, &op_rules, REDACT_BOUND_MIN + size % 512);

	buf_free(&out);
	mcp_msg_free(&m);
	return 0;
}
