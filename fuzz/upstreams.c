/* Fuzz target: the upstreams file (gateway/state/upstreams.c). Input: the file's bytes.
 * Properties (abort when violated):
 *   - a refusal says why: a message that starts with the file's name, printable ASCII;
 *   - what is accepted is what assent.upstreams(5) promises: 1 to UP_MAX servers, valid
 *     names without the separator, exactly one kind each, every string bounded and
 *     without NUL, header values without CR or LF, plain http:// to loopback only, a
 *     port from 1 and a path from '/'. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/assent/err.h"
#include "gateway/state/upstreams.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *why, const char *detail)
{
	fprintf(stderr, "upstreams: property violated: %s: %s\n", why, detail ? detail : "");
	abort();
}

static void check_str(const char *s, const char *what)
{
	if (!s || strlen(s) > UP_STRING_MAX)
		fail("a string missing or over its bound", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct upstreams *u = NULL;
	char err[AS_ERRLEN] = "";
	int rc = upstreams_parse((const char *)data, size, "f.json", &u, err);
	if (rc != 0) {
		if (u || strncmp(err, "f.json: ", 8))
			fail("a refusal without its file's name, or with a result", err);
		for (const char *p = err; *p; p++)
			if (*p < 0x20 || *p > 0x7e)
				fail("a refusal that is not printable ASCII", err);
		return 0;
	}
	if (!u || u->n < 1 || u->n > UP_MAX)
		fail("accepted with no servers or too many", NULL);
	for (size_t i = 0; i < u->n; i++) {
		const struct upstream *x = &u->u[i];
		size_t n = strlen(x->name);
		if (n < 1 || n > UP_NAME_MAX || strstr(x->name, UP_SEPARATOR) ||
		    strspn(x->name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") != n)
			fail("an invalid name accepted", x->name);
		if (x->kind == UP_STDIO) {
			check_str(x->command, "command");
			if (!x->command[0] || x->url || x->headers || x->ca || x->nargs > UP_ARGS_MAX ||
			    x->nenv > UP_ENV_MAX)
				fail("a stdio server with an HTTP member or past a bound", x->name);
			for (size_t k = 0; k < x->nargs; k++)
				check_str(x->args[k], "args");
			for (size_t k = 0; k < x->nenv; k++)
				check_str(x->env[k].value, "env");
			if (x->cwd && x->cwd[0] != '/')
				fail("a relative cwd", x->cwd);
		} else if (x->kind == UP_HTTP) {
			check_str(x->url, "url");
			if (x->command || x->env || x->cwd || x->has_uid || !x->host[0] || !x->port || !x->path ||
			    x->path[0] != '/' || x->nheaders > UP_ENV_MAX)
				fail("an HTTP server with a stdio member, no host, port or path", x->name);
			struct in_addr a4;
			struct in6_addr a6;
			int lo = !strcmp(x->host, "localhost") ||
				 (inet_pton(AF_INET, x->host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127) ||
				 (inet_pton(AF_INET6, x->host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6));
			if (!strcmp(x->scheme, "http") && !lo)
				fail("plain http to a host that is not loopback", x->host);
			if (strcmp(x->scheme, "http") && strcmp(x->scheme, "https"))
				fail("an unknown scheme", x->scheme);
			for (size_t k = 0; k < x->nheaders; k++) {
				check_str(x->headers[k].value, "header");
				if (strpbrk(x->headers[k].value, "\r\n") || strpbrk(x->headers[k].key, "\r\n: "))
					fail("a header that could start another", x->headers[k].key);
			}
		} else {
			fail("a server of no kind", x->name);
		}
	}
	upstreams_free(u);
	return 0;
}
