/* What both jailed HTTP workers need around libmicrohttpd: the whole-request
 * deadline (its own timer counts silence only, so a client sending a byte a second
 * would hold a connection slot for ever), and suspending a request until the
 * signer answers. */
#ifndef ASSENT_MHDCONN_H
#define ASSENT_MHDCONN_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "common/util.h"

struct mc_conn { /* one TCP connection (MHD's socket context) */
	int fd;
	uint64_t since;
	int receiving;	 /* between the end of one request and the whole of the next */
	int authed;	 /* a request of it passed the check (mc_authed): no longer counted per address */
	int refused;	 /* closed for the per-address limit */
	uint8_t addr[9]; /* its peer, as limits count it (mc_addr_key); addr[0] 0: not limited */
	struct mc_conn *next;
};

struct mc_list {
	struct mc_conn *head;
	size_t n;
	/* ASSENT_HTTP_MAX_UNAUTH_PER_ADDRESS: connections from one address not yet
	 * mc_authed; past it the oldest of them is answered 429 and closed (0: no limit). */
	unsigned unauth_max;
	uint64_t refused;	    /* since the worker started */
	uint64_t logged, logged_at; /* refusals logged so far, and when */
};

/* MHD_OPTION_NOTIFY_CONNECTION's callback with a struct mc_list * as its closure. */
void mc_notify(void *cls, struct MHD_Connection *mc, void **ctx, enum MHD_ConnectionNotificationCode toe);
/* A request's head and body are in (the clock stops), or it was answered (the clock
 * starts again for the next one on the connection). */
void mc_received(struct MHD_Connection *mc);
/* A request of this connection passed the signer's check: it counts no longer
 * among its address's unauthenticated connections. */
void mc_authed(struct MHD_Connection *mc);
/* Log new refusals of the per-address limit to the signer: at most one line a minute. */
void mc_log_refused(struct mc_list *l, int ipcfd, const char *listener);
/* The key a peer address is counted under: IPv4 by address but all of 127.0.0.0/8
 * as one (any local process can use any of them), IPv6 by its /64 (one host's
 * share), loopback in either form as the same key; anything else (a unix socket:
 * the reverse proxy) is not limited (key[0] 0). */
void mc_addr_key(const struct sockaddr *sa, uint8_t key[9]);
void mc_request_done(struct MHD_Connection *mc);
/* Shut the sockets whose request did not arrive whole within request_s. */
void mc_deadlines(struct mc_list *l, unsigned request_s);
/* Run the daemon, again while it has more to do now: its epoll set is edge-triggered,
 * so a resumed answer or a second waiting connection may signal nothing. */
void mc_run(struct MHD_Daemon *d);

/* An endless response's (an event stream's) reader: what out holds, the end once finished,
 * else 0 with *sleep set (the caller suspends the request until there is more). */
ssize_t mc_stream_read(struct buf *out, int finished, char *buf, size_t max, int *sleep);

/* Suspend a request until woken (idempotent both ways). */
void mc_sleep(struct MHD_Connection *mc, int *suspended);
void mc_wake(struct MHD_Connection *mc, int *suspended);

#endif
