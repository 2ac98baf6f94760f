/* Web sessions of reviewers: secrets kept only as hashes, bound to the credential that opened them,
 * and the login limiter (per address, never locking out the right token). */
#define _GNU_SOURCE
#include "gateway/signer/websess.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "ledger/merkle.h"
#include "common/util.h"

static int random_text(const char *prefix, char *out, size_t chars)
{
	uint8_t raw[32];
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return -1;
	struct buf b;
	buf_init(&b, 64);
	int ok = buf_put(&b, prefix, strlen(prefix)) == 0 && b64url_encode(raw, sizeof raw, &b) == 0 && b.len >= chars;
	explicit_bzero(raw, sizeof raw);
	if (ok) {
		memcpy(out, b.p, chars);
		out[chars] = 0;
	}
	buf_free_wipe(&b);
	return ok ? 0 : -1;
}

uint32_t ws_credential_stream_id(const uint8_t cred[32])
{
	return 0x80000000u | (uint32_t)cred[0] << 24 | (uint32_t)cred[1] << 16 | (uint32_t)cred[2] << 8 | cred[3];
}

/* A slot for a new session of reviewer, cleared, with its id (w->evicted: whose it was). */
static struct ws_session *ws_slot(struct web_sessions *w, const char *reviewer)
{
	struct ws_session *slot = NULL, *own = NULL;
	size_t mine = 0;
	for (size_t i = 0; i < WS_MAX; i++)
		if (w->s[i].used && !strcmp(w->s[i].reviewer, reviewer)) {
			mine++;
			if (!own || w->s[i].last < own->last)
				own = &w->s[i];
		}
	if (mine >= WS_PER_REVIEWER)
		slot = own;			     /* their own least recently used */
	for (size_t i = 0; i < WS_MAX && !slot; i++) /* else a free slot */
		if (!w->s[i].used)
			slot = &w->s[i];
	if (!slot) { /* else the least recently used of all */
		slot = &w->s[0];
		for (size_t i = 1; i < WS_MAX; i++)
			if (w->s[i].last < slot->last)
				slot = &w->s[i];
	}
	w->evicted = slot->used ? slot->id : 0;
	explicit_bzero(slot, sizeof *slot);
	if (++w->next_id == 0 || w->next_id >= 0x80000000u) /* ids with the top bit are credentials' */
		w->next_id = 1;
	slot->id = w->next_id;
	slot->used = 1;
	return slot;
}

struct ws_session *ws_create(struct web_sessions *w, const char *reviewer, const char *via, const uint8_t cred[32],
			     uint64_t now, char cookie[WS_COOKIE_LEN + 1])
{
	char csrf[WS_CSRF_LEN + 1];
	if (random_text("ws_", cookie, WS_COOKIE_LEN) != 0 || random_text("", csrf, WS_CSRF_LEN) != 0)
		return NULL; /* before any slot is touched: a failure loses no one's session */
	struct ws_session *slot = ws_slot(w, reviewer);
	memcpy(slot->csrf, csrf, sizeof csrf);
	explicit_bzero(csrf, sizeof csrf);
	sha256(cookie, WS_COOKIE_LEN, slot->hash);
	memcpy(slot->cred, cred, sizeof slot->cred);
	snprintf(slot->reviewer, sizeof slot->reviewer, "%s", reviewer);
	snprintf(slot->via, sizeof slot->via, "%s", via);
	slot->created = slot->last = slot->told = now;
	return slot;
}

struct ws_session *ws_by_hash(struct web_sessions *w, const uint8_t hash[32])
{
	for (size_t i = 0; i < WS_MAX; i++)
		if (w->s[i].used && !memcmp(w->s[i].hash, hash, 32))
			return &w->s[i];
	return NULL;
}

void ws_drop(struct web_sessions *w, const uint8_t hash[32])
{
	struct ws_session *k = ws_by_hash(w, hash);
	if (!k)
		return;
	if (w->ngone < sizeof w->gone / sizeof *w->gone)
		w->gone[w->ngone++] = k->id;
	ws_end(k);
}

struct ws_session *ws_adopt(struct web_sessions *w, const struct ws_session *in)
{
	struct ws_session *k = ws_by_hash(w, in->hash);
	if (!in->reviewer[0])
		return NULL;
	if (k) {
		k->last = in->last > k->last ? in->last : k->last;
		k->told = k->last;
		return k;
	}
	k = ws_slot(w, in->reviewer);
	if (w->evicted && w->ngone < sizeof w->gone / sizeof *w->gone)
		w->gone[w->ngone++] = w->evicted;
	uint32_t id = k->id;
	*k = *in;
	k->id = id;
	k->used = 1;
	k->told = k->last;
	return k;
}

struct ws_session *ws_find(struct web_sessions *w, const char *cookie, size_t n, uint64_t now)
{
	if (n != WS_COOKIE_LEN || strncmp(cookie, "ws_", 3))
		return NULL;
	uint8_t h[32];
	sha256(cookie, n, h);
	struct ws_session *found = NULL;
	for (size_t i = 0; i < WS_MAX; i++) /* every slot, so the time taken says nothing */
		if (w->s[i].used && ct_memcmp(w->s[i].hash, h, 32) == 0)
			found = &w->s[i];
	if (found && (now - found->last > WS_IDLE_MS || now - found->created > WS_LIFE_MS)) {
		ws_end(found);
		return NULL;
	}
	if (found)
		found->last = now;
	return found;
}

int ws_csrf_ok(const struct ws_session *s, const char *csrf, size_t n)
{
	return csrf && n == WS_CSRF_LEN && ct_memcmp(s->csrf, csrf, WS_CSRF_LEN) == 0;
}

void ws_end(struct ws_session *s)
{
	explicit_bzero(s, sizeof *s);
}

size_t ws_sweep(struct web_sessions *w, uint64_t now, int (*alive)(void *, const struct ws_session *), void *arg,
		uint32_t *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < w->ngone; i++, n++) /* evicted by ws_adopt: their streams end too */
		if (n < max)
			out[n] = w->gone[i];
	w->ngone = 0;
	for (size_t i = 0; i < WS_MAX; i++) {
		struct ws_session *s = &w->s[i];
		if (!s->used)
			continue;
		if (now - s->last > WS_IDLE_MS || now - s->created > WS_LIFE_MS || (alive && !alive(arg, s))) {
			if (n < max)
				out[n] = s->id;
			n++;
			ws_end(s);
		}
	}
	return n;
}

static struct ws_peer *peer(struct web_sessions *w, const char *addr, uint64_t now)
{
	struct ws_peer *oldest = &w->peers[0];
	for (size_t i = 0; i < sizeof w->peers / sizeof w->peers[0]; i++) {
		struct ws_peer *p = &w->peers[i];
		if (p->addr[0] && !strcmp(p->addr, addr)) {
			if (now - p->since > WS_FAIL_WINDOW_MS) {
				p->since = now;
				p->fails = 0;
			}
			return p;
		}
		if (p->since < oldest->since)
			oldest = p;
	}
	memset(oldest, 0, sizeof *oldest);
	snprintf(oldest->addr, sizeof oldest->addr, "%s", addr);
	oldest->since = now;
	return oldest;
}

void ws_login_source(const char *addr, char out[WS_SOURCE_MAX])
{
	const char *proxy = !strncmp(addr, "proxy:", 6) ? "proxy:" : "";
	const char *a = addr + strlen(proxy);
	struct in_addr v4;
	struct in6_addr v6;
	char text[INET6_ADDRSTRLEN];
	if (inet_pton(AF_INET6, a, &v6) == 1 && IN6_IS_ADDR_V4MAPPED(&v6)) {
		memcpy(&v4, &v6.s6_addr[12], 4);
		a = inet_ntop(AF_INET, &v4, text, sizeof text) ? text : a;
	}
	if (inet_pton(AF_INET, a, &v4) == 1) {
		if ((ntohl(v4.s_addr) >> 24) == 127)
			a = "loopback";
	} else if (inet_pton(AF_INET6, a, &v6) == 1) {
		if (IN6_IS_ADDR_LOOPBACK(&v6)) {
			a = "loopback";
		} else { /* one host holds a /64: its addresses are one source */
			memset(&v6.s6_addr[8], 0, 8);
			char net[INET6_ADDRSTRLEN];
			if (inet_ntop(AF_INET6, &v6, net, sizeof net)) {
				snprintf(text, sizeof text, "%.42s/64", net);
				a = text;
			}
		}
	}
	snprintf(out, WS_SOURCE_MAX, "%s%s", proxy, a);
}

int ws_login_failed(struct web_sessions *w, const char *addr, uint64_t now, unsigned *retry_s, unsigned *log_all)
{
	char src[WS_SOURCE_MAX];
	ws_login_source(addr, src);
	struct ws_peer *p = peer(w, src, now);
	p->fails++;
	if (now - w->all_since > WS_FAIL_WINDOW_MS) {
		w->all_since = now;
		w->all_fails = 0;
		w->all_logged = 0;
	}
	w->all_fails++;
	*log_all = 0;
	if (w->all_fails >= WS_FAIL_LOG && !w->all_logged) {
		w->all_logged = 1;
		*log_all = w->all_fails;
	}
	*retry_s = (unsigned)((p->since + WS_FAIL_WINDOW_MS - now) / 1000) + 1;
	return p->fails > WS_FAIL_PER_PEER;
}
