/* Cluster mode: one identity registry for every replica (docs/cluster.md, "One registry").
 * The registry's file (STATE/identities.json: reviewers, agents, their groups and the hashes of
 * their credentials) is kept in PostgreSQL's assent_registry as the replica that changed it last
 * wrote it, with an HMAC-SHA256 under the cluster's secret (STATE/keys/cluster.secret, made by
 * the first replica and provisioned with the other keys; PostgreSQL never holds it). So whoever
 * can write to the database cannot add a reviewer: a row whose mac does not verify is refused.
 * - A change here (the assent CLI wrote the file, the loop re-read it) is sent to the cluster,
 *   versioned by the file's modification time in milliseconds; the newer version wins.
 * - A change is sent with the version it was made on (its base): PostgreSQL stores it only when
 *   that is still the cluster's, and echoes what it has either way. When another replica changed
 *   it meanwhile, this one merges (merge3: the cluster's, with the entries added, changed or
 *   removed here since the base applied over it) and sends the merge. So two operators adding
 *   a reviewer each on two replicas at once both keep theirs.
 * - The cluster's registry (at start, on NOTIFY, after a put) replaces the file here when
 *   nothing changed here since the base, with the file's time set to its version; at start,
 *   with no base yet, the newer of the two wins.
 * Reviewers' web sessions are shared alike (docs/cluster.md, "Web sessions"): what the table keeps
 * of one (the hash of its secret, never the secret), MAC'd with the same secret, so a row that
 * PostgreSQL's writers made or changed is refused. An old row written again revives nothing that
 * ended here, but may tell a replica that never heard of its end of a session, until its time
 * or its credential ends it; its secret is still only in the browser that logged in. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <mbedtls/md.h>

#define REG_SECRET_FILE "cluster.secret"

struct creg {
	uint8_t secret[32];
	uint8_t sha[32]; /* of the file as this replica last wrote or sent it */
	int known;
	struct buf base;       /* the cluster's registry as last heard: what a change here is made on */
	uint64_t base_version; /* its version (0: the cluster has none) */
	int based;	       /* heard: until then, nothing here is sent */
};

/* HMAC-SHA256 under the cluster's secret of "DOMAIN\nVERSION\n" and body, as hex. */
static int mac_of(const struct creg *g, const char *domain, uint64_t version, const char *body, size_t len,
		  char out[65])
{
	struct buf m;
	uint8_t mac[32];
	buf_init(&m, len + 64);
	int rc = buf_printf(&m, "%s\n%llu\n", domain, (unsigned long long)version) || buf_put(&m, body, len) ||
		 mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), g->secret, sizeof g->secret, m.p, m.len,
				 mac) != 0;
	buf_free(&m);
	if (rc == 0)
		hex_encode(mac, sizeof mac, out);
	return rc;
}

struct creg *cluster_reg_setup(const char *state, char *err)
{
	char path[4200], hex[65];
	struct buf b;
	struct creg *g = calloc(1, sizeof *g);
	if (!g) {
		as_fail(err, AS_ENOMEM, "out of memory");
		return NULL;
	}
	snprintf(path, sizeof path, "%s/keys/" REG_SECRET_FILE, state);
	buf_init(&b, 256);
	int rc = file_read(path, 256, &b, err);
	if (rc == AS_ENOTFOUND) { /* the first replica makes it; the others get a copy with the keys */
		rc = getrandom(g->secret, sizeof g->secret, 0) == (ssize_t)sizeof g->secret
			 ? 0
			 : as_fail(err, AS_EIO, "no randomness from the kernel");
		hex_encode(g->secret, sizeof g->secret, hex);
		char dir[4200];
		snprintf(dir, sizeof dir, "%s/keys", state); /* a first start: before the ledger makes its key */
		if (rc == 0)
			rc = mkdir_p(dir, 0700, err);
		if (rc == 0)
			rc = file_write_atomic(path, hex, 64, 0600, err);
	} else if (rc == 0 && (b.len < 64 || hex_decode((const char *)b.p, 64, g->secret, sizeof g->secret) != 0)) {
		rc = as_fail(err, AS_ECORRUPT, "%s: not 64 hex digits", path);
	}
	buf_free(&b);
	if (rc != 0) {
		free(g);
		return NULL;
	}
	return g;
}

/* The registry's file here: its bytes (the caller frees b), SHA-256 and time in milliseconds. */
static int reg_file(const char *state, struct buf *b, uint8_t sha[32], uint64_t *ms)
{
	char path[4200], err[AS_ERRLEN];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", state, REG_FILE);
	buf_init(b, PROTO_CL_REG_MAX);
	if (stat(path, &st) != 0 || file_read(path, PROTO_CL_REG_MAX, b, err) != 0)
		return -1;
	sha256(b->p, b->len, sha);
	*ms = (uint64_t)st.st_mtim.tv_sec * 1000 + (uint64_t)st.st_mtim.tv_nsec / 1000000;
	return 0;
}

/* The entry of list a named name, and its index; NULL: none. */
static json_t *by_name(const json_t *a, const char *name, size_t *at)
{
	size_t i;
	json_t *e;
	json_array_foreach(a, i, e)
	{
		const char *n = json_string_value(json_object_get(e, "name"));
		if (n && !strcmp(n, name)) {
			if (at)
				*at = i;
			return e;
		}
	}
	return NULL;
}

/* out (theirs) gets what changed in mine since base, entry by entry (by name): added, changed
 * or removed here. */
static void merge_list(const json_t *base, const json_t *mine, json_t *out)
{
	size_t i, at;
	json_t *e;
	json_array_foreach(mine, i, e)
	{
		const char *n = json_string_value(json_object_get(e, "name"));
		const json_t *b = n ? by_name(base, n, NULL) : NULL;
		if (!n || (b && json_equal(b, e)))
			continue; /* not changed here */
		if (by_name(out, n, &at))
			json_array_set(out, at, e);
		else
			json_array_append(out, e);
	}
	json_array_foreach(base, i, e)
	{
		const char *n = json_string_value(json_object_get(e, "name"));
		if (n && !by_name(mine, n, NULL) && by_name(out, n, &at)) /* removed here */
			json_array_remove(out, at);
	}
}

/* Three-way: the cluster's registry (theirs) with this replica's changes since base applied over
 * it, list by list and entry by entry; a member that is not a list of named entries: ours when
 * changed here, else theirs. NULL when one cannot be read. The caller frees the text. */
static char *merge3(const struct buf *base, const struct buf *mine, const char *theirs, size_t tn)
{
	json_t *b = base->len ? json_loadb((const char *)base->p, base->len, 0, NULL) : json_object(),
	       *m = json_loadb((const char *)mine->p, mine->len, 0, NULL), *out = json_loadb(theirs, tn, 0, NULL);
	char *text = NULL;
	if (json_is_object(b) && json_is_object(m) && json_is_object(out)) {
		const char *k;
		json_t *v;
		json_object_foreach(m, k, v)
		{
			json_t *bv = json_object_get(b, k), *ov = json_object_get(out, k);
			if (json_is_array(v) && json_is_array(ov) && (!bv || json_is_array(bv)))
				merge_list(bv, v, ov);
			else if (!json_equal(bv, v))
				json_object_set(out, k, v);
		}
		text = json_dumps(out, JSON_INDENT(2) | JSON_SORT_KEYS);
	}
	json_decref(b);
	json_decref(m);
	json_decref(out);
	return text;
}

/* b (taken) is what the cluster is to have, derived from its version base (0: whatever it has,
 * when older): sent as a version after both. */
static int to_send(struct creg *g, struct buf *b, const uint8_t sha[32], uint64_t ms, uint64_t base,
		   struct creg_push *p)
{
	uint64_t v = ms > base ? ms : base + 1;
	if (memchr(b->p, 0, b->len) || mac_of(g, "assent-registry", v, (const char *)b->p, b->len, p->mac) != 0) {
		buf_free(b);
		return 0;
	}
	memcpy(g->sha, sha, 32);
	g->known = 1;
	p->version = v;
	p->base = base;
	p->body = *b;
	return 1;
}

int creg_local(struct creg *g, const char *state, struct creg_push *p)
{
	struct buf b;
	uint8_t sha[32];
	uint64_t ms;
	if (g->based && reg_file(state, &b, sha, &ms) == 0 && !(g->known && !memcmp(sha, g->sha, 32)))
		return to_send(g, &b, sha, ms, g->base_version, p); /* changed here: to the cluster */
	buf_free(&b);
	return 0;
}

/* The cluster's version is this replica's file now, and the base of its next change. */
static void take(struct creg *g, const char *state, uint64_t version, const char *body, size_t len,
		 const uint8_t sha[32])
{
	char path[4200], err[AS_ERRLEN];
	snprintf(path, sizeof path, "%s/%s", state, REG_FILE);
	struct timespec t[2] = {{.tv_sec = (time_t)(version / 1000), .tv_nsec = (long)(version % 1000) * 1000000},
				{.tv_sec = (time_t)(version / 1000), .tv_nsec = (long)(version % 1000) * 1000000}};
	if (file_write_atomic(path, body, len, 0600, err) != 0 || utimensat(AT_FDCWD, path, t, 0) != 0) {
		slog("error", "cluster: writing the cluster's identity registry to %s: %s", path, err);
		return;
	}
	memcpy(g->sha, sha, 32);
	g->known = 1;
	slog("info", "cluster: the identity registry from the cluster (version %llu, %zu bytes) is this replica's now",
	     (unsigned long long)version, len);
}

/* The base of this replica's changes: what the cluster had, as it had it. */
static void based_on(struct creg *g, uint64_t version, const char *body, size_t len)
{
	buf_free(&g->base);
	buf_init(&g->base, len + 1);
	if (buf_put(&g->base, body, len) == 0)
		g->base_version = version;
	else
		g->base_version = 0;
}

int creg_in(struct creg *g, const char *state, uint64_t version, const char *body, size_t len, const char *mac,
	    struct creg_push *p)
{
	char want[65];
	uint8_t sha[32], mine[32], bsha[32];
	uint64_t ms = 0;
	struct buf b;
	buf_init(&b, PROTO_CL_REG_MAX);
	if (version == 0 && len == 0) { /* the cluster has none yet: the file here is its first */
		int rc = !g->based;
		g->based = 1;
		based_on(g, 0, "", 0);
		if (rc && reg_file(state, &b, mine, &ms) == 0)
			return to_send(g, &b, mine, ms, 0, p);
		if (rc)
			buf_free(&b);
		return 0;
	}
	if (strlen(mac) != 64 || mac_of(g, "assent-registry", version, body, len, want) != 0 ||
	    ct_memcmp(want, mac, 64) != 0) {
		slog("error", "cluster: the identity registry in PostgreSQL does not verify with the cluster's secret "
			      "(changed there, or another cluster's keys?): not taken");
		if (!g->based || reg_file(state, &b, mine, &ms) != 0) {
			buf_free(&b);
			return 0;
		}
		/* not the cluster's: this replica's (the last that verified, with its changes since) replaces it */
		g->base_version = version;
		return to_send(g, &b, mine, ms, version, p);
	}
	sha256(body, len, sha);
	int here = reg_file(state, &b, mine, &ms) == 0, rc = 0;
	int based = g->based;
	g->based = 1;
	if (based)
		sha256(g->base.p, g->base.len, bsha);
	if (here && !memcmp(sha, mine, 32)) { /* the same: what this replica sent, stored */
		memcpy(g->sha, sha, 32);
		g->known = 1;
	} else if (!here || (based && !memcmp(mine, bsha, 32)) || (!based && ms <= version)) {
		take(g, state, version, body, len, sha); /* nothing changed here since (or older) */
	} else if (!based) {				 /* at start, the file here is newer: the cluster's now */
		rc = to_send(g, &b, mine, ms, version, p);
	} else { /* both changed: theirs with this replica's changes since the base over it */
		char *m = merge3(&g->base, &b, body, len);
		buf_free(&b); /* merged: the merge is sent, not the file it was read from */
		struct buf mb = {0};
		uint8_t msha[32];
		buf_init(&mb, m ? strlen(m) + 1 : 1);
		if (m && buf_put(&mb, m, strlen(m)) == 0) {
			sha256(mb.p, mb.len, msha);
			take(g, state, version, m, strlen(m), msha);
			slog("info",
			     "cluster: this replica's change to the identity registry merged with the cluster's "
			     "newer one");
			rc = to_send(g, &mb, msha, now_ms(), version, p);
		} else {
			buf_free(&mb);
			slog("error", "cluster: the identity registry here and the cluster's cannot be merged (not "
				      "JSON): the cluster's is taken");
			take(g, state, version, body, len, sha);
		}
		free(m);
	}
	based_on(g, version, body, len);
	if (!rc)
		buf_free(&b);
	return rc;
}

/* ---- reviewers' web sessions ---- */

int creg_ws_out(struct creg *g, const struct ws_session *ss, struct creg_push *p)
{
	char hash[65], cred[65];
	hex_encode(ss->hash, 32, hash);
	hex_encode(ss->cred, 32, cred);
	json_t *j =
	    json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I}", "hash", hash, "reviewer", ss->reviewer, "via", ss->via, "cred",
		      cred, "csrf", ss->csrf, "created", (json_int_t)ss->created, "last", (json_int_t)ss->last);
	char *t = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	buf_init(&p->body, PROTO_CL_WS_MAX);
	int rc = !t || buf_put(&p->body, t, strlen(t)) || mac_of(g, "assent-websession", 0, t, strlen(t), p->mac);
	free(t);
	if (rc)
		buf_free(&p->body);
	return rc ? AS_ENOMEM : 0;
}

/* A session's fields from the cluster's body (its mac checked first). 0, or -1. */
static int ws_read(const char *body, size_t len, uint64_t now, struct ws_session *out)
{
	const char *hash, *reviewer, *via, *cred, *csrf;
	json_int_t created, last;
	json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
	int rc = !j || json_unpack(j, "{s:s,s:s,s:s,s:s,s:s,s:I,s:I}", "hash", &hash, "reviewer", &reviewer, "via",
				   &via, "cred", &cred, "csrf", &csrf, "created", &created, "last", &last) != 0;
	*out = (struct ws_session){.used = 0};
	if (!rc)
		rc = strlen(hash) != 64 || hex_decode(hash, 64, out->hash, 32) != 0 || strlen(cred) != 64 ||
		     hex_decode(cred, 64, out->cred, 32) != 0 || strlen(csrf) != WS_CSRF_LEN || !*reviewer ||
		     strlen(reviewer) >= sizeof out->reviewer || strlen(via) >= sizeof out->via || created < 0 ||
		     last < created;
	if (!rc) {
		snprintf(out->reviewer, sizeof out->reviewer, "%s", reviewer);
		snprintf(out->via, sizeof out->via, "%s", via);
		memcpy(out->csrf, csrf, WS_CSRF_LEN + 1);
		/* another machine's clock: never later than this one's */
		out->created = (uint64_t)created < now ? (uint64_t)created : now;
		out->last = (uint64_t)last < now ? (uint64_t)last : now;
	}
	json_decref(j);
	return rc ? -1 : 0;
}

void creg_ws_in(struct creg *g, struct web_sessions *w, const char *body, size_t len, const char *mac, int ended,
		uint64_t now)
{
	char want[65];
	struct ws_session in;
	if (strlen(mac) != 64 || mac_of(g, "assent-websession", 0, body, len, want) != 0 ||
	    ct_memcmp(want, mac, 64) != 0) {
		slog("error", "cluster: a web session in PostgreSQL does not verify with the cluster's secret (made or "
			      "changed there?): not taken");
		return;
	}
	if (ws_read(body, len, now, &in) != 0) {
		slog("error", "cluster: a web session from the cluster cannot be read: not taken");
	} else if (ended) {
		ws_drop(w, in.hash);
	} else if (ws_adopt(w, &in)) {
		slog("debug", "cluster: %s's web session from another replica is known here", in.reviewer);
	}
	explicit_bzero(&in, sizeof in);
}
