/* MySQL / MariaDB database URLs (myurl.h): split, percent-decoded and bounded, each part
 * checked, so that what reaches the client library is what the operator wrote. */
#define _GNU_SOURCE
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "gateway/proto/myurl.h"
#include "common/util.h"

/* The scheme's length with its ':' when url is of this kind: "mysql:", "mariadb:", or either
 * with a SQLAlchemy driver ("mysql+pymysql:", "mariadb+mariadbconnector:"); 0 otherwise. */
static size_t scheme_len(const char *url)
{
	size_t n = !url ? 0 : !strncasecmp(url, "mysql", 5) ? 5 : !strncasecmp(url, "mariadb", 7) ? 7 : 0;
	if (n && url[n] == '+') {
		size_t d = 1;
		while (d <= 32 && (isalnum((unsigned char)url[n + d]) || url[n + d] == '_'))
			d++;
		n = d > 1 ? n + d : 0;
	}
	return n && url[n] == ':' ? n + 1 : 0;
}

int myurl_is(const char *url)
{
	return scheme_len(url) > 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* s[0..n) percent-decoded into out (max bytes and a NUL); no NUL byte, no control byte. */
static int decode(const char *s, size_t n, char *out, size_t max, const char *what, char *err)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];
		if (c == '%') {
			int a = i + 2 < n ? hexval(s[i + 1]) : -1;
			int b = i + 2 < n ? hexval(s[i + 2]) : -1;
			if (a < 0 || b < 0)
				return as_fail(err, AS_EINVAL,
					       "database URL: the %s has a '%%' not followed by two hex digits", what);
			c = a * 16 + b;
			i += 2;
		}
		if (c == 0 || c < 0x20 || c == 0x7f)
			return as_fail(err, AS_EINVAL, "database URL: the %s holds a control character", what);
		if (o >= max)
			return as_fail(err, AS_EINVAL, "database URL: the %s is longer than %zu bytes", what, max);
		out[o++] = (char)c;
	}
	out[o] = 0;
	return 0;
}

static int parse_port(const char *s, size_t n, unsigned *port, char *err)
{
	unsigned v = 0;
	if (n == 0 || n > 5)
		return as_fail(err, AS_EINVAL, "database URL: the port is not a number from 1 to 65535");
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return as_fail(err, AS_EINVAL, "database URL: the port is not a number from 1 to 65535");
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v < 1 || v > 65535)
		return as_fail(err, AS_EINVAL, "database URL: port %u is not from 1 to 65535", v);
	*port = v;
	return 0;
}

/* HOST[:PORT] or [IPV6][:PORT] in s[0..n); n 0 leaves host empty. */
static int parse_host(const char *s, size_t n, struct myurl *u, char *err)
{
	const char *end = s + n, *port = NULL, *h = s;
	size_t hn = n;
	if (n && s[0] == '[') {
		const char *close = memchr(s, ']', n);
		if (!close)
			return as_fail(err, AS_EINVAL, "database URL: an IPv6 host's '[' has no ']'");
		if (close + 1 < end && close[1] != ':')
			return as_fail(err, AS_EINVAL, "database URL: ']' must end the host or come before :PORT");
		port = close + 1 < end ? close + 2 : NULL;
		h = s + 1;
		hn = (size_t)(close - h);
	} else {
		const char *colon = memchr(s, ':', n);
		if (colon) {
			port = colon + 1;
			hn = (size_t)(colon - s);
		}
	}
	if (port)
		GUARD(parse_port(port, (size_t)(end - port), &u->port, err));
	if (hn > MYURL_HOST_MAX)
		return as_fail(err, AS_EINVAL, "database URL: the host is longer than %d bytes", MYURL_HOST_MAX);
	for (size_t i = 0; i < hn; i++)
		if (!isalnum((unsigned char)h[i]) && !strchr(".-_:", h[i]))
			return as_fail(err, AS_EINVAL,
				       "database URL: the host holds '%c': expected a name or an address",
				       isprint((unsigned char)h[i]) ? h[i] : '?');
	memcpy(u->host, h, hn);
	u->host[hn] = 0;
	return 0;
}

/* The query: socket=PATH (unix_socket=PATH, SQLAlchemy's word), charset=utf8mb4 (what the
 * recorder uses anyway), nothing else. */
static int parse_query(const char *q, struct myurl *u, char *err)
{
	while (*q) {
		size_t n = strcspn(q, "&"), k = !strncmp(q, "socket=", 7)	  ? 7
						: !strncmp(q, "unix_socket=", 12) ? 12
										  : 0;
		if (!strncmp(q, "charset=", 8)) {
			if (n != 15 || strncasecmp(q + 8, "utf8mb4", 7))
				return as_fail(
				    err, AS_EINVAL,
				    "database URL: charset=%.*s: the records are always utf8mb4 (leave it out, "
				    "or charset=utf8mb4)",
				    (int)(n - 8 < 32 ? n - 8 : 32), q + 8);
		} else if (k && n > k) {
			GUARD(decode(q + k, n - k, u->socket, MYURL_SOCK_MAX, "socket path", err));
			if (u->socket[0] != '/')
				return as_fail(err, AS_EINVAL, "database URL: socket=%.64s is not an absolute path",
					       u->socket);
		} else {
			size_t name = strcspn(q, "=&");
			return as_fail(
			    err, AS_EINVAL,
			    "database URL: unknown parameter \"%.*s\" (only socket=PATH and charset=utf8mb4)",
			    (int)(name < 32 ? name : 32), q);
		}
		q += n;
		if (*q == '&')
			q++;
	}
	return 0;
}

int myurl_parse(const char *url, struct myurl *u, char *err)
{
	memset(u, 0, sizeof *u);
	if (!myurl_is(url))
		return as_fail(err, AS_EINVAL, "database URL: expected mysql:// or mariadb://");
	const char *p = url + scheme_len(url);
	if (strncmp(p, "//", 2))
		return as_fail(err, AS_EINVAL,
			       "database URL: expected mysql://USER:PASSWORD@HOST[:PORT]/DATABASE (no \"//\" after the "
			       "scheme)");
	p += 2;
	const char *slash = strchr(p, '/');
	const char *at = memrchr(p, '@', slash ? (size_t)(slash - p) : strlen(p));
	if (!at)
		return as_fail(err, AS_EINVAL, "database URL: names no user (mysql://USER[:PASSWORD]@HOST/DATABASE)");
	const char *colon = memchr(p, ':', (size_t)(at - p));
	size_t un = colon ? (size_t)(colon - p) : (size_t)(at - p);
	if (un == 0)
		return as_fail(err, AS_EINVAL, "database URL: the user is empty");
	GUARD(decode(p, un, u->user, MYURL_USER_MAX, "user", err));
	if (colon) {
		u->has_pass = 1;
		GUARD(decode(colon + 1, (size_t)(at - colon - 1), u->pass, MYURL_PASS_MAX, "password", err));
	}
	p = at + 1;
	if (!slash)
		return as_fail(err, AS_EINVAL, "database URL: names no database (.../DATABASE after the host)");
	GUARD(parse_host(p, (size_t)(slash - p), u, err));
	const char *q = strchr(slash + 1, '?');
	size_t dn = q ? (size_t)(q - slash - 1) : strlen(slash + 1);
	if (dn == 0)
		return as_fail(err, AS_EINVAL, "database URL: names no database (.../DATABASE after the host)");
	GUARD(decode(slash + 1, dn, u->db, MYURL_DB_MAX, "database name", err));
	if (strchr(u->db, '/'))
		return as_fail(err, AS_EINVAL, "database URL: the database name holds '/'");
	if (q)
		GUARD(parse_query(q + 1, u, err));
	if (u->socket[0]) {
		if (u->host[0] && strcmp(u->host, "localhost"))
			return as_fail(
			    err, AS_EINVAL,
			    "database URL: socket= with host \"%s\": a socket is local (leave the host empty "
			    "or localhost)",
			    u->host);
		if (u->port)
			return as_fail(err, AS_EINVAL, "database URL: socket= with a port: a socket has none");
		u->host[0] = 0;
	} else {
		if (!u->host[0])
			return as_fail(err, AS_EINVAL,
				       "database URL: names no host (or ?socket=PATH for a unix socket)");
		if (!u->port)
			u->port = MYURL_PORT;
	}
	return 0;
}
