/* make bench: decoding ledger entries, microseconds per entry on one core, three ways:
 *  - common/cbor.c, our strict decoder (what assent-verify and the signer run);
 *  - the same strict decoder written on libcbor 0.8's streaming decoder
 *    (cbor_stream_decode reads each head; bounds, shortest form, key order, UTF-8,
 *    depth and the refusals stay ours): what linking libcbor in the product would be;
 *  - libcbor's cbor_load for scale (a lax tree of heap items: no canonical checks).
 * Before timing, the streaming decoder must agree with ours on every bench entry and
 * on a set of non-canonical inputs, and cbor_load must read each entry as ours does
 * (fuzz/cbor_oracle.h). Figures only; nothing passes or fails on time. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cbor.h"
#include "common/util.h"
#include "fuzz/cbor_oracle.h"
#include "ledger/entry.h"

static void die(const char *what, const char *why)
{
	fprintf(stderr, "cbor_bench: %s: %s\n", what, why);
	exit(2);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the strict decoder on libcbor's streaming decoder (its lines start here) ---- */

enum sev_kind { SEV_BAD, SEV_UINT, SEV_NINT, SEV_BYTES, SEV_TEXT, SEV_ARRAY, SEV_MAP, SEV_FALSE, SEV_TRUE, SEV_NULL };
struct sev { /* the one event a cbor_stream_decode call reports */
	enum sev_kind kind;
	uint64_t u; /* integer, or string / container length */
	const uint8_t *s;
};
static void sev_set(void *c, enum sev_kind k, uint64_t u, const uint8_t *s)
{
	struct sev *e = c;
	e->kind = k;
	e->u = u;
	e->s = s;
}
static void ev_u8(void *c, uint8_t v)
{
	sev_set(c, SEV_UINT, v, NULL);
}
static void ev_u16(void *c, uint16_t v)
{
	sev_set(c, SEV_UINT, v, NULL);
}
static void ev_u32(void *c, uint32_t v)
{
	sev_set(c, SEV_UINT, v, NULL);
}
static void ev_u64(void *c, uint64_t v)
{
	sev_set(c, SEV_UINT, v, NULL);
}
static void ev_n8(void *c, uint8_t v)
{
	sev_set(c, SEV_NINT, v, NULL);
}
static void ev_n16(void *c, uint16_t v)
{
	sev_set(c, SEV_NINT, v, NULL);
}
static void ev_n32(void *c, uint32_t v)
{
	sev_set(c, SEV_NINT, v, NULL);
}
static void ev_n64(void *c, uint64_t v)
{
	sev_set(c, SEV_NINT, v, NULL);
}
static void ev_bytes(void *c, cbor_data d, size_t n)
{
	sev_set(c, SEV_BYTES, n, d);
}
static void ev_text(void *c, cbor_data d, size_t n)
{
	sev_set(c, SEV_TEXT, n, d);
}
static void ev_array(void *c, size_t n)
{
	sev_set(c, SEV_ARRAY, n, NULL);
}
static void ev_map(void *c, size_t n)
{
	sev_set(c, SEV_MAP, n, NULL);
}
static void ev_bool(void *c, bool b)
{
	sev_set(c, b ? SEV_TRUE : SEV_FALSE, 0, NULL);
}
static void ev_null(void *c)
{
	sev_set(c, SEV_NULL, 0, NULL);
}
static struct cbor_callbacks sev_callbacks; /* the rest (tags, floats, indefinite lengths) stay SEV_BAD */

static void sev_init(void)
{
	struct cbor_callbacks c = cbor_empty_callbacks;
	c.uint8 = ev_u8, c.uint16 = ev_u16, c.uint32 = ev_u32, c.uint64 = ev_u64;
	c.negint8 = ev_n8, c.negint16 = ev_n16, c.negint32 = ev_n32, c.negint64 = ev_n64;
	c.byte_string = ev_bytes, c.string = ev_text, c.array_start = ev_array, c.map_start = ev_map;
	c.boolean = ev_bool, c.null = ev_null;
	sev_callbacks = c;
}

struct sdec {
	const uint8_t *p;
	size_t len, off;
	struct cv_arena *a;
};

/* libcbor says which value a head holds, not in how many bytes: shortest form is ours to check. */
static size_t shortest_head(uint64_t arg)
{
	return arg < 24 ? 1 : arg <= 0xff ? 2 : arg <= 0xffff ? 3 : arg <= 0xffffffffu ? 5 : 9;
}

static int sdec_keys_ordered(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	return c < 0 || (c == 0 && an < bn); /* equal encodings are a duplicate key */
}

static int sdec_item(struct sdec *d, struct cv *v, int depth)
{
	struct sev e = {SEV_BAD, 0, NULL};
	struct cbor_decoder_result r = cbor_stream_decode(d->p + d->off, d->len - d->off, &sev_callbacks, &e);
	if (r.status != CBOR_DECODER_FINISHED || e.kind == SEV_BAD)
		return AS_ECORRUPT; /* truncated, malformed, or a tag, float, undefined or indefinite length */
	int str = e.kind == SEV_BYTES || e.kind == SEV_TEXT, simple = e.kind >= SEV_FALSE;
	size_t head = str ? r.read - (size_t)e.u : r.read;
	if (head != (simple ? 1 : shortest_head(e.u)))
		return AS_ECORRUPT;
	d->off += r.read;
	v->u = e.u;
	switch (e.kind) {
	case SEV_UINT:
		v->t = CV_UINT;
		return 0;
	case SEV_NINT:
		v->t = CV_NINT;
		return 0;
	case SEV_FALSE:
		v->t = CV_FALSE;
		return 0;
	case SEV_TRUE:
		v->t = CV_TRUE;
		return 0;
	case SEV_NULL:
		v->t = CV_NULL;
		return 0;
	case SEV_BYTES:
	case SEV_TEXT:
		v->t = e.kind == SEV_BYTES ? CV_BYTES : CV_TEXT;
		v->s = e.s;
		v->n = (size_t)e.u;
		return v->t == CV_TEXT && !utf8_valid(v->s, v->n) ? AS_ECORRUPT : 0;
	default:
		break;
	}
	uint64_t nitems = e.kind == SEV_MAP ? 2 * e.u : e.u;
	if (depth >= CBOR_MAX_DEPTH || e.u > d->len - d->off || nitems > d->len - d->off)
		return AS_ECORRUPT; /* every item takes a byte at least: bound the count before allocating */
	v->t = e.kind == SEV_MAP ? CV_MAP : CV_ARRAY;
	v->n = (size_t)e.u;
	if (nitems == 0)
		return 0;
	if (!(v->items = cv_alloc(d->a, (size_t)nitems)))
		return AS_ETOOBIG;
	size_t pk = 0, pkn = 0;
	for (size_t i = 0; i < nitems; i++) {
		size_t at = d->off;
		GUARD(sdec_item(d, &v->items[i], depth + 1));
		if (e.kind == SEV_MAP && i % 2 == 0) {
			if (i > 0 && !sdec_keys_ordered(d->p + pk, pkn, d->p + at, d->off - at))
				return AS_ECORRUPT;
			pk = at;
			pkn = d->off - at;
		}
	}
	return 0;
}

static int sdec_decode(const uint8_t *p, size_t len, struct cv_arena *a, struct cv **out)
{
	struct sdec d = {p, len, 0, a};
	struct cv *root = cv_alloc(a, 1);
	if (!root)
		return AS_ENOMEM;
	GUARD(sdec_item(&d, root, 0));
	if (d.off != len)
		return AS_ECORRUPT;
	*out = root;
	return 0;
}

/* ---- (its lines end here) ---- */

/* Ledger entries as the signer writes them: a request with its context and subjects,
 * its decision with the token it names, and a key entry. */
static const char *const ENTRIES[] = {
    "{\"kind\":\"request\",\"session_id\":\"req-00112233445566778899aabbccddeeff\",\"type\":\"approval\","
    "\"message\":\"Apply the terraform plan for the production VPC: 3 to add, 1 to change, 0 to destroy.\","
    "\"context\":{\"repo\":\"infra\",\"branch\":\"main\",\"commit\":\"4e6037c1b2a3\",\"files\":[\"vpc.tf\","
    "\"subnets.tf\",\"outputs.tf\"]},\"audience\":\"tf-prod\",\"requester\":{\"uid\":1000,\"name\":\"agent-1\","
    "\"client\":{\"name\":\"claude-code\",\"version\":\"2.1.0\"}},\"timeout_s\":600,\"subject\":[{\"name\":"
    "\"plan.tfplan\",\"sha256\":\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\",\"source\":"
    "\"computed\"},{\"name\":\"image\",\"sha256\":\"2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae\","
    "\"source\":\"asserted\"}],\"policy\":{\"rule\":\"line 12\",\"effect\":\"ask\"},\"redacted\":false}",
    "{\"kind\":\"decision\",\"session_id\":\"req-00112233445566778899aabbccddeeff\",\"outcome\":\"approved\","
    "\"assurance\":\"reviewer\",\"reviewer\":{\"name\":\"alice\",\"channel\":\"web\"},\"message\":null,"
    "\"token\":{\"jti\":\"0123456789abcdef0123456789abcdef\",\"kid\":\"kid-0123456789abcdef0123456789abcdef012345\","
    "\"exp\":1796000900}}",
    "{\"kind\":\"key\",\"purpose\":\"token\",\"kid\":\"kid-0123456789abcdef0123456789abcdef012345\",\"event\":"
    "\"created\",\"alg\":\"ES256\",\"spki_sha256\":"
    "\"5d41402abc4b2a76b9719d911017c592aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
};
#define NENTRIES (sizeof ENTRIES / sizeof *ENTRIES)

/* Inputs both strict decoders must refuse (hex): non-shortest heads, unsorted and
 * duplicate keys, indefinite lengths, a tag, floats, undefined, a two-byte simple
 * value, invalid UTF-8, a length past the end, trailing bytes. */
static const char *const REFUSED[] = {
    "1805",	  "190017", "3817", "5801ff", "a2616201616101", "a2616101616102", "5f4100ff", "9fff",	    "c001",
    "fa3f800000", "f93c00", "f7",   "f814",   "62c328",		"43aabb",	  "0101",     "9a40000000", "e0",
};

static struct buf enc[NENTRIES];

static int way_ours(struct cv_arena *a, const uint8_t *p, size_t n)
{
	char err[AS_ERRLEN];
	struct cv *v;
	return cbor_decode(p, n, a, &v, err);
}

static int way_stream(struct cv_arena *a, const uint8_t *p, size_t n)
{
	struct cv *v;
	return sdec_decode(p, n, a, &v);
}

static int way_load(struct cv_arena *a, const uint8_t *p, size_t n)
{
	(void)a;
	struct cbor_load_result res;
	cbor_item_t *it = cbor_load(p, n, &res);
	if (!it)
		return -1;
	cbor_decref(&it);
	return 0;
}

/* Microseconds to decode one entry (each of the bench entries in turn). */
static double us_per(int (*fn)(struct cv_arena *, const uint8_t *, size_t), double seconds)
{
	struct cv_arena a;
	cv_arena_init(&a, 1 << 16);
	long n = 0;
	double t0 = now_s(), el;
	do {
		for (int r = 0; r < 64; r++)
			for (size_t i = 0; i < NENTRIES; i++) {
				cv_arena_reset(&a);
				if (fn(&a, enc[i].p, enc[i].len) != 0)
					die("decode", "an entry was refused");
			}
		n += 64 * (long)NENTRIES;
		el = now_s() - t0;
	} while (el < seconds);
	cv_arena_free(&a);
	return el * 1e6 / (double)n;
}

/* Our decoder and the streaming one say the same about p: both refuse, or both give
 * values that encode to the same bytes; and cbor_load reads what ours accepted alike. */
static void agree(const uint8_t *p, size_t n, const char *what)
{
	struct cv_arena a, b;
	struct cv *x, *y;
	char err[AS_ERRLEN];
	cv_arena_init(&a, 1 << 16);
	cv_arena_init(&b, 1 << 16);
	int rx = cbor_decode(p, n, &a, &x, err), ry = sdec_decode(p, n, &b, &y);
	if ((rx == 0) != (ry == 0))
		die(what, rx == 0 ? "the streaming decoder refuses what ours accepts"
				  : "the streaming decoder accepts what ours refuses");
	if (rx == 0) {
		struct buf ex, ey;
		const char *why = "";
		buf_init(&ex, 1 << 20);
		buf_init(&ey, 1 << 20);
		if (cbor_encode(x, &ex, err) || cbor_encode(y, &ey, err) || ex.len != ey.len ||
		    memcmp(ex.p, ey.p, ex.len))
			die(what, "the two strict decoders give different values");
		if (!cbor_oracle_check(x, p, n, &why))
			die(what, why);
		buf_free(&ex);
		buf_free(&ey);
	}
	cv_arena_free(&a);
	cv_arena_free(&b);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	if (seconds <= 0)
		seconds = 1.0;
	sev_init();
	size_t total = 0;
	for (size_t i = 0; i < NENTRIES; i++) {
		struct cv_arena a;
		struct cv *f;
		char err[AS_ERRLEN];
		uint8_t prev[32];
		json_t *j = json_loads(ENTRIES[i], 0, NULL);
		cv_arena_init(&a, 1 << 16);
		memset(prev, (int)i + 1, sizeof prev);
		buf_init(&enc[i], ENTRY_MAX + 256);
		if (!j || cv_from_json(&a, j, &f, err) != 0 ||
		    entry_build(f, 1000 + i, 1796000000123ull + i, prev, &enc[i], err) != 0)
			die("building a bench entry", err);
		total += enc[i].len;
		agree(enc[i].p, enc[i].len, "a bench entry");
		json_decref(j);
		cv_arena_free(&a);
	}
	for (size_t i = 0; i < sizeof REFUSED / sizeof *REFUSED; i++) {
		uint8_t b[16];
		size_t n = strlen(REFUSED[i]) / 2;
		if (hex_decode(REFUSED[i], 2 * n, b, n) != 0)
			die("a refused input", REFUSED[i]);
		struct cv_arena a;
		struct cv *v;
		char err[AS_ERRLEN];
		cv_arena_init(&a, 1 << 16);
		if (cbor_decode(b, n, &a, &v, err) == 0)
			die("our decoder accepts a non-canonical input", REFUSED[i]);
		cv_arena_free(&a);
		agree(b, n, REFUSED[i]);
	}
	printf("== decoding a ledger entry (%zu entries, %zu bytes on average), one core, best of 9 rounds ==\n",
	       NENTRIES, total / NENTRIES);
	printf("%-66s %9s %10s\n", "", "us/entry", "entries/s");
	/* The ways take turns, and each keeps its best round: other work on the machine
	 * then slows a round of every way alike, not one way's whole run. */
	double ours = 1e9, stream = 1e9, load = 1e9;
	for (int round = 0; round < 9; round++) {
		double x = us_per(way_ours, seconds / 9), y = us_per(way_stream, seconds / 9),
		       z = us_per(way_load, seconds / 9);
		ours = x < ours ? x : ours;
		stream = y < stream ? y : stream;
		load = z < load ? z : load;
	}
	printf("%-66s %9.3f %10.0f\n", "common/cbor.c, strict (what assent runs)", ours, 1e6 / ours);
	printf("%-66s %9.3f %10.0f  %.2fx ours\n", "libcbor 0.8 cbor_stream_decode + the same strict checks", stream,
	       1e6 / stream, stream / ours);
	printf("%-66s %9.3f %10.0f  %.2fx ours\n", "libcbor 0.8 cbor_load, lax tree of heap items (for scale)", load,
	       1e6 / load, load / ours);
	for (size_t i = 0; i < NENTRIES; i++)
		buf_free(&enc[i]);
	return 0;
}
