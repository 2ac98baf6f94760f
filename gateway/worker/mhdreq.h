/* The request prologue both jailed HTTP workers share over libmicrohttpd: the daemon
 * started on a listener handed in, a header read, the body read in chunks up to its
 * buffer's maximum, and the answer queued from a buffer or from an event stream. What a
 * request may do (routes, credentials, origins) stays in each worker. */
#ifndef ASSENT_MHDREQ_H
#define ASSENT_MHDREQ_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/util.h"
#include "gateway/proto/httpcfg.h"
#include "gateway/worker/jail.h"
#include "gateway/worker/mhdconn.h"

/* libmicrohttpd on the listening socket fd (external epoll, suspend and resume), with cfg's
 * connection count, idle timeout and header memory, access and done as its request
 * callbacks, and conns counting its connections (mc_notify). NULL when it will not start. */
struct MHD_Daemon *mr_start(int fd, const struct http_cfg *cfg, MHD_AccessHandlerCallback access, void *acls,
			    MHD_RequestCompletedCallback done, void *dcls, struct mc_list *conns);

/* What libmicrohttpd needs of the jail beyond its base list, added to jo: it accepts on the
 * listeners it was handed and sets socket options, never creates a socket. */
void mr_jail_allow(struct jail_opts *jo);

/* A request header's value, NULL when it has none. */
const char *mr_header(struct MHD_Connection *mc, const char *name);

/* Called with each of the access handler's calls while a body is read: 1 when it took a chunk
 * into body (the handler returns MHD_YES), 0 once the body is whole. A chunk past body's
 * maximum sets *too_big; the rest is read and dropped (the request is answered 413 whole). */
int mr_body(struct buf *body, const char *upload, size_t *upload_size, int *too_big);

/* A header besides the answer's own; name NULL: none. */
struct mr_head {
	const char *name, *value;
};

/* An answer from a buffer: its status and Content-Type (NULL: none), the worker's headers
 * in order (first, then those the status asks for: Allow with a 405, WWW-Authenticate
 * with a 401, Retry-After when retry_s, then last). */
struct mr_reply {
	unsigned status;
	const char *ctype;
	const char *allow; /* a 405's methods */
	const char *realm; /* a 401's: Bearer realm="realm" */
	unsigned retry_s;
	struct mr_head first[8], last[2];
};

/* Queue the answer with body (copied), as MHD_queue_response does. */
enum MHD_Result mr_queue_buffer(struct MHD_Connection *mc, const struct mr_reply *rp, const void *body, size_t n);
/* Queue an endless answer (an event stream) that reader fills from cls, with rp's status and
 * headers (X-Accel-Buffering: no among them when nginx should pass each event on at once). */
enum MHD_Result mr_queue_stream(struct MHD_Connection *mc, const struct mr_reply *rp, MHD_ContentReaderCallback reader,
				void *cls);

/* An event stream's reader's step: what out holds, the end once finished, else 0 with the
 * request suspended (*suspended: see mc_sleep) until the worker has more. */
ssize_t mr_stream_read(struct MHD_Connection *mc, int *suspended, struct buf *out, int finished, char *buf, size_t max);

#endif
