/* Fuzz target: what a replica takes from the cluster's shared tables once their MAC verifies
 * (gateway/signer/cluster_reg.c): the identity registry, merged with this replica's own change
 * (merge3), and a reviewer's web session (ws_read, ws_adopt, ws_drop). The harness MACs what it
 * sends with the cluster's secret, so the bytes past the MAC are what is fuzzed.
 * Input: byte 0 chooses. Even: a web session (bit 1: ended), the rest its body. Odd, bit 2
 * set: the webhooks' sealed text. Odd otherwise: three registries, base, mine and theirs,
 * split by "\n--\n": the cluster's base is taken, this replica's file becomes mine, then
 * theirs comes.
 * Properties (abort when violated):
 *   - every session in the table has a reviewer, and times no later than now;
 *   - when base, mine and theirs are JSON objects and a merge is sent, the replica's file is the
 *     merge, it is a JSON object, it holds every named entry that mine added or changed, and it
 *     is sent as a version after theirs, made on theirs. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mbedtls/md.h>

#include "gateway/signer/cluster.h"
#include "gateway/signer/types.h"
#include "gateway/state/hooks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW 1800000000000ull
static const char secret_hex[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
static char state[64];
static struct creg *g;
static struct web_sessions *w;

static void mac(const char *domain, uint64_t v, const char *body, size_t n, char out[65])
{
	uint8_t key[32], m[32];
	char head[64];
	if (hex_decode(secret_hex, 64, key, 32) != 0)
		abort();
	int hn = snprintf(head, sizeof head, "%s\n%llu\n", domain, (unsigned long long)v);
	mbedtls_md_context_t c;
	mbedtls_md_init(&c);
	if (mbedtls_md_setup(&c, mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), 1) != 0 ||
	    mbedtls_md_hmac_starts(&c, key, 32) != 0 || mbedtls_md_hmac_update(&c, (const uint8_t *)head, (size_t)hn) ||
	    mbedtls_md_hmac_update(&c, (const uint8_t *)body, n) || mbedtls_md_hmac_finish(&c, m))
		abort();
	mbedtls_md_free(&c);
	hex_encode(m, 32, out);
}

static void init(void)
{
	char err[AS_ERRLEN], path[128];
	snprintf(state, sizeof state, "/tmp/assent-fuzz-creg.XXXXXX");
	if (!mkdtemp(state))
		abort();
	snprintf(path, sizeof path, "%s/keys", state);
	if (mkdir_p(path, 0700, err) != 0)
		abort();
	snprintf(path, sizeof path, "%s/keys/cluster.secret", state);
	if (file_write_atomic(path, secret_hex, 64, 0600, err) != 0 || !(g = cluster_reg_setup(state, err)) ||
	    !(w = calloc(1, sizeof *w)))
		abort();
	log_min = 9; /* quiet */
}

static void session(const uint8_t *p, size_t n, int ended)
{
	char m[65];
	mac("assent-websession", 0, (const char *)p, n, m);
	creg_ws_in(g, w, (const char *)p, n, m, ended, NOW);
	for (size_t i = 0; i < WS_MAX; i++)
		if (w->s[i].used && (!w->s[i].reviewer[0] || w->s[i].created > NOW || w->s[i].last > NOW))
			abort();
}

/* mine's named entries that base lacks or has otherwise are in out */
static void kept(json_t *base, json_t *mine, json_t *out)
{
	const char *k;
	json_t *v;
	json_object_foreach(mine, k, v)
	{
		size_t i, j;
		json_t *e, *b, *o;
		json_t *bl = json_object_get(base, k), *ol = json_object_get(out, k);
		if (!json_is_array(v) || !json_is_array(ol) || (bl && !json_is_array(bl)))
			continue;
		json_array_foreach(v, i, e)
		{
			const char *n = json_string_value(json_object_get(e, "name"));
			int same = 0, found = 0, twice = 0;
			json_array_foreach(v, j, o) twice += n && json_is_string(json_object_get(o, "name")) &&
							     !strcmp(n, json_string_value(json_object_get(o, "name")));
			if (twice > 1)
				continue; /* the last of them is what a merge keeps */
			json_array_foreach(bl, j, b) same |=
			    n && json_equal(b, e) && !strcmp(n, json_string_value(json_object_get(b, "name")) ?: "");
			json_array_foreach(ol, j, o) found |= json_equal(o, e);
			if (n && !same && !found)
				abort();
		}
	}
}

static void registry(const uint8_t *p, size_t n)
{
	const char *s = (const char *)p, *a = memmem(s, n, "\n--\n", 4),
		   *b = a ? memmem(a + 4, n - (size_t)(a + 4 - s), "\n--\n", 4) : NULL;
	if (!b)
		return;
	size_t bn = (size_t)(a - s), mn = (size_t)(b - a - 4), tn = n - (size_t)(b + 4 - s);
	char m[65], path[128], err[AS_ERRLEN];
	struct creg_push push;
	snprintf(path, sizeof path, "%s/%s", state, REG_FILE);
	unlink(path);
	mac("assent-registry", 1000, s, bn, m);
	if (creg_in(g, state, CREG_REGISTRY, 1000, s, bn, m, &push))
		buf_free(&push.body);
	if (file_write_atomic(path, a + 4, mn, 0600, err) != 0)
		abort();
	mac("assent-registry", 2000, b + 4, tn, m);
	if (!creg_in(g, state, CREG_REGISTRY, 2000, b + 4, tn, m, &push))
		return;
	json_t *jb = json_loadb(s, bn, 0, NULL), *jm = json_loadb(a + 4, mn, 0, NULL),
	       *jt = json_loadb(b + 4, tn, 0, NULL);
	if (json_is_object(jb) && json_is_object(jm) && json_is_object(jt)) {
		struct buf f;
		buf_init(&f, PROTO_CL_REG_MAX);
		json_t *out = json_loadb((const char *)push.body.p, push.body.len, 0, NULL);
		if (file_read(path, PROTO_CL_REG_MAX, &f, err) != 0 || f.len != push.body.len ||
		    memcmp(f.p, push.body.p, f.len) || !json_is_object(out) || push.base != 2000 ||
		    push.version <= 2000)
			abort();
		kept(jb, jm, out);
		json_decref(out);
		buf_free(&f);
	}
	json_decref(jb);
	json_decref(jm);
	json_decref(jt);
	buf_free(&push.body);
}

/* The webhooks' text from the cluster, MAC'd but not sealed by this cluster's key: refused
 * (nothing written, nothing sent), whatever the bytes. */
static void sealed(const uint8_t *p, size_t n)
{
	char m[65], path[128];
	struct creg_push push;
	snprintf(path, sizeof path, "%s/%s", state, HOOKS_FILE);
	unlink(path);
	mac("assent-webhooks", 3000, (const char *)p, n, m);
	if (creg_in(g, state, CREG_WEBHOOKS, 3000, (const char *)p, n, m, &push)) {
		buf_free(&push.body);
		if (access(path, F_OK) == 0) /* a file appeared: the bytes unsealed, which they cannot */
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!g)
		init();
	if (size < 1 || size > 65536)
		return 0;
	if ((data[0] & 5) == 5)
		sealed(data + 1, size - 1);
	else if (data[0] & 1)
		registry(data + 1, size - 1);
	else
		session(data + 1, size - 1, data[0] & 2);
	return 0;
}
