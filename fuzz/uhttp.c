/* Fuzz target: the upstream HTTP client's response parser (gateway/worker/upstream/
 * uhttp_resp.c). Input: one byte choosing the limits (any_body and raw too) and how the rest is cut into reads,
 * then the bytes a server sends on one connection (responses back to back, as keep-alive
 * would have them), then the connection's end.
 * Properties (abort when violated):
 *   - the outcome (each response's status, session, messages; the final result and, on an
 *     error, its message) is the same whether the bytes come whole, in pieces of
 *     pseudo-random sizes, or one at a time: no state is lost at a read boundary;
 *   - uhttp_resp_feed consumes no more than it was given and all of it unless the
 *     response completed or it failed;
 *   - a message is 1 to body_max bytes, and a JSON body's message has no surrounding
 *     whitespace; a session is 1 to UHTTP_SESSION_MAX visible ASCII bytes; a completed
 *     status is 200..599 and only a 2xx delivers messages (with raw, any status delivers
 *     its whole body as one message, as a witness's answer is read);
 *   - an error leaves a message of printable ASCII. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/assent/err.h"
#include "gateway/worker/upstream/uhttp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *cur_data;
static size_t cur_size;

static void fail(const char *why, const char *detail)
{
	fprintf(stderr, "uhttp: property violated: %s\n", why);
	if (detail)
		fprintf(stderr, "uhttp: detail: %.*s\n", 512, detail);
	fprintf(stderr, "input (%zu bytes): %.*s\n", cur_size, cur_size > 2048 ? 2048 : (int)cur_size,
		(const char *)cur_data);
	abort();
}

#define RESP_MAX 8

/* What one run saw, compared between runs. */
struct outcome {
	int rc, nresp;
	int status[RESP_MAX];
	char session[RESP_MAX][UHTTP_SESSION_MAX + 1];
	uint64_t hash; /* FNV-1a over every message and its length */
	size_t nmsgs;
	char err[AS_ERRLEN];
};

struct ctx {
	struct outcome *o;
	const struct uhttp_resp *r;
	size_t body_max;
};

static int on_msg(void *arg, const char *json, size_t n)
{
	struct ctx *c = arg;
	if (n == 0 || n > c->body_max)
		fail("a message of 0 or more than body_max bytes", NULL);
	if ((c->r->status < 200 || c->r->status > 299) && !c->r->lim.raw)
		fail("a message from a non-2xx answer", NULL);
	if (c->r->lim.raw && c->r->body != UHTTP_BODY_RAW)
		fail("a raw answer's body not kept raw", NULL);
	if (c->r->body == UHTTP_BODY_JSON && (memchr(" \t\r\n", json[0], 4) || memchr(" \t\r\n", json[n - 1], 4)))
		fail("a JSON message with whitespace around it", NULL);
	uint64_t h = c->o->hash ^ n;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)json[i]) * 0x100000001b3ull;
	c->o->hash = h * 0x100000001b3ull;
	c->o->nmsgs++;
	return 0;
}

static void check_session(const char *s)
{
	size_t n = strnlen(s, UHTTP_SESSION_MAX + 1);
	if (n > UHTTP_SESSION_MAX)
		fail("a session longer than its bound", NULL);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			fail("a session with a byte that is not visible ASCII", s);
}

/* mode 0: whole; 1: pseudo-random pieces from seed; 2: one byte at a time. */
static void run(const uint8_t *p, size_t n, size_t body_max, int mode, uint32_t seed, struct outcome *o)
{
	struct uhttp_resp r;
	/* the seed's low bit: any_body, as the notify worker reads webhook receivers' answers;
	 * the next: raw, as it reads witnesses' */
	struct uhttp_limits lim = {
	    .body_max = body_max, .stream_max = 4 * body_max, .any_body = (int)(seed & 1), .raw = (int)(seed >> 1 & 1)};
	struct ctx c = {o, &r, body_max};
	memset(o, 0, sizeof *o);
	o->hash = 0xcbf29ce484222325ull;
	uhttp_resp_init(&r, &lim);
	size_t off = 0;
	int rc = 0;
	while (off < n && o->nresp < RESP_MAX) {
		size_t k = n - off;
		if (mode == 1) {
			seed = seed * 1103515245u + 12345u;
			k = 1 + (seed >> 16) % 17;
		} else if (mode == 2) {
			k = 1;
		}
		if (k > n - off)
			k = n - off;
		size_t used = 0;
		rc = uhttp_resp_feed(&r, p + off, k, &used, NULL, on_msg, &c, o->err);
		if (used > k)
			fail("consumed more than it was given", NULL);
		if (rc == 0 && used != k)
			fail("stopped short without completing or failing", NULL);
		off += used;
		if (rc < 0)
			break;
		if (rc == 1) {
			if (r.status < 200 || r.status > 599)
				fail("a completed status out of 200..599", NULL);
			check_session(r.session);
			o->status[o->nresp] = r.status;
			memcpy(o->session[o->nresp], r.session, sizeof r.session);
			o->nresp++;
			uhttp_resp_reset(&r);
			rc = 0;
		}
	}
	if (rc == 0 && o->nresp < RESP_MAX) {
		rc = uhttp_resp_eof(&r, on_msg, &c, o->err);
		if (rc == 1) {
			o->status[o->nresp] = r.status;
			memcpy(o->session[o->nresp], r.session, sizeof r.session);
			o->nresp++;
		}
	}
	o->rc = rc;
	if (rc < 0) {
		if (!memchr(o->err, 0, sizeof o->err) || !o->err[0])
			fail("an error without a message", NULL);
		for (const char *q = o->err; *q; q++)
			if (*q < 0x20 || *q > 0x7e)
				fail("an error message with a byte that is not printable ASCII", o->err);
	}
	uhttp_resp_free(&r);
}

static void same(const struct outcome *a, const struct outcome *b, const char *how)
{
	char d[600];
	snprintf(d, sizeof d, "%s: rc %d/%d, answers %d/%d, messages %zu/%zu, errors '%s' / '%s'", how, a->rc, b->rc,
		 a->nresp, b->nresp, a->nmsgs, b->nmsgs, a->err, b->err);
	if (a->rc != b->rc || a->nresp != b->nresp || a->nmsgs != b->nmsgs || a->hash != b->hash ||
	    memcmp(a->status, b->status, sizeof a->status) || memcmp(a->session, b->session, sizeof a->session) ||
	    strcmp(a->err, b->err))
		fail("the outcome depends on how the bytes were cut into reads", d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t maxes[4] = {64, 300, 4096, 1u << 20};
	cur_data = data;
	cur_size = size;
	if (size < 1)
		return 0;
	size_t body_max = maxes[data[0] & 3];
	uint32_t seed = data[0] >> 2;
	static struct outcome whole, pieces, bytes;
	run(data + 1, size - 1, body_max, 0, seed, &whole);
	run(data + 1, size - 1, body_max, 1, seed, &pieces);
	same(&whole, &pieces, "whole vs pieces");
	if (size <= 4096) {
		run(data + 1, size - 1, body_max, 2, seed, &bytes);
		same(&whole, &bytes, "whole vs bytes");
	}
	return 0;
}
