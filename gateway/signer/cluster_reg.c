/* Cluster mode: one identity registry for every replica (docs/cluster.md, "One registry").
 * The registry's file (STATE/identities.json: reviewers, agents, their groups and the hashes of
 * their credentials) is kept in PostgreSQL's assent_registry as the replica that changed it last
 * wrote it, with an HMAC-SHA256 under the cluster's secret (STATE/keys/cluster.secret, made by
 * the first replica and provisioned with the other keys; PostgreSQL never holds it). So whoever
 * can write to the database cannot add a reviewer: a row whose mac does not verify is refused.
 * - A change here (the assent CLI wrote the file, the loop re-read it) is sent to the cluster,
 *   versioned by the file's modification time in milliseconds; the newer version wins.
 * - The cluster's registry (at start, and on NOTIFY) replaces the file here when it is newer
 *   than it, with the file's time set to its version; when the file here is newer, it is sent. */
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
};

static int mac_of(const struct creg *g, uint64_t version, const char *body, size_t len, char out[65])
{
	struct buf m;
	uint8_t mac[32];
	buf_init(&m, len + 64);
	int rc = buf_printf(&m, "assent-registry\n%llu\n", (unsigned long long)version) || buf_put(&m, body, len) ||
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

/* b (taken) is what the cluster is to have, as version ms. */
static int to_send(struct creg *g, struct buf *b, const uint8_t sha[32], uint64_t ms, struct creg_push *p)
{
	if (memchr(b->p, 0, b->len) || mac_of(g, ms, (const char *)b->p, b->len, p->mac) != 0) {
		buf_free(b);
		return 0;
	}
	memcpy(g->sha, sha, 32);
	g->known = 1;
	p->version = ms;
	p->body = *b;
	return 1;
}

int creg_local(struct creg *g, const char *state, struct creg_push *p)
{
	struct buf b;
	uint8_t sha[32];
	uint64_t ms;
	if (reg_file(state, &b, sha, &ms) == 0 && !(g->known && !memcmp(sha, g->sha, 32)))
		return to_send(g, &b, sha, ms, p); /* changed here: the cluster's now, if newer than its */
	buf_free(&b);
	return 0;
}

int creg_in(struct creg *g, const char *state, uint64_t version, const char *body, size_t len, const char *mac,
	    struct creg_push *p)
{
	char want[65], path[4200], err[AS_ERRLEN];
	uint8_t sha[32], mine[32];
	uint64_t ms = 0;
	struct buf b;
	if (strlen(mac) != 64 || mac_of(g, version, body, len, want) != 0 || ct_memcmp(want, mac, 64) != 0) {
		slog("error", "cluster: the identity registry in PostgreSQL does not verify with the cluster's secret "
			      "(changed there, or another cluster's keys?): not taken");
		return 0;
	}
	sha256(body, len, sha);
	int here = reg_file(state, &b, mine, &ms) == 0;
	if (here && !memcmp(sha, mine, 32)) { /* the same */
		memcpy(g->sha, sha, 32);
		g->known = 1;
	} else if (here && ms > version) { /* ours is newer: the cluster's now */
		return to_send(g, &b, mine, ms, p);
	} else {
		snprintf(path, sizeof path, "%s/%s", state, REG_FILE);
		struct timespec t[2] = {
		    {.tv_sec = (time_t)(version / 1000), .tv_nsec = (long)(version % 1000) * 1000000},
		    {.tv_sec = (time_t)(version / 1000), .tv_nsec = (long)(version % 1000) * 1000000}};
		if (file_write_atomic(path, body, len, 0600, err) != 0 || utimensat(AT_FDCWD, path, t, 0) != 0) {
			slog("error", "cluster: writing the cluster's identity registry to %s: %s", path, err);
		} else {
			memcpy(g->sha, sha, 32);
			g->known = 1;
			slog("info",
			     "cluster: the identity registry from the cluster (version %llu, %zu bytes) is this "
			     "replica's now",
			     (unsigned long long)version, len);
		}
	}
	buf_free(&b);
	return 0;
}
