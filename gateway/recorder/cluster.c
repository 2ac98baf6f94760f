/* assent-cluster: the confined PostgreSQL client of a replica in cluster mode (issue 32,
 * docs/cluster.md). Started by the signer as `assent-cluster [--uid N]` with its IPC socket on
 * 3; the signer's end is gateway/signer/cluster.c. It holds the replica's one connection to
 * the shared ledger and does what the signer asks, one step at a time:
 *   HELLO  connect, make the schema, check the policy digest against the cluster's, LISTEN;
 *   PULL   BEGIN, take the append lock, send the entries after `have` and their checkpoints;
 *   PUT    one entry of this commit; PUSH stores them with the head checkpoint and COMMITs;
 *   RELEASE ROLLBACK.
 * Between steps it forwards the other replicas' commits (NOTIFY assent_ledger) as F_CL_NOTIFY.
 * It checks nothing for the signer: the signer checks every entry and checkpoint it is sent
 * (ledger/sync.c). It never writes a file, and it runs in the recorder's confinement. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "gateway/proto/frames.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/limits.h"
#include "gateway/proto/proto.h"
#include "gateway/recorder/confine.h"
#include "gateway/recorder/db.h"
#include "include/assent/version.h"
#include "gateway/recorder/cluster_int.h"

#define PAGE 1000	      /* entries per query of a pull: the LIMIT below */
#define SCHEMA_LOCK "7340032" /* pg_advisory_lock key around the schema */
#define APPEND_LOCK "7340033" /* pg_advisory_xact_lock key of the append lock ("advisory") */
#define NAME_LOCK "7340034"   /* pg_try_advisory_lock(NAME_LOCK, hashtext(name)): one live replica a name */

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS assent_ledger (seq BIGINT PRIMARY KEY, entry BYTEA NOT NULL, "
    "replica TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS assent_checkpoints (size BIGINT PRIMARY KEY, note BYTEA NOT NULL, "
    "periodic BOOLEAN NOT NULL);"
    "CREATE TABLE IF NOT EXISTS assent_head (id INT PRIMARY KEY CHECK (id = 1), size BIGINT NOT NULL);"
    "INSERT INTO assent_head VALUES (1, 0) ON CONFLICT DO NOTHING;"
    "CREATE TABLE IF NOT EXISTS assent_cluster (k TEXT PRIMARY KEY, v TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS assent_replicas (name TEXT PRIMARY KEY, started TIMESTAMPTZ NOT NULL, "
    "seen TIMESTAMPTZ NOT NULL);"
    /* taken_by: the replica that took this one over when its lease expired (NULL: nobody) */
    "ALTER TABLE assent_replicas ADD COLUMN IF NOT EXISTS taken_by TEXT;"
    /* the identity registry's file, as the replica that changed it last made it; mac: its HMAC
     * under the cluster's secret (STATE/keys/cluster.secret), which PostgreSQL never holds */
    "CREATE TABLE IF NOT EXISTS assent_registry (id INT PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL, "
    "body TEXT NOT NULL, mac TEXT NOT NULL, replica TEXT NOT NULL);"
    /* the webhooks' file alike, sealed (AES-256-GCM under a key of the cluster's secret) */
    "CREATE TABLE IF NOT EXISTS assent_webhooks (id INT PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL, "
    "body TEXT NOT NULL, mac TEXT NOT NULL, replica TEXT NOT NULL);"
    /* reviewers' web sessions (hash: SHA-256 of the secret, which stays with the browser), each
     * change numbered by seq; mac: the HMAC of body under the cluster's secret */
    "CREATE SEQUENCE IF NOT EXISTS assent_websessions_seq;"
    "CREATE TABLE IF NOT EXISTS assent_websessions (hash TEXT PRIMARY KEY, seq BIGINT NOT NULL, "
    "body TEXT NOT NULL, mac TEXT NOT NULL, ended BOOLEAN NOT NULL, replica TEXT NOT NULL, "
    "at TIMESTAMPTZ NOT NULL DEFAULT now());"
    /* webhook deliveries not yet ended, for a takeover: made by origin, sent by owner; mac is the
     * origin's HMAC under the webhook's secret (a row changed here is refused, not sent) */
    "CREATE TABLE IF NOT EXISTS assent_deliveries (origin TEXT NOT NULL, id BIGINT NOT NULL, hook TEXT NOT NULL, "
    "owner TEXT NOT NULL, event TEXT NOT NULL, body TEXT NOT NULL, mac TEXT NOT NULL, "
    "created TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (origin, id, hook));"
    /* A commit's writes in one round trip: its entries (hex, from p_from on), then with p_note
     * the head checkpoint, the head row and the NOTIFY. Called once per chunk of entries. */
    "CREATE TABLE IF NOT EXISTS assent_claims (claim TEXT PRIMARY KEY, seq BIGINT NOT NULL);"
    /* A pull in one round trip: the lock (p_lock 1: the head row, 2: the advisory key, 0: none,
     * a catch-up's snapshot), then the head's size (k 0), the first 1,000 entries after p_have
     * (k 1) and the checkpoints after it (k 2). Each statement of this (volatile) function
     * sees what committed before it began: so the rows include the holder's before us. */
    "CREATE OR REPLACE FUNCTION assent_pull(p_have BIGINT, p_lock INT) RETURNS TABLE(k INT, n BIGINT, b BYTEA, "
    "p BOOLEAN) LANGUAGE plpgsql AS $f$ DECLARE h BIGINT; BEGIN "
    "IF p_lock = 1 THEN SELECT size INTO h FROM assent_head WHERE id = 1 FOR UPDATE; "
    "ELSE IF p_lock = 2 THEN PERFORM pg_advisory_xact_lock(" APPEND_LOCK "); END IF; "
    "SELECT size INTO h FROM assent_head WHERE id = 1; END IF; "
    "RETURN QUERY SELECT 0, h, NULL::BYTEA, NULL::BOOLEAN; "
    "RETURN QUERY SELECT 1, seq, entry, NULL::BOOLEAN FROM (SELECT seq, entry FROM assent_ledger WHERE seq >= "
    "p_have AND seq < h ORDER BY seq LIMIT 1000) x ORDER BY seq; "
    "RETURN QUERY SELECT 2, size, note, periodic FROM assent_checkpoints WHERE size > p_have ORDER BY size; "
    "END $f$;"
    "DROP FUNCTION IF EXISTS assent_push(BIGINT, TEXT[], TEXT, BOOLEAN, TEXT);"
    "CREATE OR REPLACE FUNCTION assent_push(p_from BIGINT, p_ents TEXT[], p_claims TEXT[], p_note TEXT, "
    "p_periodic BOOLEAN, p_replica TEXT) RETURNS BIGINT LANGUAGE plpgsql AS $f$ "
    "DECLARE n BIGINT := coalesce(array_length(p_ents, 1), 0); d TEXT; "
    "BEGIN "
    "INSERT INTO assent_ledger (seq, entry, replica) SELECT p_from + o - 1, decode(e, 'hex'), p_replica "
    "FROM unnest(p_ents) WITH ORDINALITY AS u(e, o); "
    /* decided once, dispatched once, one approval a reviewer: whatever the replicas raced */
    "BEGIN "
    "INSERT INTO assent_claims (claim, seq) SELECT c, p_from + o - 1 FROM unnest(p_claims) WITH ORDINALITY "
    "AS u(c, o) WHERE c IS NOT NULL; "
    "EXCEPTION WHEN unique_violation THEN GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL; "
    "RAISE EXCEPTION 'another replica took it first (%)', d; "
    "END; "
    "IF p_note IS NOT NULL THEN "
    "INSERT INTO assent_checkpoints VALUES (p_from + n, decode(p_note, 'hex'), p_periodic) ON CONFLICT (size) "
    "DO UPDATE SET note = EXCLUDED.note, periodic = assent_checkpoints.periodic OR EXCLUDED.periodic; "
    "DELETE FROM assent_checkpoints WHERE NOT periodic AND size < p_from + n; "
    "UPDATE assent_head SET size = p_from + n WHERE id = 1; "
    "PERFORM pg_notify('assent_ledger', (p_from + n)::text || ' ' || p_replica); "
    "END IF; "
    "RETURN p_from + n; "
    "END $f$";

/* ---- frames to the signer ---- */

/* Blocking, as a worker sends (the signer reads while it waits on us): a pull's frames can be
 * more than the socket holds. */
int send_frame(struct cl *c, struct cv *f, char *err)
{
	int rc = ipc_send(FD, f, -1, err);
	cv_arena_reset(&c->o);
	return rc;
}

static int send_end(struct cl *c, int ok, const char *msg, char *err)
{
	struct cv *f = ipc_frame_new(&c->o, F_CL_END, 3);
	if (!f || ipc_put_bool(&c->o, f, "ok", ok) != 0 ||
	    (msg && ipc_put_text(&c->o, f, "err", msg, strnlen(msg, PROTO_CL_ERR_MAX))) ||
	    (ok && ipc_put_uint(&c->o, f, "size", c->size)))
		return as_fail(err, AS_ENOMEM, "out of memory");
	return send_frame(c, f, err);
}

/* ---- PostgreSQL ---- */

static void drop_put(struct cl *c)
{
	for (size_t i = 0; i < c->nents; i++) {
		free(c->ents[i]);
		free(c->claims[i]);
	}
	c->nents = 0;
}

static void rollback(struct cl *c)
{
	if (c->locked && !c->broken)
		db_rollback(c->db);
	c->locked = 0;
	drop_put(c);
}

static int hexval(char h)
{
	return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
}

/* PostgreSQL's text form of a bytea ("\x" and hex) into out (at most max bytes). */
static int bytea_read(const char *t, uint8_t *out, size_t max, size_t *n)
{
	if (!t || t[0] != '\\' || t[1] != 'x')
		return -1;
	size_t hl = strlen(t + 2);
	if (hl % 2 || hl / 2 > max)
		return -1;
	for (size_t i = 0; i < hl / 2; i++) {
		int hi = hexval(t[2 + 2 * i]), lo = hexval(t[3 + 2 * i]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	*n = hl / 2;
	return 0;
}

struct rows {
	struct cl *c;
	uint8_t *buf;
	uint64_t next; /* the seq after the last one sent */
	size_t got, ckpts;
	char *err;
};

static int ent_row(void *ctx, const char *const *cols, size_t ncols)
{
	struct rows *r = ctx;
	uint64_t seq;
	size_t n;
	if (ncols != 2 || !cols[0] || parse_u64(cols[0], &seq) != 0 ||
	    bytea_read(cols[1], r->buf, PROTO_CL_ENTRY_MAX, &n))
		return as_fail(r->err, AS_EINVAL, "a row of assent_ledger is not (seq, entry)");
	struct cv *f = ipc_frame_new(&r->c->o, F_CL_ENT, 2);
	if (!f || ipc_put_uint(&r->c->o, f, "seq", seq) != 0 || ipc_put_bytes(&r->c->o, f, "e", r->buf, n) != 0)
		return as_fail(r->err, AS_ENOMEM, "out of memory");
	r->next = seq + 1;
	r->got++;
	return send_frame(r->c, f, r->err);
}

static int ckpt_row(void *ctx, const char *const *cols, size_t ncols)
{
	struct rows *r = ctx;
	uint64_t size;
	size_t n;
	if (ncols != 3 || !cols[0] || parse_u64(cols[0], &size) != 0 ||
	    bytea_read(cols[1], r->buf, PROTO_CL_NOTE_MAX, &n))
		return as_fail(r->err, AS_EINVAL, "a row of assent_checkpoints is not (size, note, periodic)");
	struct cv *f = ipc_frame_new(&r->c->o, F_CL_CKPT, 3);
	if (!f || ipc_put_uint(&r->c->o, f, "size", size) != 0 || ipc_put_bytes(&r->c->o, f, "note", r->buf, n) != 0 ||
	    ipc_put_bool(&r->c->o, f, "periodic", db_bool(cols[2])) != 0)
		return as_fail(r->err, AS_ENOMEM, "out of memory");
	return send_frame(r->c, f, r->err);
}

static int size_row(void *ctx, const char *const *cols, size_t ncols)
{
	uint64_t *size = ctx;
	return ncols == 1 && cols[0] && parse_u64(cols[0], size) == 0 ? 0 : AS_EINVAL;
}

/* A row of assent_pull: the head first, then entries, then checkpoints (skipped when more
 * pages of entries are to come: read again after them). */
static int pull_row(void *ctx, const char *const *cols, size_t ncols)
{
	struct rows *r = ctx;
	uint64_t k;
	if (ncols != 4 || !cols[0] || parse_u64(cols[0], &k) != 0)
		return as_fail(r->err, AS_EINVAL, "a row of assent_pull is not (k, n, b, p)");
	if (k == 0)
		return size_row(&r->c->size, cols + 1, 1) ? as_fail(r->err, AS_EINVAL, "assent_pull: no head") : 0;
	if (k == 1)
		return ent_row(r, cols + 1, 2);
	if (r->got == PAGE)
		return 0;
	r->ckpts++;
	return ckpt_row(r, cols + 1, 3);
}

static int do_pull(struct cl *c, uint64_t have, int lock, char *err)
{
	static const char pull[] = "SELECT k, n, b, p FROM assent_pull(CAST($1 AS BIGINT), CAST($2 AS INT))";
	static const char ents[] = "SELECT seq, entry FROM assent_ledger WHERE seq >= CAST($1 AS BIGINT) ORDER BY seq "
				   "LIMIT 1000";
	static const char ckpts[] =
	    "SELECT size, note, periodic FROM assent_checkpoints WHERE size > CAST($1 AS BIGINT) "
	    "ORDER BY size";
	rollback(c);
	/* A catch-up reads one snapshot and locks nothing; an append waits for the lock first,
	 * then reads what the holder before it committed (assent_pull). */
	GUARD(db_script(c->db, lock ? "BEGIN" : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err));
	c->locked = 1;
	c->reading = !lock;
	struct rows r = {.c = c, .buf = malloc(PROTO_CL_ENTRY_MAX), .next = have, .err = err};
	if (!r.buf)
		return as_fail(err, AS_ENOMEM, "out of memory");
	char at[24], mode[4];
	snprintf(at, sizeof at, "%llu", (unsigned long long)have);
	snprintf(mode, sizeof mode, "%d", !lock ? 0 : c->advisory ? 2 : 1);
	const char *p0[] = {at, mode};
	c->size = UINT64_MAX;
	int rc = db_query(c->db, pull, p0, 2, pull_row, &r, err);
	if (rc == 0 && (c->size == UINT64_MAX || have > c->size))
		rc = as_fail(err, AS_ECORRUPT,
			     "this replica's mirror has %llu entries, the shared ledger only %llu: the shared "
			     "ledger was cut back, or this mirror belongs to another cluster",
			     (unsigned long long)have, (unsigned long long)c->size);
	while (rc == 0 && r.got == PAGE && r.next < c->size) { /* a mirror far behind: the rest, a page at a time */
		r.got = 0;
		snprintf(at, sizeof at, "%llu", (unsigned long long)r.next);
		const char *p[] = {at};
		rc = db_query(c->db, ents, p, 1, ent_row, &r, err);
		if (rc == 0 && r.got < PAGE) {
			snprintf(at, sizeof at, "%llu", (unsigned long long)have);
			const char *pc[] = {at};
			rc = db_query(c->db, ckpts, pc, 1, ckpt_row, &r, err);
		}
	}
	if (rc == 0 && r.next != c->size)
		rc = as_fail(err, AS_ECORRUPT, "the shared ledger's head says %llu entries, its rows end at %llu",
			     (unsigned long long)c->size, (unsigned long long)r.next);
	free(r.buf);
	return rc;
}

static void hex_put(const uint8_t *p, size_t n, char *out)
{
	static const char x[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = x[p[i] >> 4];
		out[2 * i + 1] = x[p[i] & 15];
	}
	out[2 * n] = 0;
}

#define CHUNK_HEX (8u << 20) /* hex characters of entries per assent_push call */

/* Append to the array literal in *a (a malloc'd buffer of *cap) the hex of p. */
static int arr_add(char **a, size_t *len, size_t *cap, const uint8_t *p, size_t n)
{
	size_t need = *len + 2 * n + 4;
	if (need > *cap) {
		size_t nc = need * 2;
		char *na = realloc(*a, nc);
		if (!na)
			return AS_ENOMEM;
		*a = na;
		*cap = nc;
	}
	(*a)[*len] = *len ? ',' : '{';
	(*len)++;
	hex_put(p, n, *a + *len);
	*len += 2 * n;
	return 0;
}

/* The claims of entries [i, j) as a TEXT[] literal: NULL, or the claim in double quotes (a claim
 * is a session id, a reviewer's name or a credential id after a word: no quote or backslash is
 * let through unescaped). NULL when out of memory. */
static char *claims_literal(const struct cl *c, size_t i, size_t j)
{
	size_t cap = 3;
	for (size_t k = i; k < j; k++)
		cap += 6 + (c->claims[k] ? 2 * strlen(c->claims[k]) : 0);
	char *a = malloc(cap), *o = a;
	if (!a)
		return NULL;
	*o++ = '{';
	for (size_t k = i; k < j; k++) {
		if (k > i)
			*o++ = ',';
		if (!c->claims[k]) {
			memcpy(o, "NULL", 4);
			o += 4;
			continue;
		}
		*o++ = '"';
		for (const char *q = c->claims[k]; *q; q++) {
			if (*q == '"' || *q == '\\')
				*o++ = '\\';
			*o++ = *q;
		}
		*o++ = '"';
	}
	*o++ = '}';
	*o = 0;
	return a;
}

static int push_call(struct cl *c, uint64_t from, size_t i, size_t j, char *arr, size_t len, const char *note,
		     int periodic, char *err)
{
	static const char call[] = "SELECT assent_push(CAST($1 AS BIGINT), CAST($2 AS TEXT[]), CAST($3 AS TEXT[]), $4, "
				   "CAST($5 AS BOOLEAN), $6)";
	char at[24], *claims = claims_literal(c, i, j);
	if (!claims)
		return as_fail(err, AS_ENOMEM, "out of memory");
	snprintf(at, sizeof at, "%llu", (unsigned long long)from);
	arr[len] = '}';
	arr[len + 1] = 0;
	const char *p[] = {at, len ? arr : "{}", claims, note, periodic ? "true" : "false", c->replica};
	int rc = db_query(c->db, call, p, 6, NULL, NULL, err);
	free(claims);
	return rc;
}

static int do_push(struct cl *c, uint64_t from, uint64_t n, const uint8_t *note, size_t nlen, int periodic, char *err)
{
	if (!c->locked || c->reading || from != c->size || n != c->nents)
		return as_fail(err, AS_EINVAL,
			       "a push of %llu entries from %llu does not follow its pull (%zu put, at %llu)",
			       (unsigned long long)n, (unsigned long long)from, c->nents, (unsigned long long)c->size);
	char *arr = NULL, *hnote = malloc(2 * nlen + 1);
	size_t len = 0, cap = 0;
	uint64_t at = from;
	int rc = hnote ? 0 : as_fail(err, AS_ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < c->nents; i++) {
		if (len && len + 2 * c->lens[i] > CHUNK_HEX) { /* a chunk of entries alone, then more */
			rc = push_call(c, at, (size_t)(at - from), i, arr, len, NULL, 0, err);
			at = from + i;
			len = 0;
		}
		if (rc == 0 && arr_add(&arr, &len, &cap, c->ents[i], c->lens[i]) != 0)
			rc = as_fail(err, AS_ENOMEM, "out of memory");
	}
	if (rc == 0 && !arr && !(arr = malloc(cap = 4)))
		rc = as_fail(err, AS_ENOMEM, "out of memory");
	if (rc == 0) {
		hex_put(note, nlen, hnote);
		rc = push_call(c, at, (size_t)(at - from), c->nents, arr, len, hnote, periodic, err);
	}
	if (rc == 0)
		rc = db_commit(c->db, err);
	free(arr);
	free(hnote);
	if (rc == 0) {
		c->locked = 0;
		c->size = from + n;
		drop_put(c);
	}
	return rc;
}

static int do_put(struct cl *c, uint64_t seq, const uint8_t *e, size_t n, const char *claim, size_t cn, char *err)
{
	if (!c->locked || c->reading || seq != c->size + c->nents)
		return as_fail(err, AS_EINVAL, "entry %llu put out of order", (unsigned long long)seq);
	if (c->nents == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		uint8_t **ne = realloc(c->ents, cap * sizeof *ne);
		if (ne)
			c->ents = ne;
		size_t *nl = ne ? realloc(c->lens, cap * sizeof *nl) : NULL;
		if (nl)
			c->lens = nl;
		char **nc = nl ? realloc(c->claims, cap * sizeof *nc) : NULL;
		if (!nc)
			return as_fail(err, AS_ENOMEM, "out of memory");
		c->claims = nc;
		c->cap = cap;
	}
	c->claims[c->nents] = claim ? strndup(claim, cn) : NULL;
	if (!(c->ents[c->nents] = malloc(n ? n : 1)) || (claim && !c->claims[c->nents])) {
		free(c->ents[c->nents]);
		free(c->claims[c->nents]);
		return as_fail(err, AS_ENOMEM, "out of memory");
	}
	memcpy(c->ents[c->nents], e, n);
	c->lens[c->nents++] = n;
	return 0;
}

/* ---- connecting ---- */

static int value_row(void *ctx, const char *const *cols, size_t ncols)
{
	char *out = ctx;
	if (ncols == 1 && cols[0])
		snprintf(out, 65, "%s", cols[0]);
	return 0;
}

static int hello(struct cl *c, char *err)
{
	static const char put_policy[] = "INSERT INTO assent_cluster VALUES ('policy', $1) ON CONFLICT DO NOTHING";
	static const char adopt_policy[] = "INSERT INTO assent_cluster VALUES ('policy', $1) ON CONFLICT (k) DO UPDATE "
					   "SET v = EXCLUDED.v";
	static const char get_policy[] = "SELECT v FROM assent_cluster WHERE k = 'policy'";
	static const char put_lock[] = "INSERT INTO assent_cluster VALUES ('lock', $1) ON CONFLICT DO NOTHING";
	static const char get_lock[] = "SELECT v FROM assent_cluster WHERE k = 'lock'";
	static const char seen[] = "INSERT INTO assent_replicas (name, started, seen) VALUES ($1, now(), now()) ON "
				   "CONFLICT (name) DO UPDATE SET started = now(), seen = now(), taken_by = NULL";
	static const char count[] = "SELECT count(*) FROM assent_replicas";
	char cluster[65] = "", lock[65] = "";
	const char *mine = c->advisory ? "advisory" : "row";
	const char *l[] = {mine};
	uint64_t replicas = 0;
	if (!c->db && db_open(c->url, &c->db, err) != 0)
		return AS_EIO;
	/* A holder that died or hangs must not stall the cluster: its transaction ends after 15 s
	 * idle, and a wait for the lock or a statement gives up before the signer's 10 s step. */
	GUARD(db_script(c->db,
			"SET idle_in_transaction_session_timeout = '15s'; SET lock_timeout = '8s'; "
			"SET statement_timeout = '8s'",
			err));
	GUARD(db_script(c->db, "SELECT pg_advisory_lock(" SCHEMA_LOCK ")", err));
	int rc = db_script(c->db, schema, err);
	const char *p[] = {c->policy};
	const char *r[] = {c->replica};
	int reader = !strcmp(c->policy, "-"); /* `assent ledger export`: reads, checks no policy */
	if (rc == 0 && !reader)
		rc = db_exec(c->db, c->adopt ? adopt_policy : put_policy, p, 1, NULL, err);
	if (rc == 0 && !reader)
		rc = db_query(c->db, get_policy, NULL, 0, value_row, cluster, err);
	if (rc == 0 && !reader)
		rc = db_exec(c->db, put_lock, l, 1, NULL, err);
	if (rc == 0 && !reader)
		rc = db_query(c->db, get_lock, NULL, 0, value_row, lock, err);
	/* A name is one replica's (restore and takeovers go by it): held by its session while it lives. */
	char held[65] = "";
	if (rc == 0 && !reader)
		rc = db_query(c->db, "SELECT pg_try_advisory_lock(" NAME_LOCK ", hashtext($1))", r, 1, value_row, held,
			      err);
	if (rc == 0 && !reader && strcmp(held, "t") != 0)
		rc = as_fail(err, AS_EEXIST,
			     "another replica named %s is connected to the cluster now: each replica needs its own "
			     "ASSENT_REPLICA (a replica that just died frees its name within seconds)",
			     c->replica);
	if (rc == 0 && !reader)
		rc = db_exec(c->db, seen, r, 1, NULL, err);
	if (rc == 0)
		rc = db_query(c->db, count, NULL, 0, size_row, &replicas, err);
	if (rc == 0)
		rc = db_query(c->db, "SELECT size FROM assent_head WHERE id = 1", NULL, 0, size_row, &c->size, err);
	char e2[AS_ERRLEN];
	if (db_script(c->db, "SELECT pg_advisory_unlock(" SCHEMA_LOCK ")", e2) != 0 && rc == 0)
		rc = as_fail(err, AS_EIO, "%s", e2);
	if (rc == 0)
		rc = db_script(c->db, LISTENS, err);
	if (rc != 0)
		return rc;
	/* Two ways of taking turns would not exclude each other: one for the whole cluster. */
	if (!reader && strcmp(lock, mine) != 0)
		return as_fail(
		    err, AS_EINVAL,
		    "this replica takes the append lock by %s, the cluster by %s: set ASSENT_CLUSTER_LOCK=%s", mine,
		    lock, lock);
	if (!reader && strcmp(cluster, c->policy) != 0)
		return as_fail(
		    err, AS_EINVAL,
		    "this replica's policy (sha256 %.16s...) is not the cluster's (sha256 %.16s...): every "
		    "replica must decide by the same policy; refusing to serve (to change it: docs/cluster.md, "
		    "\"Changing the policy\", ASSENT_CLUSTER_POLICY=adopt)",
		    c->policy, cluster);
	struct cv *f = ipc_frame_new(&c->o, F_CL_READY, 2);
	if (!f || ipc_put_uint(&c->o, f, "size", c->size) != 0 || ipc_put_uint(&c->o, f, "replicas", replicas) != 0)
		return as_fail(err, AS_ENOMEM, "out of memory");
	return send_frame(c, f, err);
}

/* Between steps: the registry and the web sessions the others changed, to the signer. */
static void shared_send(struct cl *c)
{
	if (c->reg_due && !c->locked && !c->broken)
		reg_send(c);
	if (c->ws_due && !c->locked && !c->broken)
		ws_send(c);
}

static void notified(void *ctx, const char *channel, const char *payload)
{
	struct cl *c = ctx;
	uint64_t size;
	char e2[AS_ERRLEN];
	const char *sp = strchr(payload, ' ');
	if ((!strcmp(channel, "assent_registry") || !strcmp(channel, "assent_webhooks")) &&
	    strcmp(payload, c->replica) != 0) {
		c->reg_due |= channel[7] == 'r' ? 1 : 2; /* fetched between steps (reg_send) */
		return;
	}
	if (!strcmp(channel, "assent_websessions") && strcmp(payload, c->replica) != 0) {
		c->ws_due = 1; /* fetched between steps (ws_send) */
		return;
	}
	if (strcmp(channel, "assent_ledger") != 0 || !sp || strcmp(sp + 1, c->replica) == 0)
		return; /* our own commit, or not the ledger's */
	char num[24];
	snprintf(num, sizeof num, "%.*s", (int)(sp - payload < 23 ? sp - payload : 23), payload);
	if (parse_u64(num, &size) != 0)
		return;
	struct cv *f = ipc_frame_new(&c->o, F_CL_NOTIFY, 1);
	if (f && ipc_put_uint(&c->o, f, "size", size) == 0)
		(void)send_frame(c, f, e2);
	else
		cv_arena_reset(&c->o);
}

/* ---- the loop ---- */

static int step(struct cl *c, const struct ipc_frame *f, char *err)
{
	const struct cv *b = f->body;
	const uint8_t *p;
	size_t n;
	uint64_t u, from;
	int periodic;
	if (c->broken) {
		char e2[AS_ERRLEN];
		if (db_reconnect(c->db, e2) != 0 || db_script(c->db, LISTENS, e2) != 0)
			return as_fail(err, AS_EIO, "PostgreSQL is unreachable: %s", e2);
		c->broken = 0;
		CL_REFETCH(c);
	}
	switch (f->type) {
	case F_CL_PULL:
		if (ipc_get_uint(b, "have", UINT64_MAX, &u, err) != 0 || ipc_get_bool(b, "lock", &periodic, err) != 0)
			return AS_EINVAL;
		return do_pull(c, u, periodic, err);
	case F_CL_PUT: {
		const char *claim = NULL;
		size_t cn = 0;
		if (ipc_get_uint(b, "seq", UINT64_MAX, &u, err) != 0 ||
		    ipc_get_bytes(b, "e", PROTO_CL_ENTRY_MAX, &p, &n, err) != 0 ||
		    (cv_get(b, "claim") && ipc_get_text(b, "claim", PROTO_CL_CLAIM_MAX, &claim, &cn, err) != 0))
			return AS_EINVAL;
		return do_put(c, u, p, n, claim, cn, err);
	}
	case F_CL_PUSH:
		if (ipc_get_uint(b, "from", UINT64_MAX, &from, err) != 0 ||
		    ipc_get_uint(b, "n", PROTO_CL_PUSH_MAX, &u, err) != 0 ||
		    ipc_get_bytes(b, "note", PROTO_CL_NOTE_MAX, &p, &n, err) != 0 ||
		    ipc_get_bool(b, "periodic", &periodic, err) != 0)
			return AS_EINVAL;
		return do_push(c, from, u, p, n, periodic, err);
	case F_CL_RELEASE:
		rollback(c);
		return 0;
	default:
		return as_fail(err, AS_ECORRUPT, "frame type %u is not the cluster client's", f->type);
	}
}

static int serve(struct cl *c)
{
	char err[AS_ERRLEN];
	c->next_beat = mono_ms() + c->lease_ms / 4;
	for (;;) {
		struct pollfd p[2] = {{.fd = FD, .events = POLLIN}, {.fd = db_socket(c->db), .events = POLLIN}};
		int np = p[1].fd >= 0 && !c->broken ? 2 : 1, wait = -1;
		if (c->lease_ms) {
			uint64_t now = mono_ms();
			if (now >= c->next_beat)
				heartbeat(c);
			wait = (int)(c->next_beat > now ? c->next_beat - now : 0);
		}
		if (poll(p, (nfds_t)np, wait) < 0 && errno != EINTR)
			return 1;
		if (np == 2 && p[1].revents && db_notifies(c->db, notified, c) != 0)
			c->broken = 1;
		shared_send(c);
		if (!p[0].revents)
			continue;
		int r = ipc_read(&c->ipc, err);
		if (r != 0 && r != AS_ENOTFOUND && !(r == AS_EIO && c->ipc.eof))
			return 1;
		for (;;) {
			struct ipc_frame f;
			cv_arena_reset(&c->a);
			int g = ipc_next(&c->ipc, &c->a, &f, err);
			if (g == AS_ENOTFOUND)
				break;
			if (g != 0 || frame_down_check(f.type, f.body, err) != 0)
				return g == AS_EIO ? 0 : 1; /* the signer went away, or broke the protocol */
			int rc;
			if (f.type == F_CL_DLV_ADD || f.type == F_CL_DLV_DONE) { /* never answered */
				dlv_frame(c, &f);
				continue;
			}
			if (f.type == F_CL_REG_PUT || f.type == F_CL_WS_PUT) { /* never answered */
				(f.type == F_CL_REG_PUT ? reg_put : ws_put)(c, &f);
				continue;
			}
			if (f.type == F_CL_PUT && c->put_err[0])
				rc = 0; /* the PUSH answers with the first refusal */
			else if (f.type == F_CL_PUSH && c->put_err[0])
				rc = as_fail(err, AS_EINVAL, "%s", c->put_err);
			else
				rc = step(c, &f, err);
			if (rc == AS_EIO)
				c->broken = 1;
			if (rc != 0)
				rollback(c);
			if (f.type == F_CL_PUT) { /* never answered: a refusal waits for the PUSH */
				if (rc != 0)
					snprintf(c->put_err, sizeof c->put_err, "%s", err);
				continue;
			}
			c->put_err[0] = 0;
			if (send_end(c, rc == 0, rc ? err : NULL, err) != 0)
				return 1;
			/* libpq keeps what arrived during the step; the socket may not poll readable again */
			if (!c->broken && db_notifies(c->db, notified, c) != 0)
				c->broken = 1;
		}
		shared_send(c);
		if (c->ipc.eof)
			return 0;
	}
}

static int setup(struct cl *c, uid_t uid, char *err)
{
	struct ipc_frame f;
	cv_arena_init(&c->a, 4096);
	cv_arena_init(&c->o, 64);
	GUARD(ipc_conn_init(&c->ipc, FD, err));
	GUARD(ipc_next_wait(&c->ipc, &c->a, &f, 10000, err));
	if (f.type != F_CL_HELLO || frame_down_check(f.type, f.body, err) != 0)
		return as_fail(err, AS_ECORRUPT, "the first frame is not F_CL_HELLO");
	const char *s;
	size_t n;
	if (ipc_get_text(f.body, "url", PROTO_CL_URL_MAX, &s, &n, err) != 0)
		return AS_EINVAL;
	snprintf(c->url, sizeof c->url, "%.*s", (int)n, s);
	if (ipc_get_text(f.body, "replica", PROTO_CL_REPLICA_MAX, &s, &n, err) != 0)
		return AS_EINVAL;
	snprintf(c->replica, sizeof c->replica, "%.*s", (int)n, s);
	if (ipc_get_text(f.body, "policy", 64, &s, &n, err) != 0)
		return AS_EINVAL;
	snprintf(c->policy, sizeof c->policy, "%.*s", (int)n, s);
	if (ipc_get_text(f.body, "lock", 8, &s, &n, err) != 0)
		return AS_EINVAL;
	c->advisory = n == 8 && !memcmp(s, "advisory", 8);
	if (cv_get(f.body, "adopt") && ipc_get_bool(f.body, "adopt", &c->adopt, err) != 0)
		return AS_EINVAL;
	if (cv_get(f.body, "lease") && ipc_get_uint(f.body, "lease", 3600000, &c->lease_ms, err) != 0)
		return AS_EINVAL;
	struct confine_opts co = {.dir = NULL, .tcp_port = db_url_tcp_port(c->url), .net = 1, .uid = uid};
	return confine_enter(&co, err);
}

int main(int argc, char **argv)
{
	uint64_t u = 0;
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("assent-cluster %s\n", ASSENT_VERSION);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--uid")) {
		if (parse_u64(argv[2], &u) != 0 || u == 0 || u >= (uid_t)-1)
			return 2;
	} else if (argc != 1) {
		fputs("usage: assent-cluster [--uid N]\n       assent-cluster --version\n  started by assentd "
		      "--cluster, never by hand (docs/cluster.md)\n",
		      stderr);
		return 2;
	}
	static struct cl c;
	char err[AS_ERRLEN];
	if (setup(&c, (uid_t)u, err) != 0) {
		ipc_log(FD, "error", "cluster: %s", err);
		return 1;
	}
	int rc = hello(&c, err);
	if (rc != 0) {
		(void)send_end(&c, 0, err, err);
		return 1;
	}
	/* The signer hears the cluster's registry, webhooks and web sessions at start (after READY,
	 * at the first turn of the loop): until it has, it sends none of its own changes (a replica
	 * started alone would otherwise never share the registry an operator gives it). */
	CL_REFETCH(&c);
	return serve(&c);
}
