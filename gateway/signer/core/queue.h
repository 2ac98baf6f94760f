/* The signer's queue of pending requests: each waits for a person until its
 * deadline. Lookup by session id and "which deadline comes next" are both
 * O(log n) or better, so a thousand waiting requests cost the event loop nothing.
 * Owned by the signer only; workers never see it. */
#ifndef ASSENT_QUEUE_H
#define ASSENT_QUEUE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PQ_SID_LEN 36 /* "req-" and 32 lowercase hex digits */

struct pq_item {
	char session_id[PQ_SID_LEN + 1];
	uint64_t deadline_ms; /* unix ms */
	uint64_t created_ms;
	uint64_t requester_id; /* the connection or agent identity the signer measured */
	uid_t requester_uid;   /* measured with SO_PEERCRED; (uid_t)-1 when not a unix peer */
	int blocking;	       /* a caller waits on a connection (1) or collects later (0) */
	void *data;	       /* the request as the signer keeps it; the queue never touches it */
};

struct pq;

/* A queue holding at most max items. */
int pq_new(size_t max, struct pq **out);
/* Frees the queue; the items' data pointers are the caller's to free first (pq_each). */
void pq_free(struct pq *q);

/* A fresh session id from the kernel's random source. */
int pq_new_session_id(char out[PQ_SID_LEN + 1]);

/* Add a copy of *it. AS_EEXIST for a session id already queued, AS_ETOOBIG when full. */
int pq_add(struct pq *q, const struct pq_item *it);
/* The queued item (valid until the next change of the queue), or NULL. */
struct pq_item *pq_find(struct pq *q, const char *session_id);
/* Remove an item, copying it to *out (may be NULL). AS_ENOTFOUND when absent. */
int pq_remove(struct pq *q, const char *session_id, struct pq_item *out);
/* The earliest deadline; AS_ENOTFOUND when the queue is empty. */
int pq_next_deadline(const struct pq *q, uint64_t *deadline_ms);
/* Remove and return one item whose deadline is <= now; AS_ENOTFOUND when none. */
int pq_pop_expired(struct pq *q, uint64_t now_ms, struct pq_item *out);
size_t pq_count(const struct pq *q);
/* Call fn for every item in deadline order (earliest first); fn must not change the queue. */
int pq_each(const struct pq *q, void (*fn)(const struct pq_item *it, void *arg), void *arg); /* AS_ENOMEM */

#endif
