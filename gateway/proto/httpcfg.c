/* The agent HTTP listener's configuration: from the environment (signer), to and from CBOR (F_CONFIG). */
#define _GNU_SOURCE
#include "gateway/proto/httpcfg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/assent/err.h"
#include "common/util.h"

static int env_uint(const char *name, uint64_t min, uint64_t max, uint64_t dflt, uint64_t *out, char *err)
{
	const char *v = getenv(name);
	*out = dflt;
	if (!v || !*v)
		return 0;
	if (parse_u64(v, out) != 0 || *out < min || *out > max)
		return as_fail(err, AS_EINVAL, "%s must be a number from %llu to %llu, not '%.32s'", name,
			       (unsigned long long)min, (unsigned long long)max, v);
	return 0;
}

int http_cfg_env_uint(const char *name, uint64_t min, uint64_t max, uint64_t dflt, uint64_t *out, char *err)
{
	return env_uint(name, min, max, dflt, out, err);
}

static int env_bool(const char *name, int *out, char *err)
{
	const char *v = getenv(name);
	*out = 0;
	if (!v || !*v || !strcmp(v, "false") || !strcmp(v, "0"))
		return 0;
	if (!strcmp(v, "true") || !strcmp(v, "1")) {
		*out = 1;
		return 0;
	}
	return as_fail(err, AS_EINVAL, "%s must be true or false, not '%.32s'", name, v);
}

/* A comma-separated list of names without spaces or control characters. */
static int env_list(const char *name, char (*out)[HTTPCFG_NAME_MAX + 1], size_t *n, char *err)
{
	const char *v = getenv(name);
	*n = 0;
	if (!v || !*v)
		return 0;
	while (*v) {
		size_t k = strcspn(v, ",");
		if (k == 0 || k > HTTPCFG_NAME_MAX || *n == HTTPCFG_ENV_MAX)
			return as_fail(err, AS_EINVAL, "%s: at most %d comma-separated entries of 1 to %d characters",
				       name, HTTPCFG_ENV_MAX, HTTPCFG_NAME_MAX);
		for (size_t i = 0; i < k; i++)
			if ((unsigned char)v[i] <= 0x20 || v[i] == 0x7f)
				return as_fail(err, AS_EINVAL, "%s: entry %zu contains a space or control character",
					       name, *n + 1);
		memcpy(out[*n], v, k);
		out[(*n)++][k] = 0;
		v += k;
		if (*v == ',')
			v++;
	}
	return 0;
}

/* The agent listener and the reviewer listener read the same limits, each its own address. */
static int from_env(struct http_cfg *c, const char *host_var, const char *port_var, unsigned dflt_port,
		    const char *hosts_var, const char *origins_var, char *err)
{
	memset(c, 0, sizeof *c);
	const char *host = getenv(host_var), *port = getenv(port_var);
	snprintf(c->host, sizeof c->host, "%s", host && *host ? host : "127.0.0.1");
	if (host && strlen(host) >= sizeof c->host)
		return as_fail(err, AS_EINVAL, "%s is too long", host_var);
	c->on = 1;
	c->port_explicit = port && *port;
	uint64_t v;
	if (port && (!strcmp(port, "off") || !strcmp(port, "none"))) {
		c->on = 0;
	} else {
		GUARD(env_uint(port_var, 0, 65535, dflt_port, &v, err));
		c->port = (unsigned)v;
	}
	GUARD(env_list(hosts_var, c->hosts, &c->nhosts, err));
	GUARD(env_list(origins_var, c->origins, &c->norigins, err));
	GUARD(env_uint("ASSENT_HTTP_MAX_BODY", 1024, 64u << 20, 4u << 20, &v, err));
	c->body_max = v;
	GUARD(env_uint("ASSENT_HTTP_MAX_HEADER", 4096, 1u << 20, 32u << 10, &v, err));
	c->header_max = v;
	GUARD(env_uint("ASSENT_HTTP_MAX_CONNECTIONS", 1, 8192, 128, &v, err));
	c->conns_max = (unsigned)v;
	GUARD(env_uint("ASSENT_HTTP_MAX_SESSIONS", 1, 4096, 256, &v, err));
	c->sessions_max = (unsigned)v;
	GUARD(env_uint("ASSENT_HTTP_MAX_SESSIONS_PER_AGENT", 1, 4096, 32, &v, err));
	c->sessions_per_agent = (unsigned)v;
	GUARD(env_uint("ASSENT_HTTP_MAX_UNAUTH_PER_ADDRESS", 1, 8192, 16, &v, err));
	c->unauth_per_addr = (unsigned)v;
	GUARD(env_uint("ASSENT_HTTP_IDLE_SECONDS", 1, 3600, 30, &v, err));
	c->idle_s = (unsigned)v;
	GUARD(env_uint("ASSENT_HTTP_REQUEST_SECONDS", 1, 3600, 30, &v, err));
	c->request_s = (unsigned)v;
	GUARD(env_uint("FEEDBACK_SESSION_CLEANUP_INTERVAL", 1, 3600, 60, &v, err));
	c->cleanup_s = (unsigned)v;
	GUARD(env_uint("ASSENT_HTTP_SESSION_IDLE_SECONDS", 10, 7 * 86400, 3600, &v, err));
	c->session_idle_s = (unsigned)v;
	GUARD(env_uint("ASSENT_HTTP_SSE_POLL_SECONDS", 0, 3600, 0, &v, err));
	if (v && v < 5)
		return as_fail(err, AS_EINVAL, "ASSENT_HTTP_SSE_POLL_SECONDS must be 0 (off) or 5 to 3600, not %llu",
			       (unsigned long long)v);
	c->sse_poll_s = (unsigned)v;
	return 0;
}

int http_cfg_from_env(struct http_cfg *c, char *err)
{
	GUARD(from_env(c, "FEEDBACK_SSE_HOST", "FEEDBACK_SSE_PORT", 8765, "ASSENT_HTTP_ALLOWED_HOSTS",
		       "ASSENT_HTTP_ALLOWED_ORIGINS", err));
	const char *tr = getenv("FEEDBACK_TRANSPORT");
	c->legacy_sse = tr && !strcmp(tr, "sse");
	return env_bool("FEEDBACK_ALLOW_ANONYMOUS", &c->anonymous, err);
}

int http_cfg_review_from_env(struct http_cfg *c, char *err)
{
	return from_env(c, "ASSENT_REVIEW_HOST", "ASSENT_REVIEW_PORT", 8766, "ASSENT_REVIEW_ALLOWED_HOSTS",
			"ASSENT_REVIEW_ALLOWED_ORIGINS", err);
}

static void add(char (*list)[HTTPCFG_NAME_MAX + 1], size_t *n, const char *prefix, const char *name, unsigned port)
{
	if (*n < HTTPCFG_LIST_MAX)
		snprintf(list[(*n)++], HTTPCFG_NAME_MAX + 1, "%s%s:%u", prefix, name, port);
}

void http_cfg_finish(struct http_cfg *c, unsigned bound_port, int loopback)
{
	c->port = bound_port;
	if (!loopback)
		return; /* remote clients use names we cannot guess: ASSENT_HTTP_ALLOWED_HOSTS */
	/* Only loopback names: a DNS-rebinding page arrives with its own host name. */
	char own[80];
	snprintf(own, sizeof own, strchr(c->host, ':') ? "[%s]" : "%s", c->host);
	const char *names[] = {"localhost", "127.0.0.1", "[::1]", own};
	for (size_t i = 0; i < 4; i++) {
		if (i == 3 && (!strcmp(own, "localhost") || !strcmp(own, "127.0.0.1") || !strcmp(own, "[::1]")))
			break;
		add(c->hosts, &c->nhosts, "", names[i], bound_port);
		add(c->origins, &c->norigins, "http://", names[i], bound_port);
	}
}

static int put(struct cv_arena *a, struct cv *m, size_t *i, const char *k)
{
	return cv_set_text(a, &m->items[2 * *i], k, strlen(k));
}

struct cv *http_cfg_to_cv(const struct http_cfg *c, struct cv_arena *a)
{
	struct cv *m = cv_map(a, 14), *h = cv_array(a, c->nhosts), *o = cv_array(a, c->norigins);
	if (!m || !h || !o)
		return NULL;
	for (size_t i = 0; i < c->nhosts; i++)
		if (cv_set_text(a, &h->items[i], c->hosts[i], strlen(c->hosts[i])))
			return NULL;
	for (size_t i = 0; i < c->norigins; i++)
		if (cv_set_text(a, &o->items[i], c->origins[i], strlen(c->origins[i])))
			return NULL;
	size_t i = 0;
	const struct {
		const char *k;
		uint64_t v;
	} u[] = {{"anonymous", (uint64_t)c->anonymous},
		 {"legacy_sse", (uint64_t)c->legacy_sse},
		 {"body_max", c->body_max},
		 {"header_max", c->header_max},
		 {"conns_max", c->conns_max},
		 {"idle_s", c->idle_s},
		 {"on", (uint64_t)c->on},
		 {"port", c->port},
		 {"request_s", c->request_s},
		 {"sessions_max", c->sessions_max},
		 {"sse_poll_s", c->sse_poll_s},
		 {"unauth_per_addr", c->unauth_per_addr}};
	for (size_t k = 0; k < sizeof u / sizeof u[0]; k++, i++) {
		if (put(a, m, &i, u[k].k))
			return NULL;
		cv_set_uint(&m->items[2 * i + 1], u[k].v);
	}
	if (put(a, m, &i, "hosts"))
		return NULL;
	m->items[2 * i++ + 1] = *h;
	if (put(a, m, &i, "origins"))
		return NULL;
	m->items[2 * i++ + 1] = *o;
	return m;
}

static int get_u(const struct cv *m, const char *k, uint64_t min, uint64_t max, uint64_t *out, char *err)
{
	const struct cv *v = cv_get(m, k);
	if (!v || v->t != CV_UINT || v->u < min || v->u > max)
		return as_fail(err, AS_ECORRUPT, "config: %s missing or out of range", k);
	*out = v->u;
	return 0;
}

static int get_list(const struct cv *m, const char *k, char (*out)[HTTPCFG_NAME_MAX + 1], size_t *n, char *err)
{
	const struct cv *v = cv_get(m, k);
	if (!v || v->t != CV_ARRAY || v->n > HTTPCFG_LIST_MAX)
		return as_fail(err, AS_ECORRUPT, "config: %s is not a list of at most %d", k, HTTPCFG_LIST_MAX);
	for (size_t i = 0; i < v->n; i++) {
		const struct cv *x = &v->items[i];
		if (x->t != CV_TEXT || x->n == 0 || x->n > HTTPCFG_NAME_MAX)
			return as_fail(err, AS_ECORRUPT, "config: %s[%zu] is not a name", k, i);
		for (size_t j = 0; j < x->n; j++) /* what the environment parser admits, no more */
			if (x->s[j] <= 0x20 || x->s[j] == 0x7f)
				return as_fail(err, AS_ECORRUPT, "config: %s[%zu] has a space or control byte", k, i);
		memcpy(out[i], v->items[i].s, v->items[i].n);
		out[i][v->items[i].n] = 0;
	}
	*n = v->n;
	return 0;
}

int http_cfg_from_cv(const struct cv *m, struct http_cfg *c, char *err)
{
	memset(c, 0, sizeof *c);
	uint64_t on, anon, legacy, body, header, conns, sess, idle, port, req, unauth, poll;
	GUARD(get_u(m, "on", 0, 1, &on, err));
	GUARD(get_u(m, "anonymous", 0, 1, &anon, err));
	GUARD(get_u(m, "legacy_sse", 0, 1, &legacy, err));
	GUARD(get_u(m, "body_max", 1024, 64u << 20, &body, err));
	GUARD(get_u(m, "header_max", 4096, 1u << 20, &header, err));
	GUARD(get_u(m, "conns_max", 1, 8192, &conns, err));
	GUARD(get_u(m, "sessions_max", 1, 4096, &sess, err));
	GUARD(get_u(m, "idle_s", 1, 3600, &idle, err));
	GUARD(get_u(m, "port", 0, 65535, &port, err));
	GUARD(get_u(m, "request_s", 1, 3600, &req, err));
	GUARD(get_u(m, "unauth_per_addr", 1, 8192, &unauth, err));
	GUARD(get_u(m, "sse_poll_s", 0, 3600, &poll, err));
	GUARD(get_list(m, "hosts", c->hosts, &c->nhosts, err));
	GUARD(get_list(m, "origins", c->origins, &c->norigins, err));
	c->on = (int)on;
	c->anonymous = (int)anon;
	c->legacy_sse = (int)legacy;
	c->body_max = body;
	c->header_max = header;
	c->conns_max = (unsigned)conns;
	c->sessions_max = (unsigned)sess;
	c->idle_s = (unsigned)idle;
	c->request_s = (unsigned)req;
	c->unauth_per_addr = (unsigned)unauth;
	c->sse_poll_s = (unsigned)poll;
	c->port = (unsigned)port;
	return 0;
}
