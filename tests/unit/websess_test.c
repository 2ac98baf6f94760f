/* Unit tests for gateway/signer/websess.c: web sessions (the cookie's shape, only its hash
 * kept, lookup by the exact cookie, idle and absolute expiry, least-recently-used
 * eviction when the table is full, ending, sweeping with the registry's say, the CSRF
 * token) and the failed-login limiter (per address, in all, and its window). Times
 * are passed in, in milliseconds, so nothing sleeps. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ledger/merkle.h"
#include "gateway/signer/websess.h"

#define T0 1000000ull /* an arbitrary start: the monotonic clock is not at zero */

static int setup(void **state)
{
	struct web_sessions *w = calloc(1, sizeof *w);
	if (!w)
		return -1;
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

static int b64url_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static size_t used(const struct web_sessions *w)
{
	size_t n = 0;
	for (size_t i = 0; i < WS_MAX; i++)
		n += w->s[i].used != 0;
	return n;
}

static struct ws_session *make(struct web_sessions *w, const char *who, uint64_t now, char cookie[WS_COOKIE_LEN + 1])
{
	uint8_t cred[32];
	memset(cred, who[0], sizeof cred); /* a credential per reviewer's first letter */
	struct ws_session *s = ws_create(w, who, "token", cred, now, cookie);
	assert_non_null(s);
	return s;
}

/* A reviewer name per session (WS_PER_REVIEWER bounds one reviewer's). */
static const char *name_of(size_t i)
{
	static char names[WS_MAX][16];
	snprintf(names[i % WS_MAX], sizeof names[0], "r%zu", i);
	return names[i % WS_MAX];
}

static struct ws_session *find(struct web_sessions *w, const char *cookie, uint64_t now)
{
	return ws_find(w, cookie, strlen(cookie), now);
}

/* ---- sessions ---- */

static void test_create(void **state)
{
	struct web_sessions *w = *state;
	char c1[WS_COOKIE_LEN + 1], c2[WS_COOKIE_LEN + 1];
	memset(c1, 'X', sizeof c1);
	uint8_t cred[32];
	for (size_t i = 0; i < sizeof cred; i++)
		cred[i] = (uint8_t)(i * 7 + 1);
	struct ws_session *s = ws_create(w, "alice", "proxy", cred, T0, c1);
	assert_non_null(s);
	/* The credential it was made with is kept, to end it when that credential ends. */
	assert_memory_equal(s->cred, cred, sizeof cred);
	/* "ws_" and 43 base64url characters, terminated. */
	assert_int_equal(strlen(c1), WS_COOKIE_LEN);
	assert_memory_equal(c1, "ws_", 3);
	for (size_t i = 3; i < WS_COOKIE_LEN; i++)
		assert_true(b64url_char(c1[i]));
	assert_int_equal(strlen(s->csrf), WS_CSRF_LEN);
	for (size_t i = 0; i < WS_CSRF_LEN; i++)
		assert_true(b64url_char(s->csrf[i]));
	assert_string_equal(s->reviewer, "alice");
	assert_string_equal(s->via, "proxy");
	assert_int_equal(s->created, T0);
	assert_int_equal(s->last, T0);
	assert_true(s->used);
	assert_int_not_equal(s->id, 0);
	/* Only the cookie's SHA-256 is kept: the cookie itself is nowhere in the table. */
	uint8_t h[32];
	sha256(c1, WS_COOKIE_LEN, h);
	assert_memory_equal(s->hash, h, 32);
	assert_null(memmem(w, sizeof *w, c1, WS_COOKIE_LEN));
	assert_null(memmem(w, sizeof *w, c1 + 3, 16));
	/* A second one: another cookie, another CSRF token, another id. */
	struct ws_session *t = make(w, "bob", T0, c2);
	assert_ptr_not_equal(s, t);
	assert_string_not_equal(c1, c2);
	assert_string_not_equal(s->csrf, t->csrf);
	assert_int_not_equal(s->id, t->id);
	assert_int_not_equal(t->id, 0);
	assert_string_equal(t->via, "token");
	assert_int_equal(used(w), 2);
}

static void test_create_bounds(void **state)
{
	struct web_sessions *w = *state;
	char c[WS_COOKIE_LEN + 1], name[200];
	memset(name, 'n', sizeof name - 1);
	name[sizeof name - 1] = 0;
	/* Names longer than the fields are cut, never overflowed. */
	static const uint8_t cred[32];
	struct ws_session *s = ws_create(w, name, "a-long-via-name", cred, T0, c);
	assert_non_null(s);
	assert_int_equal(strlen(s->reviewer), sizeof s->reviewer - 1);
	assert_int_equal(strlen(s->via), sizeof s->via - 1);
	/* Ids never come back as 0 when the counter wraps. */
	w->next_id = UINT32_MAX;
	s = make(w, "alice", T0, c);
	assert_int_equal(s->id, 1);
	s = make(w, "alice", T0, c);
	assert_int_equal(s->id, 2);
	/* Nor with the top bit, which ws_credential_stream_id's ids have (and 0 never is). */
	w->next_id = 0x7fffffff;
	s = make(w, "alice", T0, c);
	assert_int_equal(s->id, 1);
	uint8_t k[32] = {0};
	assert_int_equal(ws_credential_stream_id(k), 0x80000000u);
	k[0] = 0xff;
	k[3] = 0x01;
	assert_int_equal(ws_credential_stream_id(k), 0xff000001u);
}

static void test_find(void **state)
{
	struct web_sessions *w = *state;
	char c[WS_COOKIE_LEN + 1], other[WS_COOKIE_LEN + 1], bad[WS_COOKIE_LEN + 8];
	struct ws_session *s = make(w, "alice", T0, c);
	struct ws_session *t = make(w, "bob", T0, other);
	assert_ptr_equal(find(w, c, T0 + 1000), s);
	assert_int_equal(s->last, T0 + 1000);
	assert_int_equal(s->created, T0);
	assert_int_equal(t->last, T0); /* the other one untouched */
	assert_ptr_equal(find(w, other, T0 + 2000), t);
	/* The cookie inside a longer buffer: only n bytes count. */
	memcpy(bad, c, WS_COOKIE_LEN);
	memcpy(bad + WS_COOKIE_LEN, "; more", 7);
	assert_ptr_equal(ws_find(w, bad, WS_COOKIE_LEN, T0 + 3000), s);
	/* One byte changed anywhere, one byte less or more: no session. */
	for (size_t i = 0; i < WS_COOKIE_LEN; i++) {
		memcpy(bad, c, WS_COOKIE_LEN + 1);
		bad[i] = bad[i] == 'A' ? 'B' : 'A';
		assert_null(ws_find(w, bad, WS_COOKIE_LEN, T0 + 3000));
	}
	assert_null(ws_find(w, c, WS_COOKIE_LEN - 1, T0 + 3000));
	memcpy(bad, c, WS_COOKIE_LEN);
	bad[WS_COOKIE_LEN] = 'A';
	assert_null(ws_find(w, bad, WS_COOKIE_LEN + 1, T0 + 3000));
	assert_null(ws_find(w, c + 1, WS_COOKIE_LEN - 1, T0 + 3000));
	assert_null(ws_find(w, "", 0, T0 + 3000));
	/* The CSRF token is not a cookie, nor is the hash. */
	assert_null(ws_find(w, s->csrf, strlen(s->csrf), T0 + 3000));
	assert_null(ws_find(w, (const char *)s->hash, sizeof s->hash, T0 + 3000));
	/* An empty table slot (all zero) is not found by any cookie, even one of zeros. */
	memset(bad, 0, sizeof bad);
	memcpy(bad, "ws_", 3);
	assert_null(ws_find(w, bad, WS_COOKIE_LEN, T0 + 3000));
	/* Both still there and found. */
	assert_ptr_equal(find(w, c, T0 + 4000), s);
	assert_ptr_equal(find(w, other, T0 + 4000), t);
	assert_int_equal(used(w), 2);
}

static void test_idle_expiry(void **state)
{
	struct web_sessions *w = *state;
	char c[WS_COOKIE_LEN + 1], d[WS_COOKIE_LEN + 1];
	struct ws_session *s = make(w, "alice", T0, c);
	/* Exactly the idle time: still in. */
	assert_ptr_equal(find(w, c, T0 + WS_IDLE_MS), s);
	/* Each use starts the idle time again. */
	assert_ptr_equal(find(w, c, T0 + 2 * WS_IDLE_MS), s);
	/* A moment past it: ended, and stays ended even if asked with an earlier time. */
	assert_null(find(w, c, T0 + 3 * WS_IDLE_MS + 1));
	assert_false(s->used);
	assert_null(find(w, c, T0 + 2 * WS_IDLE_MS));
	assert_int_equal(used(w), 0);
	/* Another session is not touched by one's expiry. */
	struct ws_session *t = make(w, "bob", T0, d);
	make(w, "carol", T0 + WS_IDLE_MS, c);
	assert_null(find(w, d, T0 + WS_IDLE_MS + 1));
	assert_false(t->used);
	assert_non_null(find(w, c, T0 + WS_IDLE_MS + 1));
}

static void test_absolute_expiry(void **state)
{
	struct web_sessions *w = *state;
	char c[WS_COOKIE_LEN + 1];
	struct ws_session *s = make(w, "alice", T0, c);
	/* Used every hour: lives to exactly WS_LIFE_MS, not a moment more. */
	uint64_t t = T0;
	while (t + 3600000 <= T0 + WS_LIFE_MS) {
		t += 3600000;
		assert_ptr_equal(find(w, c, t), s);
	}
	assert_int_equal(t, T0 + WS_LIFE_MS);
	assert_null(find(w, c, T0 + WS_LIFE_MS + 1));
	assert_false(s->used);
	assert_int_equal(used(w), 0);
}

static void test_end(void **state)
{
	struct web_sessions *w = *state;
	char c[WS_COOKIE_LEN + 1], d[WS_COOKIE_LEN + 1];
	struct ws_session *s = make(w, "alice", T0, c);
	struct ws_session *t = make(w, "bob", T0, d);
	ws_end(s);
	/* Wiped: no hash, no token, no name left. */
	static const struct ws_session zero;
	assert_memory_equal(s, &zero, sizeof zero);
	assert_null(find(w, c, T0 + 1));
	assert_ptr_equal(find(w, d, T0 + 1), t);
	/* Its slot is taken by the next one, with nothing else evicted. */
	char e[WS_COOKIE_LEN + 1];
	assert_ptr_equal(make(w, "carol", T0 + 2, e), s);
	assert_ptr_equal(find(w, d, T0 + 3), t);
	assert_null(find(w, c, T0 + 3));
}

/* WS_MAX sessions: one more evicts the least recently used, and only it. */
static void test_lru_eviction(void **state)
{
	struct web_sessions *w = *state;
	static char cookies[WS_MAX][WS_COOKIE_LEN + 1];
	for (size_t i = 0; i < WS_MAX; i++)
		make(w, name_of(i), T0 + i, cookies[i]);
	assert_int_equal(used(w), WS_MAX);
	/* The oldest two are used again: the third oldest is now the least recently used. */
	assert_non_null(find(w, cookies[0], T0 + WS_MAX));
	assert_non_null(find(w, cookies[1], T0 + WS_MAX + 1));
	char c[WS_COOKIE_LEN + 1];
	struct ws_session *s = make(w, "bob", T0 + WS_MAX + 2, c);
	assert_int_equal(used(w), WS_MAX);
	assert_null(find(w, cookies[2], T0 + WS_MAX + 3));
	assert_ptr_equal(find(w, c, T0 + WS_MAX + 3), s);
	assert_string_equal(s->reviewer, "bob");
	for (size_t i = 0; i < WS_MAX; i++)
		if (i != 2 && !find(w, cookies[i], T0 + WS_MAX + 4))
			fail_msg("session %zu of %d was lost to one eviction", i, WS_MAX);
	/* Now all were used at T0 + WS_MAX + 4 except the newest: the next one goes. */
	char d[WS_COOKIE_LEN + 1];
	make(w, "carol", T0 + WS_MAX + 5, d);
	assert_null(find(w, c, T0 + WS_MAX + 6));
	assert_int_equal(used(w), WS_MAX);
	/* Ids stay distinct across the whole table. */
	for (size_t i = 0; i < WS_MAX; i++)
		for (size_t j = i + 1; j < WS_MAX; j++)
			if (w->s[i].used && w->s[j].used && w->s[i].id == w->s[j].id)
				fail_msg("two sessions share id %u", w->s[i].id);
}

/* One reviewer holds at most WS_PER_REVIEWER sessions: past it their own oldest goes,
 * never someone else's. */
static void test_per_reviewer_cap(void **state)
{
	struct web_sessions *w = *state;
	char other[WS_COOKIE_LEN + 1], c[WS_PER_REVIEWER + 8][WS_COOKIE_LEN + 1];
	make(w, "bob", T0, other);
	for (size_t i = 0; i < WS_PER_REVIEWER + 8; i++)
		make(w, "mallory", T0 + 1 + i, c[i]);
	assert_int_equal(used(w), WS_PER_REVIEWER + 1);
	assert_true(w->evicted != 0); /* the signer ends the evicted session's streams */
	assert_non_null(find(w, other, T0 + 100));
	for (size_t i = 0; i < 8; i++)
		assert_null(find(w, c[i], T0 + 100));
	for (size_t i = 8; i < WS_PER_REVIEWER + 8; i++)
		assert_non_null(find(w, c[i], T0 + 100));
}

/* A free slot anywhere is taken before anything is evicted. */
static void test_free_slot_first(void **state)
{
	struct web_sessions *w = *state;
	static char cookies[WS_MAX][WS_COOKIE_LEN + 1];
	for (size_t i = 0; i < WS_MAX; i++)
		make(w, name_of(i), T0 + 10 + i, cookies[i]);
	ws_end(&w->s[WS_MAX - 1]);
	char c[WS_COOKIE_LEN + 1];
	assert_ptr_equal(make(w, "bob", T0 + 5000, c), &w->s[WS_MAX - 1]);
	for (size_t i = 0; i < WS_MAX - 1; i++)
		if (!find(w, cookies[i], T0 + 5001))
			fail_msg("session %zu evicted while a slot was free", i);
}

/* dave's credential is gone (removed, or his token rotated: the session holds a hash
 * that is no longer his). */
static int alive_but_dave(void *arg, const struct ws_session *ss)
{
	int *calls = arg;
	(*calls)++;
	uint8_t d[32];
	memset(d, 'd', sizeof d);
	return memcmp(ss->cred, d, sizeof d) != 0;
}

static void test_sweep(void **state)
{
	struct web_sessions *w = *state;
	char c[5][WS_COOKIE_LEN + 1];
	uint64_t now = T0 + WS_LIFE_MS + 10;
	struct ws_session *alice = make(w, "alice", now - 1000, c[0]);
	struct ws_session *bob = make(w, "bob", now - WS_IDLE_MS - 1, c[1]); /* idle too long */
	struct ws_session *carol = make(w, "carol", now - WS_LIFE_MS - 1, c[2]);
	carol->last = now - 5;						   /* used a moment ago, but too old */
	struct ws_session *dave = make(w, "dave", now - 1000, c[3]);	   /* no longer in the registry */
	struct ws_session *erin = make(w, "erin", now - WS_IDLE_MS, c[4]); /* exactly the idle time: still in */
	uint32_t ids[] = {bob->id, carol->id, dave->id};
	uint32_t out[8];
	memset(out, 0, sizeof out);
	int calls = 0;
	size_t n = ws_sweep(w, now, alive_but_dave, &calls, out, 8);
	assert_int_equal(n, 3);
	assert_true(calls >= 2); /* asked at least about the ones time did not end */
	for (size_t i = 0; i < 3; i++) {
		int seen = 0;
		for (size_t j = 0; j < n; j++)
			seen += out[j] == ids[i];
		if (seen != 1)
			fail_msg("ended session id %u reported %d times", ids[i], seen);
	}
	assert_int_equal(out[3], 0);
	assert_true(alice->used);
	assert_true(erin->used);
	assert_false(bob->used);
	assert_false(carol->used);
	assert_false(dave->used);
	assert_null(find(w, c[3], now));
	assert_ptr_equal(find(w, c[0], now), alice);
	/* Nothing more to end. */
	calls = 0;
	assert_int_equal(ws_sweep(w, now, alive_but_dave, &calls, out, 8), 0);
	assert_int_equal(calls, 2);
	/* Without a registry to ask, only time ends sessions. */
	make(w, "dave", now, c[3]);
	assert_int_equal(ws_sweep(w, now, NULL, NULL, out, 8), 0);
	assert_int_equal(used(w), 3);
}

/* More ended than out holds: all are ended and counted, out is not overrun. */
static void test_sweep_overflow(void **state)
{
	struct web_sessions *w = *state;
	char c[WS_COOKIE_LEN + 1];
	for (int i = 0; i < 10; i++)
		make(w, "alice", T0, c);
	uint32_t out[4] = {0, 0, 0, 0xdeadbeef};
	assert_int_equal(ws_sweep(w, T0 + WS_IDLE_MS + 1, NULL, NULL, out, 3), 10);
	assert_int_equal(out[3], 0xdeadbeef);
	for (int i = 0; i < 3; i++)
		assert_int_not_equal(out[i], 0);
	assert_int_equal(used(w), 0);
	make(w, "alice", T0, c);
	assert_int_equal(ws_sweep(w, T0 + WS_IDLE_MS + 1, NULL, NULL, NULL, 0), 1);
	assert_int_equal(used(w), 0);
}

static void test_csrf(void **state)
{
	struct web_sessions *w = *state;
	char c[WS_COOKIE_LEN + 1], d[WS_COOKIE_LEN + 1], tok[WS_CSRF_LEN + 8];
	struct ws_session *s = make(w, "alice", T0, c);
	struct ws_session *t = make(w, "bob", T0, d);
	assert_true(ws_csrf_ok(s, s->csrf, WS_CSRF_LEN));
	assert_true(ws_csrf_ok(s, s->csrf, strlen(s->csrf)));
	/* Another session's token, one changed byte, a byte less or more, none. */
	assert_false(ws_csrf_ok(s, t->csrf, WS_CSRF_LEN));
	for (size_t i = 0; i < WS_CSRF_LEN; i++) {
		memcpy(tok, s->csrf, WS_CSRF_LEN + 1);
		tok[i] ^= 1;
		assert_false(ws_csrf_ok(s, tok, WS_CSRF_LEN));
	}
	assert_false(ws_csrf_ok(s, s->csrf, WS_CSRF_LEN - 1));
	memcpy(tok, s->csrf, WS_CSRF_LEN);
	tok[WS_CSRF_LEN] = 'A';
	tok[WS_CSRF_LEN + 1] = 0;
	assert_false(ws_csrf_ok(s, tok, WS_CSRF_LEN + 1));
	assert_false(ws_csrf_ok(s, NULL, WS_CSRF_LEN));
	assert_false(ws_csrf_ok(s, NULL, 0));
	assert_false(ws_csrf_ok(s, "", 0));
	/* The cookie is not the CSRF token. */
	assert_false(ws_csrf_ok(s, c, WS_CSRF_LEN));
}

/* ---- the failed-login limiter ---- */

static int failed(struct web_sessions *w, const char *addr, uint64_t now, unsigned *retry)
{
	unsigned all = 0;
	return ws_login_failed(w, addr, now, retry, &all);
}

/* Past WS_FAIL_PER_PEER failures a minute from one source, a wrong token is answered
 * 429 (with when its window ends); nothing here ever refuses a right token: the
 * signer checks the token before it asks. */
static void test_login_per_peer(void **state)
{
	struct web_sessions *w = *state;
	unsigned retry = 0;
	const uint64_t t = T0;
	for (int i = 0; i < WS_FAIL_PER_PEER; i++)
		if (failed(w, "198.51.100.7", t + (uint64_t)i * 1000, &retry))
			fail_msg("limited after %d failures, the limit is %d", i + 1, WS_FAIL_PER_PEER);
	/* The window began with the first failure: 60 s from t. */
	assert_true(failed(w, "198.51.100.7", t + 10000, &retry));
	assert_int_equal(retry, 51);
	assert_true(failed(w, "198.51.100.7", t + 59500, &retry));
	assert_int_equal(retry, 1);
	/* Another address is not held back by this one. */
	assert_false(failed(w, "198.51.100.8", t + 10000, &retry));
	assert_false(failed(w, "2001:db8:1::7", t + 10000, &retry));
	/* Past the window the count starts again. */
	uint64_t u = t + WS_FAIL_WINDOW_MS + 1;
	for (int i = 0; i < WS_FAIL_PER_PEER; i++)
		assert_false(failed(w, "198.51.100.7", u, &retry));
	assert_true(failed(w, "198.51.100.7", u, &retry));
	assert_int_equal(retry, WS_FAIL_WINDOW_MS / 1000 + 1);
}

/* Every loopback address is one source (other 127.0.0.0/8 addresses do not dodge the
 * count), an IPv6 host's /64 is one, and a proxy's clients are counted apart. */
static void test_login_source(void **state)
{
	(void)state;
	static const struct {
		const char *in, *want;
	} cases[] = {
	    {"127.0.0.1", "loopback"},
	    {"127.0.0.2", "loopback"},
	    {"127.255.255.254", "loopback"},
	    {"::1", "loopback"},
	    {"::ffff:127.3.4.5", "loopback"},
	    {"128.0.0.1", "128.0.0.1"},
	    {"126.255.255.255", "126.255.255.255"},
	    {"::ffff:192.0.2.9", "192.0.2.9"},
	    {"192.0.2.9", "192.0.2.9"},
	    {"2001:db8::7", "2001:db8::/64"},
	    {"2001:db8::1:2:3:4", "2001:db8::/64"},
	    {"2001:db8:0:1::7", "2001:db8:0:1::/64"},
	    {"proxy:127.0.0.9", "proxy:loopback"},
	    {"proxy:198.51.100.7", "proxy:198.51.100.7"},
	    {"proxy:", "proxy:"},
	    {"not an address", "not an address"},
	    {"", ""},
	};
	char out[WS_SOURCE_MAX];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		memset(out, 'x', sizeof out);
		ws_login_source(cases[i].in, out);
		if (strcmp(out, cases[i].want))
			fail_msg("source of '%s': got '%s', want '%s'", cases[i].in, out, cases[i].want);
	}
	char longer[200];
	memset(longer, 'f', sizeof longer - 1);
	longer[sizeof longer - 1] = 0;
	ws_login_source(longer, out);
	assert_int_equal(strlen(out), WS_SOURCE_MAX - 1);
}

static void test_login_loopback_one_source(void **state)
{
	struct web_sessions *w = *state;
	unsigned retry = 0;
	char addr[64];
	for (int i = 0; i < WS_FAIL_PER_PEER; i++) {
		snprintf(addr, sizeof addr, "127.0.0.%d", i + 2);
		assert_false(failed(w, addr, T0, &retry));
	}
	assert_true(failed(w, "127.0.0.1", T0, &retry));
	assert_true(failed(w, "::1", T0, &retry));
	assert_false(failed(w, "192.0.2.1", T0, &retry));
}

/* Everyone's failures are counted for the log, once a window; they limit no one. */
static void test_login_log_all(void **state)
{
	struct web_sessions *w = *state;
	unsigned retry = 0, all = 0, logged = 0;
	char addr[64];
	for (int i = 0; i < 3 * WS_FAIL_LOG; i++) {
		snprintf(addr, sizeof addr, "203.0.113.%d", i);
		if (ws_login_failed(w, addr, T0 + (uint64_t)i, &retry, &all))
			fail_msg("an address with one failure was limited after %d in all", i + 1);
		if (all) {
			logged++;
			assert_int_equal(all, WS_FAIL_LOG);
			assert_int_equal(i + 1, WS_FAIL_LOG);
		}
	}
	assert_int_equal(logged, 1);
	/* The next window logs again. */
	for (int i = 0; i < WS_FAIL_LOG; i++) {
		snprintf(addr, sizeof addr, "198.18.0.%d", i);
		ws_login_failed(w, addr, T0 + WS_FAIL_WINDOW_MS + 200, &retry, &all);
		logged += all != 0;
	}
	assert_int_equal(logged, 2);
}

/* Sources as long as the table holds, and many more sources than the table has room
 * for, one failure each: nothing overflows, the limit stays per source, and the
 * newest offender is counted. */
static void test_login_table(void **state)
{
	struct web_sessions *w = *state;
	unsigned retry = 0;
	char addr[64], other[32];
	for (int i = 0; i < 200; i++) {
		snprintf(other, sizeof other, "10.0.%d.%d", i / 256, i % 256);
		failed(w, other, T0 + (uint64_t)i, &retry);
	}
	memset(addr, 'f', sizeof addr - 1);
	addr[sizeof addr - 1] = 0;
	uint64_t t = T0 + 2 * WS_FAIL_WINDOW_MS;
	for (int i = 0; i < WS_FAIL_PER_PEER; i++)
		assert_false(failed(w, addr, t, &retry));
	assert_true(failed(w, addr, t + 1, &retry));
	assert_int_equal(retry, WS_FAIL_WINDOW_MS / 1000);
	assert_false(failed(w, "192.0.2.1", t + 1, &retry));
	assert_false(failed(w, "10.0.0.1", t + 1, &retry));
	/* Thousands more: the table is reused; every slot keeps a terminated address. */
	for (int i = 0; i < 5000; i++) {
		snprintf(other, sizeof other, "10.1.%d.%d", i / 256, i % 256);
		failed(w, other, t + 1000 + (uint64_t)i, &retry);
	}
	for (size_t i = 0; i < sizeof w->peers / sizeof w->peers[0]; i++)
		assert_non_null(memchr(w->peers[i].addr, 0, sizeof w->peers[i].addr));
	/* Later, the last of them fails its five times: the sixth is limited, and only it. */
	t += 10 * WS_FAIL_WINDOW_MS;
	for (int i = 0; i < WS_FAIL_PER_PEER; i++)
		failed(w, "10.1.19.135", t, &retry);
	assert_true(failed(w, "10.1.19.135", t + WS_FAIL_WINDOW_MS, &retry));
	assert_false(failed(w, "10.1.19.134", t + WS_FAIL_WINDOW_MS, &retry));
	assert_false(failed(w, "10.1.19.135", t + 2 * WS_FAIL_WINDOW_MS + 2, &retry));
}

/* Cluster mode: a session another replica made is known here by its hash, with its CSRF token
 * and times; a second word of it only brings its use forward; dropping it ends it, and the
 * next sweep names it (its streams end); one that evicts a session here names that one too. */
static void test_adopt_drop(void **state)
{
	struct web_sessions *w = *state;
	struct web_sessions *other = calloc(1, sizeof *other);
	assert_non_null(other);
	char c[WS_COOKIE_LEN + 1];
	const struct ws_session *there = make(other, "alice", T0, c);
	struct ws_session in = *there;
	in.id = 77; /* another replica's id means nothing here */
	struct ws_session *k = ws_adopt(w, &in);
	assert_non_null(k);
	assert_int_not_equal(k->id, 77);
	assert_ptr_equal(find(w, c, T0 + 5), k); /* the browser's secret works here */
	assert_true(ws_csrf_ok(k, there->csrf, WS_CSRF_LEN));
	assert_string_equal(k->reviewer, "alice");
	uint32_t id = k->id;
	in.last = T0 + 100;
	assert_ptr_equal(ws_adopt(w, &in), k); /* known: the same session, used later */
	assert_int_equal(k->id, id);
	assert_int_equal(k->last, T0 + 100);
	in.last = T0 + 50; /* an older word never moves its use back */
	assert_ptr_equal(ws_adopt(w, &in), k);
	assert_int_equal(k->last, T0 + 100);
	struct ws_session nobody = in;
	nobody.reviewer[0] = 0;
	assert_null(ws_adopt(w, &nobody));
	ws_drop(w, there->hash);
	assert_null(find(w, c, T0 + 200));
	assert_null(ws_by_hash(w, there->hash));
	uint32_t out[4];
	assert_int_equal(ws_sweep(w, T0 + 200, NULL, NULL, out, 4), 1);
	assert_int_equal(out[0], id);
	assert_int_equal(ws_sweep(w, T0 + 200, NULL, NULL, out, 4), 0);
	ws_drop(w, there->hash); /* unknown: nothing */
	/* one reviewer's cap: adopting one more evicts their own oldest, named by the sweep */
	char d[WS_COOKIE_LEN + 1];
	uint32_t first = make(w, "bob", T0, d)->id;
	for (int i = 1; i < WS_PER_REVIEWER; i++)
		assert_non_null(make(w, "bob", T0 + (uint64_t)i, d));
	struct ws_session more = *make(other, "bob", T0 + 1000, d);
	assert_non_null(ws_adopt(w, &more));
	assert_int_equal(ws_sweep(w, T0 + 1001, NULL, NULL, out, 4), 1);
	assert_int_equal(out[0], first);
	free(other);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
	    T(test_create),	    T(test_create_bounds),    T(test_find),
	    T(test_idle_expiry),    T(test_absolute_expiry),  T(test_end),
	    T(test_lru_eviction),   T(test_per_reviewer_cap), T(test_free_slot_first),
	    T(test_sweep),	    T(test_sweep_overflow),   T(test_csrf),
	    T(test_login_per_peer), T(test_login_source),     T(test_login_loopback_one_source),
	    T(test_login_log_all),  T(test_login_table),      T(test_adopt_drop),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
