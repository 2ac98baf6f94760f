/* Records from the signer's frames, redacted and bounded (prep.h). */
#include "gateway/recorder/prep.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/text.h"
#include "common/util.h"
#include "gateway/proto/limits.h"

void rec_call_free(struct rec_call *c)
{
	char **f[] = {&c->call_id,	  &c->tool,	  &c->upstream, &c->error_type,	 &c->error_message,
		      &c->session_id,	  &c->request_id, &c->user_sub, &c->caller_kind, &c->client_id,
		      &c->identity,	  &c->arguments,  &c->result,	&c->decision,	 &c->rule,
		      &c->server_version, &c->extra};
	for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
		free(*f[i]);
		*f[i] = NULL;
	}
}

void rec_event_free(struct rec_event *e)
{
	char **f[] = {&e->kind,	       &e->key,	      &e->call_id,	  &e->session_id, &e->user_sub,
		      &e->caller_kind, &e->client_id, &e->server_version, &e->attrs};
	for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
		free(*f[i]);
		*f[i] = NULL;
	}
}

int prep_init(struct prep *p, const struct rec_cfg *c, uint64_t id_seed, char *err)
{
	memset(p, 0, sizeof *p);
	for (size_t i = 0; i < c->nkeys; i++)
		p->keys[i] = c->keys[i];
	for (size_t i = 0; i < c->nprefixes; i++)
		p->prefixes[i] = c->prefixes[i];
	p->rules = (struct redact_rules){p->keys, c->nkeys, p->prefixes, c->nprefixes, 0};
	if (redact_rules_check(&p->rules, err) != 0)
		return AS_EINVAL;
	for (size_t i = 0; i < c->npatterns; i++) { /* checked by the signer against the policy's guard */
		if (regcomp(&p->re[i], c->patterns[i], REG_EXTENDED) != 0) {
			prep_free(p);
			return as_fail(err, AS_EINVAL, "redact_patterns[%zu]: does not compile", i);
		}
		p->nre++;
	}
	p->ids = id_seed;
	return 0;
}

void prep_free(struct prep *p)
{
	for (size_t i = 0; i < p->nre; i++)
		regfree(&p->re[i]);
	p->nre = 0;
}

/* Every match of the operator's expressions in s, replaced by the marker. A match is widened
 * to whole UTF-8 characters (the expressions run in the C locale, where '.' is one byte) so
 * the text stays UTF-8; an empty match steps over one character. NULL when the text cannot
 * be redacted (out of memory, or grown past the bound): never the text half redacted. */
static char *patterns(struct prep *p, char *s)
{
	for (size_t i = 0; s && i < p->nre; i++) {
		struct buf o;
		buf_init(&o, 16u << 20);
		size_t len = strlen(s), at = 0;
		regmatch_t m;
		int any = 0, rc = 0;
		/* REG_STARTEND: regexec searches s[at..len) without measuring the rest of s each time,
		 * and sees the character before at, so ^ and \b keep their meaning after a match. */
		while (!rc && at < len) {
			m.rm_so = (regoff_t)at;
			m.rm_eo = (regoff_t)len;
			if (regexec(&p->re[i], s, 1, &m, REG_STARTEND) != 0)
				break;
			size_t so = (size_t)m.rm_so, eo = (size_t)m.rm_eo;
			if (eo == so) { /* an empty match: keep the text to it and one character more */
				if (so >= len)
					break;
				eo = so + 1;
				while (((unsigned char)s[eo] & 0xC0) == 0x80)
					eo++;
				rc = buf_put(&o, s + at, eo - at);
			} else {
				while (so > at && ((unsigned char)s[so] & 0xC0) == 0x80)
					so--;
				while (((unsigned char)s[eo] & 0xC0) == 0x80)
					eo++;
				rc = buf_put(&o, s + at, so - at) || buf_put(&o, REDACT_MARK, REDACT_MARK_LEN);
				any = 1;
			}
			at = eo;
		}
		if (!rc && !any) {
			buf_free(&o);
			continue;
		}
		if (rc || buf_put(&o, s + at, len - at + 1) != 0) {
			buf_free(&o);
			free(s);
			return NULL;
		}
		free(s);
		s = (char *)o.p; /* the buffer's bytes, NUL-terminated: ours now */
	}
	return s;
}

char *prep_text(struct prep *p, const char *s, size_t n, size_t max)
{
	struct buf o;
	buf_init(&o, 10 * n + 16);
	struct redact_stats st = {0};
	if (redact_text(s, n, &p->rules, &o, &st) != 0 || buf_putc(&o, 0) != 0) {
		buf_free(&o);
		return NULL;
	}
	char *r = patterns(p, (char *)o.p);
	if (r) {
		size_t k = text_cut(r, strlen(r), max);
		r[k] = 0;
	}
	return r;
}

/* Text the worker cut (a payload over RECCFG_PAYLOAD_MAX, an error over PROTO_REC_ERROR_MAX)
 * may end inside a secret too short to be recognised (29 characters of a GitHub token): its
 * last word goes, whatever it is, before the rest is redacted. */
static size_t drop_cut_word(const uint8_t *s, size_t n)
{
	while (n > 0 && (isalnum(s[n - 1]) || (s[n - 1] && strchr("_-.~+/=", s[n - 1]))))
		n--;
	return n;
}

/* A stored payload's object keys are redacted too (a secret can be a key: {"ghp_...": true});
 * the request redactor leaves keys alone, since a forwarded object must keep its keys, but a
 * record is only read. A redacted key that meets another gets "#2", "#3", ... */
static int keys(struct prep *p, json_t *obj)
{
	const char *k;
	json_t *x;
	void *tmp;
	json_t *moved = NULL; /* [[new key, value], ...] */
	json_object_foreach_safe(obj, tmp, k, x)
	{
		char *r = prep_text(p, k, strlen(k), 4096);
		if (!r) {
			json_decref(moved);
			return AS_ENOMEM;
		}
		if (strcmp(r, k)) {
			if (!moved)
				moved = json_array();
			json_array_append_new(moved, json_pack("[s,O]", r, x));
			json_object_del(obj, k);
		}
		free(r);
	}
	size_t i;
	json_t *pair;
	json_array_foreach(moved, i, pair)
	{
		const char *nk0 = json_string_value(json_array_get(pair, 0));
		char nk[4200];
		snprintf(nk, sizeof nk, "%s", nk0 ? nk0 : REDACT_MARK);
		for (unsigned n = 2; json_object_get(obj, nk) && n < 100000; n++)
			snprintf(nk, sizeof nk, "%s#%u", nk0 ? nk0 : REDACT_MARK, n);
		json_object_set(obj, nk, json_array_get(pair, 1));
	}
	json_decref(moved);
	return 0;
}

static int walk(struct prep *p, json_t *v, int depth)
{
	if (depth > REDACT_DEPTH_MAX)
		return AS_EINVAL;
	if (json_is_string(v)) {
		if (!p->nre)
			return 0;
		char *s = strdup(json_string_value(v));
		s = s ? patterns(p, s) : NULL;
		int rc = !s || (strcmp(s, json_string_value(v)) && json_string_set(v, s) != 0);
		free(s);
		return rc ? AS_ENOMEM : 0;
	}
	const char *k;
	json_t *x;
	size_t i;
	int rc = 0;
	if (json_is_object(v)) {
		json_object_foreach(v, k, x)
		{
			if ((rc = walk(p, x, depth + 1)) != 0)
				return rc;
		}
		if ((rc = keys(p, v)) != 0)
			return rc;
	}
	if (json_is_array(v)) {
		json_array_foreach(v, i, x)
		{
			if ((rc = walk(p, x, depth + 1)) != 0)
				return rc;
		}
	}
	return 0;
}

int prep_json(struct prep *p, json_t *v)
{
	struct redact_stats st = {0};
	int rc = redact_json(v, &p->rules, &st);
	return rc ? rc : walk(p, v, 0);
}

static char *dup_field(const struct cv *body, const char *k)
{
	const struct cv *v = cv_get(body, k);
	if (!v || v->t != CV_TEXT)
		return NULL;
	char *s = malloc(v->n + 1);
	if (s) {
		memcpy(s, v->s, v->n);
		s[v->n] = 0;
	}
	return s;
}

static uint64_t uint_field(const struct cv *body, const char *k, uint64_t dflt)
{
	const struct cv *v = cv_get(body, k);
	return v && v->t == CV_UINT ? v->u : dflt;
}

/* Arguments or a result, as JSON text (cut at RECCFG_PAYLOAD_MAX when tot says so): redacted
 * JSON text, or for a cut one {"truncated": true, "total_bytes": N, "head": redacted text}. */
static char *payload(struct prep *p, const struct cv *body, const char *k, const char *totk)
{
	const struct cv *v = cv_get(body, k);
	if (!v || v->t != CV_TEXT)
		return NULL;
	uint64_t tot = uint_field(body, totk, 0);
	int rc;
	json_t *j = tot ? NULL : json_loadb((const char *)v->s, v->n, JSON_DECODE_ANY, NULL);
	if (!j) {
		char *head =
		    prep_text(p, (const char *)v->s, tot ? drop_cut_word(v->s, v->n) : v->n, RECCFG_PAYLOAD_MAX);
		j = json_pack("{s:b,s:I,s:s}", "truncated", 1, "total_bytes", (json_int_t)(tot ? tot : v->n), "head",
			      head ? head : "");
		free(head);
	} else if ((rc = prep_json(p, j)) != 0) {
		json_decref(j);
		j = json_pack("{s:s}", "error",
			      rc == AS_EINVAL ? "too deeply nested to redact: not kept"
					      : "could not be redacted: not kept");
	}
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	return s;
}

static const char *const OUTCOMES[] = {"ok", "soft_error", "error"};

/* "c" and 16 lowercase hex digits: the form of the call ids the signer gives (records.c). */
static int call_id_ok(const struct cv *v)
{
	if (!v || v->t != CV_TEXT || v->n != 17 || v->s[0] != 'c')
		return 0;
	for (size_t i = 1; i < 17; i++)
		if (!strchr("0123456789abcdef", v->s[i]) || !v->s[i])
			return 0;
	return 1;
}

int prep_call(struct prep *p, const struct cv *body, struct rec_call *c, char *err)
{
	memset(c, 0, sizeof *c);
	const struct cv *t0 = cv_get(body, "t0"), *dur = cv_get(body, "dur"), *oc = cv_get(body, "outcome");
	if (!t0 || t0->t != CV_UINT || !dur || dur->t != CV_UINT || !oc || oc->t != CV_UINT ||
	    oc->u > PROTO_REC_OUTCOME_MAX || !(c->tool = dup_field(body, "tool")))
		return as_fail(err, AS_EINVAL, "a call record without its tool, times or outcome");
	char id[24];
	const struct cv *given = cv_get(body, "id"); /* the signer's, when its events name this call */
	if (call_id_ok(given))
		snprintf(id, sizeof id, "%.17s", (const char *)given->s);
	else
		snprintf(id, sizeof id, "c%016llx", (unsigned long long)p->ids++);
	c->call_id = strdup(id);
	c->upstream = dup_field(body, "up");
	c->started_ms = (int64_t)t0->u;
	c->duration_ms = (double)dur->u / 1000.0;
	c->outcome = OUTCOMES[oc->u];
	c->ok = oc->u == 0;
	if (!c->ok) {
		c->error_type = dup_field(body, "etype");
		const struct cv *m = cv_get(body, "emsg");
		if (m && m->t == CV_TEXT)
			c->error_message =
			    prep_text(p, (const char *)m->s,
				      m->n + 4 > PROTO_REC_ERROR_MAX ? drop_cut_word(m->s, m->n) : m->n, REC_ERROR_MAX);
	}
	c->session_id = dup_field(body, "session");
	c->request_id = dup_field(body, "rid");
	c->user_sub = dup_field(body, "user");
	c->caller_kind = dup_field(body, "ckind");
	c->client_id = dup_field(body, "client");
	c->identity = dup_field(body, "identity");
	c->args_size = (int64_t)uint_field(body, "asz", 0);
	c->result_size = cv_get(body, "rsz") ? (int64_t)uint_field(body, "rsz", 0) : -1;
	c->arguments = payload(p, body, "args", "atot");
	c->result = payload(p, body, "res", "rtot");
	c->extra = payload(p, body, "extra", "xtot"); /* the enricher's keys, redacted like a result */
	c->decision = dup_field(body, "decision");
	c->rule = dup_field(body, "rule");
	c->ledger_seq = cv_get(body, "seq") ? (int64_t)uint_field(body, "seq", 0) : -1;
	c->sample_rate =
	    cv_get(body, "rate") ? (double)uint_field(body, "rate", PROTO_REC_RATE_ONE) / PROTO_REC_RATE_ONE : 0;
	c->server_version = dup_field(body, "version");
	return c->call_id ? 0 : as_fail(err, AS_ENOMEM, "out of memory");
}

static void iso_ms(int64_t ms, char out[32])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 32 - n, ".%03dZ", (int)(ms % 1000));
}

static json_t *json_or_null(const char *s)
{
	json_t *j = s ? json_loads(s, JSON_DECODE_ANY, NULL) : NULL;
	return j ? j : json_null();
}

json_t *prep_call_json(const struct rec_call *c)
{
	char at[32];
	iso_ms(c->started_ms, at);
	json_t *j = json_pack(
	    "{s:s,s:s,s:s,s:s?,s:s,s:f,s:s,s:b,s:s?,s:s?,s:s?,s:s?,s:s?,s:s?,s:s?,s:o,s:I,s:o,s:s?,s:s?,s:s?}",
	    "record", "tool_call", "call_id", c->call_id, "tool", c->tool, "upstream", c->upstream, "started_at", at,
	    "duration_ms", c->duration_ms, "outcome", c->outcome, "ok", c->ok, "error_type", c->error_type,
	    "error_message", c->error_message, "session_id", c->session_id, "request_id", c->request_id, "user_sub",
	    c->user_sub, "caller_kind", c->caller_kind, "client_id", c->client_id, "identity",
	    json_or_null(c->identity), "args_size", (json_int_t)c->args_size, "result_size",
	    c->result_size >= 0 ? json_integer(c->result_size) : json_null(), "decision", c->decision, "rule", c->rule,
	    "server_version", c->server_version);
	if (!j)
		return NULL;
	json_object_set_new(j, "ledger_seq", c->ledger_seq >= 0 ? json_integer(c->ledger_seq) : json_null());
	json_object_set_new(j, "sample_rate", c->sample_rate > 0 ? json_real(c->sample_rate) : json_null());
	if (c->arguments)
		json_object_set_new(j, "arguments", json_or_null(c->arguments));
	if (c->result)
		json_object_set_new(j, "result", json_or_null(c->result));
	json_object_set_new(j, "extra", json_or_null(c->extra));
	return j;
}

int prep_event(struct prep *p, const struct cv *body, struct rec_event *e, char *err)
{
	memset(e, 0, sizeof *e);
	const struct cv *at = cv_get(body, "at");
	if (!at || at->t != CV_UINT || !(e->kind = dup_field(body, "kind")))
		return as_fail(err, AS_EINVAL, "an event without its time or kind");
	e->occurred_ms = (int64_t)at->u;
	e->key = dup_field(body, "key");
	e->call_id = dup_field(body, "call");
	e->session_id = dup_field(body, "session");
	e->user_sub = dup_field(body, "user");
	e->caller_kind = dup_field(body, "ckind");
	e->client_id = dup_field(body, "client");
	e->server_version = dup_field(body, "version");
	e->attrs = payload(p, body, "attrs", "attrs_tot");
	if (!e->attrs)
		e->attrs = strdup("{}");
	return e->attrs ? 0 : as_fail(err, AS_ENOMEM, "out of memory");
}

json_t *prep_event_json(const struct rec_event *e)
{
	char at[32];
	iso_ms(e->occurred_ms, at);
	return json_pack("{s:s,s:s,s:s,s:s?,s:s?,s:s?,s:s?,s:s?,s:s?,s:s?,s:o}", "record", "event", "occurred_at", at,
			 "kind", e->kind, "key", e->key, "call_id", e->call_id, "session_id", e->session_id, "user_sub",
			 e->user_sub, "caller_kind", e->caller_kind, "client_id", e->client_id, "server_version",
			 e->server_version, "attrs", json_or_null(e->attrs));
}
