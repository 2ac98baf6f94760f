/* subscriptions/listen (MCP 2026-07-28): the one channel on which a client of that revision
 * hears of changes. The filter a client sends is checked and narrowed to what the gate can
 * deliver; open subscriptions live in a bounded table; a change goes, stamped with the
 * subscription's id (_meta["io.modelcontextprotocol/subscriptionId"]), to each one whose
 * filter asks for it. Memory only: the mcp worker owns the connections and streams. */
#ifndef ASSENT_LISTEN_H
#define ASSENT_LISTEN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "gateway/proto/limits.h"
#include "gateway/worker/mcp/mcp.h"

#define LISTEN_META_ID "io.modelcontextprotocol/subscriptionId"

/* Each open stream holds one of the worker's PROTO_CONNS_MAX connections (over HTTP): at most
 * LISTEN_MAX of them in all, so that listeners never take the table from calls; and
 * LISTEN_PER_AGENT per agent key (all anonymous clients together) or per stdio connection,
 * so that one agent cannot take them all. */
#define LISTEN_MAX 64
#define LISTEN_PER_AGENT 8
#define LISTEN_URIS_MAX 64  /* resourceSubscriptions of one filter */
#define LISTEN_URI_MAX 4096 /* one of them (CALL_URI_MAX: what resources/read takes) */
#define LISTEN_LIMIT -32603 /* the error code of a refusal by a limit (as the official SDK answers it) */

/* Notification kinds a filter opts in to. */
enum listen_kind {
	LISTEN_TOOLS = 1,     /* toolsListChanged: notifications/tools/list_changed */
	LISTEN_PROMPTS = 2,   /* promptsListChanged */
	LISTEN_RESOURCES = 4, /* resourcesListChanged */
	LISTEN_UPDATED = 8,   /* resourceSubscriptions: notifications/resources/updated for those URIs */
};

struct listen_filter {
	unsigned kinds; /* enum listen_kind bits */
	size_t nuris;	/* LISTEN_UPDATED: the URIs (owned, NUL-terminated) */
	char *uris[LISTEN_URIS_MAX];
};

/* params.notifications of a subscriptions/listen request: an object whose
 * toolsListChanged, promptsListChanged and resourcesListChanged are booleans when present
 * and whose resourceSubscriptions is an array of at most LISTEN_URIS_MAX non-empty strings of
 * at most LISTEN_URI_MAX bytes without NUL (duplicates kept once); other members are ignored
 * (a later revision's). 0 with *out filled (free with listen_filter_free), or AS_EINVAL /
 * AS_ETOOBIG with err naming the member and what was wrong (answered -32602). */
int listen_filter_parse(const json_t *params, struct listen_filter *out, char *err);
void listen_filter_free(struct listen_filter *f);
/* Keep only what the server can deliver (can: enum listen_kind bits), as the acknowledgement
 * reports it: what was not asked for, or cannot be delivered, is dropped. */
void listen_filter_honor(struct listen_filter *f, unsigned can);
/* The filter as the acknowledgement shows it: only the members it holds. New reference. */
json_t *listen_filter_json(const struct listen_filter *f);

struct listen_sub {
	int used;
	uint64_t conn;			/* the worker's connection the stream belongs to */
	struct mcp_id id;		/* the listen request's id: the subscription's id */
	char agent[PROTO_NAME_MAX + 1]; /* the agent key's name, "anonymous"; "" over stdio */
	struct listen_filter f;		/* what it was granted */
};

struct listen_set {
	struct listen_sub s[LISTEN_MAX];
};

/* Serve one subscriptions/listen request m on connection conn of agent (NULL or "" over
 * stdio: the connection is the bound), writing its lines to out: an error (-32602 for a
 * malformed filter, LISTEN_LIMIT past a limit, with the reason), or the acknowledgement
 * with the granted filter (can: what the server delivers) and, when nothing was granted,
 * at once the result that ends the subscription. 1 when a subscription is now open (its
 * stream stays), 0 when the answer is complete. */
int listen_request(struct listen_set *ls, struct buf *out, uint64_t conn, const char *agent, const struct mcp_msg *m,
		   unsigned can, const char *server_version);

/* The connection's subscription with this id ended (the client's notifications/cancelled
 * on stdio): 1 when there was one. */
int listen_cancel(struct listen_set *ls, uint64_t conn, const struct mcp_id *id);
/* The connection ended: its subscriptions go with it. */
void listen_conn_gone(struct listen_set *ls, uint64_t conn);
/* Subscriptions open on conn. */
size_t listen_count(const struct listen_set *ls, uint64_t conn);
/* conn's open subscription with this id, or NULL. */
struct listen_sub *listen_find(struct listen_set *ls, uint64_t conn, const struct mcp_id *id);

/* Whether s asks for a change of kind (for LISTEN_UPDATED: of that exact uri). */
int listen_wants(const struct listen_sub *s, unsigned kind, const char *uri);

/* Where listen_notify writes: the buffer of a connection (NULL: gone), and a call after
 * each line written to it (the worker routes it to the connection's stream). */
struct listen_io {
	void *ctx;
	struct buf *(*out)(void *ctx, uint64_t conn);
	void (*sent)(void *ctx, uint64_t conn, const struct mcp_id *id);
};
/* What a server's capabilities (an object as server/discover shows it) say it delivers:
 * tools/prompts/resources.listChanged, resources.subscribe (LISTEN_UPDATED). */
unsigned listen_caps_kinds(const json_t *caps);
/* Which of the lists changed between two of the gate's catalogs (objects whose "prompts",
 * "resources" and "resourceTemplates" are the upstreams' lists; before NULL: none yet):
 * LISTEN_PROMPTS, LISTEN_RESOURCES. */
unsigned listen_lists_changed(const json_t *before, const json_t *after);

/* A change: the notification method with params (borrowed; NULL: none), stamped with each
 * subscription's id, to every subscription that asks for kind (and uri). How many got it. */
size_t listen_notify(struct listen_set *ls, const struct listen_io *io, unsigned kind, const char *uri,
		     const char *method, const json_t *params);
/* The lists in kinds (LISTEN_TOOLS, LISTEN_PROMPTS, LISTEN_RESOURCES) changed: each one's
 * notifications/.../list_changed to the subscriptions that ask for it. */
void listen_notify_lists(struct listen_set *ls, const struct listen_io *io, unsigned kinds);

#endif
