/* A URL as assent takes one from an operator (an upstream's `url`, a webhook's --url):
 * https://HOST[:PORT][/PATH], or http:// to a loopback address only (a secret or a signed
 * body must not cross a network in the clear). No user info (credentials go in headers,
 * where they are never logged), no fragment; the host is a name of letters, digits, '.'
 * and '-', or an address (IPv6 in brackets); the path printable ASCII. */
#ifndef ASSENT_URLSPLIT_H
#define ASSENT_URLSPLIT_H

#include <stdint.h>

struct url_parts {
	char scheme[8];	  /* "https" | "http" */
	char host[256];	  /* the name or address, without brackets */
	uint16_t port;	  /* 443 or 80 when none is given */
	const char *path; /* into the URL: from the first '/', "" when none */
};

/* 0, or -1 with why (cap bytes) saying what is wrong, in words that follow the URL's
 * name ("\"url\" must ...": what names it is the caller's). */
int url_split(const char *url, struct url_parts *p, char *why, unsigned cap);
/* 1 when host is localhost or a loopback address. */
int url_loopback(const char *host);

#endif
