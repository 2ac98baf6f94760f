/* Cluster mode: one identity registry for every replica (docs/cluster.md, "One registry"), and
 * one webhooks' file (STATE/notify.json), shared alike but sealed (its secrets and URLs are
 * PostgreSQL's to keep, never to read: AES-256-GCM under a key made from the cluster's secret).
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
#include "gateway/state/hooks.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <mbedtls/gcm.h>
#include <mbedtls/md.h>

#define REG_SECRET_FILE "cluster.secret"

/* The files every replica shares: the identity registry, and the webhooks' file, sealed
 * (AES-256-GCM under a key made from the cluster's secret): its webhooks' secrets are
 * PostgreSQL's to keep, never to read. */
static const struct cfile {
	const char *name, *domain, *what; /* what: as the log names it */
	int sealed;
} files[CREG_FILES] = {{REG_FILE, "assent-registry", "the identity registry", 0},
		       {HOOKS_FILE, "assent-webhooks", "the webhooks' file", 1}};

struct cstate {
	uint8_t sha[32]; /* of the file as this replica last wrote or sent it */
	int known;
	struct buf base;       /* the cluster's file as last heard: what a change here is made on */
	uint64_t base_version; /* its version (0: the cluster has none) */
	int based;	       /* heard: until then, nothing here is sent */
};

struct creg {
	uint8_t secret[32];
	uint8_t seal[32]; /* HMAC(secret, "assent-seal"): the sealed files' key */
	struct cstate f[CREG_FILES];
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
	if (rc == 0 && mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), g->secret, sizeof g->secret,
				       (const uint8_t *)"assent-seal", 11, g->seal) != 0)
		rc = as_fail(err, AS_EIO, "cannot make the key of the sealed files");
	if (rc != 0) {
		free(g);
		return NULL;
	}
	return g;
}

/* A sealed file's text: hex of a random 12-byte nonce, the ciphertext and its 16-byte tag. */
static int seal(const struct creg *g, const char *domain, const uint8_t *p, size_t n, struct buf *out)
{
	uint8_t iv[12], tag[16];
	uint8_t *ct = malloc(n ? n : 1);
	mbedtls_gcm_context c;
	mbedtls_gcm_init(&c);
	int rc = !ct || getrandom(iv, sizeof iv, 0) != (ssize_t)sizeof iv ||
		 mbedtls_gcm_setkey(&c, MBEDTLS_CIPHER_ID_AES, g->seal, 256) != 0 ||
		 mbedtls_gcm_crypt_and_tag(&c, MBEDTLS_GCM_ENCRYPT, n, iv, sizeof iv, (const uint8_t *)domain,
					   strlen(domain), p, ct, sizeof tag, tag) != 0;
	mbedtls_gcm_free(&c);
	buf_init(out, 2 * (n + 28) + 1);
	rc = rc || buf_reserve(out, 2 * (n + 28) + 1) != 0;
	if (!rc) {
		hex_encode(iv, sizeof iv, (char *)out->p);
		hex_encode(ct, n, (char *)out->p + 24);
		hex_encode(tag, sizeof tag, (char *)out->p + 24 + 2 * n);
		out->len = 2 * (n + 28);
	}
	free(ct);
	return rc ? -1 : 0;
}

/* The plaintext of a sealed file's text (its mac checked first): 0, or -1. */
static int unseal(const struct creg *g, const char *domain, const char *text, size_t tn, struct buf *out)
{
	size_t n = tn / 2 >= 28 ? tn / 2 - 28 : 0;
	uint8_t iv[12], tag[16], *ct = malloc(n + 1);
	buf_init(out, PROTO_CL_REG_MAX);
	int rc = !ct || tn % 2 || tn < 56 || hex_decode(text, 24, iv, 12) != 0 || hex_decode(text + 24, 2 * n, ct, n) ||
		 hex_decode(text + 24 + 2 * n, 32, tag, 16) != 0 || buf_reserve(out, n + 1) != 0;
	mbedtls_gcm_context c;
	mbedtls_gcm_init(&c);
	rc = rc || mbedtls_gcm_setkey(&c, MBEDTLS_CIPHER_ID_AES, g->seal, 256) != 0 ||
	     mbedtls_gcm_auth_decrypt(&c, n, iv, sizeof iv, (const uint8_t *)domain, strlen(domain), tag, sizeof tag,
				      ct, out->p) != 0;
	mbedtls_gcm_free(&c);
	free(ct);
	out->len = rc ? 0 : n;
	return rc ? -1 : 0;
}

/* The registry's file here: its bytes (the caller frees b), SHA-256 and time in milliseconds. */
static int reg_file(const char *state, int which, struct buf *b, uint8_t sha[32], uint64_t *ms)
{
	char path[4200], err[AS_ERRLEN];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", state, files[which].name);
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
static int to_send(struct creg *g, int which, struct buf *b, const uint8_t sha[32], uint64_t ms, uint64_t base,
		   struct creg_push *p)
{
	const struct cfile *cf = &files[which];
	struct cstate *f = &g->f[which];
	uint64_t v = ms > base ? ms : base + 1;
	struct buf sealed;
	if (cf->sealed) { /* the text sent is the sealed one */
		int bad = seal(g, cf->domain, b->p, b->len, &sealed);
		buf_free_wipe(b);
		if (bad)
			return 0;
		*b = sealed;
	}
	if (memchr(b->p, 0, b->len) || mac_of(g, cf->domain, v, (const char *)b->p, b->len, p->mac) != 0) {
		buf_free(b);
		return 0;
	}
	memcpy(f->sha, sha, 32);
	f->known = 1;
	p->which = which;
	p->version = v;
	p->base = base;
	p->body = *b;
	return 1;
}

int creg_local(struct creg *g, const char *state, int which, struct creg_push *p)
{
	struct cstate *f = &g->f[which];
	struct buf b;
	uint8_t sha[32];
	uint64_t ms;
	buf_init(&b, 1);
	if (f->based && reg_file(state, which, &b, sha, &ms) == 0 && !(f->known && !memcmp(sha, f->sha, 32)))
		return to_send(g, which, &b, sha, ms, f->base_version, p); /* changed here: to the cluster */
	buf_free_wipe(&b);
	return 0;
}

/* The cluster's version is this replica's file now, and the base of its next change. */
static void take(struct creg *g, const char *state, int which, uint64_t version, const char *body, size_t len,
		 const uint8_t sha[32])
{
	char path[4200], err[AS_ERRLEN];
	snprintf(path, sizeof path, "%s/%s", state, files[which].name);
	struct timespec t[2] = {{.tv_sec = (time_t)(version / 1000), .tv_nsec = (long)(version % 1000) * 1000000},
				{.tv_sec = (time_t)(version / 1000), .tv_nsec = (long)(version % 1000) * 1000000}};
	if (file_write_atomic(path, body, len, 0600, err) != 0 || utimensat(AT_FDCWD, path, t, 0) != 0) {
		slog("error", "cluster: writing the cluster's %s to %s: %s", files[which].what, path, err);
		return;
	}
	memcpy(g->f[which].sha, sha, 32);
	g->f[which].known = 1;
	slog("info", "cluster: %s from the cluster (version %llu, %zu bytes) is this replica's now", files[which].what,
	     (unsigned long long)version, len);
}

/* The base of this replica's changes: what the cluster had, as it had it. */
static void based_on(struct cstate *f, uint64_t version, const char *body, size_t len)
{
	buf_free_wipe(&f->base);
	buf_init(&f->base, len + 1);
	f->base_version = buf_put(&f->base, body, len) == 0 ? version : 0;
}

/* Both changed: theirs, with this replica's changes since the base over it (b: the file here,
 * freed), written here and sent. */
static int merged(struct creg *g, const char *state, int which, struct buf *b, uint64_t version, const char *body,
		  size_t len, const uint8_t sha[32], struct creg_push *p)
{
	char *m = merge3(&g->f[which].base, b, body, len);
	buf_free_wipe(b); /* merged: the merge is sent, not the file it was read from */
	struct buf mb;
	uint8_t msha[32];
	int rc = 0;
	buf_init(&mb, m ? strlen(m) + 1 : 1);
	if (m && buf_put(&mb, m, strlen(m)) == 0) {
		sha256(mb.p, mb.len, msha);
		take(g, state, which, version, m, strlen(m), msha);
		slog("info", "cluster: this replica's change to %s merged with the cluster's newer one",
		     files[which].what);
		rc = to_send(g, which, &mb, msha, now_ms(), version, p);
	} else {
		buf_free(&mb);
		slog("error", "cluster: %s here and the cluster's cannot be merged (not JSON): the cluster's is taken",
		     files[which].what);
		take(g, state, which, version, body, len, sha);
	}
	if (m)
		explicit_bzero(m, strlen(m));
	free(m);
	return rc;
}

int creg_in(struct creg *g, const char *state, int which, uint64_t version, const char *body, size_t len,
	    const char *mac, struct creg_push *p)
{
	const struct cfile *cf = &files[which];
	struct cstate *f = &g->f[which];
	char want[65];
	uint8_t sha[32], mine[32], bsha[32];
	uint64_t ms = 0;
	struct buf b, plain;
	buf_init(&b, PROTO_CL_REG_MAX);
	buf_init(&plain, 1);
	if (version == 0 && len == 0) { /* the cluster has none yet: the file here is its first */
		int rc = !f->based;
		f->based = 1;
		based_on(f, 0, "", 0);
		if (rc && reg_file(state, which, &b, mine, &ms) == 0)
			return to_send(g, which, &b, mine, ms, 0, p);
		buf_free(&b);
		return 0;
	}
	if (strlen(mac) != 64 || mac_of(g, cf->domain, version, body, len, want) != 0 ||
	    ct_memcmp(want, mac, 64) != 0 || (cf->sealed && unseal(g, cf->domain, body, len, &plain) != 0)) {
		slog("error",
		     "cluster: %s in PostgreSQL does not verify with the cluster's secret (changed there, or another "
		     "cluster's keys?): not taken",
		     cf->what);
		buf_free(&plain);
		if (!f->based || reg_file(state, which, &b, mine, &ms) != 0) {
			buf_free(&b);
			return 0;
		}
		/* not the cluster's: this replica's (the last that verified, with its changes since) replaces it */
		f->base_version = version;
		return to_send(g, which, &b, mine, ms, version, p);
	}
	if (cf->sealed) {
		body = (const char *)plain.p;
		len = plain.len;
	}
	sha256(body, len, sha);
	int here = reg_file(state, which, &b, mine, &ms) == 0, rc = 0;
	int based = f->based;
	f->based = 1;
	if (based)
		sha256(f->base.p, f->base.len, bsha);
	if (here && !memcmp(sha, mine, 32)) { /* the same: what this replica sent, stored */
		memcpy(f->sha, sha, 32);
		f->known = 1;
	} else if (!here || (based && !memcmp(mine, bsha, 32)) || (!based && ms <= version)) {
		take(g, state, which, version, body, len, sha); /* nothing changed here since (or older) */
	} else if (!based) { /* at start, the file here is newer: the cluster's now */
		rc = to_send(g, which, &b, mine, ms, version, p);
	} else {
		rc = merged(g, state, which, &b, version, body, len, sha, p);
	}
	based_on(f, version, body, len);
	if (!rc)
		buf_free_wipe(&b);
	buf_free_wipe(&plain);
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
