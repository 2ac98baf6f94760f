/* request_feedback's arguments (see mcp.h): checked field by field (type, message,
 * context, options, subjects, deadline), redacted, and encoded as the canonical action
 * the signer digests and decides. Split from mcp.c; no I/O. */
#include <mbedtls/sha256.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/worker/mcp/mcp.h"
#include "gateway/worker/mcp/mcpjson.h"

#include "common/cbor.h"
#include "common/cvjson.h"
#include "gateway/proto/action.h"

/* ---- request_feedback ---- */

static const char *const fb_names[] = {"approval", "input", "selection", "confirmation"};

const char *mcp_fb_type_name(enum mcp_fb_type t)
{
	return (unsigned)t < sizeof fb_names / sizeof *fb_names ? fb_names[t] : "approval";
}

/* Refuse characters a terminal could act on instead of showing: C0 controls (tab and
 * newline excepted when multiline, and \r only before \n), DEL, C1 controls and the
 * bidirectional overrides and isolates ("Trojan Source"). s is valid UTF-8. */
static int check_text(const char *what, const char *s, size_t n, int multiline, char *err)
{
	size_t i;
	uint32_t cp;
	if (text_check(multiline ? TEXT_MULTILINE : TEXT_LINE, s, n, &i, &cp) != 0)
		return as_fail(err, AS_EINVAL,
			       "%s: character U+%04X at byte %zu is not allowed (control and bidirectional "
			       "override characters could hide text from the reviewer)",
			       what, (unsigned)cp, i);
	return 0;
}

/* A string argument of min..max bytes. */
int mcp_arg_str(const json_t *v, const char *what, size_t min, size_t max, int multiline, char *err)
{
	if (!json_is_string(v))
		return as_fail(err, AS_EINVAL, "%s: expected a string, got %s", what, json_kind(v));
	size_t n = json_string_length(v);
	if (n < min)
		return as_fail(err, AS_EINVAL, "%s: must not be empty", what);
	if (n > max)
		return as_fail(err, AS_ETOOBIG, "%s: %zu bytes is over the limit of %zu bytes", what, n, max);
	return check_text(what, json_string_value(v), n, multiline, err);
}

/* Nesting of a context value: a string is 0, an object with only scalars 1. */
static int ctx_depth_ok(const json_t *v, int depth)
{
	if (depth > MCP_CONTEXT_DEPTH)
		return 0;
	if (json_is_object(v)) {
		const char *k;
		const json_t *x;
		json_object_foreach((json_t *)v, k, x)
		{
			if ((json_is_object(x) || json_is_array(x)) && !ctx_depth_ok(x, depth + 1))
				return 0;
		}
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++) {
			const json_t *x = json_array_get(v, i);
			if ((json_is_object(x) || json_is_array(x)) && !ctx_depth_ok(x, depth + 1))
				return 0;
		}
	}
	return 1;
}

static int is_hex64(const char *s, size_t n)
{
	if (n != 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int check_subject(const json_t *s, const char *label, struct mcp_subject *out, size_t *content_total, char *err)
{
	char what[64], qb[QBUF];
	if (!json_is_object(s))
		return as_fail(err, AS_EINVAL,
			       "%s: expected an object {name, digest: {sha256}} or {name, content}, got %s", label,
			       json_kind(s));
	const char *k;
	const json_t *x;
	json_object_foreach((json_t *)s, k, x)
	{
		if (strcmp(k, "name") && strcmp(k, "digest") && strcmp(k, "content"))
			return as_fail(err, AS_EINVAL, "%s: unknown member \"%s\" (expected name, digest, content)",
				       label, mcp_q(qb, k, strlen(k)));
	}
	const json_t *name = json_object_get(s, "name"), *dg = json_object_get(s, "digest"),
		     *ct = json_object_get(s, "content");
	snprintf(what, sizeof what, "%s.name", label);
	if (!name)
		return as_fail(err, AS_EINVAL, "%s: required", what);
	GUARD(mcp_arg_str(name, what, 1, MCP_NAME_MAX, 0, err));
	out->name_len = json_string_length(name);
	memcpy(out->name, json_string_value(name), out->name_len);
	out->name[out->name_len] = 0;
	if (!dg && !ct)
		return as_fail(err, AS_EINVAL, "%s: expected digest {sha256} or content (base64), got neither", label);
	if (dg) {
		snprintf(what, sizeof what, "%s.digest", label);
		if (!json_is_object(dg))
			return as_fail(err, AS_EINVAL, "%s: expected an object {\"sha256\": hex}, got %s", what,
				       json_kind(dg));
		json_object_foreach((json_t *)dg, k, x)
		{
			if (strcmp(k, "sha256"))
				return as_fail(err, AS_EINVAL, "%s: only sha256 is supported, got \"%s\"", what,
					       mcp_q(qb, k, strlen(k)));
		}
		const json_t *h = json_object_get(dg, "sha256");
		snprintf(what, sizeof what, "%s.digest.sha256", label);
		if (!json_is_string(h))
			return as_fail(err, AS_EINVAL, "%s: expected 64 lowercase hex digits, got %s", what,
				       h ? json_kind(h) : "nothing");
		if (!is_hex64(json_string_value(h), json_string_length(h)))
			return as_fail(err, AS_EINVAL,
				       "%s: expected 64 lowercase hex digits, got %zu characters \"%s\"", what,
				       json_string_length(h), mcp_q(qb, json_string_value(h), json_string_length(h)));
		memcpy(out->sha256, json_string_value(h), 65);
	}
	if (ct) {
		snprintf(what, sizeof what, "%s.content", label);
		if (!json_is_string(ct))
			return as_fail(err, AS_EINVAL, "%s: expected a base64 string, got %s", what, json_kind(ct));
		const char *b = json_string_value(ct);
		size_t n = json_string_length(ct), m = 0;
		/* Whitespace is dropped (base64 tools wrap lines): one text, one decoding. */
		char *clean = malloc(n + 1);
		if (!clean)
			return as_fail(err, AS_ENOMEM, "%s: out of memory", what);
		for (size_t i = 0; i < n; i++)
			if (b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n')
				clean[m++] = b[i];
		size_t decoded = m / 4 * 3 - (m >= 1 && clean[m - 1] == '=') - (m >= 2 && clean[m - 2] == '=');
		size_t room = MCP_CONTENT_MAX - *content_total;
		if (m % 4 == 0 && decoded > room) {
			free(clean);
			return as_fail(err, AS_ETOOBIG,
				       "%s: %zu bytes decoded is over the limit of %u bytes for all subjects", what,
				       decoded + *content_total, MCP_CONTENT_MAX);
		}
		out->content = malloc(m ? m / 4 * 3 + 3 : 1);
		int rc = out->content ? 0 : AS_ENOMEM;
		if (rc == 0 && m > 0)
			rc = b64_decode(clean, m, out->content, room, &out->content_len);
		free(clean);
		if (rc == AS_ENOMEM)
			return as_fail(err, rc, "%s: out of memory", what);
		if (rc != 0)
			return as_fail(err, AS_EINVAL, "%s: expected standard base64 (RFC 4648, with padding)", what);
		*content_total += out->content_len;
		uint8_t h[32];
		char hex[65];
		mbedtls_sha256_ret(out->content, out->content_len, h, 0);
		hex_encode(h, sizeof h, hex);
		if (dg && strcmp(hex, out->sha256) != 0)
			return as_fail(err, AS_EINVAL,
				       "%s.digest.sha256: does not match the content, whose SHA-256 is %s", label, hex);
		memcpy(out->sha256, hex, sizeof hex);
		out->computed = 1;
	}
	return 0;
}

static int check_subjects(const json_t *v, struct mcp_feedback *f, char *err)
{
	size_t total = 0;
	char label[32];
	if (json_is_array(v)) {
		size_t n = json_array_size(v);
		if (n == 0 || n > MCP_SUBJECTS_MAX)
			return as_fail(err, AS_EINVAL, "subject: expected 1 to %d subjects, got %zu", MCP_SUBJECTS_MAX,
				       n);
		for (size_t i = 0; i < n; i++) {
			snprintf(label, sizeof label, "subject[%zu]", i);
			f->nsubjects = i + 1; /* so that mcp_feedback_free finds any content already decoded */
			GUARD(check_subject(json_array_get(v, i), label, &f->subjects[i], &total, err));
			for (size_t j = 0; j < i; j++)
				if (f->subjects[j].name_len == f->subjects[i].name_len &&
				    !memcmp(f->subjects[j].name, f->subjects[i].name, f->subjects[i].name_len))
					return as_fail(err, AS_EINVAL, "%s.name: duplicate of subject[%zu].name", label,
						       j);
		}
		return 0;
	}
	f->nsubjects = 1;
	return check_subject(v, "subject", &f->subjects[0], &total, err);
}

static int check_options(const json_t *v, struct mcp_feedback *f, char *err)
{
	if (!json_is_array(v))
		return as_fail(err, AS_EINVAL, "options: expected an array of strings, got %s", json_kind(v));
	size_t n = json_array_size(v);
	if (n == 0 || n > MCP_OPTIONS_MAX)
		return as_fail(err, AS_EINVAL, "options: expected 1 to %d options, got %zu", MCP_OPTIONS_MAX, n);
	char what[32];
	for (size_t i = 0; i < n; i++) {
		snprintf(what, sizeof what, "options[%zu]", i);
		const json_t *o = json_array_get(v, i);
		GUARD(mcp_arg_str(o, what, 1, MCP_OPTION_MAX, 0, err));
		for (size_t j = 0; j < i; j++)
			if (json_equal(o, json_array_get(v, j)))
				return as_fail(err, AS_EINVAL, "%s: duplicate of options[%zu]", what, j);
	}
	f->options = calloc(n, sizeof *f->options);
	f->option_len = calloc(n, sizeof *f->option_len);
	if (!f->options || !f->option_len)
		return as_fail(err, AS_ENOMEM, "options: out of memory");
	f->noptions = n;
	for (size_t i = 0; i < n; i++) {
		const json_t *o = json_array_get(v, i);
		f->option_len[i] = json_string_length(o);
		if (!(f->options[i] = mcp_dup_n(json_string_value(o), f->option_len[i])))
			return as_fail(err, AS_ENOMEM, "options: out of memory");
	}
	return 0;
}

/* An optional argument; null counts as absent (models often send null for "not given"). */
static const json_t *arg(const json_t *args, const char *name)
{
	const json_t *v = args ? json_object_get(args, name) : NULL;
	return json_is_null(v) ? NULL : v;
}

static const char *const fb_args[] = {"type",	 "message",  "context", "options", "default", "timeout_override",
				      "subject", "audience", "wait"};

/* Every argument is one request_feedback has. */
static int known_args(const json_t *args, char *err)
{
	char qb[QBUF];
	const char *k;
	const json_t *x;
	json_object_foreach((json_t *)args, k, x)
	{
		size_t i = 0;
		while (i < sizeof fb_args / sizeof *fb_args && strcmp(k, fb_args[i]))
			i++;
		if (i == sizeof fb_args / sizeof *fb_args)
			return as_fail(err, AS_EINVAL,
				       "unknown argument \"%s\" (expected type, message, context, options, default, "
				       "timeout_override, subject, audience, wait)",
				       mcp_q(qb, k, strlen(k)));
	}
	return 0;
}

/* type: required, one of the four, into out->type. */
static int check_type(const json_t *type, struct mcp_feedback *out, char *err)
{
	char qb[QBUF];
	if (!type)
		return as_fail(err, AS_EINVAL, "type: required, one of approval, input, selection, confirmation");
	if (!json_is_string(type))
		return as_fail(err, AS_EINVAL, "type: expected one of approval, input, selection, confirmation, got %s",
			       json_kind(type));
	size_t t = 0;
	while (t < 4 &&
	       !(strlen(fb_names[t]) == json_string_length(type) && !strcmp(fb_names[t], json_string_value(type))))
		t++;
	if (t == 4)
		return as_fail(err, AS_EINVAL,
			       "type: expected one of approval, input, selection, confirmation, got \"%s\"",
			       mcp_q(qb, json_string_value(type), json_string_length(type)));
	out->type = (enum mcp_fb_type)t;
	return 0;
}

/* timeout_override: whole seconds, 1 to MCP_TIMEOUT_MAX, into out->timeout. */
static int check_timeout(const json_t *tmo, struct mcp_feedback *out, char *err)
{
	if (!json_is_integer(tmo))
		return as_fail(err, AS_EINVAL, "timeout_override: expected an integer number of seconds, got %s",
			       json_kind(tmo));
	json_int_t s = json_integer_value(tmo);
	if (s < 1 || s > MCP_TIMEOUT_MAX)
		return as_fail(err, AS_EINVAL, "timeout_override: expected 1 to %d seconds, got %lld", MCP_TIMEOUT_MAX,
			       (long long)s);
	out->timeout = (uint32_t)s;
	return 0;
}

/* audience: [A-Za-z0-9._:/-] only, into out->audience. */
static int check_audience(const json_t *aud, struct mcp_feedback *out, char *err)
{
	char qb[QBUF];
	GUARD(mcp_arg_str(aud, "audience", 1, MCP_AUDIENCE_MAX, 0, err));
	const char *a = json_string_value(aud);
	for (size_t i = 0; i < json_string_length(aud); i++) {
		char c = a[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == ':' || c == '/' || c == '-'))
			return as_fail(err, AS_EINVAL, "audience: expected only [A-Za-z0-9._:/-], got \"%s\"",
				       mcp_q(qb, a, json_string_length(aud)));
	}
	memcpy(out->audience, a, json_string_length(aud) + 1);
	return 0;
}

int mcp_check_request_feedback(const json_t *args, struct mcp_feedback *out, char *err)
{
	char qb[QBUF];
	memset(out, 0, sizeof *out);
	out->wait = 1;
	int rc = 0;
	if (args && !json_is_object(args))
		return as_fail(err, AS_EINVAL, "arguments: expected an object, got %s", json_kind(args));
	GUARD(known_args(args, err));
	const json_t *type = arg(args, "type"), *msg = arg(args, "message"), *ctx = arg(args, "context"),
		     *opts = arg(args, "options"), *dflt = arg(args, "default"), *tmo = arg(args, "timeout_override"),
		     *subj = arg(args, "subject"), *aud = arg(args, "audience"), *wait = arg(args, "wait");
	GUARD(check_type(type, out, err));
	size_t t = out->type;

	if (!msg)
		return as_fail(err, AS_EINVAL, "message: required: what the reviewer is asked");
	GUARD(mcp_arg_str(msg, "message", 1, MCP_MESSAGE_MAX, 1, err));

	if (out->type == MCP_FB_SELECTION && !opts)
		return as_fail(err, AS_EINVAL, "options: required for type selection (1 to %d strings)",
			       MCP_OPTIONS_MAX);
	if (out->type != MCP_FB_SELECTION && opts)
		return as_fail(err, AS_EINVAL, "options: only valid with type selection, not %s", fb_names[t]);
	if (dflt) {
		if (out->type == MCP_FB_APPROVAL || out->type == MCP_FB_CONFIRMATION)
			return as_fail(
			    err, AS_EINVAL,
			    "default: only valid with type input or selection (an %s needs an explicit decision)",
			    fb_names[t]);
		GUARD(mcp_arg_str(dflt, "default", 0, MCP_DEFAULT_MAX, 1, err));
	}
	if (ctx) {
		if (!json_is_string(ctx) && !json_is_object(ctx))
			return as_fail(err, AS_EINVAL, "context: expected an object or a string, got %s",
				       json_kind(ctx));
		if (!ctx_depth_ok(ctx, json_is_object(ctx) ? 1 : 0))
			return as_fail(err, AS_EINVAL, "context: nested deeper than %d levels", MCP_CONTEXT_DEPTH);
	}
	if (tmo)
		GUARD(check_timeout(tmo, out, err));
	if (aud)
		GUARD(check_audience(aud, out, err));
	if (wait) {
		if (!json_is_boolean(wait))
			return as_fail(err, AS_EINVAL, "wait: expected true or false, got %s", json_kind(wait));
		out->wait = json_is_true(wait);
	}
	/* Copies last, after every cheap check; failures from here on free what was made. */
	if (opts)
		rc = check_options(opts, out, err);
	if (rc == 0 && dflt && out->type == MCP_FB_SELECTION) {
		size_t i = 0;
		while (i < out->noptions && !json_equal(dflt, json_array_get(opts, i)))
			i++;
		if (i == out->noptions)
			rc = as_fail(err, AS_EINVAL, "default: must be one of options for type selection, got \"%s\"",
				     mcp_q(qb, json_string_value(dflt), json_string_length(dflt)));
	}
	if (rc == 0 && subj)
		rc = check_subjects(subj, out, err);
	if (rc == 0) {
		out->message_len = json_string_length(msg);
		out->message = mcp_dup_n(json_string_value(msg), out->message_len);
		out->dflt_len = dflt ? json_string_length(dflt) : 0;
		out->dflt = dflt ? mcp_dup_n(json_string_value(dflt), out->dflt_len) : NULL;
		out->context = ctx ? json_deep_copy(ctx) : NULL;
		if (!out->message || (dflt && !out->dflt) || (ctx && !out->context))
			rc = as_fail(err, AS_ENOMEM, "request_feedback: out of memory");
	}
	if (rc != 0)
		mcp_feedback_free(out);
	return rc;
}

void mcp_feedback_free(struct mcp_feedback *f)
{
	if (!f)
		return;
	free(f->message);
	free(f->dflt);
	json_decref(f->context);
	for (size_t i = 0; f->options && i < f->noptions; i++)
		free(f->options[i]);
	free(f->options);
	free(f->option_len);
	for (size_t i = 0; i < f->nsubjects && i < MCP_SUBJECTS_MAX; i++)
		free(f->subjects[i].content);
	memset(f, 0, sizeof *f);
}

/* Redact one owned string in place; refuse a result over max. */
static int redact_owned(char **s, size_t *n, size_t max, const char *what, const struct redact_rules *r,
			struct redact_stats *st, char *err)
{
	struct buf b;
	buf_init(&b, max + 1);
	int rc = redact_text(*s, *n, r, &b, st);
	if (rc == 0 && b.len > max)
		rc = AS_ETOOBIG;
	if (rc == 0 && (b.len != *n || memcmp(b.p, *s, *n) != 0)) {
		char *c = mcp_dup_n(b.len ? (const char *)b.p : "", b.len);
		if (!c) {
			rc = AS_ENOMEM;
		} else {
			free(*s);
			*s = c;
			*n = b.len;
		}
	}
	buf_free(&b);
	if (rc == AS_ETOOBIG)
		return as_fail(err, rc, "%s: over %zu bytes once secrets are marked", what, max);
	if (rc != 0)
		return as_fail(err, rc, "%s: redaction failed: %s", what, as_strerror(rc));
	return 0;
}

const struct redact_rules mcp_view_rules = {NULL, 0, NULL, 0, 1};

int mcp_feedback_redact(struct mcp_feedback *f, const struct redact_rules *r, size_t context_max, char *err)
{
	GUARD(redact_rules_check(r, err));
	if (context_max == 0)
		context_max = REDACT_CONTEXT_MAX;
	if (context_max < REDACT_BOUND_MIN || context_max > MCP_ACTION_MAX / 2)
		return as_fail(err, AS_EINVAL, "context bound: expected %d to %u bytes, got %zu", REDACT_BOUND_MIN,
			       MCP_ACTION_MAX / 2, context_max);
	if (!f->message)
		return as_fail(err, AS_EINVAL, "request_feedback: nothing to redact");
	GUARD(redact_owned(&f->message, &f->message_len, MCP_MESSAGE_MAX, "message", r, &f->stats, err));
	char what[32];
	for (size_t i = 0; i < f->noptions; i++) {
		snprintf(what, sizeof what, "options[%zu]", i);
		GUARD(redact_owned(&f->options[i], &f->option_len[i], MCP_OPTION_MAX, what, r, &f->stats, err));
	}
	if (f->dflt)
		GUARD(redact_owned(&f->dflt, &f->dflt_len, MCP_DEFAULT_MAX, "default", r, &f->stats, err));
	if (f->context) {
		json_t *before = f->context;
		int rc = redact_json(f->context, r, &f->stats);
		if (rc == 0)
			rc = redact_bound(&f->context, context_max);
		if (rc == 0 && f->context != before) {
			f->truncated = 1;
			rc = redact_json(f->context, r, &f->stats); /* the head, cut anywhere */
		}
		if (rc != 0)
			return as_fail(err, rc, "context: redaction failed: %s", as_strerror(rc));
	}
	f->redacted = 1;
	return 0;
}

/* ---- the canonical action ---- */

static int put_text(struct cv_arena *a, struct cv *kv, const char *key, const char *val, size_t n)
{
	GUARD(cv_set_text(a, &kv[0], key, strlen(key)));
	return cv_set_text(a, &kv[1], val, n);
}

static int build_action(struct cv_arena *a, const struct mcp_feedback *f, struct cv **out, char *err)
{
	size_t n = 2 + (f->context != NULL) + (f->noptions > 0) + (f->dflt != NULL) + (f->nsubjects > 0) +
		   (f->audience[0] != 0);
	struct cv *m = cv_map(a, n);
	if (!m)
		return as_fail(err, AS_ENOMEM, "action: out of memory");
	struct cv *kv = m->items;
	const char *tn = mcp_fb_type_name(f->type);
	GUARD(put_text(a, kv, "type", tn, strlen(tn)));
	kv += 2;
	GUARD(put_text(a, kv, "message", f->message, f->message_len));
	kv += 2;
	if (f->context) {
		GUARD(cv_set_text(a, &kv[0], "context", 7));
		GUARD(cv_from_json_value(a, f->context, &kv[1], 1, &cvj_context, err));
		kv += 2;
	}
	if (f->noptions) {
		GUARD(cv_set_text(a, &kv[0], "options", 7));
		struct cv *arr = cv_array(a, f->noptions);
		if (!arr)
			return as_fail(err, AS_ENOMEM, "action: out of memory");
		for (size_t i = 0; i < f->noptions; i++)
			GUARD(cv_set_text(a, &arr->items[i], f->options[i], f->option_len[i]));
		kv[1] = *arr;
		kv += 2;
	}
	if (f->dflt) {
		GUARD(put_text(a, kv, "default", f->dflt, f->dflt_len));
		kv += 2;
	}
	if (f->nsubjects) {
		GUARD(cv_set_text(a, &kv[0], "subject", 7));
		struct cv *arr = cv_array(a, f->nsubjects);
		if (!arr)
			return as_fail(err, AS_ENOMEM, "action: out of memory");
		for (size_t i = 0; i < f->nsubjects; i++) {
			const struct mcp_subject *s = &f->subjects[i];
			struct cv *sm = cv_map(a, s->computed ? 4 : 3), *dg = cv_map(a, 1);
			if (!sm || !dg)
				return as_fail(err, AS_ENOMEM, "action: out of memory");
			GUARD(put_text(a, dg->items, "sha256", s->sha256, 64));
			GUARD(put_text(a, sm->items, "name", s->name, s->name_len));
			GUARD(cv_set_text(a, &sm->items[2], "digest", 6));
			sm->items[3] = *dg;
			GUARD(cv_set_text(a, &sm->items[4], "computed", 8));
			sm->items[5].t = s->computed ? CV_TRUE : CV_FALSE;
			if (s->computed) {
				GUARD(cv_set_text(a, &sm->items[6], "size", 4));
				cv_set_uint(&sm->items[7], s->content_len);
			}
			arr->items[i] = *sm;
		}
		kv[1] = *arr;
		kv += 2;
	}
	if (f->audience[0]) {
		GUARD(put_text(a, kv, "audience", f->audience, strlen(f->audience)));
		kv += 2;
	}
	*out = m;
	return 0;
}

int mcp_feedback_action(const struct mcp_feedback *f, struct buf *out, char *err)
{
	if (!f->redacted || !f->message)
		return as_fail(err, AS_EINVAL, "action: request not redacted (call mcp_feedback_redact first)");
	struct cv_arena a;
	struct cv *m = NULL;
	/* Every context item came from at most MCP_ACTION_MAX / 2 bytes of JSON. */
	cv_arena_init(&a, MCP_ACTION_MAX + 4096);
	size_t start = out->len;
	if (err)
		err[0] = 0;
	int rc = build_action(&a, f, &m, err);
	if (rc == AS_ENOMEM && err && !err[0])
		as_fail(err, rc, "action: out of memory");
	if (rc == 0) /* the signer's own check (action.c): what it would refuse is never sent */
		rc = action_check(m, err);
	if (rc == 0)
		rc = cbor_encode(m, out, err);
	if (rc != 0)
		out->len = start;
	cv_arena_free(&a);
	return rc;
}
