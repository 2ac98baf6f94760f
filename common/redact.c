/* Secret redaction (see redact.h for exactly what is replaced and why). Hand-written
 * matchers, no regex engine: the text is cut into words once, every matcher starts
 * at a word start and scans forward a bounded number of runs, so redacting is linear
 * in the text, whatever an agent sends. */
#include "common/redact.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- character classes ---- */

static int is_word(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}
static int is_upper(unsigned char c)
{
	return c >= 'A' && c <= 'Z';
}
static int is_lower(unsigned char c)
{
	return c >= 'a' && c <= 'z';
}
static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}
static int is_alnum(unsigned char c)
{
	return is_upper(c) || is_lower(c) || is_digit(c);
}
static int is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
/* Characters of a bearer token (RFC 6750 b64token, plus '~'). */
static int is_token68(unsigned char c)
{
	return is_word(c) || c == '.' || c == '~' || c == '+' || c == '/' || c == '=';
}
static unsigned char lower(unsigned char c)
{
	return is_upper(c) ? (unsigned char)(c - 'A' + 'a') : c;
}
/* Key names compare case-insensitively with '-' and '_' alike (X-Api-Key = x_api_key). */
static unsigned char keyfold(unsigned char c)
{
	return c == '-' ? '_' : lower(c);
}

/* Random tokens have a digit or a lowercase letter directly followed by an uppercase
 * one ("aB"); prose words almost never do. Replacing text with REDACT_MARK never
 * creates either (the marker is bracketed and has no digit), which keeps the rules
 * that use this test idempotent. */
static int looks_random(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (is_digit(c) || (i > 0 && is_lower((unsigned char)s[i - 1]) && is_upper(c)))
			return 1;
	}
	return 0;
}

static int has_prefix(const char *s, size_t n, const char *p)
{
	size_t k = strlen(p);
	return n >= k && memcmp(s, p, k) == 0;
}

/* Digits at s[i..): how many (0 when none, or when more than 20). */
static size_t digits_at(const char *s, size_t n, size_t i)
{
	size_t k = 0;
	while (i + k < n && is_digit((unsigned char)s[i + k]) && k <= 20)
		k++;
	return k > 20 ? 0 : k;
}

static int lit_at(const char *s, size_t n, size_t *i, const char *lit)
{
	size_t k = strlen(lit);
	if (n - *i < k || memcmp(s + *i, lit, k))
		return 0;
	*i += k;
	return 1;
}

size_t redact_mark_len(const char *s, size_t n)
{
	if (n >= REDACT_MARK_LEN && memcmp(s, REDACT_MARK, REDACT_MARK_LEN) == 0)
		return REDACT_MARK_LEN;
	size_t i = 0, d;
	if (!lit_at(s, n, &i, "[secret: ") || !(d = digits_at(s, n, i)))
		return 0;
	i += d;
	if (!lit_at(s, n, &i, " chars") && !lit_at(s, n, &i, " char"))
		return 0;
	size_t j = i;
	if (lit_at(s, n, &j, ", ") && (d = digits_at(s, n, j)) != 0) {
		j += d;
		if (lit_at(s, n, &j, " lines"))
			i = j;
	}
	return lit_at(s, n, &i, "]") ? i : 0;
}

/* Characters and lines of s[0..n): characters are UTF-8 lead bytes (any byte that is
 * not a continuation byte), lines one more than the line feeds. */
static void count_text(const char *s, size_t n, size_t *chars, size_t *lines)
{
	*chars = 0;
	*lines = 1;
	for (size_t i = 0; i < n; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			(*chars)++;
		if (s[i] == '\n')
			(*lines)++;
	}
}

/* The marker for s[0..n): REDACT_MARK for records, "[secret: N chars]" (with ", L
 * lines" when more than one) for what reviewers read. */
static int put_mark(struct buf *out, const struct redact_rules *r, const char *s, size_t n, struct redact_stats *st)
{
	size_t chars, lines;
	count_text(s, n, &chars, &lines);
	if (st)
		st->chars += chars;
	if (!r || !r->view)
		return buf_put(out, REDACT_MARK, REDACT_MARK_LEN);
	if (lines > 1)
		return buf_printf(out, "[secret: %zu chars, %zu lines]", chars, lines);
	return buf_printf(out, "[secret: %zu %s]", chars, chars == 1 ? "char" : "chars");
}

/* ---- key names ---- */

static const char *const builtin_keys[] = {
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "api_key",
    "apikey",
    "authorization",
    "proxy_authorization",
    "client_secret",
    "private_key",
    "secret_key",
    "secret_access_key",
    "aws_secret_access_key",
    "cookie",
    "set_cookie",
};
static const char *const builtin_suffixes[] = {"_api_key", "_token", "_secret", "_password", "_passwd"};
/* Keys whose text value is an HTTP header value: it runs to the end of the line. */
static const char *const line_keys[] = {"authorization", "proxy_authorization", "cookie", "set_cookie"};

static int key_eq(const char *k, size_t n, const char *name)
{
	size_t m = strlen(name);
	if (n != m)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (keyfold((unsigned char)k[i]) != keyfold((unsigned char)name[i]))
			return 0;
	return 1;
}

static int key_ends(const char *k, size_t n, const char *suffix)
{
	size_t m = strlen(suffix);
	return n > m && key_eq(k + n - m, m, suffix);
}

int redact_key_secret(const char *key, size_t len, const struct redact_rules *r)
{
	for (size_t i = 0; i < sizeof builtin_keys / sizeof *builtin_keys; i++)
		if (key_eq(key, len, builtin_keys[i]))
			return 1;
	for (size_t i = 0; i < sizeof builtin_suffixes / sizeof *builtin_suffixes; i++)
		if (key_ends(key, len, builtin_suffixes[i]))
			return 1;
	for (size_t i = 0; r && i < r->nkeys; i++)
		if (r->keys[i] && key_eq(key, len, r->keys[i]))
			return 1;
	return 0;
}

static int line_key(const char *k, size_t n)
{
	for (size_t i = 0; i < sizeof line_keys / sizeof *line_keys; i++)
		if (key_eq(k, n, line_keys[i]))
			return 1;
	return 0;
}

int redact_rules_check(const struct redact_rules *r, char *err)
{
	if (!r)
		return 0;
	if (r->nkeys > REDACT_RULES_MAX || r->nprefixes > REDACT_RULES_MAX)
		return as_fail(err, AS_EINVAL, "redaction rules: at most %d keys and %d prefixes", REDACT_RULES_MAX,
			       REDACT_RULES_MAX);
	if ((r->nkeys && !r->keys) || (r->nprefixes && !r->prefixes))
		return as_fail(err, AS_EINVAL, "redaction rules: list missing");
	for (size_t i = 0; i < r->nkeys; i++) {
		const char *k = r->keys[i];
		size_t n = k ? strnlen(k, REDACT_NAME_MAX + 1) : 0;
		if (n == 0 || n > REDACT_NAME_MAX)
			return as_fail(err, AS_EINVAL, "redaction key %zu: expected 1 to %d characters", i + 1,
				       REDACT_NAME_MAX);
		for (size_t j = 0; j < n; j++)
			if (!is_word((unsigned char)k[j]) && k[j] != '.')
				return as_fail(err, AS_EINVAL, "redaction key %zu: only [A-Za-z0-9_.-] allowed", i + 1);
	}
	for (size_t i = 0; i < r->nprefixes; i++) {
		const char *p = r->prefixes[i];
		size_t n = p ? strnlen(p, REDACT_NAME_MAX + 1) : 0;
		if (n < REDACT_PREFIX_MIN || n > REDACT_NAME_MAX)
			return as_fail(err, AS_EINVAL, "redaction prefix %zu: expected %d to %d characters", i + 1,
				       REDACT_PREFIX_MIN, REDACT_NAME_MAX);
		for (size_t j = 0; j < n; j++)
			if (!is_word((unsigned char)p[j]))
				return as_fail(err, AS_EINVAL, "redaction prefix %zu: only [A-Za-z0-9_-] allowed",
					       i + 1);
	}
	return 0;
}

/* ---- text matchers ----
 * Each looks at the word s[i..we) (a maximal run of word characters) and, on a
 * match, sets [*rs, *re) to the span to replace (empty when it already holds the
 * marker) and *next to where scanning resumes (>= *re, never inside a word that
 * was not looked at). */

struct span {
	size_t rs, re, next;
};

static size_t word_end(const char *s, size_t n, size_t i)
{
	while (i < n && is_word((unsigned char)s[i]))
		i++;
	return i;
}

/* eyJ<word>.eyJ<word>.<word>: base64url JSON header and payload, then a signature. */
static int m_jwt(const char *s, size_t n, size_t i, size_t we, struct span *m)
{
	if (we - i <= 3 || memcmp(s + i, "eyJ", 3) != 0 || we >= n || s[we] != '.')
		return 0;
	size_t b = we + 1, be = word_end(s, n, b);
	if (be - b <= 3 || memcmp(s + b, "eyJ", 3) != 0 || be >= n || s[be] != '.')
		return 0;
	size_t c = be + 1, ce = word_end(s, n, c);
	if (ce == c)
		return 0;
	m->rs = i;
	m->re = m->next = ce;
	return 1;
}

struct prefix_rule {
	const char *prefix;
	size_t min_tail;
	int need_random; /* the tail must look random (a digit or an aB) */
	int alnum_only;
};
static const struct prefix_rule prefix_rules[] = {
    {"sk-", 20, 1, 0}, /* OpenAI (sk-, sk-proj-), Anthropic (sk-ant-) */
    {"ghp_", 30, 0, 1},	 {"gho_", 30, 0, 1},	    {"ghu_", 30, 0, 1},	 {"ghs_", 30, 0, 1},
    {"ghr_", 30, 0, 1},	 {"github_pat_", 22, 0, 0}, {"xoxb-", 10, 0, 0}, {"xoxp-", 10, 0, 0},
    {"xoxa-", 10, 0, 0}, {"xoxr-", 10, 0, 0},	    {"xoxs-", 10, 0, 0}, {"pypi-AgE", 16, 0, 0},
};

static int m_prefix(const char *s, size_t i, size_t we, const struct redact_rules *r, struct span *m)
{
	const char *w = s + i;
	size_t wn = we - i;
	for (size_t k = 0; k < sizeof prefix_rules / sizeof *prefix_rules; k++) {
		const struct prefix_rule *p = &prefix_rules[k];
		size_t pl = strlen(p->prefix);
		if (!has_prefix(w, wn, p->prefix) || wn - pl < p->min_tail)
			continue;
		if (p->need_random && !looks_random(w + pl, wn - pl))
			continue;
		int ok = 1;
		for (size_t j = pl; ok && p->alnum_only && j < wn; j++)
			ok = is_alnum((unsigned char)w[j]);
		if (!ok)
			continue;
		m->rs = i;
		m->re = m->next = we;
		return 1;
	}
	/* AWS access key id: AKIA or ASIA and 16 uppercase letters or digits, the whole word. */
	if (wn == 20 && (has_prefix(w, wn, "AKIA") || has_prefix(w, wn, "ASIA"))) {
		int ok = 1;
		for (size_t j = 4; ok && j < wn; j++)
			ok = is_upper((unsigned char)w[j]) || is_digit((unsigned char)w[j]);
		if (ok) {
			m->rs = i;
			m->re = m->next = we;
			return 1;
		}
	}
	for (size_t k = 0; r && k < r->nprefixes; k++) {
		const char *p = r->prefixes[k];
		if (p && has_prefix(w, wn, p) && wn - strlen(p) >= REDACT_TAIL_MIN) {
			m->rs = i;
			m->re = m->next = we;
			return 1;
		}
	}
	return 0;
}

/* "Bearer <token>" / "Basic <token>": keep the scheme, replace a token that looks like one. */
static int m_auth_scheme(const char *s, size_t n, size_t i, size_t we, struct span *m)
{
	if (!key_eq(s + i, we - i, "bearer") && !key_eq(s + i, we - i, "basic"))
		return 0;
	size_t p = we;
	while (p < n && (s[p] == ' ' || s[p] == '\t'))
		p++;
	if (p == we)
		return 0;
	size_t e = p;
	while (e < n && is_token68((unsigned char)s[e]))
		e++;
	size_t len = e - p;
	if (len < 8 || !(looks_random(s + p, len) || len >= 24))
		return 0;
	m->rs = p;
	m->re = m->next = e;
	return 1;
}
/* Characters of URL userinfo (RFC 3986: unreserved, pct-encoded, sub-delims) as far
 * as they matter here: never whitespace, quotes, brackets or braces, so a match never
 * spans JSON or prose punctuation, nor the marker of an earlier replacement. */
static int is_userinfo(unsigned char c)
{
	return c > 0x20 && c < 0x7f && !strchr("/@?#[]{}\"'`<>\\|^", c);
}

/* Characters a masked password of URL userinfo may have: unreserved and pct-encoded
 * (RFC 3986), '+', '=' and '!'. A span with ';', '$', '(', '&' or '*' could be shell
 * or SQL that runs; it is shown instead (what a reviewer reads is what runs). */
static int is_userinfo_secret(unsigned char c)
{
	return is_alnum(c) || (c && strchr("-._~%+=!", c));
}

/* scheme://user:PASSWORD@host, at the "://" found at s[i]. The user part may be empty
 * (redis://:PASSWORD@host). */
static int m_userinfo(const char *s, size_t n, size_t i, struct span *m)
{
	size_t p = i + 3;
	while (p < n && s[p] != ':' && is_userinfo((unsigned char)s[p]))
		p++;
	if (p >= n || s[p] != ':')
		return 0;
	size_t ps = ++p, mk = redact_mark_len(s + ps, n - ps);
	if (mk && ps + mk < n && s[ps + mk] == '@') {
		m->rs = m->re = ps; /* already redacted: consume it as the first pass did */
		m->next = ps + mk;
		return 1;
	}
	while (p < n && is_userinfo_secret((unsigned char)s[p]))
		p++;
	if (p >= n || s[p] != '@' || p == ps)
		return 0;
	m->rs = ps;
	m->re = m->next = p;
	return 1;
}

/* Where an unquoted value ends: whitespace, punctuation that ends a value in the
 * languages agents write (& ; , quotes < > ) ] } |), and what starts code in a shell
 * or a template ($ ( \), so that a masked value can never be a command substitution. */
static int value_end_char(unsigned char c)
{
	return is_space(c) || c == '&' || c == ';' || c == ',' || c == '"' || c == '\'' || c == '`' || c == '<' ||
	       c == '>' || c == ')' || c == ']' || c == '}' || c == '|' || c == '$' || c == '(' || c == '\\';
}

/* A quoted value starting at s[vs] (after its opening quote q, or after \q when esc):
 * 1 with *end at its closing quote when it closes on its own line and holds nothing
 * that could end it early in some language or run as code (a backslash, '$', '`'),
 * else 0: an unmatched quote, or a value that is code, is shown, never masked. */
static int quoted_end(const char *s, size_t n, size_t vs, char q, int esc, size_t *end)
{
	for (size_t e = vs; e < n; e++) {
		if (esc ? (s[e] == '\\' && e + 1 < n && s[e + 1] == q) : s[e] == q) {
			*end = e;
			return e > vs;
		}
		if (s[e] == '\n' || s[e] == '\r' || s[e] == '\\' || s[e] == '$' || s[e] == '`')
			return 0;
	}
	return 0;
}

/* The separator after a secret key word ending at s[p]: '=', ':', ':=' or '=>', with
 * optional blanks around; sets *colon, returns where the value starts (n when none). */
static size_t kv_separator(const char *s, size_t n, size_t p, int *colon)
{
	while (p < n && (s[p] == ' ' || s[p] == '\t'))
		p++;
	if (p >= n || (s[p] != '=' && s[p] != ':'))
		return n;
	*colon = s[p] == ':';
	p++;
	if (p < n && ((*colon && s[p] == '=') || (!*colon && s[p] == '>'))) { /* := and => */
		*colon = 0;
		p++;
	}
	while (p < n && (s[p] == ' ' || s[p] == '\t'))
		p++;
	return p;
}

/* An unquoted value from s[p]: one run of value characters; for an HTTP header
 * (authorization, cookie; line set) a scheme word may come first ("Basic xyz"), kept
 * shown. Never past a blank after the token, so never to the end of a line of text. */
static int unquoted_value(const char *s, size_t n, size_t p, int line, size_t *vs, size_t *ve)
{
	size_t e = p;
	while (e < n && !value_end_char((unsigned char)s[e]))
		e++;
	if (line && e > p && e < n && (s[e] == ' ' || s[e] == '\t')) {
		int scheme = 1;
		for (size_t k = p; k < e && scheme; k++)
			scheme = is_upper((unsigned char)s[k]) || is_lower((unsigned char)s[k]);
		size_t t = e;
		while (t < n && (s[t] == ' ' || s[t] == '\t'))
			t++;
		size_t te = t;
		while (te < n && !value_end_char((unsigned char)s[te]))
			te++;
		if (scheme && te > t) {
			p = t;
			e = te;
		}
	}
	*vs = p;
	*ve = e;
	return e > p;
}

/* key=value, key: value, "key": "value", 'key' => 'value', KEY=\"value\" ... */
static int m_keyvalue(const char *s, size_t n, size_t i, size_t we, const struct redact_rules *r, struct span *m)
{
	if (!redact_key_secret(s + i, we - i, r))
		return 0;
	size_t p = we;
	int quoted_key = 0, colon = 0;
	if (i > 0 && (s[i - 1] == '"' || s[i - 1] == '\'')) {
		char q = s[i - 1];
		if (p < n && s[p] == q) {
			quoted_key = 1;
			p++;
		} else if (p + 1 < n && s[p] == '\\' && s[p + 1] == q) { /* JSON text inside a JSON string */
			quoted_key = 1;
			p += 2;
		}
	}
	if ((p = kv_separator(s, n, p, &colon)) >= n)
		return 0;
	size_t mk = redact_mark_len(s + p, n - p);
	int esc = p + 1 < n && s[p] == '\\' && (s[p + 1] == '"' || s[p + 1] == '\'');
	if (!mk && (s[p] == '"' || s[p] == '\'' || esc)) { /* quoted: up to its closing quote */
		char q = esc ? s[p + 1] : s[p];
		size_t vs = p + (esc ? 2 : 1), e = 0;
		if (!quoted_end(s, n, vs, q, esc, &e))
			return 0;
		m->rs = vs;
		m->re = e;
		m->next = e + (esc ? 2 : 1);
		if (redact_mark_len(s + vs, e - vs) == e - vs) /* already redacted */
			m->re = m->rs;
		return 1;
	}
	if (mk) { /* already redacted */
		m->rs = m->re = p;
		m->next = p + mk;
		return 1;
	}
	size_t vs, ve;
	if (!unquoted_value(s, n, p, colon && !quoted_key && line_key(s + i, we - i), &vs, &ve))
		return 0;
	if ((mk = redact_mark_len(s + vs, n - vs)) != 0) { /* a header's scheme word, then its value redacted */
		m->rs = m->re = vs; /* consumed as the first pass did: the scheme word stays shown */
		m->next = vs + mk;
		return 1;
	}
	/* An unquoted "key: value" is also prose ("password: use a strong one"): only a
	 * value that looks random goes. */
	if (colon && !quoted_key && !looks_random(s + vs, ve - vs))
		return 0;
	m->rs = vs;
	m->re = m->next = ve;
	return 1;
}

int redact_text(const char *s, size_t len, const struct redact_rules *r, struct buf *out, struct redact_stats *st)
{
	size_t start = out->len, copied = 0, i = 0, hits = 0, chars = 0;
	int rc = 0;
	while (rc == 0 && i < len) {
		unsigned char c = (unsigned char)s[i];
		struct span m = {0, 0, 0};
		int hit = 0;
		size_t next = i + 1, mk;
		if (c == '[' && (mk = redact_mark_len(s + i, len - i)) != 0) {
			next = i + mk; /* a marker (an earlier pass's) is left whole */
		} else if (!is_word(c)) {
			if (c == ':' && i + 2 < len && s[i + 1] == '/' && s[i + 2] == '/' && m_userinfo(s, len, i, &m))
				hit = 1;
		} else {
			size_t we = word_end(s, len, i);
			next = we;
			hit = m_jwt(s, len, i, we, &m) || m_prefix(s, i, we, r, &m) ||
			      m_auth_scheme(s, len, i, we, &m) || m_keyvalue(s, len, i, we, r, &m);
		}
		if (hit) {
			if (m.re > m.rs) {
				struct redact_stats one = {0, 0, 0};
				rc = buf_put(out, s + copied, m.rs - copied);
				if (rc == 0)
					rc = put_mark(out, r, s + m.rs, m.re - m.rs, &one);
				chars += one.chars;
				copied = m.re;
				hits++;
			}
			next = m.next;
		}
		i = next;
	}
	if (rc == 0)
		rc = buf_put(out, s + copied, len - copied);
	if (rc != 0) {
		out->len = start;
		return rc;
	}
	if (st) {
		st->patterns += hits;
		st->chars += chars;
	}
	return 0;
}

/* ---- JSON ---- */

/* null, booleans and "" carry no secret and tell the reviewer none was set; a value
 * that is already the marker stays as it is (idempotence). */
static int worth_replacing(const json_t *v)
{
	if (json_is_null(v) || json_is_boolean(v))
		return 0;
	if (json_is_string(v))
		return json_string_length(v) != 0 &&
		       redact_mark_len(json_string_value(v), json_string_length(v)) != json_string_length(v);
	return 1;
}

/* The marker a whole value under a secret key becomes: a string's characters and
 * lines, or the characters of any other value's compact JSON text. */
static json_t *value_mark(const json_t *v, const struct redact_rules *r, struct redact_stats *st)
{
	char *text = json_is_string(v) ? NULL : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	const char *s = json_is_string(v) ? json_string_value(v) : text;
	size_t n = json_is_string(v) ? json_string_length(v) : text ? strlen(text) : 0;
	struct buf b;
	buf_init(&b, 80);
	json_t *m = s && put_mark(&b, r, s, n, st) == 0 ? json_stringn((const char *)b.p, b.len) : NULL;
	buf_free(&b);
	free(text);
	return m;
}

static int redact_string(json_t *v, const struct redact_rules *r, struct redact_stats *st)
{
	size_t n = json_string_length(v);
	struct redact_stats local = {0, 0, 0};
	struct buf b;
	buf_init(&b, REDACT_OUT_MAX(n));
	int rc = redact_text(json_string_value(v), n, r, &b, &local);
	if (rc == 0 && local.patterns > 0) {
		rc = json_string_setn(v, b.len ? (const char *)b.p : "", b.len) == 0 ? 0 : AS_ENOMEM;
		if (st && rc == 0) {
			st->patterns += local.patterns;
			st->chars += local.chars;
		}
	}
	buf_free(&b);
	return rc;
}

static int redact_walk(json_t *v, const struct redact_rules *r, struct redact_stats *st, int depth);

static int redact_object(json_t *o, const struct redact_rules *r, struct redact_stats *st, int depth)
{
	/* {"name": "DB_PASSWORD", "value": "..."}: the value is a secret by its sibling's name. */
	int named = 0;
	const char *sib[] = {"name", "key"};
	for (size_t k = 0; k < 2; k++) {
		const json_t *nm = json_object_get(o, sib[k]);
		if (json_is_string(nm) && redact_key_secret(json_string_value(nm), json_string_length(nm), r))
			named = 1;
	}
	for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
		const char *key = json_object_iter_key(it);
		size_t klen = json_object_iter_key_len(it);
		json_t *val = json_object_iter_value(it);
		if (redact_key_secret(key, klen, r) || (named && klen == 5 && !memcmp(key, "value", 5))) {
			if (worth_replacing(val)) {
				json_t *m = value_mark(val, r, st);
				if (!m || json_object_iter_set_new(o, it, m) != 0)
					return AS_ENOMEM;
				if (st)
					st->keys++;
				continue;
			}
		}
		GUARD(redact_walk(val, r, st, depth + 1));
	}
	return 0;
}

static int redact_walk(json_t *v, const struct redact_rules *r, struct redact_stats *st, int depth)
{
	if (depth > REDACT_DEPTH_MAX)
		return AS_EINVAL;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return redact_object(v, r, st, depth);
	case JSON_ARRAY:
		for (size_t i = 0; i < json_array_size(v); i++)
			GUARD(redact_walk(json_array_get(v, i), r, st, depth + 1));
		return 0;
	case JSON_STRING:
		return redact_string(v, r, st);
	default:
		return 0;
	}
}

int redact_json(json_t *v, const struct redact_rules *r, struct redact_stats *st)
{
	if (!v)
		return AS_EINVAL;
	return redact_walk(v, r, st, 0);
}

/* ---- size bound ---- */

struct sizer {
	size_t total;
	char *head; /* the first cap bytes of the text, when not NULL */
	size_t cap, len;
};

static int sizer_cb(const char *p, size_t size, void *data)
{
	struct sizer *z = data;
	if (size > SIZE_MAX - z->total)
		return -1;
	z->total += size;
	if (z->head && z->len < z->cap) {
		size_t k = size < z->cap - z->len ? size : z->cap - z->len;
		memcpy(z->head + z->len, p, k);
		z->len += k;
	}
	return 0;
}

#define DUMP_FLAGS (JSON_COMPACT | JSON_ENCODE_ANY)

int redact_json_size(const json_t *v, size_t *out)
{
	struct sizer z = {0, NULL, 0, 0};
	if (!v || json_dump_callback(v, sizer_cb, &z, DUMP_FLAGS) != 0)
		return AS_ENOMEM;
	*out = z.total;
	return 0;
}

/* Bytes jansson writes for one character of a string (dump.c: '"', '\\' and control
 * characters are escaped; with JSON_COMPACT nothing else is). Only an estimate for
 * sizing: the result is measured afterwards. */
static size_t esc_len(unsigned char c)
{
	if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t')
		return 2;
	return c < 0x20 ? 6 : 1;
}

static size_t utf8_len(unsigned char c)
{
	return c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
}

static json_t *marker(size_t total, const char *head, size_t hlen)
{
	json_t *m = json_object();
	/* The _new setters take the value even when they fail, so nothing leaks here. */
	if (m && (json_object_set_new(m, "truncated", json_true()) != 0 ||
		  json_object_set_new(m, "total_bytes", json_integer((json_int_t)total)) != 0 ||
		  json_object_set_new(m, "head", json_stringn(head, hlen)) != 0)) {
		json_decref(m);
		return NULL;
	}
	return m;
}

int redact_bound(json_t **v, size_t max_bytes)
{
	if (!v || !*v || max_bytes < REDACT_BOUND_MIN)
		return AS_EINVAL;
	int is_str = json_is_string(*v);
	struct sizer z = {0, NULL, 0, 0};
	if (!is_str && !(z.head = malloc(max_bytes)))
		return AS_ENOMEM;
	z.cap = is_str ? 0 : max_bytes;
	if (json_dump_callback(*v, sizer_cb, &z, DUMP_FLAGS) != 0) {
		free(z.head);
		return AS_ENOMEM;
	}
	if (z.total <= max_bytes) {
		free(z.head);
		return 0;
	}
	const char *src = is_str ? json_string_value(*v) : z.head;
	size_t srclen = is_str ? json_string_length(*v) : z.len;
	/* {"truncated":true,"total_bytes":N,"head":"..."}: 32 + digits(N) + 9 + head + 2 */
	size_t digits = 1;
	for (size_t t = z.total; t >= 10; t /= 10)
		digits++;
	size_t overhead = 43 + digits, budget = max_bytes > overhead ? max_bytes - overhead : 0, used = 0, hlen = 0;
	while (hlen < srclen) {
		size_t cl = utf8_len((unsigned char)src[hlen]);
		size_t cost = cl == 1 ? esc_len((unsigned char)src[hlen]) : cl;
		if (hlen + cl > srclen || used + cost > budget)
			break;
		used += cost;
		hlen += cl;
	}
	/* Measure the real marker and shorten the head until it fits: the bound holds even
	 * if jansson's escaping ever differs from esc_len. */
	for (;;) {
		json_t *m = marker(z.total, src, hlen);
		size_t sz = 0;
		if (!m || redact_json_size(m, &sz) != 0) {
			json_decref(m);
			free(z.head);
			return AS_ENOMEM;
		}
		if (sz <= max_bytes || hlen == 0) {
			free(z.head);
			json_decref(*v);
			*v = m;
			return 0;
		}
		json_decref(m);
		do /* drop one whole character */
			hlen--;
		while (hlen > 0 && ((unsigned char)src[hlen] & 0xc0) == 0x80);
	}
}
