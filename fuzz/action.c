/* Fuzz target: what the signer does with untrusted bytes of a request, before any state:
 * the canonical action's field table (action_check) on a decoded CBOR value, the text
 * classes and the neutraliser every CLI view prints through, and the id peek of an
 * over-long MCP line. The input is one byte that picks the part, then its bytes.
 * Properties (abort when violated):
 *   - action_check accepts only maps whose every text field is within its table entry:
 *     message, options, default, subject names and audience hold no refused character;
 *   - a refusal always leaves an error message;
 *   - the neutraliser's output holds no character text_hidden_cp names, is UTF-8, and
 *     is the input itself when nothing was marked;
 *   - a peeked id is a string of at most MCP_ID_MAX bytes or an integer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/proto/action.h"
#include "common/cbor.h"
#include "gateway/worker/mcp/mcp.h"
#include "common/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *why)
{
	fprintf(stderr, "action: property violated: %s\n", why);
	abort();
}

static void text_ok_or_die(const struct cv *v, enum text_class c)
{
	size_t at;
	uint32_t cp;
	if (!v || v->t != CV_TEXT || text_check(c, (const char *)v->s, v->n, &at, &cp) != 0)
		fail("action_check accepted a field outside its class");
}

static void check_action_accepted(const struct cv *a)
{
	text_ok_or_die(cv_get(a, "message"), TEXT_MULTILINE);
	const struct cv *o = cv_get(a, "options"), *s = cv_get(a, "subject"), *d = cv_get(a, "default"),
			*au = cv_get(a, "audience");
	for (size_t i = 0; o && i < o->n; i++)
		text_ok_or_die(&o->items[i], TEXT_LINE);
	for (size_t i = 0; s && i < s->n; i++)
		text_ok_or_die(cv_get(&s->items[i], "name"), TEXT_LINE);
	if (d)
		text_ok_or_die(d, TEXT_MULTILINE);
	if (au)
		text_ok_or_die(au, TEXT_TOKEN);
}

static void fuzz_neutralise(const uint8_t *p, size_t n, int lines)
{
	struct buf b;
	size_t marked = 0;
	buf_init(&b, 12 * n + 16);
	if (text_neutralise((const char *)p, n, lines, "", "", &b, &marked) != 0)
		fail("the neutraliser failed within its bound");
	if (!utf8_valid(b.p ? b.p : (const uint8_t *)"", b.len))
		fail("the neutraliser's output is not UTF-8");
	for (size_t i = 0, l; i < b.len; i += l) {
		uint32_t cp = text_cp(b.p, b.len, i, &l);
		if (text_hidden_cp(cp) && !(lines && (cp == '\n' || cp == '\t' || cp == '\r')))
			fail("a hidden character went through the neutraliser");
	}
	if (marked == 0 && (b.len != n || (n && memcmp(b.p, p, n))))
		fail("text without hidden characters was changed");
	buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cv_arena a;
	static int inited;
	if (!inited) {
		cv_arena_init(&a, 1u << 14);
		inited = 1;
	}
	if (size < 1)
		return 0;
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	char err[AS_ERRLEN];
	switch (data[0] % 4) {
	case 0: {
		struct cv *v;
		cv_arena_reset(&a);
		if (cbor_decode(p, n, &a, &v, err) != 0)
			return 0;
		memset(err, 'X', sizeof err);
		if (action_check(v, err) == 0)
			check_action_accepted(v);
		else if (!memchr(err, 0, sizeof err) || err[0] == 'X')
			fail("a refusal without an error message");
		break;
	}
	case 1:
	case 2:
		fuzz_neutralise(p, n, data[0] % 4 == 1);
		break;
	default: {
		struct mcp_id id;
		if (mcp_peek_id((const char *)p, n, (const char *)p, n, &id) &&
		    !((id.t == MCP_ID_STR && id.len <= MCP_ID_MAX && strlen(id.s) == id.len) || id.t == MCP_ID_INT))
			fail("a peeked id is neither a bounded string nor an integer");
		break;
	}
	}
	return 0;
}
