/* The QA tools (issue 16): an agent reports a problem, with the calls before it linked,
 * links its calls to a report kept elsewhere, or records an event. Their definitions for
 * tools/list and their arguments, checked here in the jailed mcp worker and put into an
 * F_QA frame; the signer adds who asks, the recorder does the rest. */
#define _GNU_SOURCE
#include "gateway/worker/mcp/qatools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/assent/err.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/limits.h"
#include "gateway/proto/reccfg.h"

char *qatools_defs(const char *qa)
{
	char sub[64], ev[64];
	snprintf(sub, sizeof sub, "%ssubmit_feedback", qa);
	snprintf(ev, sizeof ev, "%srecord_event", qa);
	json_t *a = json_pack(
	    "{s:s,s:s,s:s,s:{s:s,s:{s:{s:s,s:[s,s,s,s]},s:{s:s,s:i},s:{s:s,s:i},s:{s:s,s:i}},s:[s,s,s],s:b},"
	    "s:{s:s,s:{s:{s:s},s:{s:s}}}}",
	    "name", sub, "title", "Report a problem or an idea", "description",
	    "File a bug report, feature request, improvement or question about the tools you use here. The calls you "
	    "made before it (in this session, or lately as this agent) are attached to it for the people who own "
	    "the tools. Answers {feedback_id, linked_calls}.",
	    "inputSchema", "type", "object", "properties", "type", "type", "string", "enum", "bug", "feature",
	    "improvement", "question", "title", "type", "string", "maxLength", 1000, "description", "type", "string",
	    "maxLength", 20000, "contact", "type", "string", "maxLength", 1000, "required", "type", "title",
	    "description", "additionalProperties", 0, "outputSchema", "type", "object", "properties", "feedback_id",
	    "type", "integer", "linked_calls", "type", "integer");
	json_t *e = json_pack(
	    "{s:s,s:s,s:s,s:{s:s,s:{s:{s:s,s:i},s:{s:s,s:i},s:{s:s},s:{s:s}},s:[s],s:b},s:{s:s,s:{s:{s:s}}}}", "name",
	    ev, "title", "Record an event", "description",
	    "Record something that is not a tool call, such as llm.call (attrs: model, provider, duration_ms, "
	    "input_tokens, output_tokens, ok, error) or job.finished, with a key others join on (a job id, a "
	    "session_id). kind: a dotted name of 1 to 128 characters. Answers {queued}.",
	    "inputSchema", "type", "object", "properties", "kind", "type", "string", "maxLength", 128, "key", "type",
	    "string", "maxLength", 255, "attrs", "type", "object", "call_id", "type", "string", "required", "kind",
	    "additionalProperties", 0, "outputSchema", "type", "object", "properties", "queued", "type", "boolean");
	char lk[64];
	snprintf(lk, sizeof lk, "%slink_feedback", qa);
	json_t *l = json_pack(
	    "{s:s,s:s,s:s,s:{s:s,s:{s:{s:s,s:i,s:i},s:{s:s,s:i,s:i}},s:[s],s:b},s:{s:s,s:{s:{s:s},s:{s:s}}}}", "name",
	    lk, "title", "Link your recent calls to a report", "description",
	    "Attach the calls you made before now (in this session first, then lately as this agent) to a report "
	    "kept elsewhere, under its id there (bug-7Q2X, 42): the people who own the tools read them with it. "
	    "Linking again under the same id replaces its links. Answers {feedback_id, linked_calls}.",
	    "inputSchema", "type", "object", "properties", "feedback_id", "type", "string", "minLength", 1, "maxLength",
	    PROTO_FEEDBACK_REF_MAX, "n", "type", "integer", "minimum", 1, "maximum", 20, "required", "feedback_id",
	    "additionalProperties", 0, "outputSchema", "type", "object", "properties", "feedback_id", "type", "string",
	    "linked_calls", "type", "integer");
	char *as = a ? json_dumps(a, JSON_COMPACT) : NULL, *es = e ? json_dumps(e, JSON_COMPACT) : NULL,
	     *ls = l ? json_dumps(l, JSON_COMPACT) : NULL;
	json_decref(a);
	json_decref(e);
	json_decref(l);
	char *out = NULL;
	if (as && es && ls && asprintf(&out, "%s,%s,%s", as, es, ls) < 0)
		out = NULL;
	free(as);
	free(es);
	free(ls);
	return out;
}

static const char *qa_text(const json_t *args, const char *k, size_t max, int required, char *err)
{
	const json_t *v = json_object_get(args, k);
	if (!v && !required)
		return NULL;
	if (!json_is_string(v) || (required && json_string_length(v) == 0) || json_string_length(v) > max) {
		as_fail(err, AS_EINVAL, "%s: %s a string of at most %zu bytes", k, required ? "required," : "expected",
			max);
		return (const char *)-1;
	}
	return json_string_value(v);
}

#define QA_BAD(p) ((p) == (const char *)-1)

/* qa_submit_feedback's arguments into F_QA: 0, AS_EINVAL (err says which), or -1 (too large). */
static int qa_submit_fields(struct cv_arena *a, struct cv *f, const json_t *args, char *err)
{
	const char *type = qa_text(args, "type", 16, 1, err);
	if (QA_BAD(type))
		return AS_EINVAL;
	const char *title = qa_text(args, "title", 1000, 1, err);
	if (QA_BAD(title))
		return AS_EINVAL;
	const char *desc = qa_text(args, "description", 20000, 1, err);
	if (QA_BAD(desc))
		return AS_EINVAL;
	const char *contact = qa_text(args, "contact", 1000, 0, err);
	if (QA_BAD(contact))
		return AS_EINVAL;
	if (strcmp(type, "bug") && strcmp(type, "feature") && strcmp(type, "improvement") && strcmp(type, "question"))
		return as_fail(err, AS_EINVAL, "type: \"%.32s\": expected bug, feature, improvement or question", type);
	return ipc_put_text(a, f, "op", "submit", 6) || ipc_put_text(a, f, "type", type, strlen(type)) ||
		       ipc_put_text(a, f, "title", title, strlen(title)) ||
		       ipc_put_text(a, f, "description", desc, strlen(desc)) ||
		       (contact && ipc_put_text(a, f, "contact", contact, strlen(contact)))
		   ? -1
		   : 0;
}

/* qa_record_event's arguments into F_QA, likewise. */
static int qa_event_fields(struct cv_arena *a, struct cv *f, const json_t *args, char *err)
{
	const char *kind = qa_text(args, "kind", 128, 1, err);
	if (QA_BAD(kind))
		return AS_EINVAL;
	const char *key = qa_text(args, "key", 255, 0, err);
	if (QA_BAD(key))
		return AS_EINVAL;
	const char *call = qa_text(args, "call_id", 64, 0, err);
	if (QA_BAD(call))
		return AS_EINVAL;
	const json_t *attrs = json_object_get(args, "attrs");
	if (attrs && !json_is_object(attrs))
		return as_fail(err, AS_EINVAL, "attrs: expected an object");
	if (!strcmp(kind, "llm.call") && !json_is_string(json_object_get(attrs, "model")))
		return as_fail(err, AS_EINVAL,
			       "an llm.call event needs attrs.model (and may give provider, duration_ms, input_tokens, "
			       "output_tokens, ok, error)");
	char *aj = attrs ? json_dumps(attrs, JSON_COMPACT) : NULL;
	if (attrs && (!aj || strlen(aj) > RECCFG_PAYLOAD_MAX)) {
		free(aj);
		return as_fail(err, AS_EINVAL, "attrs: at most %u bytes of JSON", RECCFG_PAYLOAD_MAX);
	}
	int rc = ipc_put_text(a, f, "op", "event", 5) || ipc_put_text(a, f, "kind", kind, strlen(kind)) ||
		 (key && ipc_put_text(a, f, "key", key, strlen(key))) ||
		 (call && ipc_put_text(a, f, "call", call, strlen(call))) ||
		 (aj && ipc_put_text(a, f, "attrs", aj, strlen(aj)));
	free(aj);
	return rc ? -1 : 0;
}

/* qa_link_feedback's arguments into F_QA: an outside report's id (printable, no control
 * characters) and how many calls at most (the recorder's STORE_LINKS_MAX, 20). */
static int qa_link_fields(struct cv_arena *a, struct cv *f, const json_t *args, char *err)
{
	const char *ref = qa_text(args, "feedback_id", PROTO_FEEDBACK_REF_MAX, 1, err);
	if (QA_BAD(ref))
		return AS_EINVAL;
	for (const unsigned char *p = (const unsigned char *)ref; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return as_fail(err, AS_EINVAL, "feedback_id: no control characters");
	const json_t *n = json_object_get(args, "n");
	if (n && (!json_is_integer(n) || json_integer_value(n) < 1 || json_integer_value(n) > 20))
		return as_fail(err, AS_EINVAL, "n: expected an integer from 1 to 20");
	return ipc_put_text(a, f, "op", "link", 4) || ipc_put_text(a, f, "ref", ref, strlen(ref)) ||
		       (n && ipc_put_uint(a, f, "limit", (uint64_t)json_integer_value(n)))
		   ? -1
		   : 0;
}

enum qa_tool qatools_which(const char *qa, const char *name)
{
	size_t pl = strlen(qa);
	if (!pl || strncmp(name, qa, pl))
		return QA_NONE;
	name += pl;
	return !strcmp(name, "submit_feedback") ? QA_SUBMIT
	       : !strcmp(name, "record_event")	? QA_EVENT
	       : !strcmp(name, "link_feedback") ? QA_LINK
						: QA_NONE;
}

int qatools_fields(enum qa_tool t, const char *name, struct cv_arena *a, struct cv *f, const json_t *args, char *err)
{
	static const char *const keys[][4] = {
	    [QA_SUBMIT] = {"type", "title", "description", "contact"},
	    [QA_EVENT] = {"kind", "key", "attrs", "call_id"},
	    [QA_LINK] = {"feedback_id", "n", "", ""},
	};
	static const char *const said[] = {[QA_SUBMIT] = "type, title, description, contact",
					   [QA_EVENT] = "kind, key, attrs, call_id",
					   [QA_LINK] = "feedback_id, n"};
	if (t == QA_NONE)
		return as_fail(err, AS_EINVAL, "%.64s is not a QA tool", name);
	if (args && !json_is_object(args))
		return as_fail(err, AS_EINVAL, "arguments: expected an object");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)args, k, v)
	{
		size_t i = 0;
		while (i < 4 && (!keys[t][i][0] || strcmp(keys[t][i], k)))
			i++;
		if (i == 4)
			return as_fail(err, AS_EINVAL, "unknown argument \"%.64s\" (%.64s takes %s)", k, name, said[t]);
	}
	return t == QA_SUBMIT ? qa_submit_fields(a, f, args, err)
	       : t == QA_LINK ? qa_link_fields(a, f, args, err)
			      : qa_event_fields(a, f, args, err);
}
