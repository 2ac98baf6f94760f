/* The request prologue both jailed HTTP workers share over libmicrohttpd (see mhdreq.h):
 * the daemon, headers, the body in chunks, and the answer queued with its headers. */
#define _GNU_SOURCE
#include "gateway/worker/mhdreq.h"

#include <seccomp.h>
#include <stdio.h>

struct MHD_Daemon *mr_start(int fd, const struct http_cfg *cfg, MHD_AccessHandlerCallback access, void *acls,
			    MHD_RequestCompletedCallback done, void *dcls, struct mc_list *conns)
{
	return MHD_start_daemon(
	    MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, access, acls, MHD_OPTION_LISTEN_SOCKET,
	    (MHD_socket)fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->conns_max, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned)cfg->idle_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)cfg->header_max,
	    MHD_OPTION_NOTIFY_COMPLETED, done, dcls, MHD_OPTION_NOTIFY_CONNECTION, mc_notify, conns, MHD_OPTION_END);
}

void mr_jail_allow(struct jail_opts *jo)
{
	/* socket, bind and listen stay forbidden */
	static const int calls[] = {SCMP_SYS(accept4),	  SCMP_SYS(accept),	 SCMP_SYS(setsockopt),
				    SCMP_SYS(getsockopt), SCMP_SYS(getsockname), SCMP_SYS(getpeername)};
	jo->extra_syscalls = calls;
	jo->nextra = sizeof calls / sizeof *calls;
}

const char *mr_header(struct MHD_Connection *mc, const char *name)
{
	return MHD_lookup_connection_value(mc, MHD_HEADER_KIND, name);
}

int mr_body(struct buf *body, const char *upload, size_t *upload_size, int *too_big)
{
	if (!*upload_size)
		return 0;
	if (!*too_big && buf_put(body, upload, *upload_size) != 0)
		*too_big = 1; /* read to its end, then answered 413 */
	*upload_size = 0;
	return 1;
}

static void add_heads(struct MHD_Response *r, const struct mr_head *hs, size_t n)
{
	for (size_t i = 0; i < n && hs[i].name; i++)
		if (hs[i].value)
			MHD_add_response_header(r, hs[i].name, hs[i].value);
}

static enum MHD_Result queue(struct MHD_Connection *mc, const struct mr_reply *rp, struct MHD_Response *r)
{
	if (!r)
		return MHD_NO;
	if (rp->ctype && rp->ctype[0])
		MHD_add_response_header(r, "Content-Type", rp->ctype);
	add_heads(r, rp->first, sizeof rp->first / sizeof *rp->first);
	if (rp->status == 405 && rp->allow)
		MHD_add_response_header(r, "Allow", rp->allow);
	if (rp->status == 401 && rp->realm) {
		char v[80];
		snprintf(v, sizeof v, "Bearer realm=\"%s\"", rp->realm);
		MHD_add_response_header(r, "WWW-Authenticate", v);
	}
	if (rp->retry_s) { /* a limit: when to try again */
		char v[16];
		snprintf(v, sizeof v, "%u", rp->retry_s);
		MHD_add_response_header(r, "Retry-After", v);
	}
	add_heads(r, rp->last, sizeof rp->last / sizeof *rp->last);
	enum MHD_Result ret = MHD_queue_response(mc, rp->status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result mr_queue_buffer(struct MHD_Connection *mc, const struct mr_reply *rp, const void *body, size_t n)
{
	return queue(mc, rp, MHD_create_response_from_buffer(n, (void *)body, MHD_RESPMEM_MUST_COPY));
}

enum MHD_Result mr_queue_stream(struct MHD_Connection *mc, const struct mr_reply *rp, MHD_ContentReaderCallback reader,
				void *cls)
{
	return queue(mc, rp, MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, reader, cls, NULL));
}

ssize_t mr_stream_read(struct MHD_Connection *mc, int *suspended, struct buf *out, int finished, char *buf, size_t max)
{
	int sleep;
	ssize_t n = mc_stream_read(out, finished, buf, max, &sleep);
	if (sleep)
		mc_sleep(mc, suspended); /* woken when the worker has more */
	return n;
}
