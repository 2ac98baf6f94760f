/* The signer's listening sockets: unix sockets with their groups, TCP listeners for agents and reviewers,
 * the reviewers' page origin, and the watch on CLI reviewers' connections (their ends). */
#define _GNU_SOURCE
#include "gateway/signer/types.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/epoll.h>
#include <sys/un.h>
#include <unistd.h>

/* ---- sockets and workers ---- */

int listen_unix(const char *state, const char *name, char *err)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", state, name);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path)
		return as_fail(err, AS_EINVAL, "socket path too long: %s", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	unlink(path); /* we hold the state directory's lock: a socket left here is stale */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	mode_t old = umask(0077);
	int rc = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 64) == 0 ? 0 : -1;
	umask(old);
	if (rc != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return as_fail(err, AS_EIO, "cannot listen on %s: %s", path, strerror(e));
	}
	return fd;
}

/* A socket only its owner and one group may connect to: mode 0660, that group. */
static int sock_group(const char *path, const char *grp, const char *var, char *err)
{
	struct group *g = getgrnam(grp);
	if (!g || chown(path, (uid_t)-1, g->gr_gid) != 0 || chmod(path, 0660) != 0)
		return as_fail(err, AS_EINVAL, "%s '%s': %s", var, grp, g ? strerror(errno) : "no such group");
	return 0;
}

/* ASSENT_CONTROL_GROUP: reviewers in that group reach control.sock (the signer still
 * measures each one's uid and checks it against the registry). The state directory
 * gets that group with search permission only (0710): members can reach the socket
 * by its name, not list or read anything; keys, ledger and registry stay the owner's. */
int control_group(const char *state, char *err)
{
	const char *grp = getenv("ASSENT_CONTROL_GROUP");
	if (!grp || !*grp)
		return 0;
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", state, STATE_CONTROL_SOCK);
	GUARD(sock_group(path, grp, "ASSENT_CONTROL_GROUP", err));
	struct stat st;
	struct group *g = getgrnam(grp);
	if (stat(state, &st) != 0 || chown(state, (uid_t)-1, g->gr_gid) != 0 ||
	    chmod(state, (st.st_mode & 0700) | 0010) != 0)
		return as_fail(err, AS_EIO, "ASSENT_CONTROL_GROUP: cannot open %s to group %s: %s", state, grp,
			       strerror(errno));
	slog("info", "control socket: members of group %s may connect (%s, mode 0660)", grp, path);
	return 0;
}

/* A TCP listener (agents or reviewers). A port given explicitly must be had; the
 * default one may be taken (another state directory's daemon): then that listener
 * is off and the log says why. Returns the descriptor, or -1 (off). */
int tcp_listen(struct http_cfg *c, const char *what, const char *port_var, char *err)
{
	if (!c->on)
		return -1;
	struct addrinfo hints = {
	    .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_PASSIVE};
	struct addrinfo *ai = NULL;
	char port[8];
	snprintf(port, sizeof port, "%u", c->port);
	const char *host = !strcmp(c->host, "localhost") ? "127.0.0.1" : c->host;
	if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai) {
		as_fail(err, AS_EINVAL, "the %s listener's host '%s' is not an IP address", what, c->host);
		return -2;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1, e = 0;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 128) != 0)
		e = errno;
	freeaddrinfo(ai);
	if (e) {
		if (fd >= 0)
			close(fd);
		if (c->port_explicit) {
			as_fail(err, AS_EIO, "cannot listen on %s:%u for the %s listener (%s=%u): %s%s", c->host,
				c->port, what, port_var, c->port, strerror(e),
				e == EADDRINUSE ? "; another program listens there: set it to a free port (0: any)"
						: "");
			return -2;
		}
		slog("warning",
		     "%s listener off: cannot listen on %s:%u (%s); set %s to another port (0: any free one)", what,
		     c->host, c->port, strerror(e), port_var);
		c->on = 0;
		return -1;
	}
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	unsigned bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							: ((struct sockaddr_in *)&ss)->sin_port);
	int loopback = ss.ss_family == AF_INET ? (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127
					       : IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr) ||
						     (IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&ss)->sin6_addr) &&
						      ((struct sockaddr_in6 *)&ss)->sin6_addr.s6_addr[12] == 127);
	http_cfg_finish(c, bound, loopback);
	if (!c->nhosts)
		slog("warning",
		     "the %s listener on %s:%u accepts any Host header: set its ALLOWED_HOSTS variable to the "
		     "names clients use",
		     what, c->host, bound);
	return fd;
}

/* The reviewer listener, and the reverse proxy's own socket when configured. */
int review_listen(struct signer *s, char *err)
{
	s->review_fd = s->proxy_fd = -1;
	GUARD(http_cfg_review_from_env(&s->review, err));
	uint64_t v;
	GUARD(http_cfg_env_uint("ASSENT_REVIEW_STREAMS_PER_REVIEWER", 1, 1024, 8, &v, err));
	s->web_streams_max = (unsigned)v;
	GUARD(http_cfg_env_uint("ASSENT_REVIEW_STREAM_SECONDS", 1, 86400, 900, &v, err));
	s->web_stream_s = (unsigned)v;
	if ((s->review_fd = tcp_listen(&s->review, "reviewer", "ASSENT_REVIEW_PORT", err)) == -2)
		return AS_EIO;
	const char *hdr = getenv("ASSENT_REVIEW_PROXY_HEADER"), *sec = getenv("ASSENT_REVIEW_PROXY_SECRET");
	const char *sock = getenv("ASSENT_REVIEW_PROXY_SOCKET"), *grp = getenv("ASSENT_REVIEW_PROXY_GROUP");
	snprintf(s->proxy_header, sizeof s->proxy_header, "%s", hdr && *hdr ? hdr : "X-Reviewer-Email");
	for (const char *p = s->proxy_header; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
			return as_fail(err, AS_EINVAL, "ASSENT_REVIEW_PROXY_HEADER: a header name (A-Z a-z 0-9 -)");
	if (sec && *sec) {
		if (strlen(sec) < 32 || strlen(sec) >= sizeof s->proxy_secret)
			return as_fail(err, AS_EINVAL, "ASSENT_REVIEW_PROXY_SECRET: 32 to 128 characters");
		snprintf(s->proxy_secret, sizeof s->proxy_secret, "%s", sec);
		unsetenv("ASSENT_REVIEW_PROXY_SECRET");
	}
	if (!sock || !*sock)
		return 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(sock) >= sizeof sa.sun_path || sock[0] != '/')
		return as_fail(err, AS_EINVAL, "ASSENT_REVIEW_PROXY_SOCKET: an absolute path under %zu bytes",
			       sizeof sa.sun_path);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	unlink(sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	mode_t old = umask(0077);
	int rc = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 128) == 0 ? 0 : -1;
	umask(old);
	if (rc == 0 && grp && *grp && sock_group(sock, grp, "ASSENT_REVIEW_PROXY_GROUP", err) != 0) {
		close(fd); /* only the proxy's group may connect: mode 0660 */
		return AS_EINVAL;
	}
	if (rc != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return as_fail(err, AS_EIO, "cannot listen on %s: %s", sock, strerror(e));
	}
	snprintf(s->proxy_path, sizeof s->proxy_path, "%s", sock);
	s->proxy_fd = fd;
	return 0;
}
/* Where reviewers open the page: ASSENT_REVIEW_URL (behind a proxy, the proxy's origin), else
 * the reviewer listener's own address; 0 when there is neither. */
int review_origin(const struct signer *s, char *u, size_t cap)
{
	const char *env = getenv("ASSENT_REVIEW_URL");
	if (env && (!strncmp(env, "https://", 8) || !strncmp(env, "http://", 7)) && strlen(env) < cap &&
	    !strpbrk(env, "\"<> \t\r\n")) {
		snprintf(u, cap, "%s", env);
		size_t n = strlen(u);
		while (n > 0 && u[n - 1] == '/')
			u[--n] = 0;
		return 1;
	}
	if (s->review_fd < 0)
		return 0;
	int v6 = strchr(s->review.host, ':') != NULL;
	snprintf(u, cap, "http://%s%s%s:%u", v6 ? "[" : "", s->review.host, v6 ? "]" : "", s->review.port);
	return 1;
}

void ctl_unwatch(struct signer *s, size_t i)
{
	if (s->ctl_fd[i] < 0)
		return;
	/* Deleted by hand: the worker's copy keeps the socket, and so the epoll entry, alive. */
	epoll_ctl(s->ctl_ep, EPOLL_CTL_DEL, s->ctl_fd[i], NULL);
	close(s->ctl_fd[i]);
	s->ctl_fd[i] = -1;
}

int ctl_watch(struct signer *s, const struct conn *c, int fd)
{
	size_t i = (size_t)(c - s->conns);
	ctl_unwatch(s, i);
	int d = s->ctl_ep < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
	struct epoll_event ev = {.events = EPOLLRDHUP, .data.u64 = i};
	if (d < 0 || epoll_ctl(s->ctl_ep, EPOLL_CTL_ADD, d, &ev) != 0) {
		if (d >= 0)
			close(d);
		slog("error", "cannot watch a control connection (%s): refused", strerror(errno));
		return -1;
	}
	s->ctl_fd[i] = d;
	s->ctl_id[i] = c->id;
	return 0;
}
