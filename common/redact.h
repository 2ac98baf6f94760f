/* Secret redaction for what agents send (message, context, options) before anything
 * is recorded or shown: values under secret-looking key names at any depth, secret-
 * shaped substrings anywhere in text, and a size bound for contexts. Pure functions
 * over memory, safe to run in the jailed mcp worker: no files, no globals.
 *
 * What is replaced, all by the marker REDACT_MARK:
 *
 * Keys (redact_json, and key=value text below). A key is secret when, compared
 * case-insensitively with '-' and '_' treated alike, it is one of
 *   password passwd passphrase secret token access_token refresh_token id_token api_key
 *   apikey authorization proxy_authorization client_secret private_key secret_key
 *   secret_access_key aws_secret_access_key cookie set_cookie
 * or ends in _api_key, _token, _secret, _password or _passwd (so DB_PASSWORD,
 * X-Api-Key, X-Auth-Token and GITHUB_TOKEN are secret), or is one of the operator's
 * keys (struct redact_rules). "tokenizer", "max_tokens" and "passwordless" are not.
 * The value under a secret key is replaced whatever its type (an object or array
 * goes whole), except null, true, false and "" which carry no secret and tell the
 * reviewer that none was set. Also, in an object whose "name" or "key" member is a
 * string naming a secret key, the "value" member is replaced: the shape of
 * Kubernetes env entries and HAR headers ({"name": "DB_PASSWORD", "value": "..."}).
 * Object keys themselves are never rewritten (two keys could collide).
 *
 * Text (redact_text; redact_json applies it to every string value). The text is
 * cut into words, maximal runs of [A-Za-z0-9_-]; every matcher starts at the start
 * of a word, so "task-..." never matches "sk-..." and a scan is linear in the text:
 *   JWT            eyJ<word>.eyJ<word>.<word>                     whole token replaced
 *   OpenAI style   sk-<tail of 20+>, tail with a digit or an aB    whole word replaced
 *   GitHub         ghp_ gho_ ghu_ ghs_ ghr_ + 30+ [A-Za-z0-9], github_pat_ + 22+
 *   Slack          xoxb- xoxp- xoxa- xoxr- xoxs- + 10+
 *   AWS key id     AKIA or ASIA + exactly 16 [A-Z0-9], the whole word
 *   PyPI           pypi-AgE + 16+
 *   operator       each literal prefix of struct redact_rules + 8+ word characters
 *   Bearer/Basic   "Bearer " or "Basic " (any case) then a token of [A-Za-z0-9._~+/=-]
 *                  of 8+ characters that has a digit or an aB, or 24+ characters:
 *                  the scheme word is kept ("Bearer [REDACTED]"), so the prose
 *                  "Bearer tokens" or "Basic authentication" is left alone
 *   URL userinfo   scheme://user:PASSWORD@host: the password is replaced (user of
 *                  printable ASCII without quotes, brackets, braces, /?#; password
 *                  of [A-Za-z0-9-._~%+=!] only)
 *   key=value      a secret key word (the key rules above), optionally quoted, then
 *                  '=' or ':' and the value. A quoted value is replaced only when
 *                  its closing quote is on the same line and it holds no backslash,
 *                  '$' or '`'; an unquoted one runs up to whitespace or one of
 *                  & ; , " ' ` < > ) ] } | $ ( \. The value is replaced, the key and
 *                  separator kept. With '=' or a quoted key ("password": "x") any
 *                  non-empty value goes; with an unquoted key and ':' only a value
 *                  that looks like a secret (it has a digit or an aB, lowercase then
 *                  uppercase), so the prose "password: use a strong one" stays while
 *                  "password: hunter2" does not. For authorization,
 *                  proxy-authorization, cookie and set-cookie with ':' a scheme word
 *                  may come first ("Authorization: Basic xyz": xyz goes).
 *
 * What a reviewer reads is what runs (issue 28): a replaced span in text is always
 * one of the above, ends where its own syntax ends (the closing quote, the first
 * delimiter, the end of the token), never crosses a line break and never runs on to
 * the end of the text because a quote was left open: an agent cannot steer a mask
 * over text that follows it. With rules->view set, each mark says what it hides,
 * "[secret: 41 chars]" ("[secret: 1704 chars, 28 lines]" for a multi-line value under
 * a secret key), and the stats count the characters hidden.
 * Redaction is idempotent: a value already equal to REDACT_MARK is left as it is,
 * and the marker's characters start no match.
 *
 * Not detected: secrets with no recognisable shape outside a key=value (a bare AWS
 * secret access key, a random password in prose). Operators add key names and
 * prefixes for their own token formats. */
#ifndef ASSENT_REDACT_H
#define ASSENT_REDACT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

#define REDACT_MARK "[REDACTED]"
#define REDACT_MARK_LEN 10

#define REDACT_CONTEXT_MAX (256u << 10) /* default bound of a context: 256 KiB of compact JSON */
#define REDACT_BOUND_MIN 64		/* smallest max_bytes redact_bound accepts: the empty marker fits */
#define REDACT_DEPTH_MAX 128		/* deepest JSON value redact_json walks */
#define REDACT_RULES_MAX 64		/* operator keys, and operator prefixes, each */
#define REDACT_NAME_MAX 64		/* longest operator key or prefix */
#define REDACT_PREFIX_MIN 3		/* shortest operator prefix: "a" would eat every word */
#define REDACT_TAIL_MIN 8		/* word characters an operator prefix must be followed by */

/* What operators add to the built-in rules (both lists may be empty; the struct
 * itself may be NULL wherever rules are taken). Strings are borrowed, NUL-terminated.
 * keys: extra key names, matched like the built-in ones (case-insensitive, '-' = '_'),
 *       [A-Za-z0-9_.-], 1..REDACT_NAME_MAX characters.
 * prefixes: literal, case-sensitive prefixes of secret tokens (e.g. "glpat-"),
 *       [A-Za-z0-9_-], REDACT_PREFIX_MIN..REDACT_NAME_MAX characters, matched at the
 *       start of a word followed by at least REDACT_TAIL_MIN more word characters;
 *       the whole word is replaced. */
struct redact_rules {
	const char *const *keys;
	size_t nkeys;
	const char *const *prefixes;
	size_t nprefixes;
	int view; /* 1: marks say what they hide, "[secret: N chars]" (what reviewers read); 0: REDACT_MARK */
};

/* Replacements made; the functions add to these (zero the struct first). */
struct redact_stats {
	size_t keys;	 /* values replaced because of their key */
	size_t patterns; /* secret-shaped substrings replaced in text */
	size_t chars;	 /* characters they held (a non-string value: of its compact JSON) */
};

/* Room for redact_text's output whatever it replaces: a span of one byte may become
 * a marker of up to 64 bytes. */
#define REDACT_OUT_MAX(n) ((n) > (SIZE_MAX - 64) / 65 ? SIZE_MAX : 65 * (n) + 64)

/* Length of the marker at s[0..n) (REDACT_MARK, or "[secret: N chars]" / "[secret: N
 * char]" / "[secret: N chars, L lines]"), or 0 when none starts there. */
size_t redact_mark_len(const char *s, size_t n);

/* Check operator rules against the limits above, naming the first bad entry. */
int redact_rules_check(const struct redact_rules *r, char *err);

/* 1 when values under this key name are replaced, else 0. */
int redact_key_secret(const char *key, size_t len, const struct redact_rules *r);

/* Append s[0..len) to out with every secret-shaped substring replaced. The output
 * is valid UTF-8 when the input is (only ASCII-delimited spans are replaced). Give
 * out a max of REDACT_OUT_MAX(len) to never hit it.
 * Returns 0, or AS_ETOOBIG / AS_ENOMEM with out->len unchanged. */
int redact_text(const char *s, size_t len, const struct redact_rules *r, struct buf *out, struct redact_stats *st);

/* Redact v in place at any depth (keys as above, then text in every string value,
 * object keys excepted). v may be any JSON value; a top-level string is rewritten
 * in place. Returns 0, AS_EINVAL for nesting deeper than REDACT_DEPTH_MAX (v may
 * then be partly redacted: discard it), or AS_ENOMEM. */
int redact_json(json_t *v, const struct redact_rules *r, struct redact_stats *st);

/* Bound *v to max_bytes of compact JSON, measured as jansson's JSON_COMPACT text
 * of it (members in the order received, non-ASCII as UTF-8, not escaped). When
 * *v is no longer, it is left alone. Otherwise it is released and *v becomes
 *   {"truncated":true,"total_bytes":N,"head":H}
 * where N is the byte length of that compact text and H is
 *   - for a string value: the longest prefix of the string itself,
 *   - for any other value: the longest prefix of its compact JSON text,
 * cut at a UTF-8 character boundary, such that the marker's own compact JSON text
 * is at most max_bytes (so a bounded context stays within its bound). Callers know
 * it was cut because *v changed (the marker is made before the old value is
 * released, so the two pointers always differ). max_bytes below REDACT_BOUND_MIN: AS_EINVAL;
 * AS_ENOMEM when memory runs out (*v untouched). */
int redact_bound(json_t **v, size_t max_bytes);

/* Byte length of the compact JSON text of v, as redact_bound measures it. */
int redact_json_size(const json_t *v, size_t *out);

#endif
