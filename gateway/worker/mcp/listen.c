/* subscriptions/listen (MCP 2026-07-28): the filter a client sends, the table of open
 * subscriptions and the stamped notifications each one hears. What the shapes are follows
 * the official SDK 2.4 (@modelcontextprotocol/server's listen router): the acknowledgement
 * first, then the changes the filter asks for, each with the listen request's id. */
#include "gateway/worker/mcp/listen.h"

#include <stdlib.h>
#include <string.h>

#include "gateway/worker/mcp/modern.h"

void listen_filter_free(struct listen_filter *f)
{
	for (size_t i = 0; i < f->nuris; i++)
		free(f->uris[i]);
	memset(f, 0, sizeof *f);
}

static int bool_member(const json_t *n, const char *key, unsigned bit, unsigned *kinds, char *err)
{
	const json_t *v = json_object_get(n, key);
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return as_fail(err, AS_EINVAL, "params.notifications.%s must be a boolean, not %s", key,
			       json_is_string(v)   ? "a string"
			       : json_is_number(v) ? "a number"
						   : "null, an array or an object");
	if (json_is_true(v))
		*kinds |= bit;
	return 0;
}

static int uris_member(const json_t *nf, struct listen_filter *f, char *err)
{
	const json_t *a = json_object_get(nf, "resourceSubscriptions"), *v;
	size_t i;
	if (!a)
		return 0;
	if (!json_is_array(a))
		return as_fail(err, AS_EINVAL, "params.notifications.resourceSubscriptions must be an array of URIs");
	if (json_array_size(a) > LISTEN_URIS_MAX)
		return as_fail(err, AS_ETOOBIG,
			       "params.notifications.resourceSubscriptions names %zu URIs; at most %d may be "
			       "subscribed on one stream",
			       json_array_size(a), LISTEN_URIS_MAX);
	json_array_foreach(a, i, v)
	{
		const char *s = json_string_value(v);
		size_t n = json_string_length(v);
		if (!s || !n || strlen(s) != n)
			return as_fail(err, AS_EINVAL,
				       "params.notifications.resourceSubscriptions[%zu] must be a non-empty string "
				       "(a resource URI)",
				       i);
		if (n > LISTEN_URI_MAX)
			return as_fail(err, AS_ETOOBIG,
				       "params.notifications.resourceSubscriptions[%zu] is %zu bytes long; a URI may "
				       "have at most %d",
				       i, n, LISTEN_URI_MAX);
		int dup = 0;
		for (size_t k = 0; k < f->nuris && !dup; k++)
			dup = !strcmp(f->uris[k], s);
		if (dup)
			continue;
		if (!(f->uris[f->nuris] = strdup(s)))
			return as_fail(err, AS_ENOMEM, "out of memory");
		f->nuris++;
	}
	if (f->nuris)
		f->kinds |= LISTEN_UPDATED;
	return 0;
}

int listen_filter_parse(const json_t *params, struct listen_filter *out, char *err)
{
	memset(out, 0, sizeof *out);
	const json_t *n = json_object_get(params, "notifications");
	if (!json_is_object(n))
		return as_fail(err, AS_EINVAL,
			       n ? "params.notifications must be an object (a SubscriptionFilter)"
				 : "params.notifications is required: the notifications this stream is to carry, "
				   "e.g. {\"toolsListChanged\": true}");
	int rc = bool_member(n, "toolsListChanged", LISTEN_TOOLS, &out->kinds, err);
	if (rc == 0)
		rc = bool_member(n, "promptsListChanged", LISTEN_PROMPTS, &out->kinds, err);
	if (rc == 0)
		rc = bool_member(n, "resourcesListChanged", LISTEN_RESOURCES, &out->kinds, err);
	if (rc == 0)
		rc = uris_member(n, out, err);
	if (rc != 0)
		listen_filter_free(out);
	return rc;
}

void listen_filter_honor(struct listen_filter *f, unsigned can)
{
	f->kinds &= can;
	if (!(f->kinds & LISTEN_UPDATED)) {
		for (size_t i = 0; i < f->nuris; i++)
			free(f->uris[i]);
		f->nuris = 0;
	}
}

json_t *listen_filter_json(const struct listen_filter *f)
{
	json_t *o = json_object();
	if (o && (f->kinds & LISTEN_TOOLS))
		json_object_set_new(o, "toolsListChanged", json_true());
	if (o && (f->kinds & LISTEN_PROMPTS))
		json_object_set_new(o, "promptsListChanged", json_true());
	if (o && (f->kinds & LISTEN_RESOURCES))
		json_object_set_new(o, "resourcesListChanged", json_true());
	if (o && f->nuris) {
		json_t *a = json_array();
		for (size_t i = 0; a && i < f->nuris; i++)
			json_array_append_new(a, json_string(f->uris[i]));
		json_object_set_new(o, "resourceSubscriptions", a);
	}
	return o;
}

/* params with _meta[LISTEN_META_ID] = id added (params borrowed; NULL: none). New reference. */
static json_t *stamped(const json_t *params, const struct mcp_id *id)
{
	json_t *p = json_is_object(params) ? json_deep_copy(params) : json_object(), *meta;
	if (!p)
		return NULL;
	meta = json_object_get(p, "_meta");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(p, "_meta", meta);
	}
	json_object_set_new(meta, LISTEN_META_ID, mcp_id_json(id));
	return p;
}

static int same_id(const struct mcp_id *a, const struct mcp_id *b)
{
	if (a->t != b->t)
		return 0;
	return a->t == MCP_ID_INT ? a->i == b->i : a->len == b->len && !memcmp(a->s, b->s, a->len);
}

size_t listen_count(const struct listen_set *ls, uint64_t conn)
{
	size_t n = 0;
	for (size_t i = 0; i < LISTEN_MAX; i++)
		n += ls->s[i].used && ls->s[i].conn == conn;
	return n;
}

/* A free slot for a subscription of agent on conn, or NULL with err saying which bound. */
static struct listen_sub *slot(struct listen_set *ls, uint64_t conn, const char *agent, const struct mcp_id *id,
			       int *code, char *err)
{
	struct listen_sub *free_s = NULL;
	size_t mine = 0;
	*code = LISTEN_LIMIT;
	for (size_t i = 0; i < LISTEN_MAX; i++) {
		struct listen_sub *s = &ls->s[i];
		if (!s->used) {
			free_s = free_s ? free_s : s;
			continue;
		}
		if (s->conn == conn && same_id(&s->id, id)) {
			*code = MCP_INVALID_REQUEST;
			as_fail(err, AS_EINVAL,
				"subscriptions/listen: a subscription with this id is already open on "
				"this connection (the id names the subscription: use a new one)");
			return NULL;
		}
		mine += agent[0] ? !strcmp(s->agent, agent) : s->conn == conn;
	}
	if (mine >= LISTEN_PER_AGENT) {
		as_fail(err, AS_ETOOBIG,
			"Subscription limit reached: %s already holds %d subscriptions/listen streams, the most "
			"one %s may open; close one first",
			agent[0] ? "this agent" : "this connection", LISTEN_PER_AGENT,
			agent[0] ? "agent" : "connection");
		return NULL;
	}
	if (!free_s)
		as_fail(err, AS_ETOOBIG,
			"Subscription limit reached: the gateway holds %d subscriptions/listen streams, the most it "
			"serves; try again when one has closed",
			LISTEN_MAX);
	return free_s;
}

/* The result that ends a subscription gracefully: empty but for the ids. */
static int line_end(struct buf *out, const struct mcp_id *id, const char *server_version)
{
	json_t *r = json_pack("{s:s,s:{s:o,s:{s:s,s:s}}}", "resultType", "complete", "_meta", LISTEN_META_ID,
			      mcp_id_json(id), MCP_META_SERVER, "name", MCP_SERVER_NAME, "version", server_version);
	return r ? mcp_line_result(out, id, r, NULL) : AS_ENOMEM;
}

int listen_request(struct listen_set *ls, struct buf *out, uint64_t conn, const char *agent, const struct mcp_msg *m,
		   unsigned can, const char *server_version)
{
	char err[AS_ERRLEN];
	struct listen_filter f;
	int code = MCP_INVALID_PARAMS;
	if (!agent)
		agent = "";
	struct listen_sub *s = NULL;
	if (listen_filter_parse(m->params, &f, err) != 0) {
		mcp_line_error(out, &m->id, code, err, NULL, NULL);
		return 0;
	}
	if (!(s = slot(ls, conn, agent, &m->id, &code, err))) {
		listen_filter_free(&f);
		mcp_line_error(out, &m->id, code, err, NULL, NULL);
		return 0;
	}
	listen_filter_honor(&f, can);
	json_t *ack = json_pack("{s:o}", "notifications", listen_filter_json(&f));
	json_t *p = ack ? stamped(ack, &m->id) : NULL;
	json_decref(ack);
	if (!p || mcp_line_notification(out, "notifications/subscriptions/acknowledged", p, NULL) != 0) {
		listen_filter_free(&f);
		mcp_line_error(out, &m->id, MCP_INTERNAL_ERROR, "subscriptions/listen: out of memory", NULL, NULL);
		return 0;
	}
	if (!f.kinds) { /* nothing this server could tell it: acknowledged, and over */
		listen_filter_free(&f);
		line_end(out, &m->id, server_version);
		return 0;
	}
	memset(s, 0, sizeof *s);
	s->used = 1;
	s->conn = conn;
	s->id = m->id;
	snprintf(s->agent, sizeof s->agent, "%s", agent);
	s->f = f;
	return 1;
}

static void sub_free(struct listen_sub *s)
{
	listen_filter_free(&s->f);
	memset(s, 0, sizeof *s);
}

struct listen_sub *listen_find(struct listen_set *ls, uint64_t conn, const struct mcp_id *id)
{
	for (size_t i = 0; i < LISTEN_MAX; i++)
		if (ls->s[i].used && ls->s[i].conn == conn && same_id(&ls->s[i].id, id))
			return &ls->s[i];
	return NULL;
}

int listen_cancel(struct listen_set *ls, uint64_t conn, const struct mcp_id *id)
{
	struct listen_sub *s = listen_find(ls, conn, id);
	if (s)
		sub_free(s);
	return s != NULL;
}

void listen_conn_gone(struct listen_set *ls, uint64_t conn)
{
	for (size_t i = 0; i < LISTEN_MAX; i++)
		if (ls->s[i].used && ls->s[i].conn == conn)
			sub_free(&ls->s[i]);
}

int listen_wants(const struct listen_sub *s, unsigned kind, const char *uri)
{
	if (!s->used || !(s->f.kinds & kind))
		return 0;
	if (kind != LISTEN_UPDATED)
		return 1;
	for (size_t i = 0; uri && i < s->f.nuris; i++)
		if (!strcmp(s->f.uris[i], uri))
			return 1;
	return 0;
}

size_t listen_notify(struct listen_set *ls, const struct listen_io *io, unsigned kind, const char *uri,
		     const char *method, const json_t *params)
{
	size_t n = 0;
	for (size_t i = 0; i < LISTEN_MAX; i++) {
		struct listen_sub *s = &ls->s[i];
		struct buf *out = listen_wants(s, kind, uri) ? io->out(io->ctx, s->conn) : NULL;
		json_t *p = out ? stamped(params, &s->id) : NULL;
		if (!p || mcp_line_notification(out, method, p, NULL) != 0)
			continue;
		io->sent(io->ctx, s->conn, &s->id);
		n++;
	}
	return n;
}

void listen_notify_lists(struct listen_set *ls, const struct listen_io *io, unsigned kinds)
{
	static const struct {
		unsigned kind;
		const char *method;
	} lists[] = {{LISTEN_TOOLS, "notifications/tools/list_changed"},
		     {LISTEN_PROMPTS, "notifications/prompts/list_changed"},
		     {LISTEN_RESOURCES, "notifications/resources/list_changed"}};
	for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
		if (kinds & lists[i].kind)
			listen_notify(ls, io, lists[i].kind, NULL, lists[i].method, NULL);
}

unsigned listen_caps_kinds(const json_t *caps)
{
	const json_t *t = json_object_get(caps, "tools"), *p = json_object_get(caps, "prompts"),
		     *r = json_object_get(caps, "resources");
	return (json_is_true(json_object_get(t, "listChanged")) ? LISTEN_TOOLS : 0) |
	       (json_is_true(json_object_get(p, "listChanged")) ? LISTEN_PROMPTS : 0) |
	       (json_is_true(json_object_get(r, "listChanged")) ? LISTEN_RESOURCES : 0) |
	       (json_is_true(json_object_get(r, "subscribe")) ? LISTEN_UPDATED : 0);
}

static int differs(const json_t *before, const json_t *after, const char *key)
{
	const json_t *a = json_object_get(before, key), *b = json_object_get(after, key);
	return (a || b) && !(a && b && json_equal(a, b));
}

unsigned listen_lists_changed(const json_t *before, const json_t *after)
{
	return (differs(before, after, "prompts") ? LISTEN_PROMPTS : 0) |
	       (differs(before, after, "resources") || differs(before, after, "resourceTemplates") ? LISTEN_RESOURCES
												   : 0);
}
