/* What an event recorded by someone else than assent may claim (issue 28): assent's own
 * kinds are reserved, and a key that names a request or a session of assent's is taken only
 * from the principal it belongs to, as the signer itself knows them (the queue, the decided
 * requests it keeps, the gated calls in flight, its live connections). Any other key is
 * free-form: the recorder stores who recorded each event, and reads show and filter by it. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The first dotted part of the kinds assent records itself (rec_event callers), and of
 * those it may come to record: nobody else records a kind under them, in any case. */
static const char *const RESERVED[] = {"approval", "assent", "call", "request", "upstream"};

int event_kind_reserved(const char *kind)
{
	size_t n = strcspn(kind, ".");
	for (size_t i = 0; i < sizeof RESERVED / sizeof *RESERVED; i++)
		if (strlen(RESERVED[i]) == n && !strncasecmp(kind, RESERVED[i], n))
			return 1;
	return 0;
}

/* The owner of request sid as the signer knows it (struct conn's owner), or NULL. */
static const char *request_owner(struct signer *s, const char *sid)
{
	const struct pq_item *it = s->q ? pq_find(s->q, sid) : NULL;
	if (it && it->data)
		return ((const struct req *)it->data)->owner;
	for (size_t i = 0; s->gate.gcalls && i < s->gate.gcall_hi; i++)
		if (s->gate.gcalls[i].used && !strcmp(s->gate.gcalls[i].sid, sid))
			return s->gate.gcalls[i].owner;
	for (size_t i = 0; i < s->ndone; i++) {
		const struct done *d = done_at(s, i);
		if (!strcmp(d->sid, sid))
			return d->owner;
	}
	for (size_t i = 0; i < s->nrecent; i++) {
		const struct recent *r = history_nth(s, i);
		if (!strcmp(r->sid, sid))
			return r->requester;
	}
	return NULL;
}

/* The owner of the live session key names ("stdio:CONN", or an Mcp-Session-Id), or NULL. */
static const char *session_owner(const struct signer *s, const char *key)
{
	for (size_t i = 0; i < MAX_CONNS; i++) {
		const struct conn *c = &s->conns[i];
		if (!c->used || c->worker != W_MCP)
			continue;
		if (c->http ? c->session[0] && !strcmp(c->session, key)
			    : !strncmp(key, "stdio:", 6) && strtoull(key + 6, NULL, 10) == c->id && c->id)
			return c->owner;
	}
	return NULL;
}

int event_claim(struct signer *s, const char *by, const char *kind, const char *key, int operator, char * why, size_t n)
{
	if (event_kind_reserved(kind)) {
		snprintf(why, n,
			 "kind \"%.128s\": approval.*, assent.*, call.*, request.* and upstream.* are assent's own "
			 "events; record yours under a name of your own (such as deploy.finished)",
			 kind);
		return PS_BAD_REQUEST;
	}
	if (!key || operator) /* root or the daemon's own uid: the operator keys as they need */
		return PS_OK;
	const char *owner = NULL;
	if (!strncmp(key, "req-", 4)) {
		owner = request_owner(s, key);
		if (!owner) {
			snprintf(why, n,
				 "key \"%.80s\": no request by that id is known to assent now (pending, decided in "
				 "the last %u, or in flight); an event is attached only to a request of your own",
				 key, (unsigned)HISTORY_MAX);
			return PS_FORBIDDEN;
		}
	} else if (!(owner = session_owner(s, key)) && !strncmp(key, "stdio:", 6)) {
		snprintf(why, n, "key \"%.80s\": not a live session of yours (stdio:N names assent's sessions)", key);
		return PS_FORBIDDEN;
	}
	if (owner && strcmp(owner, by)) {
		snprintf(why, n, "key \"%.80s\" is %s of %s, not yours (%s): an event is attached only to your own",
			 key, strncmp(key, "req-", 4) ? "a session" : "a request", owner, by);
		return PS_FORBIDDEN;
	}
	return PS_OK;
}
