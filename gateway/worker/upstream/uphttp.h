/* The upstream worker's side of a `url` upstream (internal to gateway/worker/upstream/): a
 * small pool of uhttp connections (uhttp.h) over sockets the signer connected, a queue of
 * the JSON-RPC messages to POST, and what each connection's request was, so that a call
 * whose POST fails ends with an error instead of waiting for an answer that cannot come.
 * A call's SSE answer that the server ends early, after an event with an id, is resumed
 * with a GET carrying Last-Event-ID (SEP-1699) after the server's retry: delay (bounded),
 * at most UPHTTP_RESUMES times; then, or when the server refuses the GET, the call fails
 * saying so. */
#ifndef ASSENT_UPHTTP_H
#define ASSENT_UPHTTP_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cbor.h"

#define UPHTTP_CONNS 4		     /* connections to one server: requests in flight at once */
#define UPHTTP_QUEUE 1024	     /* messages waiting for a connection */
#define UPHTTP_RESUMES 5	     /* GETs with Last-Event-ID for one call's answer stream (SEP-1699) */
#define UPHTTP_RETRY_DEFAULT_MS 1000 /* before a resume, when the server sent no retry: */
#define UPHTTP_RETRY_MAX_MS 30000    /* a longer retry: is cut to this */

struct uphttp;

struct uphttp_cb {
	void (*on_msg)(void *arg, const char *json, size_t n); /* a message the server sent */
	/* call cid (0: no call) ended without its answer: unknown when the server may have acted */
	void (*on_fail)(void *arg, uint64_t cid, int unknown, const char *why);
	/* call cid still waits for its answer (NULL: no answer stream is ever resumed) */
	int (*waiting)(void *arg, uint64_t cid);
	void *arg;
};

/* From the configuration frame's url fields (scheme, host, port, path, headers [[name,
 * value]...], ca?): reads the CA file and sets up TLS. Before the jail. 0, or an error. */
int uphttp_new(const struct cv *cfg, struct uphttp **out, char *err);
void uphttp_free(struct uphttp *h);
/* Queues one message (cid: the call it carries, 0 for none). AS_ETOOBIG when the queue is full. */
int uphttp_send(struct uphttp *h, const char *json, size_t n, uint64_t cid);
/* The same for a request of MCP 2026-07-28 (stateless): sent with that MCP-Protocol-Version,
 * without the session id, with Mcp-Method method and Mcp-Name name (NULL: none). */
#define UPHTTP_MODERN "2026-07-28"
int uphttp_send_modern(struct uphttp *h, const char *json, size_t n, uint64_t cid, const char *method,
		       const char *name);
/* A socket the signer connected: taken by a connection without one (or closed). */
void uphttp_attach(struct uphttp *h, int fd);
/* How many sockets to ask the signer for now (it was asked for `asked` already). */
unsigned uphttp_wanted(const struct uphttp *h, unsigned asked);
/* The connections' descriptors to poll, into pf (UPHTTP_CONNS at most); their count. */
size_t uphttp_fds(const struct uphttp *h, struct pollfd *pf);
/* Everything that can move: handshakes, writes, reads, the queue. pf: as uphttp_fds gave,
 * after poll. Returns 0, or -1 when the session is gone (the worker starts over). */
int uphttp_io(struct uphttp *h, const struct pollfd *pf, size_t n, const struct uphttp_cb *cb, char *err);
/* Milliseconds until a planned resume may go (poll no longer than that), -1 when none waits. */
int uphttp_timeout(const struct uphttp *h);
/* The protocol version initialize agreed on, sent from now on. */
void uphttp_protocol(struct uphttp *h, const char *version);

#endif
