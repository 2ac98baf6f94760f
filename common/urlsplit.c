/* url_split (urlsplit.h): moved here from the upstreams file's reader so that webhooks
 * take their URLs by the same rules. */
#include "common/urlsplit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

static int no(char *why, unsigned cap, const char *fmt, ...) AS_PRINTF(3, 4);
static int no(char *why, unsigned cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
	return -1;
}

int url_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (!strcmp(host, "localhost"))
		return 1;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

int url_split(const char *s, struct url_parts *u, char *why, unsigned cap)
{
	const char *rest;
	memset(u, 0, sizeof *u);
	if (!strncmp(s, "https://", 8)) {
		snprintf(u->scheme, sizeof u->scheme, "https");
		u->port = 443;
		rest = s + 8;
	} else if (!strncmp(s, "http://", 7)) {
		snprintf(u->scheme, sizeof u->scheme, "http");
		u->port = 80;
		rest = s + 7;
	} else {
		return no(why, cap, "must start with https:// (or http:// to a loopback address)");
	}
	size_t auth = strcspn(rest, "/?#");
	if (memchr(rest, '@', auth))
		return no(why, cap, "must not carry credentials (user@host): put them in \"headers\"");
	if (strchr(rest, '#'))
		return no(why, cap, "must not have a fragment");
	const char *host = rest, *colon;
	size_t hn;
	if (*host == '[') {
		const char *close = memchr(host, ']', auth);
		if (!close)
			return no(why, cap, "an IPv6 address must be in brackets");
		host++;
		hn = (size_t)(close - host);
		colon = close + 1 < rest + auth && close[1] == ':' ? close + 1 : NULL;
		if (!colon && close + 1 != rest + auth)
			return no(why, cap, "unexpected characters after the address");
		if (strspn(host, "0123456789abcdefABCDEF:.") < hn)
			return no(why, cap, "not an IPv6 address in brackets");
	} else {
		colon = memchr(host, ':', auth);
		hn = colon ? (size_t)(colon - host) : auth;
		if (strspn(host, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-") < hn)
			return no(why, cap, "the host may hold letters, digits, '.' and '-' only");
	}
	if (hn == 0 || hn >= sizeof u->host)
		return no(why, cap, "names no host, or one that is too long");
	memcpy(u->host, host, hn);
	u->host[hn] = 0;
	if (colon) {
		const char *p = colon + 1;
		size_t pn = (size_t)(rest + auth - p);
		unsigned long v = 0;
		if (pn == 0 || pn > 5 || strspn(p, "0123456789") < pn)
			return no(why, cap, "the port must be a number from 1 to 65535");
		for (size_t i = 0; i < pn; i++)
			v = v * 10 + (unsigned long)(p[i] - '0');
		if (v == 0 || v > 65535)
			return no(why, cap, "the port must be a number from 1 to 65535");
		u->port = (uint16_t)v;
	}
	if (!strcmp(u->scheme, "http") && !url_loopback(u->host))
		return no(why, cap, "plain http:// only to a loopback address; use https:// for %s",
			  u->host); /* the host passed its character check */
	const char *path = rest + auth;
	for (const unsigned char *q = (const unsigned char *)path; *q; q++)
		if (*q <= 0x20 || *q >= 0x7f)
			return no(why, cap, "the path must be printable ASCII without spaces");
	if (*path && *path != '/')
		return no(why, cap, "the path must start with '/'");
	u->path = path;
	return 0;
}
