/* Witnesses (issue 31): each new periodic checkpoint goes to the witnesses the operator names
 * in ASSENT_WITNESSES, as C2SP tlog-witness add-checkpoint with the consistency proof from the
 * size each witness last cosigned; the cosignatures that verify are stored beside the
 * checkpoint (ledger_cosign). The signer makes each body and connects each socket; the notify
 * worker speaks HTTP and reads the answer (gateway/worker/notify/wresp.c) and sends back only
 * its fields (F_WITNESS_DONE), from which each line is rebuilt once its Ed25519 signature
 * verifies, with the witness's configured key, over the very checkpoint sent.
 *
 * A witness that is down, slow or answers anything else is tried again with backoff
 * (ASSENT_NOTIFY_BACKOFF_MS, doubling, at most a minute) with the newest periodic
 * checkpoint: nothing is re-signed, and a witness that comes back cosigns the checkpoint that
 * waited (or a newer one, which its consistency proof covers). A witness that saw another
 * tree (a 409 that is not the C2SP recovery of an unknown size, or a 422 after it) raises the
 * alarm: logged at error, counted on /metrics, shown on /health until the daemon restarts.
 *
 * Each request reads the ledger's tiles in the signer's loop to make the proof (a tile per
 * 1,024 entries and a few thousand entries: about 6 ms at 100,000 entries, docs/audit.md),
 * once per witness per new periodic checkpoint. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"
#include "gateway/signer/witness.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/urlsplit.h"
#include "gateway/proto/frames.h"
#include "ledger/merkle.h"
#include "verify/consist.h"

#define WIT_FILE_MAX (64u << 10) /* ASSENT_WITNESSES */
#define WIT_STATE_FILE "witnesses.state"
#define WIT_BACKOFF_MAX_MS 60000u
#define WIT_ID_BIT (1ull << 63) /* witness request ids; webhook ids keep this bit clear */

struct witness {
	char name[PROTO_WITNESS_NAME_MAX + 1];
	uint8_t pub[32], keyid[4];
	char scheme[8], host[256], path[PROTO_URL_PATH_MAX + 1];
	uint16_t port;
	struct sockaddr_storage addr;
	socklen_t alen;
	uint64_t cosigned; /* the newest size it cosigned for us (STATE/witnesses.state) */
	uint64_t old;	   /* the size it has, as far as we know: the next request's old */
	int inflight;
	uint64_t id, sent_at, next_at, sent_size, sent_old;
	uint64_t sent_us;	  /* monotonic: the round trip the log reports (make bench reads it) */
	char sent_body[CKPT_MAX]; /* the body of the checkpoint sent: what its cosignature signs */
	size_t sent_blen;
	unsigned fails;
	int recovering; /* the last answer was a 409 we asked again after: the next is not at once */
	int alarm;
	uint64_t alarm_size;
};

struct witnesses {
	size_t n;
	struct witness w[PROTO_WITNESS_MAX];
	uint64_t next_check, next_id;
	unsigned backoff_ms;
	uint64_t psize;		   /* the newest periodic checkpoint's size; 0: none yet */
	char note[CKPT_MAX + 1];   /* its note as stored */
	size_t note_len, body_len; /* the note's bytes; its body's (the part cosigned) */
};

/* ---- configuration ---- */

/* A witness name: a schema-less URL (C2SP), here letters, digits and . _ / : - only, so that
 * it needs no escaping in a log line or in /health's JSON. */
static int wname_ok(const char *p, size_t n)
{
	if (n == 0 || n > PROTO_WITNESS_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= '0' && p[i] <= '9') ||
		      strchr("._/:-", p[i])))
			return 0;
	return 1;
}

/* NAME+KEYIDHEX+BASE64(0x04 || Ed25519 public key): a C2SP note verifier key. */
static int parse_vkey(const char *v, struct witness *w, char *err)
{
	const char *p1 = strchr(v, '+'), *p2 = p1 ? strchr(p1 + 1, '+') : NULL;
	uint8_t raw[40], kid[4], h[32];
	size_t got = 0;
	if (!p2 || !wname_ok(v, (size_t)(p1 - v)))
		return as_fail(err, AS_EINVAL, "'%.80s' is not NAME+KEYID+KEY (a name of letters, digits, ._/:-)", v);
	if (p2 - p1 - 1 != 8 || hex_decode(p1 + 1, 8, kid, 4) != 0)
		return as_fail(err, AS_EINVAL, "the key ID of '%.80s' is not 8 lowercase hex digits", v);
	if (b64_decode(p2 + 1, strlen(p2 + 1), raw, sizeof raw, &got) != 0 || got != 33 || raw[0] != 0x04)
		return as_fail(err, AS_EINVAL, "the key of '%.80s' is not an Ed25519 key (0x04 and 32 bytes, base64)",
			       v);
	snprintf(w->name, sizeof w->name, "%.*s", (int)(p1 - v), v);
	memcpy(w->pub, raw + 1, 32);
	uint8_t msg[PROTO_WITNESS_NAME_MAX + 1 + 33];
	size_t nl = strlen(w->name);
	memcpy(msg, w->name, nl);
	msg[nl] = '\n';
	memcpy(msg + nl + 1, raw, 33);
	sha256(msg, nl + 34, h);
	memcpy(w->keyid, h, 4);
	if (memcmp(kid, w->keyid, 4) != 0)
		return as_fail(err, AS_EINVAL, "the key ID of '%.80s' is not the one its name and key make", v);
	return 0;
}

static int parse_url(const char *u, struct witness *w, char *err)
{
	struct url_parts p;
	char why[AS_ERRLEN];
	if (url_split(u, &p, why, sizeof why) != 0)
		return as_fail(err, AS_EINVAL, "witness %s: the URL %s", w->name, why);
	const char *path = *p.path ? p.path : "/";
	size_t pl = strlen(path);
	int slash = path[pl - 1] == '/';
	if (pl + !slash + strlen("add-checkpoint") > PROTO_URL_PATH_MAX)
		return as_fail(err, AS_EINVAL, "witness %s: the URL's path is over %d bytes", w->name,
			       PROTO_URL_PATH_MAX);
	snprintf(w->scheme, sizeof w->scheme, "%s", p.scheme);
	snprintf(w->host, sizeof w->host, "%s", p.host);
	snprintf(w->path, sizeof w->path, "%s%sadd-checkpoint", path, slash ? "" : "/");
	w->port = p.port;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai = NULL;
	char port[8];
	snprintf(port, sizeof port, "%u", (unsigned)p.port);
	int g = getaddrinfo(p.host, port, &hints, &ai);
	if (g != 0 || !ai || ai->ai_addrlen > sizeof w->addr) {
		if (ai)
			freeaddrinfo(ai);
		return as_fail(err, AS_EINVAL, "witness %s: cannot resolve %s: %s", w->name, p.host,
			       g ? gai_strerror(g) : "no address");
	}
	memcpy(&w->addr, ai->ai_addr, ai->ai_addrlen);
	w->alen = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

/* One line: VKEY URL. */
static int parse_line(struct witnesses *ws, const char *line, size_t no, char *err)
{
	char vk[600], url[600], extra[2];
	int k = sscanf(line, "%599s %599s %1s", vk, url, extra);
	if (k != 2)
		return as_fail(err, AS_EINVAL, "line %zu: not VKEY URL", no);
	if (ws->n == PROTO_WITNESS_MAX)
		return as_fail(err, AS_EINVAL, "line %zu: more than %d witnesses", no, PROTO_WITNESS_MAX);
	struct witness *w = &ws->w[ws->n];
	char e2[AS_ERRLEN];
	if (parse_vkey(vk, w, e2) != 0 || parse_url(url, w, e2) != 0)
		return as_fail(err, AS_EINVAL, "line %zu: %s", no, e2);
	for (size_t i = 0; i < ws->n; i++)
		if (!strcmp(ws->w[i].name, w->name))
			return as_fail(err, AS_EINVAL, "line %zu: witness %s is named twice", no, w->name);
	ws->n++;
	return 0;
}

static int read_config(struct witnesses *ws, const char *path, char *err)
{
	struct buf b;
	int rc = file_read(path, WIT_FILE_MAX, &b, err);
	char *save = NULL, *text = rc == 0 ? strndup((const char *)b.p, b.len) : NULL;
	if (rc == 0)
		buf_free(&b);
	if (rc == 0 && !text)
		rc = as_fail(err, AS_ENOMEM, "out of memory");
	size_t no = 0;
	for (char *l = text ? strtok_r(text, "\n", &save) : NULL; rc == 0 && l; l = strtok_r(NULL, "\n", &save)) {
		no++; /* strtok_r skips empty lines: numbers count the lines that hold something */
		while (*l == ' ' || *l == '\t')
			l++;
		if (*l && *l != '#')
			rc = parse_line(ws, l, no, err);
	}
	free(text);
	return rc;
}

/* STATE/witnesses.state: "NAME KEYIDHEX SIZE" a line, the size each witness last cosigned. */
static void load_state(struct signer *s)
{
	struct witnesses *ws = s->wit;
	char path[4200], err[AS_ERRLEN];
	struct buf b;
	snprintf(path, sizeof path, "%s/%s", s->o->state, WIT_STATE_FILE);
	if (file_read(path, 64u << 10, &b, err) != 0)
		return; /* none yet: each witness is asked its size (old 0, C2SP) */
	char *text = strndup((const char *)b.p, b.len), *save = NULL;
	buf_free(&b);
	if (text) {
		for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			char name[PROTO_WITNESS_NAME_MAX + 1], hex[9], hx[9];
			unsigned long long size;
			if (sscanf(l, "%255s %8s %llu", name, hex, &size) != 3)
				continue;
			for (size_t i = 0; i < ws->n; i++) {
				hex_encode(ws->w[i].keyid, 4, hx);
				if (!strcmp(ws->w[i].name, name) && !strcmp(hx, hex))
					ws->w[i].cosigned = ws->w[i].old = size;
			}
		}
	}
	free(text);
}

static void save_state(struct signer *s)
{
	struct witnesses *ws = s->wit;
	char path[4200], err[AS_ERRLEN], hx[9];
	struct buf b;
	buf_init(&b, PROTO_WITNESS_MAX * (PROTO_WITNESS_NAME_MAX + 40));
	int rc = 0;
	for (size_t i = 0; i < ws->n; i++) {
		hex_encode(ws->w[i].keyid, 4, hx);
		rc |= buf_printf(&b, "%s %s %llu\n", ws->w[i].name, hx, (unsigned long long)ws->w[i].cosigned);
	}
	snprintf(path, sizeof path, "%s/%s", s->o->state, WIT_STATE_FILE);
	if (rc || file_write_atomic(path, b.p, b.len, 0600, err) != 0)
		slog("warning", "witnesses: cannot write %s: %s (after a restart, each is asked its size again)", path,
		     rc ? "out of memory" : err);
	buf_free(&b);
}

int witness_start(struct signer *s)
{
	const char *path = getenv("ASSENT_WITNESSES");
	char err[AS_ERRLEN];
	if (!path || !*path)
		return 0;
	if (!(s->wit = calloc(1, sizeof *s->wit))) {
		slog("error", "out of memory");
		return -1;
	}
	if (read_config(s->wit, path, err) != 0) {
		slog("error", "ASSENT_WITNESSES=%s: %s", path, err);
		return -1;
	}
	const char *b = getenv("ASSENT_NOTIFY_BACKOFF_MS");
	uint64_t ms;
	s->wit->backoff_ms = b && *b && parse_u64(b, &ms) == 0 && ms <= WIT_BACKOFF_MAX_MS ? (unsigned)ms : 1000;
	s->wit->next_id = WIT_ID_BIT | ((now_unix_ms() & ((1ull << 41) - 1)) << 21);
	load_state(s);
	slog("info", "witnesses: %zu from %s", s->wit->n, path);
	return 0;
}

void witness_free(struct signer *s)
{
	free(s->wit);
	s->wit = NULL;
}

size_t witness_count(const struct signer *s)
{
	return s->wit ? s->wit->n : 0;
}

int witness_config(const struct signer *s, struct cv_arena *a, struct cv *f)
{
	size_t n = witness_count(s);
	if (!n)
		return 0;
	struct cv *arr = cv_array(a, n), *slot = arr ? ipc_put(a, f, "witnesses") : NULL;
	if (!slot)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct witness *w = &s->wit->w[i];
		struct cv *m = cv_map(a, 4);
		size_t k = 0;
		if (!m || kv_text(a, m, &k, "scheme", w->scheme, strlen(w->scheme)) ||
		    kv_text(a, m, &k, "host", w->host, strlen(w->host)) ||
		    kv_text(a, m, &k, "path", w->path, strlen(w->path)) || kv_uint(a, m, &k, "port", w->port))
			return -1;
		m->n = k;
		arr->items[i] = *m;
	}
	*slot = *arr;
	return 0;
}

void witness_alarm_text(const struct signer *s, char *out, size_t cap)
{
	size_t n = 0;
	out[0] = 0;
	for (size_t i = 0; i < witness_count(s) && n < cap; i++) {
		const struct witness *w = &s->wit->w[i];
		if (w->alarm)
			n += (size_t)snprintf(out + n, cap - n, "%s%s at %llu", n ? "; " : "", w->name,
					      (unsigned long long)w->alarm_size);
	}
}

/* ---- sending ---- */

static void retry_later(struct signer *s, struct witness *w, const char *why)
{
	struct witnesses *ws = s->wit;
	uint64_t wait = ws->backoff_ms ? ws->backoff_ms : 1;
	w->inflight = 0;
	for (unsigned i = 0; i < w->fails && wait < WIT_BACKOFF_MAX_MS; i++)
		wait *= 2;
	if (wait > WIT_BACKOFF_MAX_MS)
		wait = WIT_BACKOFF_MAX_MS;
	w->fails++;
	w->next_at = now_ms() + wait;
	s->m.witness_failed++;
	slog("warning", "witness %s: checkpoint %llu: %s; again in %llu ms", w->name, (unsigned long long)w->sent_size,
	     why, (unsigned long long)wait);
}

static void raise_alarm(struct signer *s, struct witness *w, uint64_t size)
{
	w->inflight = 0;
	w->alarm = 1;
	w->alarm_size = size;
	w->next_at = now_ms() + WIT_BACKOFF_MAX_MS;
	s->m.witness_conflicts++;
	slog("error",
	     "witness %s saw another tree at size %llu (this ledger's checkpoint %llu): keep its evidence and "
	     "compare the ledger with the checkpoints saved elsewhere (docs/audit.md)",
	     w->name, (unsigned long long)size, (unsigned long long)w->sent_size);
}

/* The add-checkpoint body: old, the proof from old, a blank line, the checkpoint with the
 * log's own signature lines (the cosignatures stored beside it are not sent). */
static int make_body(struct signer *s, uint64_t old, struct buf *out, char *err)
{
	struct witnesses *ws = s->wit;
	GUARD(buf_printf(out, "old %llu\n", (unsigned long long)old) ? as_fail(err, AS_ETOOBIG, "no room") : 0);
	if (old && old < ws->psize) {
		struct consist_req c = {.old = old, .new = ws->psize};
		buf_init(&c.out, CONSIST_TEXT_MAX);
		int rc = ledger_read(s->ledger, consist_make_cb, &c, err);
		if (rc == 0 && buf_put(out, c.out.p, c.out.len) != 0)
			rc = as_fail(err, AS_ETOOBIG, "no room for the proof");
		buf_free(&c.out);
		GUARD(rc);
	}
	if (buf_putc(out, '\n') != 0 || buf_put(out, ws->note, ws->body_len + 1) != 0)
		return as_fail(err, AS_ETOOBIG, "no room for the checkpoint");
	char prefix[CKPT_ORIGIN_MAX + 8];
	int pl = snprintf(prefix, sizeof prefix, NOTE_SIG_PREFIX "%s ", ledger_origin(s->ledger));
	struct rd r, line;
	rd_init(&r, ws->note, ws->note_len);
	r.off = ws->body_len + 1;
	while (rd_line(&r, &line) == 0)
		if (line.len > (size_t)pl && !memcmp(line.p, prefix, (size_t)pl) &&
		    (buf_put(out, line.p, line.len) != 0 || buf_putc(out, '\n') != 0))
			return as_fail(err, AS_ETOOBIG, "no room for the checkpoint's signature");
	return 0;
}

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void send_one(struct signer *s, size_t i)
{
	struct witnesses *ws = s->wit;
	struct witness *w = &ws->w[i];
	char err[AS_ERRLEN] = "";
	w->sent_size = ws->psize;
	memcpy(w->sent_body, ws->note, ws->body_len);
	w->sent_blen = ws->body_len;
	/* A size we know it has above ours (this ledger went back): ask it its size (a 409 tells). */
	w->sent_old = w->old <= ws->psize ? w->old : 0;
	struct buf body;
	buf_init(&body, PROTO_WITNESS_BODY_MAX);
	if (make_body(s, w->sent_old, &body, err) != 0) {
		buf_free(&body);
		retry_later(s, w, err);
		return;
	}
	int fd = socket(w->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0 || setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
	    (connect(fd, (const struct sockaddr *)&w->addr, w->alen) != 0 && errno != EINPROGRESS)) {
		snprintf(err, sizeof err, "cannot connect to %s port %u: %s", w->host, (unsigned)w->port,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		buf_free(&body);
		retry_later(s, w, err);
		return;
	}
	struct cv_arena a;
	cv_arena_init(&a, body.len + 1024);
	struct cv *f = ipc_frame_new(&a, F_WITNESS_POST, 3);
	w->id = ++ws->next_id;
	int rc = !f || ipc_put_uint(&a, f, "id", w->id) || ipc_put_uint(&a, f, "witness", i) ||
		 ipc_put_text(&a, f, "body", (const char *)body.p, body.len) ||
		 ipc_conn_send(&s->w[W_NOTIFY].ipc, f, fd, err) != 0;
	cv_arena_free(&a);
	buf_free(&body);
	close(fd); /* the worker has its own copy */
	if (rc) {
		retry_later(s, w, err[0] ? err : "the request could not be handed to the notify worker");
		return;
	}
	w->inflight = 1;
	w->sent_at = now_ms();
	w->sent_us = mono_us();
}

/* The newest periodic checkpoint, once a second: a new one goes to every witness. */
static void refresh(struct signer *s)
{
	struct witnesses *ws = s->wit;
	char err[AS_ERRLEN];
	uint64_t size;
	struct buf note;
	buf_init(&note, CKPT_MAX);
	int rc = ledger_periodic(s->ledger, &size, &note, err);
	if (rc == 0 && size != ws->psize) {
		size_t bl = 0;
		for (size_t i = 0; i + 1 < note.len && !bl; i++)
			if (note.p[i] == '\n' && note.p[i + 1] == '\n')
				bl = i + 1;
		if (!bl) {
			slog("error", "witnesses: the checkpoint at %llu has no signature", (unsigned long long)size);
		} else {
			memcpy(ws->note, note.p, note.len);
			ws->note_len = note.len;
			ws->body_len = bl;
			ws->psize = size;
			for (size_t i = 0; i < ws->n; i++)
				ws->w[i].fails = 0, ws->w[i].next_at = 0; /* a new checkpoint is sent at once */
		}
	} else if (rc != 0 && rc != AS_ENOTFOUND) {
		slog("error", "witnesses: %s", err);
	}
	buf_free(&note);
}

void witness_tick(struct signer *s)
{
	struct witnesses *ws = s->wit;
	if (!ws || !ws->n)
		return;
	uint64_t now = now_ms();
	if (now >= ws->next_check) {
		ws->next_check = now + 1000;
		refresh(s);
	}
	const struct worker *nw = &s->w[W_NOTIFY];
	int ready = nw->fd >= 0 && nw->state == S_READY;
	for (size_t i = 0; i < ws->n; i++) {
		struct witness *w = &ws->w[i];
		if (w->inflight && now - w->sent_at > PROTO_NOTIFY_TIMEOUT_MS + 5000)
			retry_later(s, w, "the notify worker did not say how the request ended");
		else if (!w->inflight && ready && ws->psize && ws->psize != w->cosigned && now >= w->next_at)
			send_one(s, i);
	}
}

/* ---- answers ---- */

static int ed25519_ok(const uint8_t pub[32], const uint8_t sig[64], const uint8_t *msg, size_t n)
{
	EVP_PKEY *k = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, 32);
	EVP_MD_CTX *c = k ? EVP_MD_CTX_new() : NULL;
	int ok = c && EVP_DigestVerifyInit(c, NULL, NULL, NULL, k) == 1 && EVP_DigestVerify(c, sig, 64, msg, n) == 1;
	EVP_MD_CTX_free(c);
	EVP_PKEY_free(k);
	return ok;
}

/* Whether cosignature item it is the witness's, over the checkpoint sent: 1 and its line in
 * line (NOTE_SIG_PREFIX NAME BASE64 LF), 0 another signer's, -1 the witness's but false. */
static int cosig_of(const struct witness *w, const struct cv *it, struct buf *line)
{
	const struct cv *name = cv_get(it, "name"), *kid = cv_get(it, "keyid"), *sig = cv_get(it, "sig");
	uint64_t t = cv_get(it, "time")->u;
	if (name->n != strlen(w->name) || memcmp(name->s, w->name, name->n) || memcmp(kid->s, w->keyid, 4))
		return 0;
	uint8_t msg[64 + CKPT_MAX], blob[76];
	int hl = snprintf((char *)msg, 64, "cosignature/v1\ntime %llu\n", (unsigned long long)t);
	memcpy(msg + hl, w->sent_body, w->sent_blen);
	if (!ed25519_ok(w->pub, (const uint8_t *)sig->s, msg, (size_t)hl + w->sent_blen))
		return -1;
	memcpy(blob, w->keyid, 4);
	be64_put(blob + 4, t);
	memcpy(blob + 12, sig->s, 64);
	buf_reset(line);
	if (buf_printf(line, NOTE_SIG_PREFIX "%s ", w->name) || b64_encode(blob, sizeof blob, line) ||
	    buf_putc(line, '\n') || buf_putc(line, 0))
		return -1;
	return 1;
}

static void on_cosigs(struct signer *s, struct witness *w, const struct cv *arr)
{
	struct witnesses *ws = s->wit;
	struct buf line;
	char err[AS_ERRLEN];
	int got = 0, bad = 0;
	buf_init(&line, 512);
	for (size_t i = 0; arr && i < arr->n && !got; i++) {
		int r = cosig_of(w, &arr->items[i], &line);
		got = r == 1, bad += r < 0;
	}
	if (!got) {
		if (bad)
			s->m.witness_refused++;
		buf_free(&line);
		retry_later(s, w,
			    bad ? "its cosignature does not verify with its key over the checkpoint sent: not stored"
				: "its answer holds no cosignature by its key");
		return;
	}
	struct ledger_cosig c = {.name = w->name, .line = (const char *)line.p};
	memcpy(c.keyid, w->keyid, 4);
	if (w->sent_size != ws->psize) /* a newer checkpoint came meanwhile: this one is still stored */
		slog("info", "witness %s: cosigned checkpoint %llu, no longer the newest", w->name,
		     (unsigned long long)w->sent_size);
	if (ledger_cosign(s->ledger, w->sent_size, w->sent_body, w->sent_blen, &c, 1, err) != 0) {
		buf_free(&line);
		retry_later(s, w, err);
		return;
	}
	buf_free(&line);
	w->inflight = 0, w->fails = 0, w->recovering = 0;
	w->cosigned = w->old = w->sent_size;
	s->m.witness_cosigned++;
	slog("info", "witness %s cosigned checkpoint %llu (round trip %llu us: posted, answered, verified, stored)",
	     w->name, (unsigned long long)w->sent_size, (unsigned long long)(mono_us() - w->sent_us));
	save_state(s);
}

int h_witness_done(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct witnesses *ws = s->wit;
	uint64_t id = cv_get(f->body, "id")->u, status = cv_get(f->body, "status")->u;
	const struct cv *size = cv_get(f->body, "size"), *arr = cv_get(f->body, "cosigs"),
			*e = cv_get(f->body, "error");
	for (size_t i = 0; arr && i < arr->n; i++)
		GUARD(frame_cosig_check(&arr->items[i], err)); /* the worker broke the table: its end */
	struct witness *w = NULL;
	for (size_t i = 0; ws && i < ws->n && !w; i++)
		if (ws->w[i].inflight && ws->w[i].id == id)
			w = &ws->w[i];
	if (!w)
		return 0; /* timed out here already */
	char why[PROTO_NOTIFY_ERROR_MAX + 32] = "";
	if (status == 200) {
		on_cosigs(s, w, arr);
	} else if (status == 409 && size && size->u <= w->sent_size && size->u != w->sent_old) {
		/* C2SP: it has another size than we thought; ask again from that size, at once the
		 * first time (a witness that keeps moving its size waits like one that fails). */
		slog("info", "witness %s has size %llu (not %llu): asking again from there", w->name,
		     (unsigned long long)size->u, (unsigned long long)w->sent_old);
		w->old = size->u;
		if (w->recovering)
			retry_later(s, w, "its size moved again");
		w->inflight = 0, w->recovering = 1;
	} else if (status == 409 && size) {
		w->old = size->u;
		raise_alarm(s, w, size->u);
	} else if (status == 422 && w->sent_old) {
		raise_alarm(s, w, w->sent_old); /* its tree at that size is not a prefix of ours */
	} else {
		if (e)
			snprintf(why, sizeof why, "%.*s", (int)e->n, (const char *)e->s);
		for (char *p = why; *p; p++) /* the worker's words, logged: no control bytes */
			if ((unsigned char)*p < 0x20)
				*p = ' ';
		char what[PROTO_NOTIFY_ERROR_MAX + 64];
		if (status)
			snprintf(what, sizeof what, "HTTP %llu%s%s", (unsigned long long)status, why[0] ? ": " : "",
				 why);
		else
			snprintf(what, sizeof what, "%s", why[0] ? why : "no answer");
		retry_later(s, w, what);
	}
	return 0;
}
