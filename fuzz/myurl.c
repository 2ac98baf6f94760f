/* Fuzz target: MySQL / MariaDB records database URLs (gateway/proto/myurl.c), as an operator
 * writes them in ASSENT_RECORD_DATABASE. The input is the URL (a NUL ends it early). The
 * properties: a URL taken has a user, a database, and either a host with a port in 1..65535
 * or an absolute socket path with neither, every part NUL-terminated within its bound and
 * free of control bytes; a refusal leaves a message that starts "database URL" and never
 * holds the password's bytes (four or more) but where the same URL with the password written
 * over says them too; the same URL gives the same answer again. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/proto/myurl.h"
#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *why)
{
	fprintf(stderr, "myurl: property violated: %s\n", why);
	abort();
}

static void clean(const char *s, size_t max, const char *what)
{
	size_t n = strnlen(s, max + 1);
	if (n > max)
		fail(what);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			fail(what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *url = malloc(size + 1);
	if (!url)
		return 0;
	memcpy(url, data, size);
	url[size] = 0;
	struct myurl u, again;
	char err[AS_ERRLEN] = "", err2[AS_ERRLEN] = "";
	int rc = myurl_parse(url, &u, err);
	if (myurl_parse(url, &again, err2) != rc || (rc == 0 && memcmp(&u, &again, sizeof u)) || strcmp(err, err2))
		fail("not the same answer twice");
	if (rc == 0) {
		clean(u.user, MYURL_USER_MAX, "user");
		clean(u.pass, MYURL_PASS_MAX, "password");
		clean(u.host, MYURL_HOST_MAX, "host");
		clean(u.db, MYURL_DB_MAX, "database");
		clean(u.socket, MYURL_SOCK_MAX, "socket");
		if (!u.user[0] || !u.db[0] || !myurl_is(url))
			fail("taken without a user or a database");
		if (u.socket[0] ? u.socket[0] != '/' || u.host[0] || u.port
				: !u.host[0] || u.port < 1 || u.port > 65535)
			fail("neither a host and port nor a socket alone");
	} else {
		if (rc != AS_EINVAL || strncmp(err, "database URL", 12))
			fail("a refusal without its message");
		/* the password, as written between "user:" and "@", never in the message (unless the
		 * message says it with the password written over: its own words, or the user's) */
		const char *sl = strstr(url, "//"), *at = NULL, *colon = NULL;
		if (sl) { /* the authority: up to the first '/', its last '@', the ':' before that */
			const char *a = sl + 2, *end = a + strcspn(a, "/");
			for (const char *p = a; p < end; p++)
				at = *p == '@' ? p : at;
			colon = at ? memchr(a, ':', (size_t)(at - a)) : NULL;
		}
		if (myurl_is(url) && at && colon && colon < at && at - colon - 1 >= 4) {
			char pw[64];
			size_t n = (size_t)(at - colon - 1) < sizeof pw - 1 ? (size_t)(at - colon - 1) : sizeof pw - 1;
			memcpy(pw, colon + 1, n);
			pw[n] = 0;
			if (strstr(err, pw)) {
				memset(url + (colon + 1 - url), 'x', n);
				char err3[AS_ERRLEN] = "";
				struct myurl w;
				myurl_parse(url, &w, err3);
				if (!strstr(err3, pw))
					fail("the password is in the message");
			}
		}
	}
	explicit_bzero(&u, sizeof u);
	free(url);
	return 0;
}
