/* Drives the upstream HTTP client (gateway/worker/upstream/uhttp.h) the way an upstream
 * worker does, for tests/integration/uhttp_tls.sh: it connects the TCP sockets itself (as
 * the signer will), attaches them, and sends each MESSAGE argument as one request in
 * turn, printing one line per thing the module reports:
 *   msg JSON | done STATUS | session-lost | lost | closed | session ID | error TEXT
 * A MESSAGE of "GET" opens the session's stream (uhttp_send_get) instead.
 * A closed connection is replaced by a new socket before the next message. With --jail
 * it connects --conns sockets first, then enters the workers' jail (gateway/worker/jail.h:
 * seccomp, no files, no new sockets) and runs every request inside it.
 *   usage: uhttp_probe --connect 127.0.0.1:PORT --scheme https|http --host NAME
 *          [--path /mcp] [--ca FILE] [--header 'Name: value']... [--max BYTES]
 *          [--protocol VERSION] [--jail] [--conns N] MESSAGE...
 * Exit 0 when every message got its answer, 1 on an error (printed), 2 on usage. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "gateway/worker/jail.h"
#include "gateway/worker/upstream/uhttp.h"

#define PROBE_HEADERS_MAX 8
#define PROBE_FDS_MAX 16

static struct sockaddr_in addr;
static int spare[PROBE_FDS_MAX], nspare;
static int jailed;

struct state {
	int done, lost, closed;
};

static int on_msg(void *arg, const char *json, size_t n)
{
	(void)arg;
	printf("msg %.*s\n", (int)n, json);
	return 0;
}

static void on_event(void *arg, enum uhttp_event ev, int status)
{
	struct state *s = arg;
	switch (ev) {
	case UHTTP_EV_DONE:
		printf("done %d\n", status);
		s->done = 1;
		break;
	case UHTTP_EV_SESSION_LOST:
		printf("session-lost\n");
		break;
	case UHTTP_EV_LOST:
		printf(status ? "lost unsent\n" : "lost\n");
		s->lost = 1;
		break;
	case UHTTP_EV_CLOSED:
		printf("closed\n");
		s->closed = 1;
		break;
	}
}

/* A connected socket: a fresh one, or (jailed: no socket calls) one made before. */
static int new_fd(void)
{
	if (jailed)
		return nspare ? spare[--nspare] : -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
		printf("error connect: %s\n", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* As the signer must: mbedTLS writes each handshake record with a send of its own, and
	 * Nagle would hold the second back for the server's delayed ACK (about 40 ms). */
	int one = 1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
		printf("error TCP_NODELAY: %s\n", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: uhttp_probe --connect 127.0.0.1:PORT --scheme https|http --host NAME [--path P] "
		"[--ca FILE] [--header 'N: V']... [--max BYTES] [--protocol V] [--jail] [--conns N] MESSAGE...\n");
	return 2;
}

static int parse_connect(const char *s)
{
	const char *colon = strrchr(s, ':');
	char ip[64];
	uint64_t port;
	if (!colon || (size_t)(colon - s) >= sizeof ip || parse_u64(colon + 1, &port) != 0 || port == 0 || port > 65535)
		return -1;
	memcpy(ip, s, (size_t)(colon - s));
	ip[colon - s] = 0;
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, ip, &addr.sin_addr) == 1 ? 0 : -1;
}

/* One request, to its end. Returns 0, or 1 on an error. */
static int one(struct uhttp *u, struct uhttp_conn *c, const char *msg, const char *protocol)
{
	char err[AS_ERRLEN];
	struct state s = {0};
	struct uhttp_cb cb = {on_msg, on_event, &s};
	if (uhttp_fd(c) < 0) {
		int fd = new_fd();
		if (fd < 0 || uhttp_attach(c, fd, err) != 0) {
			printf("error no connection\n");
			return 1;
		}
	}
	/* "GET" opens the session's stream instead of posting a message */
	int rc = strcmp(msg, "GET") == 0 ? uhttp_send_get(c, err) : uhttp_send(c, msg, strlen(msg), err);
	if (rc != 0) {
		printf("error %s\n", err);
		return 1;
	}
	while (!s.done && !s.lost) {
		struct pollfd p = {.fd = uhttp_fd(c), .events = uhttp_want(c)};
		/* 20 s: a guard against a hung test, not a measure of anything */
		int k = poll(&p, 1, 20000);
		if (k == 0) {
			printf("error timeout\n");
			return 1;
		}
		if (k < 0 && errno != EINTR) {
			printf("error poll: %s\n", strerror(errno));
			return 1;
		}
		if (uhttp_io(c, &cb, err) != 0) {
			printf("error %s\n", err);
			return 1;
		}
	}
	if (uhttp_session_id(u)[0])
		printf("session %s\n", uhttp_session_id(u));
	if (protocol && s.done) {
		rc = uhttp_set_protocol(u, protocol, err);
		if (rc != 0) {
			printf("error %s\n", err);
			return 1;
		}
	}
	return s.lost;
}

int main(int argc, char **argv)
{
	struct uhttp_header hdr[PROBE_HEADERS_MAX];
	char hbuf[PROBE_HEADERS_MAX][1024];
	struct uhttp_cfg cfg = {.path = "/mcp"};
	const char *protocol = NULL;
	int i = 1, jail = 0;
	uint64_t conns = 4, max;
	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(o, "--jail") == 0) {
			jail = 1;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (strcmp(o, "--connect") == 0 && parse_connect(v) == 0) {
		} else if (strcmp(o, "--scheme") == 0) {
			cfg.scheme = v;
		} else if (strcmp(o, "--host") == 0) {
			cfg.host = v;
		} else if (strcmp(o, "--path") == 0) {
			cfg.path = v;
		} else if (strcmp(o, "--ca") == 0) {
			cfg.ca = v;
		} else if (strcmp(o, "--protocol") == 0) {
			protocol = v;
		} else if (strcmp(o, "--max") == 0 && parse_u64(v, &max) == 0) {
			cfg.body_max = (size_t)max;
		} else if (strcmp(o, "--conns") == 0 && parse_u64(v, &conns) == 0 && conns >= 1 &&
			   conns <= PROBE_FDS_MAX) {
		} else if (strcmp(o, "--header") == 0 && cfg.nheaders < PROBE_HEADERS_MAX && strchr(v, ':') &&
			   strlen(v) < sizeof hbuf[0]) {
			char *h = hbuf[cfg.nheaders];
			snprintf(h, sizeof hbuf[0], "%s", v);
			char *colon = strchr(h, ':');
			*colon = 0;
			hdr[cfg.nheaders].name = h;
			hdr[cfg.nheaders].value = colon + 1 + (colon[1] == ' ');
			cfg.nheaders++;
		} else {
			return usage();
		}
	}
	if (i >= argc || !addr.sin_port || !cfg.scheme || !cfg.host)
		return usage();
	cfg.headers = hdr;
	cfg.port = ntohs(addr.sin_port); /* the Host header names the port connected to */
	struct uhttp *u;
	struct uhttp_conn *c;
	char err[AS_ERRLEN];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (uhttp_new(&cfg, &u, err) != 0) {
		printf("error %s\n", err);
		return 1;
	}
	printf("cas %zu\n", uhttp_ca_count(u));
	if (jail) {
		for (nspare = 0; nspare < (int)conns; nspare++)
			if ((spare[nspare] = new_fd()) < 0)
				return 1;
		struct jail_opts jo = {.max_fds = 1024};
		if (getuid() == 0)
			jo.uid = jo.gid = 65534;
		if (jail_enter(&jo, err) != 0) {
			printf("error jail: %s\n", err);
			return 1;
		}
		jailed = 1;
		printf("jailed\n");
	}
	int rc = uhttp_conn_new(u, &c, err);
	if (rc != 0) {
		printf("error %s\n", err);
		return 1;
	}
	for (; i < argc && rc == 0; i++)
		rc = one(u, c, argv[i], protocol);
	uhttp_conn_free(c);
	uhttp_free(u);
	return rc ? 1 : 0;
}
