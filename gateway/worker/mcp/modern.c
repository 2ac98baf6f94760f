/* MCP 2026-07-28 (stateless) requests and results, for the mcp worker (modern.h). */
#include "gateway/worker/mcp/modern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/worker/mcp/tasks.h"

/* What server/discover offers and an unsupported version's error lists, newest first. */
static const char *const supported[] = {MCP_VERSION_STATELESS, MCP_VERSION_LATEST, MCP_VERSION_PREVIOUS};

static const json_t *meta_of(const json_t *params)
{
	const json_t *meta = json_is_object(params) ? json_object_get(params, "_meta") : NULL;
	return json_is_object(meta) ? meta : NULL;
}

/* supported[] as a JSON array. New reference, NULL when out of memory. */
static json_t *supported_list(void)
{
	json_t *list = json_array();
	for (size_t i = 0; list && i < sizeof supported / sizeof *supported; i++)
		if (json_array_append_new(list, json_string(supported[i])) != 0) {
			json_decref(list);
			return NULL;
		}
	return list;
}

int mcp_is_modern(const struct mcp_msg *m)
{
	if (m->kind != MCP_MSG_REQUEST)
		return 0;
	if (m->method && !strcmp(m->method, "server/discover"))
		return 1;
	const json_t *meta = meta_of(m->params);
	return meta && json_object_get(meta, MCP_META_VERSION) != NULL;
}

json_t *mcp_unsupported_data(const char *requested, size_t len)
{
	json_t *list = supported_list();
	/* The client's own words, echoed: made valid UTF-8 (jansson refuses anything else). */
	json_t *req = json_stringn(requested, len);
	if (!req) {
		char safe[64];
		size_t n = 0;
		for (size_t i = 0; i < len && n + 1 < sizeof safe; i++)
			safe[n++] = (unsigned char)requested[i] >= 0x20 && (unsigned char)requested[i] < 0x7f
					? requested[i]
					: '?';
		req = json_stringn(safe, n);
	}
	json_t *d = list && req ? json_pack("{s:o,s:o}", "supported", list, "requested", req) : NULL;
	if (!d) {
		json_decref(list);
		json_decref(req);
	}
	return d;
}

int mcp_modern_meta(const json_t *params, struct mcp_modern *out, int *code, json_t **data, char *err)
{
	memset(out, 0, sizeof *out);
	*data = NULL;
	*code = MCP_INVALID_PARAMS;
	const json_t *meta = meta_of(params);
	if (!meta)
		return as_fail(err, AS_EINVAL,
			       "params._meta is required in %s: it carries \"" MCP_META_VERSION
			       "\" and \"" MCP_META_CAPS "\" (there is no initialize)",
			       MCP_VERSION_STATELESS);
	const json_t *v = json_object_get(meta, MCP_META_VERSION), *caps = json_object_get(meta, MCP_META_CAPS),
		     *ci = json_object_get(meta, MCP_META_CLIENT);
	if (!json_is_string(v))
		return as_fail(err, AS_EINVAL, "params._meta[\"" MCP_META_VERSION "\"]: expected a string");
	if (strcmp(json_string_value(v), MCP_VERSION_STATELESS) != 0 ||
	    json_string_length(v) != strlen(MCP_VERSION_STATELESS)) {
		*code = MCP_UNSUPPORTED_VERSION;
		*data = mcp_unsupported_data(json_string_value(v), json_string_length(v));
		return as_fail(err, AS_EINVAL,
			       "unsupported protocol version in params._meta: per-request _meta is %s; %s and %s open "
			       "with initialize",
			       MCP_VERSION_STATELESS, MCP_VERSION_LATEST, MCP_VERSION_PREVIOUS);
	}
	if (!json_is_object(caps))
		return as_fail(err, AS_EINVAL, "params._meta[\"" MCP_META_CAPS "\"]: expected an object");
	if (ci && !json_is_object(ci))
		return as_fail(err, AS_EINVAL, "params._meta[\"" MCP_META_CLIENT "\"]: expected an object");
	if (ci) {
		const json_t *n = json_object_get(ci, "name"), *ver = json_object_get(ci, "version");
		if ((n && !json_is_string(n)) || (ver && !json_is_string(ver)))
			return as_fail(err, AS_EINVAL,
				       "params._meta[\"" MCP_META_CLIENT "\"]: name and version must be strings");
		if (n)
			mcp_copy_declared(out->client.name, MCP_NAME_MAX, n);
		if (ver)
			mcp_copy_declared(out->client.client_version, MCP_NAME_MAX, ver);
	}
	out->version = MCP_VERSION_STATELESS;
	out->client.version = MCP_VERSION_STATELESS;
	out->client.elicitation = json_object_get(caps, "elicitation") != NULL;
	out->client.roots = json_object_get(caps, "roots") != NULL;
	out->client.sampling = json_object_get(caps, "sampling") != NULL;
	const json_t *ext = json_object_get(caps, "extensions");
	out->client.tasks = json_is_object(ext) && json_is_object(json_object_get(ext, MCP_TASKS_EXT));
	*code = 0;
	return 0;
}

json_t *mcp_discover_result(const char *server_version)
{
	json_t *list = supported_list();
	if (!list)
		return NULL;
	return json_pack("{s:s,s:o,s:{s:{s:b},s:{s:{}}},s:s,s:I,s:s,s:{s:{s:s,s:s,s:s}}}", "resultType", "complete",
			 "supportedVersions", list, "capabilities", "tools", "listChanged", 0, "extensions",
			 MCP_TASKS_EXT, "instructions", mcp_instructions, "ttlMs", (json_int_t)MCP_LIST_TTL_MS,
			 "cacheScope", "public", "_meta", MCP_META_SERVER, "name", MCP_SERVER_NAME, "title",
			 "assent human-approval gateway", "version", server_version ? server_version : "dev");
}

/* Past the JSON value at the reader's cursor that our builders wrote as an id: an
 * integer, or a string with its escapes. */
static int skip_id(struct rd *r)
{
	uint8_t c;
	if (rd_peek(r, &c) != 0)
		return AS_EINVAL;
	if (c != '"') {
		while (rd_peek(r, &c) == 0 && (c == '-' || (c >= '0' && c <= '9')))
			r->off++;
		return 0;
	}
	r->off++;
	while (rd_u8(r, &c) == 0) {
		if (c == '"')
			return 0;
		if (c == '\\' && rd_u8(r, &c) != 0) /* the escaped byte is consumed, whatever it is */
			return AS_EINVAL;
	}
	return AS_EINVAL;
}

int mcp_line_complete(struct buf *out, size_t start, const char *extra, char *err)
{
	static const char pre[] = "{\"jsonrpc\":\"2.0\",\"id\":", mid[] = ",\"result\":{";
	if (start > out->len)
		return as_fail(err, AS_EINVAL, "no line there");
	struct rd r;
	rd_init(&r, out->p + start, out->len - start);
	if (rd_expect(&r, pre) != 0 || skip_id(&r) != 0 || rd_expect(&r, mid) != 0)
		return 0; /* not a result: an error or a notification stays as it is */
	size_t at = out->len - rd_left(&r);
	uint8_t c;
	int empty = rd_peek(&r, &c) == 0 && c == '}';
	char ins[256];
	int n = snprintf(ins, sizeof ins, "\"resultType\":\"complete\"%s%s%s", extra ? "," : "", extra ? extra : "",
			 empty ? "" : ",");
	if (n < 0 || (size_t)n >= sizeof ins)
		return as_fail(err, AS_EINVAL, "extra members too long");
	if (out->len + (size_t)n > out->max)
		return as_fail(err, AS_ETOOBIG, "a result over the line limit");
	size_t old = out->len;
	int rc = buf_put(out, ins, (size_t)n); /* grow, then move the tail up */
	if (rc != 0)
		return as_fail(err, rc, "%s", as_strerror(rc));
	memmove(out->p + at + n, out->p + at, old - at);
	memcpy(out->p + at, ins, (size_t)n);
	return 0;
}

json_t *mcp_input_required(const json_t *ir)
{
	const char *type = json_string_value(json_object_get(ir, "type"));
	const json_t *opts = json_object_get(ir, "options"), *def = json_object_get(ir, "default");
	int selection = type && !strcmp(type, "selection");
	json_t *field = selection ? json_pack("{s:s,s:s,s:O}", "type", "string", "title", "Your choice", "enum", opts)
				  : json_pack("{s:s,s:s}", "type", "string", "title", "Your answer");
	if (field && json_is_string(def))
		json_object_set(field, "default", (json_t *)def);
	json_t *form =
	    json_pack("{s:s,s:O,s:{s:s,s:{s:o},s:[s]}}", "mode", "form", "message", json_object_get(ir, "message"),
		      "requestedSchema", "type", "object", "properties", "answer", field, "required", "answer");
	return form ? json_pack("{s:s,s:{s:{s:s,s:o}},s:O}", "resultType", "input_required", "inputRequests",
				MCP_INPUT_KEY, "method", "elicitation/create", "params", form, "requestState",
				json_object_get(ir, "requestState"))
		    : NULL;
}

int mcp_input_response(const json_t *params, int *accepted, const char **text, char *err)
{
	*accepted = 0;
	*text = NULL;
	const json_t *all = json_object_get(params, "inputResponses");
	if (all && !json_is_object(all))
		return as_fail(err, AS_EINVAL, "params.inputResponses: expected an object");
	const json_t *r = json_object_get(all, MCP_INPUT_KEY);
	if (!r)
		return AS_ENOTFOUND;
	const char *action = json_string_value(json_object_get(r, "action"));
	if (!json_is_object(r) || !action)
		return as_fail(err, AS_EINVAL,
			       "params.inputResponses." MCP_INPUT_KEY ": expected an elicitation result");
	if (!strcmp(action, "decline") || !strcmp(action, "cancel"))
		return 0;
	if (strcmp(action, "accept") != 0)
		return as_fail(err, AS_EINVAL,
			       "params.inputResponses." MCP_INPUT_KEY ".action: expected accept, decline or cancel");
	const json_t *a = json_object_get(json_object_get(r, "content"), "answer");
	if (!json_is_string(a) || json_string_length(a) > MCP_MESSAGE_MAX ||
	    memchr(json_string_value(a), 0, json_string_length(a)))
		return as_fail(err, AS_EINVAL,
			       "params.inputResponses." MCP_INPUT_KEY
			       ".content.answer: expected a string (of at most " MCP_STR(MCP_MESSAGE_MAX) " bytes)");
	*accepted = 1;
	*text = json_string_value(a);
	return 0;
}

int mcp_line_error_code(const char *line, size_t n)
{
	static const char pre[] = "{\"jsonrpc\":\"2.0\",\"id\":", mid[] = ",\"error\":{\"code\":";
	struct rd r;
	rd_init(&r, line, n);
	if (rd_expect(&r, pre) != 0 || skip_id(&r) != 0 || rd_expect(&r, mid) != 0)
		return 0;
	int neg = rd_expect(&r, "-") == 0, code = 0;
	uint8_t c;
	while (rd_peek(&r, &c) == 0 && c >= '0' && c <= '9' && code < 100000) {
		code = code * 10 + (c - '0');
		r.off++;
	}
	return neg ? -code : code;
}

unsigned mcp_http_status(int code)
{
	switch (code) {
	case 0:
		return 200;
	case MCP_METHOD_NOT_FOUND:
		return 404;
	case MCP_INTERNAL_ERROR:
		return 500;
	case MCP_PARSE_ERROR:
	case MCP_INVALID_REQUEST:
	case MCP_INVALID_PARAMS:
	case MCP_HEADER_MISMATCH:
	case MCP_MISSING_CLIENT_CAP:
	case MCP_UNSUPPORTED_VERSION:
		return 400;
	}
	return 200;
}

/* s with its surrounding spaces and tabs removed, as a reader. */
static struct rd trimmed(const char *s)
{
	struct rd r;
	rd_init(&r, s, strlen(s));
	rd_skip_ws(&r, RD_OWS);
	rd_trim_end(&r, RD_OWS);
	return r;
}

static int same(const char *hdr, const char *val, size_t n)
{
	struct rd r = trimmed(hdr);
	return rd_left(&r) == n && memcmp(r.p + r.off, val, n) == 0;
}

int mcp_http_headers_agree(const struct mh_verdict *v, const struct mcp_msg *m, char *msg, size_t cap)
{
	const json_t *meta = meta_of(m->params), *mv = meta ? json_object_get(meta, MCP_META_VERSION) : NULL;
	if (!v->protocol[0]) {
		snprintf(msg, cap, "MCP-Protocol-Version header is required in %s and must equal params._meta",
			 MCP_VERSION_STATELESS);
		return MCP_HEADER_MISMATCH;
	}
	if (json_is_string(mv) && !same(v->protocol, json_string_value(mv), json_string_length(mv))) {
		snprintf(msg, cap,
			 "MCP-Protocol-Version header %.20s does not match params._meta[\"" MCP_META_VERSION "\"]",
			 v->protocol);
		return MCP_HEADER_MISMATCH;
	}
	if (!v->method_hdr || !same(v->method_hdr, m->method, m->method_len)) {
		snprintf(msg, cap, "Mcp-Method header %s the body's method",
			 v->method_hdr ? "does not match" : "missing:");
		return MCP_HEADER_MISMATCH;
	}
	/* The name-shaped member each method repeats in Mcp-Name. */
	const char *key = NULL;
	if (m->m == MCP_M_TOOLS_CALL || !strcmp(m->method, "prompts/get"))
		key = "name";
	else if (!strcmp(m->method, "resources/read"))
		key = "uri";
	else if (m->m == MCP_M_TASKS_GET || m->m == MCP_M_TASKS_UPDATE || m->m == MCP_M_TASKS_CANCEL)
		key = "taskId";
	const json_t *nv = key && m->params ? json_object_get(m->params, key) : NULL;
	if (json_is_string(nv) && (!v->name_hdr || !same(v->name_hdr, json_string_value(nv), json_string_length(nv)))) {
		snprintf(msg, cap, "Mcp-Name header %s params.%s",
			 v->name_hdr ? "does not match" : "missing: it repeats", key);
		return MCP_HEADER_MISMATCH;
	}
	return 0;
}
