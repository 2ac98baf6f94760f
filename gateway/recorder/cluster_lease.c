/* The cluster client's leases (docs/cluster.md, "When a replica dies"): this replica's
 * heartbeat, the takeover of replicas whose lease expired (one conditional UPDATE, so one live
 * replica takes each), and the webhook deliveries kept in PostgreSQL for a takeover; and what the
 * replicas share besides the ledger: the identity registry and reviewers' web sessions. */
#define _GNU_SOURCE
#include "gateway/recorder/cluster_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/proto/frames.h"
#include "gateway/proto/proto.h"

struct dead {
	struct cl *c;
	char names[8][PROTO_CL_REPLICA_MAX + 1];
	size_t n;
};

static int dead_row(void *ctx, const char *const *cols, size_t ncols)
{
	struct dead *d = ctx;
	char err[AS_ERRLEN];
	if (ncols != 1 || !cols[0] || strlen(cols[0]) > PROTO_CL_REPLICA_MAX)
		return 0;
	struct cv *f = ipc_frame_new(&d->c->o, F_CL_DEAD, 1);
	if (f && ipc_put_text(&d->c->o, f, "replica", cols[0], strlen(cols[0])) == 0)
		(void)send_frame(d->c, f, err);
	else
		cv_arena_reset(&d->c->o);
	if (d->n < 8)
		snprintf(d->names[d->n++], sizeof d->names[0], "%s", cols[0]);
	return 0;
}

/* One delivery a dead replica left, to the signer (which checks its mac before it sends it). */
static int dlv_row(void *ctx, const char *const *cols, size_t ncols)
{
	struct cl *c = ctx;
	char err[AS_ERRLEN];
	uint64_t id;
	static const char *const names[] = {"origin", "id", "hook", "event", "body", "mac"};
	if (ncols != 6 || !cols[1] || parse_u64(cols[1], &id) != 0)
		return 0;
	struct cv *f = ipc_frame_new(&c->o, F_CL_DLV, 6);
	int rc = f ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < 6; i++)
		rc = i == 1    ? ipc_put_uint(&c->o, f, "id", id)
		     : cols[i] ? ipc_put_text(&c->o, f, names[i], cols[i], strlen(cols[i]))
			       : -1;
	if (rc == 0 && frame_fields_check(frame_table_find(F_CL_DLV), f, err) == 0) /* else the signer drops us */
		(void)send_frame(c, f, err);
	else
		cv_arena_reset(&c->o);
	return 0;
}

/* A webhook delivery waits (F_CL_DLV_ADD) or ended (F_CL_DLV_DONE): kept in PostgreSQL for a
 * takeover, best effort (never answered: a row that could not be written only means that this
 * delivery is not taken over if this replica dies). Never inside a commit's transaction: the
 * signer sends these between its steps. */
void dlv_frame(struct cl *c, const struct ipc_frame *f)
{
	static const char add[] = "INSERT INTO assent_deliveries (origin, id, hook, owner, event, body, mac) VALUES "
				  "($1, $2, $3, $1, $4, $5, $6) ON CONFLICT DO NOTHING";
	static const char done[] = "DELETE FROM assent_deliveries WHERE origin = $1 AND id = $2 AND hook = $3";
	const char *p[6] = {c->replica};
	size_t n;
	char id[24], err[AS_ERRLEN];
	uint64_t u;
	static const char *const add_f[] = {"hook", "event", "body", "mac"};
	if (c->broken || c->locked || ipc_get_uint(f->body, "id", UINT64_MAX, &u, err) != 0)
		return;
	snprintf(id, sizeof id, "%llu", (unsigned long long)u);
	p[1] = id;
	char *t[4] = {NULL};
	int rc = 0;
	if (f->type == F_CL_DLV_ADD) {
		for (size_t i = 0; rc == 0 && i < 4; i++) {
			const char *s;
			rc = ipc_get_text(f->body, add_f[i], PROTO_NOTIFY_BODY_MAX, &s, &n, err) != 0 ||
			     !(t[i] = strndup(s, n));
		}
		p[2] = t[0], p[3] = t[1], p[4] = t[2], p[5] = t[3];
		if (rc == 0 && db_exec(c->db, add, p, 6, NULL, err) != 0)
			c->broken = db_socket(c->db) < 0;
	} else {
		const char *s;
		if (ipc_get_text(f->body, "origin", PROTO_CL_REPLICA_MAX, &s, &n, err) == 0 && (t[0] = strndup(s, n)) &&
		    ipc_get_text(f->body, "hook", PROTO_CL_HOOK_MAX, &s, &n, err) == 0 && (t[1] = strndup(s, n))) {
			const char *q[3] = {t[0], id, t[1]};
			if (db_exec(c->db, done, q, 3, NULL, err) != 0)
				c->broken = db_socket(c->db) < 0;
		}
	}
	for (size_t i = 0; i < 4; i++)
		free(t[i]);
}

/* Between steps (never inside a commit's transaction): this replica is alive (seen), and it
 * takes over each replica whose lease expired, by PostgreSQL's clock, that nobody took yet: one
 * conditional UPDATE, so that exactly one live replica ends a dead one's requests. */
void heartbeat(struct cl *c)
{
	static const char beat[] = "UPDATE assent_replicas SET seen = now(), taken_by = NULL WHERE name = $1";
	static const char take[] =
	    "UPDATE assent_replicas SET taken_by = $1 WHERE name <> $1 AND taken_by IS NULL "
	    "AND seen < now() - make_interval(secs => $2::double precision / 1000) RETURNING name";
	char err[AS_ERRLEN], ms[24];
	c->next_beat = mono_ms() + c->lease_ms / 4;
	if (c->locked)
		return;
	if (c->broken) {
		if (db_reconnect(c->db, err) != 0 || db_script(c->db, LISTENS, err) != 0)
			return;
		c->broken = 0;
		CL_REFETCH(c);
	}
	static const char dlvs[] =
	    "UPDATE assent_deliveries SET owner = $1 WHERE owner = $2 RETURNING origin, id, hook, "
	    "event, body, mac";
	snprintf(ms, sizeof ms, "%llu", (unsigned long long)c->lease_ms);
	const char *p1[] = {c->replica}, *p2[] = {c->replica, ms};
	struct dead d = {.c = c};
	if (db_exec(c->db, beat, p1, 1, NULL, err) != 0 || db_query(c->db, take, p2, 2, dead_row, &d, err) != 0) {
		c->broken = 1;
		return;
	}
	/* A previous run's deliveries (from before this client started) are this run's to send. */
	static const char own[] = "SELECT origin, id, hook, event, body, mac FROM assent_deliveries WHERE owner = $1 "
				  "AND created < (SELECT started FROM assent_replicas WHERE name = $1)";
	if (!c->own_dlvs && db_query(c->db, own, p1, 1, dlv_row, c, err) == 0) {
		c->own_dlvs = 1;
		CL_REFETCH(c); /* and, once, the cluster's registry and web sessions */
	}
	for (size_t i = 0; i < d.n; i++) { /* its webhooks' deliveries are ours to send now */
		const char *p3[] = {c->replica, d.names[i]};
		if (db_query(c->db, dlvs, p3, 2, dlv_row, c, err) != 0)
			c->broken = 1;
	}
}

/* ---- the identity registry ---- */

/* The shared files' tables and channels, by the frames' "file": the registry, the webhooks. */
static const char *const tables[] = {"assent_registry", "assent_webhooks"};

void reg_put(struct cl *c, const struct ipc_frame *f)
{
	/* stored only when made on the cluster's version (base; 0: none yet), and newer */
	static const char put[] =
	    "WITH u AS (INSERT INTO %1$s VALUES (1, $1, $2, $3, $4) ON CONFLICT (id) DO "
	    "UPDATE SET version = EXCLUDED.version, body = EXCLUDED.body, mac = EXCLUDED.mac, "
	    "replica = EXCLUDED.replica WHERE %1$s.version < EXCLUDED.version AND %1$s.version = $5::bigint "
	    "RETURNING 1) SELECT pg_notify('%1$s', $4) FROM u";
	const char *body, *mac;
	size_t bn, mn;
	uint64_t v, base = 0, file = 0;
	char ver[24], bv[24], err[AS_ERRLEN], q[sizeof put + 64];
	if (c->broken || c->locked || ipc_get_uint(f->body, "version", UINT64_MAX, &v, err) != 0 ||
	    ipc_get_text(f->body, "body", PROTO_CL_REG_MAX, &body, &bn, err) != 0 ||
	    ipc_get_text(f->body, "mac", 64, &mac, &mn, err) != 0 ||
	    (cv_get(f->body, "base") && ipc_get_uint(f->body, "base", UINT64_MAX, &base, err) != 0) ||
	    (cv_get(f->body, "file") && ipc_get_uint(f->body, "file", 1, &file, err) != 0))
		return;
	char *b = strndup(body, bn), *m = strndup(mac, mn);
	snprintf(q, sizeof q, put, tables[file]);
	snprintf(ver, sizeof ver, "%llu", (unsigned long long)v);
	snprintf(bv, sizeof bv, "%llu", (unsigned long long)base);
	const char *p[] = {ver, b, m, c->replica, bv};
	if (b && m && db_query(c->db, q, p, 5, NULL, NULL, err) != 0)
		c->broken = db_socket(c->db) < 0;
	c->reg_due |= 1u << file; /* the signer hears what the cluster has now: its own, or a newer one to merge */
	free(b);
	free(m);
}

struct reg_rows {
	struct cl *c;
	uint64_t file;
	size_t n;
};

static int reg_row(void *ctx, const char *const *cols, size_t ncols)
{
	struct reg_rows *r = ctx;
	struct cl *c = r->c;
	uint64_t v;
	char err[AS_ERRLEN];
	if (ncols != 3 || !cols[0] || !cols[1] || !cols[2] || parse_u64(cols[0], &v) != 0)
		return 0;
	r->n++;
	struct cv *f = ipc_frame_new(&c->o, F_CL_REG, 4);
	if (f && ipc_put_uint(&c->o, f, "version", v) == 0 &&
	    ipc_put_text(&c->o, f, "body", cols[1], strlen(cols[1])) == 0 &&
	    ipc_put_text(&c->o, f, "mac", cols[2], strlen(cols[2])) == 0 &&
	    (!r->file || ipc_put_uint(&c->o, f, "file", r->file) == 0) &&
	    frame_fields_check(frame_table_find(F_CL_REG), f, err) == 0)
		(void)send_frame(c, f, err);
	else
		cv_arena_reset(&c->o);
	return 0;
}

void reg_send(struct cl *c)
{
	char err[AS_ERRLEN], q[128];
	for (uint64_t file = 0; file < 2; file++) {
		struct reg_rows r = {.c = c, .file = file};
		if (!(c->reg_due & (1u << file)))
			continue;
		c->reg_due &= ~(1u << file);
		snprintf(q, sizeof q, "SELECT version, body, mac FROM %s WHERE id = 1", tables[file]);
		if (db_query(c->db, q, NULL, 0, reg_row, &r, err) != 0) {
			c->broken = db_socket(c->db) < 0;
			return;
		}
		if (r.n == 0) { /* none yet: said as version 0 (the signer sends its file as the first) */
			static const char *const none[] = {"0", "", ""};
			(void)reg_row(&r, none, 3);
		}
	}
}

/* ---- reviewers' web sessions ---- */

void ws_put(struct cl *c, const struct ipc_frame *f)
{
	static const char put[] =
	    "WITH u AS (INSERT INTO assent_websessions (hash, seq, body, mac, ended, replica) VALUES ($1, "
	    "nextval('assent_websessions_seq'), $2, $3, $4::boolean, $5) ON CONFLICT (hash) DO UPDATE SET "
	    "seq = EXCLUDED.seq, body = EXCLUDED.body, mac = EXCLUDED.mac, ended = assent_websessions.ended OR "
	    "EXCLUDED.ended, replica = EXCLUDED.replica, at = now() RETURNING 1) "
	    "SELECT pg_notify('assent_websessions', $5) FROM u";
	/* past any session's life (websess.h WS_LIFE_MS, 12 hours) */
	static const char old[] = "DELETE FROM assent_websessions WHERE at < now() - interval '13 hours'";
	const char *key, *body, *mac;
	size_t kn, bn, mn;
	int ended;
	char err[AS_ERRLEN];
	if (c->broken || c->locked || ipc_get_text(f->body, "key", 64, &key, &kn, err) != 0 ||
	    ipc_get_text(f->body, "body", PROTO_CL_WS_MAX, &body, &bn, err) != 0 ||
	    ipc_get_text(f->body, "mac", 64, &mac, &mn, err) != 0 || ipc_get_bool(f->body, "ended", &ended, err) != 0)
		return;
	char *k = strndup(key, kn), *b = strndup(body, bn), *m = strndup(mac, mn);
	const char *p[] = {k, b, m, ended ? "true" : "false", c->replica};
	if (k && b && m &&
	    (db_query(c->db, put, p, 5, NULL, NULL, err) != 0 || db_exec(c->db, old, NULL, 0, NULL, err) != 0))
		c->broken = db_socket(c->db) < 0;
	free(k);
	free(b);
	free(m);
}

struct ws_rows {
	struct cl *c;
	size_t n;
};

static int ws_row(void *ctx, const char *const *cols, size_t ncols)
{
	struct ws_rows *w = ctx;
	struct cl *c = w->c;
	uint64_t seq;
	char err[AS_ERRLEN];
	if (ncols != 4 || !cols[0] || !cols[1] || !cols[2] || !cols[3] || parse_u64(cols[0], &seq) != 0)
		return 0;
	w->n++;
	c->ws_seq = seq > c->ws_seq ? seq : c->ws_seq;
	struct cv *f = ipc_frame_new(&c->o, F_CL_WS, 3);
	if (f && ipc_put_text(&c->o, f, "body", cols[1], strlen(cols[1])) == 0 &&
	    ipc_put_text(&c->o, f, "mac", cols[2], strlen(cols[2])) == 0 &&
	    ipc_put_bool(&c->o, f, "ended", cols[3][0] == 't') == 0 &&
	    frame_fields_check(frame_table_find(F_CL_WS), f, err) == 0)
		(void)send_frame(c, f, err);
	else
		cv_arena_reset(&c->o);
	return 0;
}

void ws_send(struct cl *c)
{
	/* at start, the live sessions; then every change, in order, 256 at a time */
	static const char q[] = "SELECT seq, body, mac, ended FROM assent_websessions WHERE seq > $1::bigint AND "
				"(NOT ended OR $2::boolean) ORDER BY seq LIMIT 256";
	char err[AS_ERRLEN], from[24];
	struct ws_rows w = {.c = c};
	snprintf(from, sizeof from, "%llu", (unsigned long long)c->ws_seq);
	const char *p[] = {from, c->ws_all ? "true" : "false"};
	c->ws_due = 0;
	if (db_query(c->db, q, p, 2, ws_row, &w, err) != 0) {
		c->broken = db_socket(c->db) < 0;
		return;
	}
	c->ws_due = w.n == 256; /* more after these */
	c->ws_all = c->ws_all || !c->ws_due;
}
