/* What both jailed HTTP workers need around libmicrohttpd (see mhdconn.h): the whole-request
 * deadline and suspending a request until the signer answers. */
#define _GNU_SOURCE
#include "gateway/worker/mhdconn.h"

#include "gateway/proto/ipc.h"

#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct mc_conn *of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

void mc_addr_key(const struct sockaddr *sa, uint8_t key[9])
{
	memset(key, 0, 9);
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
		uint32_t v = ntohl(a->sin_addr.s_addr);
		if ((v >> 24) == 127) {
			key[0] = 'L'; /* loopback */
			return;
		}
		key[0] = '4';
		memcpy(key + 1, &a->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127)) {
			key[0] = 'L';
			return;
		}
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			key[0] = '4';
			memcpy(key + 1, a->s6_addr + 12, 4);
			return;
		}
		key[0] = '6';
		memcpy(key + 1, a->s6_addr, 8); /* its /64 */
	}
}

/* Past the limit, the oldest unauthenticated connection of that address goes, not
 * the new one: a client that sends its request at once gets through while slow
 * heads are held, and whoever holds them loses them as fast as others arrive. A
 * connection whose whole request is in (waiting for the signer's check) is no slow
 * head and never goes: else opening connections in a loop would evict real clients. */
static struct mc_conn *over_address_limit(const struct mc_list *l, const struct mc_conn *p)
{
	if (!l->unauth_max || !p->addr[0])
		return NULL;
	size_t same = 0;
	struct mc_conn *oldest = NULL;
	for (struct mc_conn *q = l->head; q; q = q->next) /* newest first */
		if (q != p && !q->authed && !q->refused && q->receiving && !memcmp(q->addr, p->addr, sizeof q->addr)) {
			same++;
			oldest = q;
		}
	return same >= l->unauth_max ? oldest : NULL;
}

/* Before any request is read: a short answer written on the socket itself, then
 * its end (libmicrohttpd sees it and closes the connection). */
static void refuse_busy(struct mc_list *l, struct mc_conn *p)
{
	char msg[400];
	char body[240];
	int bn = snprintf(
	    body, sizeof body,
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,\"message\":\"closed: too many "
	    "connections from this address sent no request in time (ASSENT_HTTP_MAX_UNAUTH_PER_ADDRESS=%u)\"}}",
	    l->unauth_max);
	int n = snprintf(msg, sizeof msg,
			 "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 5\r\nContent-Type: application/json\r\n"
			 "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
			 bn, body);
	if (n > 0 && (size_t)n < sizeof msg) {
		ssize_t w = write(p->fd, msg, (size_t)n);
		(void)w; /* a fresh socket's buffer takes it; if not, the client sees the end only */
	}
	shutdown(p->fd, SHUT_RDWR);
	p->receiving = 0;
	p->refused = 1;
	l->refused++;
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
		*p = (struct mc_conn){.fd = ci->connect_fd, .since = mono_ms(), .receiving = 1, .next = l->head};
		const union MHD_ConnectionInfo *ai = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		if (ai && ai->client_addr)
			mc_addr_key(ai->client_addr, p->addr);
		l->head = p;
		l->n++;
		*ctx = p;
		struct mc_conn *old = over_address_limit(l, p);
		if (old)
			refuse_busy(l, old);
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

void mc_authed(struct MHD_Connection *mc)
{
	struct mc_conn *p = of(mc);
	if (p)
		p->authed = 1;
}

void mc_log_refused(struct mc_list *l, int ipcfd, const char *listener)
{
	uint64_t now = mono_ms();
	if (l->refused == l->logged || (l->logged_at && now - l->logged_at < 60000))
		return;
	ipc_log(ipcfd, "warning",
		"limit: %s listener: %llu connections refused (ASSENT_HTTP_MAX_UNAUTH_PER_ADDRESS=%u: "
		"one address held that many not yet authenticated)",
		listener, (unsigned long long)(l->refused - l->logged), l->unauth_max);
	l->logged = l->refused;
	l->logged_at = now;
}

void mc_request_done(struct MHD_Connection *mc)
{
	struct mc_conn *p = of(mc);
	if (p) {
		p->receiving = 1;
		p->since = mono_ms();
	}
}

void mc_deadlines(struct mc_list *l, unsigned request_s)
{
	uint64_t now = mono_ms();
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
