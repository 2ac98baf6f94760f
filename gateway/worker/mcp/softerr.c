/* Soft errors in tool results (softerr.h has the rules): which payload a result carries,
 * whether it reports a failure, and the bounded UTF-8 message that says which. */
#include <string.h>

#include "gateway/worker/mcp/softerr.h"
#include "common/text.h"
#include "common/util.h"

static const char *const builtin_statuses[] = {"error", "failed", "failure"};

/* ASCII case-insensitive equality of s[0..n) and the NUL-terminated word w: no locale. */
static int word_eq_ci(const char *s, size_t n, const char *w)
{
	size_t i;
	for (i = 0; i < n && w[i]; i++) {
		unsigned char a = (unsigned char)s[i], b = (unsigned char)w[i];
		if (a >= 'A' && a <= 'Z')
			a = (unsigned char)(a - 'A' + 'a');
		if (b >= 'A' && b <= 'Z')
			b = (unsigned char)(b - 'A' + 'a');
		if (a != b)
			return 0;
	}
	return i == n && !w[i];
}

static int status_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
	       c == '-';
}

int softerr_rules_check(const struct softerr_rules *r, char *err)
{
	if (!r || r->nstatuses == 0)
		return 0;
	if (r->nstatuses > SOFTERR_STATUSES_MAX)
		return as_fail(err, AS_EINVAL, "soft-error statuses: %zu given, at most %d", r->nstatuses,
			       SOFTERR_STATUSES_MAX);
	if (!r->statuses)
		return as_fail(err, AS_EINVAL, "soft-error statuses: %zu announced but no list given", r->nstatuses);
	for (size_t i = 0; i < r->nstatuses; i++) {
		const char *s = r->statuses[i];
		if (!s)
			return as_fail(err, AS_EINVAL, "soft-error status %zu: missing (NULL)", i);
		size_t n = strnlen(s, SOFTERR_STATUS_MAX + 1);
		if (n == 0 || n > SOFTERR_STATUS_MAX)
			return as_fail(err, AS_EINVAL, "soft-error status %zu: %s bytes long, expected 1..%d", i,
				       n ? "more than 64" : "0", SOFTERR_STATUS_MAX);
		for (size_t k = 0; k < n; k++)
			if (!status_char((unsigned char)s[k]))
				/* The prefix shown is all [A-Za-z0-9_.-]: safe to print. */
				return as_fail(
				    err, AS_EINVAL,
				    "soft-error status %zu: byte 0x%02x at offset %zu after \"%.*s\", expected "
				    "only A-Z a-z 0-9 _ . -",
				    i, (unsigned char)s[k], k, (int)k, s);
	}
	return 0;
}

/* ---- the message: a bounded writer that keeps whole UTF-8 characters ---- */

struct msgw {
	char *p;
	size_t max; /* bytes for text, the NUL excluded */
	size_t len;
	int full; /* a character did not fit: nothing more is written */
};

static void msg_put(struct msgw *w, const char *s, size_t n)
{
	static const char repl[] = "\xef\xbf\xbd"; /* U+FFFD */
	if (!w->p)
		return;
	for (size_t i = 0; i < n && !w->full;) {
		size_t l;
		uint32_t cp = text_cp((const uint8_t *)s, n, i, &l);
		const char *c = s + i;
		size_t cl = l;
		if (cp == TEXT_BAD_BYTE || cp == 0)
			c = repl, cl = sizeof repl - 1;
		if (w->max - w->len < cl) {
			w->full = 1;
			break;
		}
		memcpy(w->p + w->len, c, cl);
		w->len += cl;
		i += l;
	}
	w->p[w->len] = 0;
}

static void msg_puts(struct msgw *w, const char *s)
{
	msg_put(w, s, strlen(s));
}

/* ---- the payload ---- */

/* The text of the first text item of content, or NULL. */
static const json_t *first_text(const json_t *result)
{
	const json_t *content = json_object_get(result, "content");
	size_t i;
	const json_t *item;
	json_array_foreach(content, i, item)
	{
		const json_t *type = json_object_get(item, "type");
		const json_t *text = json_object_get(item, "text");
		if (json_is_string(type) && strcmp(json_string_value(type), "text") == 0 &&
		    json_string_length(type) == 4 && json_is_string(text))
			return text;
	}
	return NULL;
}

/* The payload (a borrowed reference, or one parsed into *owned that the caller
 * releases), or NULL. */
static const json_t *payload_of(const json_t *result, json_t **owned)
{
	*owned = NULL;
	const json_t *sc = json_object_get(result, "structuredContent");
	if (json_is_object(sc))
		return sc;
	const json_t *text = first_text(result);
	if (!text || json_string_length(text) > SOFTERR_TEXT_MAX)
		return NULL;
	json_t *j = json_loadb(json_string_value(text), json_string_length(text), JSON_ALLOW_NUL, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return NULL;
	}
	*owned = j;
	return j;
}

static const json_t *nonempty_string(const json_t *v)
{
	return json_is_string(v) && json_string_length(v) > 0 ? v : NULL;
}

static const json_t *detail_of(const json_t *p)
{
	static const char *const keys[] = {"error", "message", "detail", "reason"};
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		const json_t *v = json_object_get(p, keys[i]);
		if (i == 0 && json_is_object(v))
			v = json_object_get(v, "message");
		if (nonempty_string(v))
			return v;
	}
	return NULL;
}

static int status_matches(const json_t *v, const struct softerr_rules *r)
{
	if (!json_is_string(v))
		return 0;
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	for (size_t i = 0; i < sizeof builtin_statuses / sizeof *builtin_statuses; i++)
		if (word_eq_ci(s, n, builtin_statuses[i]))
			return 1;
	if (r && r->statuses)
		for (size_t i = 0; i < r->nstatuses && i < SOFTERR_STATUSES_MAX; i++)
			if (r->statuses[i] && word_eq_ci(s, n, r->statuses[i]))
				return 1;
	return 0;
}

int softerr_classify(const json_t *result, const struct softerr_rules *r, char *msg, size_t msgmax)
{
	if (!json_is_object(result))
		return 0;
	json_t *owned;
	const json_t *p = payload_of(result, &owned);
	const char *flag = NULL, *status_key = NULL;
	const json_t *status = NULL;
	if (p) {
		if (json_is_false(json_object_get(p, "ok")))
			flag = "ok=false";
		else if (json_is_false(json_object_get(p, "success")))
			flag = "success=false";
		static const char *const skeys[] = {"status", "state"};
		for (size_t i = 0; i < 2 && !status; i++)
			if (status_matches(json_object_get(p, skeys[i]), r))
				status_key = skeys[i], status = json_object_get(p, skeys[i]);
	}
	int is_error = json_is_true(json_object_get(result, "isError"));
	if (!flag && !status && !is_error) {
		json_decref(owned);
		return 0;
	}
	struct msgw w = {msg && msgmax ? msg : NULL, msgmax ? msgmax - 1 : 0, 0, 0};
	const json_t *detail = p ? detail_of(p) : NULL;
	const json_t *text;
	if (status) {
		msg_puts(&w, status_key);
		msg_puts(&w, "=");
		msg_put(&w, json_string_value(status), json_string_length(status));
		if (detail) {
			msg_puts(&w, ": ");
			msg_put(&w, json_string_value(detail), json_string_length(detail));
		}
	} else if (detail)
		msg_put(&w, json_string_value(detail), json_string_length(detail));
	else if (flag)
		msg_puts(&w, flag);
	else if ((text = nonempty_string(first_text(result))) != NULL)
		msg_put(&w, json_string_value(text), json_string_length(text));
	else
		msg_puts(&w, "isError");
	json_decref(owned);
	return 1;
}
