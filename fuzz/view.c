/* Fuzz target: what a reviewer is shown against what runs (issue 28). The input is
 * the arguments of a call (JSON when it parses, else a string argument of the raw
 * bytes, so that text no JSON encoder would write reaches the redactor too). The
 * view is built as the gate builds it (redact_json in view style, common/redact.h);
 * viewcheck (common/viewcheck.h), which knows none of the redactor's rules, must then
 * find every character of the exact call in the view or inside a mark that states
 * how many characters it hides, single-line unless it is a whole value. The first
 * byte picks operator rules. Aborts when the property fails. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cbor.h"
#include "common/redact.h"
#include "common/viewcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const op_keys[] = {"ticket", "x-vault-token", "k"};
static const char *const op_prefixes[] = {"acme_", "glpat-", "sec"};

static void check(const json_t *exact, const struct redact_rules *r, const uint8_t *data, size_t size)
{
	json_t *view = json_deep_copy(exact);
	struct redact_stats st = {0, 0, 0};
	if (!view || redact_json(view, r, &st) != 0) { /* too deep: the gate refuses such a call */
		json_decref(view);
		return;
	}
	char err[AS_ERRLEN];
	int rc = viewcheck_json(exact, view, err);
	if (rc != 0 && rc != AS_ETOOBIG) {
		char *e = json_dumps(exact, JSON_COMPACT | JSON_ENCODE_ANY), *v = json_dumps(view, JSON_COMPACT);
		fprintf(stderr, "view: property violated: %s\nexact: %.2048s\nview:  %.2048s\ninput %zu bytes\n", err,
			e ? e : "?", v ? v : "?", size);
		(void)data;
		abort();
	}
	if ((st.keys || st.patterns) && json_equal(exact, view)) {
		fprintf(stderr, "view: masks counted but the view is the call\n");
		abort();
	}
	json_decref(view);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 16384)
		return 0;
	struct redact_rules r = {op_keys, 3, op_prefixes, 3, 1};
	const struct redact_rules *rules = &r;
	if (!(data[0] & 1)) {
		r.nkeys = r.nprefixes = 0;
	}
	const char *s = (const char *)data + 1;
	size_t n = size - 1;
	json_t *j = json_loadb(s, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
	if (j) {
		json_t *args = json_is_object(j) ? json_incref(j) : json_pack("{s:O}", "value", j);
		if (args)
			check(args, rules, data, size);
		json_decref(args);
		json_decref(j);
	}
	if (utf8_valid((const uint8_t *)s, n) && !memchr(s, 0, n)) {
		json_t *args = json_pack("{s:s%}", "command", s, n);
		if (args)
			check(args, rules, data, size);
		json_decref(args);
	}
	return 0;
}
