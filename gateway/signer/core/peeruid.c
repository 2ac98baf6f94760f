/* The owner uid of a loopback TCP peer, by asking the kernel's socket table
 * (NETLINK_SOCK_DIAG, inet_diag) for the socket at the other end of fd. */
#define _GNU_SOURCE
#include "gateway/signer/core/peeruid.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "include/assent/err.h"
#include "common/util.h"

static int is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 0;
}

/* An address as inet_diag wants it: family, 4 or 16 bytes, port. A v4-mapped IPv6
 * address is the IPv4 socket it came from (a dual-stack listener sees IPv4 clients so). */
static void diag_addr(const struct sockaddr_storage *ss, uint8_t *family, __be32 out[4], __be16 *port)
{
	memset(out, 0, 16);
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		*family = AF_INET;
		memcpy(out, &a->sin_addr, 4);
		*port = a->sin_port;
		return;
	}
	const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
	*port = a->sin6_port;
	if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
		*family = AF_INET;
		memcpy(out, &a->sin6_addr.s6_addr[12], 4);
	} else {
		*family = AF_INET6;
		memcpy(out, &a->sin6_addr, 16);
	}
}

int peeruid_tcp(int fd, uid_t *uid, char *err)
{
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof me, pl = sizeof peer;
	if (fd < 0 || getsockname(fd, (struct sockaddr *)&me, &ml) != 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) != 0)
		return as_fail(err, AS_EINVAL, "not a connected socket");
	if (peer.ss_family != AF_INET && peer.ss_family != AF_INET6)
		return as_fail(err, AS_EINVAL, "not a TCP connection");
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} q;
	memset(&q, 0, sizeof q);
	q.nh.nlmsg_len = sizeof q;
	q.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q.nh.nlmsg_flags = NLM_F_REQUEST;
	q.nh.nlmsg_seq = 1;
	q.r.sdiag_protocol = IPPROTO_TCP;
	/* Only live sockets: a TIME_WAIT entry reports uid 0 and no owner at all. */
	q.r.idiag_states =
	    ~(1u << TCP_TIME_WAIT) & ((1u << (TCP_CLOSING + 1)) - 1) & ~(1u << TCP_CLOSE) & ~(1u << TCP_LISTEN);
	uint8_t fam_src, fam_dst;
	/* The peer's socket: its source is our peer address, its destination is us. */
	diag_addr(&peer, &fam_src, q.r.id.idiag_src, &q.r.id.idiag_sport);
	diag_addr(&me, &fam_dst, q.r.id.idiag_dst, &q.r.id.idiag_dport);
	if (fam_src != fam_dst)
		return as_fail(err, AS_EINVAL, "the two ends of the connection are of different families");
	q.r.sdiag_family = fam_src;
	q.r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	q.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return as_fail(err, AS_EIO, "cannot open the kernel's socket table: %s", strerror(errno));
	struct timeval tv = {.tv_sec = 1};
	setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	struct sockaddr_nl k = {.nl_family = AF_NETLINK};
	if (sendto(nl, &q, sizeof q, 0, (struct sockaddr *)&k, sizeof k) != (ssize_t)sizeof q) {
		int e = errno;
		close(nl);
		return as_fail(err, AS_EIO, "cannot ask the kernel's socket table: %s", strerror(e));
	}
	/* An exact lookup answers with one inet_diag_msg or an error (ENOENT: no such socket). */
	union {
		struct nlmsghdr nh;
		uint8_t b[8192];
	} ans;
	ssize_t n = recv(nl, &ans, sizeof ans, 0);
	int e = errno;
	close(nl);
	if (n < 0)
		return as_fail(err, AS_EIO, "no answer from the kernel's socket table: %s", strerror(e));
	for (struct nlmsghdr *h = &ans.nh; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *ne = NLMSG_DATA(h);
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof *ne))
				break;
			if (ne->error == -ENOENT)
				return as_fail(err, AS_ENOTFOUND, "the connection's other end is gone");
			return as_fail(err, AS_EIO, "the kernel's socket table refused: %s", strerror(-ne->error));
		}
		if (h->nlmsg_type == NLMSG_DONE)
			break;
		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
			continue;
		const struct inet_diag_msg *d = NLMSG_DATA(h);
		if (d->idiag_state == TCP_TIME_WAIT || d->idiag_inode == 0)
			return as_fail(err, AS_ENOTFOUND, "the connection's other end is closed (no owner)");
		*uid = (uid_t)d->idiag_uid;
		return 0;
	}
	return as_fail(err, AS_ENOTFOUND, "the kernel knows no socket at the connection's other end");
}

int peeruid_peer_is_loopback(int fd)
{
	struct sockaddr_storage peer;
	socklen_t pl = sizeof peer;
	return fd >= 0 && getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 && is_loopback(&peer);
}

int peeruid_peer_is_local(int fd)
{
	struct sockaddr_storage peer;
	socklen_t pl = sizeof peer;
	if (fd < 0 || getpeername(fd, (struct sockaddr *)&peer, &pl) != 0)
		return 0;
	if (is_loopback(&peer))
		return 1;
	/* One of this host's addresses is one a socket can be bound to (port 0: any). */
	uint8_t family;
	__be32 a[4];
	__be16 port;
	diag_addr(&peer, &family, a, &port);
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof ss);
	socklen_t sl;
	if (family == AF_INET) {
		struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
		v4->sin_family = AF_INET;
		memcpy(&v4->sin_addr, a, 4);
		sl = sizeof *v4;
	} else {
		struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
		v6->sin6_family = AF_INET6;
		memcpy(&v6->sin6_addr, a, 16);
		v6->sin6_scope_id = ((struct sockaddr_in6 *)&peer)->sin6_scope_id;
		sl = sizeof *v6;
	}
	int t = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t < 0)
		return 1; /* cannot tell: the caller then refuses rather than trusts */
	int local = bind(t, (struct sockaddr *)&ss, sl) == 0 || errno != EADDRNOTAVAIL;
	close(t);
	return local;
}
