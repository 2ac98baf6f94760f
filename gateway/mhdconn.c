#define _GNU_SOURCE
#include "mhdconn.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

uint64_t mc_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static struct mc_conn *of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

void mc_notify(void *cls, struct MHD_Connection *mc, void **ctx, enum MHD_ConnectionNotificationCode toe)
{
	struct mc_list *l = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct mc_conn *p = calloc(1, sizeof *p);
		if (!p || !ci) {
			free(p);
			return;
		}
		*p = (struct mc_conn){.fd = ci->connect_fd, .since = mc_mono_ms(), .receiving = 1, .next = l->head};
		l->head = p;
		l->n++;
		*ctx = p;
		return;
	}
	for (struct mc_conn **q = &l->head; *q; q = &(*q)->next)
		if (*q == *ctx) {
			*q = (*q)->next;
			l->n--;
			break;
		}
	free(*ctx);
	*ctx = NULL;
}

void mc_received(struct MHD_Connection *mc)
{
	struct mc_conn *p = of(mc);
	if (p)
		p->receiving = 0;
}

void mc_request_done(struct MHD_Connection *mc)
{
	struct mc_conn *p = of(mc);
	if (p) {
		p->receiving = 1;
		p->since = mc_mono_ms();
	}
}

void mc_deadlines(struct mc_list *l, unsigned request_s)
{
	uint64_t now = mc_mono_ms();
	for (struct mc_conn *p = l->head; p; p = p->next)
		if (p->receiving && now - p->since > 1000ull * request_s) {
			shutdown(p->fd, SHUT_RDWR); /* libmicrohttpd sees the end and closes it */
			p->receiving = 0;
		}
}

void mc_run(struct MHD_Daemon *d)
{
	MHD_UNSIGNED_LONG_LONG more;
	for (int k = 0; d && k < 8; k++) {
		MHD_run(d);
		if (MHD_get_timeout(d, &more) != MHD_YES || more != 0)
			break;
	}
}

void mc_sleep(struct MHD_Connection *mc, int *suspended)
{
	if (!*suspended) {
		*suspended = 1;
		MHD_suspend_connection(mc);
	}
}

void mc_wake(struct MHD_Connection *mc, int *suspended)
{
	if (*suspended) {
		*suspended = 0;
		MHD_resume_connection(mc);
	}
}

ssize_t mc_stream_read(struct buf *out, int finished, char *buf, size_t max, int *sleep)
{
	*sleep = 0;
	if (out->len) {
		size_t n = out->len < max ? out->len : max;
		memcpy(buf, out->p, n);
		memmove(out->p, out->p + n, out->len - n);
		out->len -= n;
		return (ssize_t)n;
	}
	if (finished)
		return MHD_CONTENT_READER_END_OF_STREAM;
	*sleep = 1;
	return 0;
}
