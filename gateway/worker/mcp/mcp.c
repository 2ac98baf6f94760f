/* MCP / JSON-RPC 2.0 message layer of the jailed mcp worker (see mcp.h): parsing
 * and classifying untrusted lines, the protocol's own answers, and every outgoing line.
 * The tools' catalog and arguments are in tools.c, request_feedback's checks and its
 * canonical action in feedback.c. No I/O. */
#include "gateway/worker/mcp/mcp.h"
#include "gateway/worker/mcp/mcpjson.h"

#include "common/cvjson.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/sha256.h>

#include "gateway/proto/action.h"
#include "common/cbor.h"

const char mcp_instructions[] =
    "assent is a human-approval gateway. Call request_feedback BEFORE any consequential or irreversible action "
    "(deleting or overwriting data, git push/merge/force, deploys, infrastructure or database changes, payments, "
    "messages to people, changing credentials, permissions or configuration) and proceed only when the result "
    "has \"approved\": true. A rejection, a timeout (\"error\": \"timeout\") or any error means: do not proceed. "
    "Put the exact operation in `context` (the command, diff, SQL or plan) so the reviewer sees what you will do; "
    "when a pipeline will check the approval for an artifact, pass `subject` ({name, digest: {sha256}} or {name, "
    "content: base64}) and `audience`, and hand the returned approval_token to that step. A person may take "
    "minutes: if your client gives up on tool calls after a short time, call request_feedback with \"wait\": "
    "false and then get_feedback with the returned session_id until its status is no longer \"pending\".";

/* ---- small helpers ---- */

const char *mcp_q(char *dst, const char *s, size_t len)
{
	size_t o = 0, i = 0;
	for (; i < len && i < 40 && o + 5 < QBUF - 4; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"')
			dst[o++] = (char)c;
		else
			o += (size_t)snprintf(dst + o, QBUF - o, "\\x%02x", c);
	}
	if (i < len) {
		memcpy(dst + o, "...", 3);
		o += 3;
	}
	dst[o] = 0;
	return dst;
}

/* Length of the longest prefix of s[0..n) of at most max bytes that ends on a
 * UTF-8 character boundary (s is valid UTF-8). */
static size_t utf8_cut(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

/* The code point at s[i] and its length in bytes (text.h: one definition). */
static uint32_t cp_at(const char *s, size_t n, size_t i, size_t *len)
{
	return text_cp((const uint8_t *)s, n, i, len);
}

/* Characters a terminal acts on instead of showing, or that reorder what it shows
 * (text.h: the same set the signer refuses in frames). */
static int cp_hidden(uint32_t cp)
{
	return text_refused_cp(cp);
}

/* A JSON string of s[0..n) cut to max bytes: as is when it is UTF-8, otherwise as
 * printable ASCII (\xNN escapes), so a builder never fails on a bad byte. */
json_t *mcp_safe_string(const char *s, size_t n, size_t max)
{
	if (utf8_valid((const uint8_t *)s, n))
		return json_stringn(s, utf8_cut(s, n, max));
	struct buf b;
	buf_init(&b, max);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		int rc = (c >= 0x20 && c < 0x7f) ? buf_putc(&b, c) : buf_printf(&b, "\\x%02x", c);
		if (rc != 0)
			break;
	}
	json_t *j = json_stringn(b.len ? (const char *)b.p : "", b.len);
	buf_free(&b);
	return j;
}

char *mcp_dup_n(const char *s, size_t n)
{
	char *p = malloc(n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = 0;
	}
	return p;
}

/* An object of the given members, in order: mcp_jobj("k1", v1, "k2", v2, JEND). Every
 * value is taken, even when building fails (then NULL): no caller has to work out
 * which references json_pack kept on an error path. A NULL value fails the build. */
json_t *mcp_jobj(const char *key, ...)
{
	va_list ap;
	json_t *o = json_object();
	int ok = o != NULL;
	va_start(ap, key);
	for (const char *k = key; k; k = va_arg(ap, const char *)) {
		json_t *v = va_arg(ap, json_t *);
		if (!ok)
			json_decref(v); /* not reached by a setter: release it here */
		else if (!v || json_object_set_new(o, k, v) != 0)
			ok = 0; /* json_object_set_new releases v when it fails */
	}
	va_end(ap);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* A one-element array, taking v even on failure. */
json_t *mcp_jarr1(json_t *v)
{
	json_t *a = v ? json_array() : NULL;
	if (!a || json_array_append_new(a, v) != 0) {
		if (!a)
			json_decref(v);
		json_decref(a);
		return NULL;
	}
	return a;
}

/* ---- ids ---- */

/* 1 when v is a usable id or progress token (string of at most MCP_ID_MAX bytes, or an integer). */
int mcp_id_read(const json_t *v, struct mcp_id *id)
{
	if (json_is_integer(v)) {
		id->t = MCP_ID_INT;
		id->i = json_integer_value(v);
		return 1;
	}
	if (json_is_string(v) && json_string_length(v) <= MCP_ID_MAX) {
		id->t = MCP_ID_STR;
		id->len = json_string_length(v);
		memcpy(id->s, json_string_value(v), id->len);
		id->s[id->len] = 0;
		return 1;
	}
	return 0;
}

json_t *mcp_id_json(const struct mcp_id *id)
{
	if (id && id->t == MCP_ID_INT)
		return json_integer(id->i);
	if (id && id->t == MCP_ID_STR)
		return json_stringn(id->s, id->len);
	return json_null();
}

/* ---- method table ---- */

static const struct {
	const char *name;
	enum mcp_method m;
	enum mcp_kind kind;
} methods[] = {
    {"initialize", MCP_M_INITIALIZE, MCP_MSG_REQUEST},
    {"ping", MCP_M_PING, MCP_MSG_REQUEST},
    {"tools/list", MCP_M_TOOLS_LIST, MCP_MSG_REQUEST},
    {"tools/call", MCP_M_TOOLS_CALL, MCP_MSG_REQUEST},
    {"logging/setLevel", MCP_M_LOGGING_SET_LEVEL, MCP_MSG_REQUEST},
    {"server/discover", MCP_M_DISCOVER, MCP_MSG_REQUEST},
    {"tasks/get", MCP_M_TASKS_GET, MCP_MSG_REQUEST},
    {"tasks/result", MCP_M_TASKS_RESULT, MCP_MSG_REQUEST},
    {"tasks/list", MCP_M_TASKS_LIST, MCP_MSG_REQUEST},
    {"tasks/cancel", MCP_M_TASKS_CANCEL, MCP_MSG_REQUEST},
    {"tasks/update", MCP_M_TASKS_UPDATE, MCP_MSG_REQUEST},
    {"subscriptions/listen", MCP_M_LISTEN, MCP_MSG_REQUEST},
    {"notifications/initialized", MCP_M_INITIALIZED, MCP_MSG_NOTIFICATION},
    {"notifications/cancelled", MCP_M_CANCELLED, MCP_MSG_NOTIFICATION},
    {"notifications/progress", MCP_M_PROGRESS, MCP_MSG_NOTIFICATION},
    {"notifications/roots/list_changed", MCP_M_ROOTS_LIST_CHANGED, MCP_MSG_NOTIFICATION},
    {"notifications/assent/defaults", MCP_M_ASSENT_DEFAULTS, MCP_MSG_NOTIFICATION},
};

enum mcp_method mcp_method_lookup(const char *name, size_t len, enum mcp_kind *kind)
{
	for (size_t i = 0; name && i < sizeof methods / sizeof *methods; i++)
		if (strlen(methods[i].name) == len && memcmp(methods[i].name, name, len) == 0) {
			if (kind)
				*kind = methods[i].kind;
			return methods[i].m;
		}
	if (kind)
		*kind = MCP_MSG_INVALID;
	return MCP_M_UNKNOWN;
}

int mcp_method_known(const char *name, size_t len, enum mcp_kind kind)
{
	enum mcp_kind k;
	return mcp_method_lookup(name, len, &k) != MCP_M_UNKNOWN && k == kind;
}

/* ---- parsing ---- */

/* Consumes the rest of a JSON string whose opening quote was read, through its
 * closing quote; a backslash and the byte after it go together. AS_EINVAL when the
 * string does not end. Only finds the end: jansson judges the string. */
static int json_str_rest(struct rd *r)
{
	uint8_t c;
	while (rd_u8(r, &c) == 0) {
		if (c == '"')
			return 0;
		if (c == '\\' && rd_u8(r, &c) != 0)
			return AS_EINVAL;
	}
	return AS_EINVAL;
}

/* Nesting depth of the raw text, strings skipped, counted before jansson builds
 * anything: 100000 '[' cost one pass, not 2048 nested allocations. */
static int depth_over(const char *s, size_t n)
{
	struct rd r;
	size_t d = 0;
	uint8_t c;
	rd_init(&r, s, n);
	while (rd_u8(&r, &c) == 0) {
		if (c == '"') {
			if (json_str_rest(&r) != 0)
				return 0; /* nothing after an unterminated string counts */
		} else if (c == '[' || c == '{') {
			if (++d > MCP_DEPTH_MAX)
				return 1;
		} else if ((c == ']' || c == '}') && d > 0) {
			d--;
		}
	}
	return 0;
}

static int invalid(struct mcp_msg *out, int code, int rc, char *err, const char *fmt, ...) AS_PRINTF(5, 6);
static int invalid(struct mcp_msg *out, int code, int rc, char *err, const char *fmt, ...)
{
	out->kind = MCP_MSG_INVALID;
	out->code = code;
	out->method = NULL;
	out->method_len = 0;
	out->m = MCP_M_UNKNOWN;
	out->params = out->result = out->error = NULL;
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, AS_ERRLEN, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static int parse_json_error(struct mcp_msg *out, const json_error_t *je, char *err)
{
	char qb[QBUF];
	const char *why = mcp_q(qb, je->text, strnlen(je->text, sizeof je->text));
	switch (json_error_code(je)) {
	case json_error_duplicate_key:
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "duplicate key: %s", why);
	case json_error_out_of_memory:
		return invalid(out, MCP_INTERNAL_ERROR, AS_ENOMEM, err, "out of memory");
	default:
		return invalid(out, MCP_PARSE_ERROR, AS_EINVAL, err, "%s at byte %d", why, je->position);
	}
}

/* A message without a method: a response, with result or error and the id of its request. */
static int read_response(struct mcp_msg *out, const json_t *id, int id_ok, const json_t *result, const json_t *error,
			 char *err)
{
	if (!result && !error)
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "expected method, result or error");
	if (result && error)
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "a response has result or error, not both");
	if (!id || (!id_ok && !error))
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "a response needs the id of its request");
	const json_t *code = error ? json_object_get(error, "code") : NULL;
	if (error && !json_is_integer(code))
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err,
			       "error: expected an object with an integer code");
	out->kind = MCP_MSG_RESPONSE;
	out->result = result;
	out->error = error;
	return 0;
}

/* A request's params._meta: an object, and its progressToken an id. */
static int read_meta(struct mcp_msg *out, const json_t *params, char *err)
{
	const json_t *meta = json_object_get(params, "_meta");
	if (meta && !json_is_object(meta))
		return invalid(out, MCP_INVALID_PARAMS, AS_EINVAL, err, "params._meta: expected an object, got %s",
			       json_kind(meta));
	const json_t *pt = meta ? json_object_get(meta, "progressToken") : NULL;
	if (pt && !mcp_id_read(pt, &out->progress_token))
		return invalid(out, MCP_INVALID_PARAMS, AS_EINVAL, err,
			       "params._meta.progressToken: expected a string of at most %d bytes or an integer",
			       MCP_ID_MAX);
	return 0;
}

int mcp_parse_line(const char *line, size_t len, struct mcp_msg *out, char *err)
{
	memset(out, 0, sizeof *out);
	out->id.t = MCP_ID_NULL;
	out->answer = 1;
	if (len > MCP_LINE_MAX)
		return invalid(out, MCP_INVALID_REQUEST, AS_ETOOBIG, err,
			       "message of %zu bytes is over the limit of %u bytes", len, MCP_LINE_MAX);
	if (!line)
		len = 0; /* an over-long line is classified by its length alone; nothing else without bytes */
	struct rd r;
	rd_init(&r, line, len);
	rd_skip_ws(&r, RD_JSON_WS);
	if (rd_left(&r) == 0) {
		out->answer = 0;
		return invalid(out, MCP_PARSE_ERROR, AS_EINVAL, err, "empty line");
	}
	if (depth_over(line, len))
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "nesting deeper than %d levels",
			       MCP_DEPTH_MAX);
	json_error_t je;
	out->root = json_loadb(line, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
	if (!out->root)
		return parse_json_error(out, &je, err);
	const json_t *root = out->root;
	if (json_is_array(root))
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err,
			       "batches are not supported (JSON-RPC batching is not part of MCP since 2025-06-18)");
	if (!json_is_object(root))
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "expected a JSON-RPC message object, got %s",
			       json_kind(root));

	const json_t *id = json_object_get(root, "id"), *method = json_object_get(root, "method");
	const json_t *result = json_object_get(root, "result"), *error = json_object_get(root, "error");
	const json_t *ver = json_object_get(root, "jsonrpc"), *params = json_object_get(root, "params");
	/* JSON-RPC never answers a notification or a response, even a malformed one. */
	if ((method && !id) || (!method && (result || error)))
		out->answer = 0;
	int id_ok = id && mcp_id_read(id, &out->id);
	if (id && !id_ok && !json_is_null(id)) {
		out->id.t = MCP_ID_NULL;
		if (json_is_string(id))
			return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err,
				       "id: a string of %zu bytes is over the limit of %d", json_string_length(id),
				       MCP_ID_MAX);
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "id: expected a string or an integer, got %s",
			       json_kind(id));
	}
	if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0 || json_string_length(ver) != 3)
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "jsonrpc: expected \"2.0\", got %s",
			       ver ? json_kind(ver) : "nothing");

	if (!method)
		return read_response(out, id, id_ok, result, error, err);
	if (!json_is_string(method))
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "method: expected a string, got %s",
			       json_kind(method));
	if (id && !id_ok)
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err,
			       "id: a request id must be a string or an integer, not null");
	if (result || error)
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "a request carries no result or error");
	if (params && !json_is_object(params)) {
		if (json_is_array(params))
			return invalid(out, MCP_INVALID_PARAMS, AS_EINVAL, err,
				       "params: MCP expects an object, got an array");
		return invalid(out, MCP_INVALID_REQUEST, AS_EINVAL, err, "params: expected an object, got %s",
			       json_kind(params));
	}
	out->kind = id ? MCP_MSG_REQUEST : MCP_MSG_NOTIFICATION;
	out->method = json_string_value(method);
	out->method_len = json_string_length(method);
	enum mcp_kind mk;
	enum mcp_method m = mcp_method_lookup(out->method, out->method_len, &mk);
	out->m = mk == out->kind ? m : MCP_M_UNKNOWN;
	out->params = params;
	if (out->kind == MCP_MSG_REQUEST && params)
		return read_meta(out, params, err);
	return 0;
}

void mcp_msg_free(struct mcp_msg *m)
{
	if (!m)
		return;
	json_decref(m->root);
	m->root = NULL;
	m->method = NULL;
	m->params = m->result = m->error = NULL;
}

/* ---- initialize ---- */

const char *mcp_negotiate_version(const char *requested)
{
	if (requested && !strcmp(requested, MCP_VERSION_PREVIOUS))
		return MCP_VERSION_PREVIOUS;
	return MCP_VERSION_LATEST;
}

void mcp_copy_declared(char *dst, size_t max, const json_t *s)
{
	size_t n = utf8_cut(json_string_value(s), json_string_length(s), max);
	memcpy(dst, json_string_value(s), n);
	for (size_t i = 0, l; i < n; i += l)
		if (cp_hidden(cp_at(dst, n, i, &l)))
			memset(dst + i, '?', l);
	dst[n] = 0;
}

int mcp_initialize(const json_t *params, const char *server_version, struct mcp_client *client, json_t **result,
		   char *err)
{
	memset(client, 0, sizeof *client);
	*result = NULL;
	const json_t *pv = params ? json_object_get(params, "protocolVersion") : NULL;
	if (!json_is_string(pv))
		return as_fail(err, AS_EINVAL, "initialize: params.protocolVersion: expected a string, got %s",
			       pv ? json_kind(pv) : "nothing");
	const json_t *caps = json_object_get(params, "capabilities"), *ci = json_object_get(params, "clientInfo");
	if (caps && !json_is_object(caps))
		return as_fail(err, AS_EINVAL, "initialize: params.capabilities: expected an object, got %s",
			       json_kind(caps));
	if (ci && !json_is_object(ci))
		return as_fail(err, AS_EINVAL, "initialize: params.clientInfo: expected an object, got %s",
			       json_kind(ci));
	if (ci) {
		const json_t *n = json_object_get(ci, "name"), *v = json_object_get(ci, "version");
		if ((n && !json_is_string(n)) || (v && !json_is_string(v)))
			return as_fail(err, AS_EINVAL,
				       "initialize: params.clientInfo: name and version must be strings");
		if (n)
			mcp_copy_declared(client->name, MCP_NAME_MAX, n);
		if (v)
			mcp_copy_declared(client->client_version, MCP_NAME_MAX, v);
	}
	client->elicitation = caps && json_object_get(caps, "elicitation") != NULL;
	client->roots = caps && json_object_get(caps, "roots") != NULL;
	client->sampling = caps && json_object_get(caps, "sampling") != NULL;
	/* Both revisions we speak are answered as asked; anything else (older, newer, or
	 * the stateless 2026-07-28 asked through initialize) gets our latest, and the
	 * client decides whether it can speak it. */
	client->version = mcp_negotiate_version(json_string_value(pv));
	/* tasks: a request_feedback call may be made a task (params.task), listed and cancelled. */
	*result = json_pack("{s:s, s:{s:{s:b}, s:{}, s:{s:{}, s:{}, s:{s:{s:{}}}}}, s:{s:s, s:s, s:s}, s:s}",
			    "protocolVersion", client->version, "capabilities", "tools", "listChanged", 0, "logging",
			    "tasks", "list", "cancel", "requests", "tools", "call", "serverInfo", "name",
			    MCP_SERVER_NAME, "title", "assent human-approval gateway", "version",
			    server_version ? server_version : "dev", "instructions", mcp_instructions);
	return *result ? 0 : as_fail(err, AS_ENOMEM, "initialize: out of memory");
}

/* ---- logging ---- */

static const char *const log_names[] = {"debug", "info",     "notice", "warning",
					"error", "critical", "alert",  "emergency"};

const char *mcp_log_level_name(enum mcp_log_level l)
{
	return (unsigned)l < sizeof log_names / sizeof *log_names ? log_names[l] : "info";
}

int mcp_log_set_level(const json_t *params, enum mcp_log_level *out, char *err)
{
	const json_t *lv = params ? json_object_get(params, "level") : NULL;
	char qb[QBUF];
	if (!json_is_string(lv))
		return as_fail(err, AS_EINVAL, "logging/setLevel: params.level: expected a string, got %s",
			       lv ? json_kind(lv) : "nothing");
	for (size_t i = 0; i < sizeof log_names / sizeof *log_names; i++)
		if (!strcmp(json_string_value(lv), log_names[i]) && json_string_length(lv) == strlen(log_names[i])) {
			*out = (enum mcp_log_level)i;
			return 0;
		}
	return as_fail(
	    err, AS_EINVAL,
	    "logging/setLevel: params.level: expected debug, info, notice, warning, error, critical, alert or "
	    "emergency, got \"%s\"",
	    mcp_q(qb, json_string_value(lv), json_string_length(lv)));
}

/* ---- outgoing lines ---- */

struct sink {
	struct buf *b;
	int rc;
};

static int sink_cb(const char *p, size_t size, void *data)
{
	struct sink *s = data;
	s->rc = buf_put(s->b, p, size);
	return s->rc == 0 ? 0 : -1;
}

/* Serialise msg (stolen) as one line. */
static int emit(struct buf *out, json_t *msg, char *err)
{
	if (!msg)
		return as_fail(err, AS_ENOMEM, "out of memory building a message");
	size_t start = out->len;
	struct sink s = {out, 0};
	int rc = json_dump_callback(msg, sink_cb, &s, JSON_COMPACT) == 0 ? 0 : (s.rc ? s.rc : AS_ENOMEM);
	if (rc == 0)
		rc = buf_putc(out, '\n');
	json_decref(msg);
	if (rc != 0) {
		out->len = start;
		if (rc == AS_ETOOBIG)
			return as_fail(err, rc, "message over the limit of %zu bytes", out->max);
		return as_fail(err, rc, "cannot build message: %s", as_strerror(rc));
	}
	return 0;
}

int mcp_line_result(struct buf *out, const struct mcp_id *id, json_t *result, char *err)
{
	if (!id || (id->t != MCP_ID_INT && id->t != MCP_ID_STR) || !result) {
		json_decref(result);
		return as_fail(err, AS_EINVAL, "a result answers a request: it needs the request's id");
	}
	return emit(out, mcp_jobj("jsonrpc", json_string("2.0"), "id", mcp_id_json(id), "result", result, JEND), err);
}

static const char *code_phrase(int code)
{
	switch (code) {
	case MCP_PARSE_ERROR:
		return "Parse error";
	case MCP_INVALID_REQUEST:
		return "Invalid Request";
	case MCP_METHOD_NOT_FOUND:
		return "Method not found";
	case MCP_INVALID_PARAMS:
		return "Invalid params";
	case MCP_INTERNAL_ERROR:
		return "Internal error";
	}
	return "Server error";
}

int mcp_line_error(struct buf *out, const struct mcp_id *id, int code, const char *message, json_t *data, char *err)
{
	if (!message)
		message = code_phrase(code);
	json_t *e =
	    mcp_jobj("code", json_integer(code), "message", mcp_safe_string(message, strlen(message), 1024), JEND);
	if (e && data && json_object_set_new(e, "data", data) != 0) {
		json_decref(e);
		e = NULL;
	} else if (!e) {
		json_decref(data);
	}
	if (!e)
		return as_fail(err, AS_ENOMEM, "out of memory building an error");
	return emit(out, mcp_jobj("jsonrpc", json_string("2.0"), "id", mcp_id_json(id), "error", e, JEND), err);
}

/* ---- the id of a line too long to parse ---- */

/* Consumes the JSON string at the cursor. */
static int peek_str(struct rd *r)
{
	GUARD(rd_expect(r, "\""));
	return json_str_rest(r);
}

/* Consumes the value at the cursor, up to the ',' or the closing brace that ends it
 * (a string or a nested value ends on its own); AS_EINVAL when it does not end. */
static int peek_value(struct rd *r)
{
	int depth = 0;
	uint8_t c;
	while (rd_peek(r, &c) == 0) {
		if (c == '"') {
			GUARD(peek_str(r));
			if (depth == 0)
				return 0;
			continue;
		}
		if (depth == 0 && (c == '}' || c == ']' || c == ','))
			return 0; /* a scalar ended by its object, or by the next member */
		GUARD(rd_u8(r, &c));
		if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && --depth == 0)
			return 0;
	}
	return AS_EINVAL;
}

/* The bytes from mark's cursor to now's, as a reader (mark: a copy of now, taken earlier). */
static struct rd peek_span(struct rd mark, const struct rd *now)
{
	mark.len = now->off;
	return mark;
}

/* The unread bytes of val as a JSON id. */
static int peek_decode(struct rd val, struct mcp_id *id)
{
	size_t n = rd_left(&val);
	const uint8_t *p;
	json_t *v = n > 0 && n <= 2 * MCP_ID_MAX + 8 && rd_take(&val, n, &p) == 0
			? json_loadb((const char *)p, n, JSON_DECODE_ANY, NULL)
			: NULL;
	int ok = v && mcp_id_read(v, id);
	json_decref(v);
	return ok;
}

static int peek_head(const char *s, size_t n, struct mcp_id *id)
{
	struct rd r, mark, key;
	rd_init(&r, s, n);
	rd_skip_ws(&r, RD_JSON_WS);
	if (rd_expect(&r, "{") != 0)
		return 0;
	for (;;) {
		rd_skip_ws(&r, RD_JSON_WS);
		mark = r;
		if (peek_str(&r) != 0)
			return 0;
		key = peek_span(mark, &r);
		rd_skip_ws(&r, RD_JSON_WS);
		if (rd_expect(&r, ":") != 0)
			return 0;
		rd_skip_ws(&r, RD_JSON_WS);
		mark = r;
		if (peek_value(&r) != 0)
			return 0;
		if (rd_cmp(&key, "\"id\"") == 0)
			return peek_decode(peek_span(mark, &r), id);
		rd_skip_ws(&r, RD_JSON_WS);
		if (rd_expect(&r, ",") != 0)
			return 0;
	}
}

/* Whether the quote at s[q] is escaped (an odd run of backslashes before it). */
static int peek_escaped(const char *s, size_t q)
{
	size_t k = 0;
	while (q > k && s[q - k - 1] == '\\')
		k++;
	return k % 2;
}

/* From the end: '}', the value, ':', "id"; read backwards with the reader's end. */
static int peek_tail(const char *s, size_t n, struct mcp_id *id)
{
	struct rd r, val;
	rd_init(&r, s, n);
	rd_trim_end(&r, RD_JSON_WS);
	if (rd_expect_end(&r, "}") != 0)
		return 0;
	rd_trim_end(&r, RD_JSON_WS);
	val = r; /* the value ends here; where it starts is found next */
	size_t b = r.len;
	if (b > 0 && s[b - 1] == '"' && !peek_escaped(s, b - 1)) {
		/* A string: back to its opening quote, the first one not escaped. */
		for (b -= 1; b > 0 && !(s[b - 1] == '"' && !peek_escaped(s, b - 1)); b--)
			;
		if (b == 0)
			return 0;
		r.len = b - 1;
	} else {
		rd_trim_end(&r, "-0123456789");
	}
	val.off = r.len;
	rd_trim_end(&r, RD_JSON_WS);
	if (rd_expect_end(&r, ":") != 0)
		return 0;
	rd_trim_end(&r, RD_JSON_WS);
	if (rd_expect_end(&r, "\"id\"") != 0 || peek_escaped(s, r.len))
		return 0;
	return peek_decode(val, id);
}

int mcp_peek_id(const char *head, size_t hn, const char *tail, size_t tn, struct mcp_id *id)
{
	if (head && hn > MCP_PEEK_HEAD)
		hn = MCP_PEEK_HEAD;
	if (tail && tn > MCP_PEEK_TAIL) {
		tail += tn - MCP_PEEK_TAIL;
		tn = MCP_PEEK_TAIL;
	}
	return (head && peek_head(head, hn, id)) || (tail && peek_tail(tail, tn, id));
}

int mcp_line_invalid(struct buf *out, const struct mcp_msg *m, const char *detail, char *err)
{
	char msg[AS_ERRLEN + 32];
	snprintf(msg, sizeof msg, "%s: %s", code_phrase(m->code), detail && detail[0] ? detail : "invalid message");
	return mcp_line_error(out, &m->id, m->code ? m->code : MCP_INVALID_REQUEST, msg, NULL, err);
}

static json_t *number(double d)
{
	if (d == floor(d) && fabs(d) < 9007199254740992.0)
		return json_integer((json_int_t)d);
	return json_real(d);
}

int mcp_line_progress(struct buf *out, const struct mcp_id *token, double progress, double total, const char *message,
		      char *err)
{
	if (!token || (token->t != MCP_ID_INT && token->t != MCP_ID_STR))
		return as_fail(err, AS_EINVAL, "progress: needs the request's progress token");
	if (!isfinite(progress) || progress < 0 || !isfinite(total))
		return as_fail(err, AS_EINVAL, "progress: values must be finite and not negative");
	json_t *p = mcp_jobj("progressToken", mcp_id_json(token), "progress", number(progress), JEND);
	if (p && total >= 0 && json_object_set_new(p, "total", number(total)) != 0) {
		json_decref(p);
		p = NULL;
	}
	if (p && message && json_object_set_new(p, "message", mcp_safe_string(message, strlen(message), 1024)) != 0) {
		json_decref(p);
		p = NULL;
	}
	if (!p)
		return as_fail(err, AS_ENOMEM, "out of memory building a progress notification");
	return emit(
	    out,
	    mcp_jobj("jsonrpc", json_string("2.0"), "method", json_string("notifications/progress"), "params", p, JEND),
	    err);
}

int mcp_line_notification(struct buf *out, const char *method, json_t *params, char *err)
{
	if (!method || !json_is_object(params)) {
		json_decref(params);
		return as_fail(err, AS_EINVAL, "a notification needs a method and object params");
	}
	return emit(out, mcp_jobj("jsonrpc", json_string("2.0"), "method", json_string(method), "params", params, JEND),
		    err);
}

int mcp_line_log(struct buf *out, enum mcp_log_level level, const char *logger, json_t *data, char *err)
{
	if (!data || (unsigned)level > MCP_LOG_EMERGENCY) {
		json_decref(data);
		return as_fail(err, AS_EINVAL, "log: needs a level and data");
	}
	json_t *p = mcp_jobj("level", json_string(log_names[level]), JEND);
	if (p && logger &&
	    json_object_set_new(p, "logger", mcp_safe_string(logger, strlen(logger), MCP_NAME_MAX)) != 0) {
		json_decref(p);
		p = NULL;
	}
	if (!p || json_object_set_new(p, "data", data) != 0) {
		if (!p)
			json_decref(data);
		json_decref(p);
		return as_fail(err, AS_ENOMEM, "out of memory building a log notification");
	}
	return emit(
	    out,
	    mcp_jobj("jsonrpc", json_string("2.0"), "method", json_string("notifications/message"), "params", p, JEND),
	    err);
}
