/* Reading and checking an upstreams file (upstreams.h, assent.upstreams(5)). */
#define _GNU_SOURCE
#include "gateway/state/upstreams.h"
#include "gateway/proto/call.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/attr.h"
#include "common/cvjson.h"
#include "common/urlsplit.h"
#include "common/util.h"

/* What a refusal names: the file and the server. */
struct ctx {
	const char *file, *server;
	char *err;
};

static int bad(const struct ctx *c, const char *fmt, ...) AS_PRINTF(2, 3);
static int bad(const struct ctx *c, const char *fmt, ...)
{
	char what[AS_ERRLEN];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (c->server)
		return as_fail(c->err, AS_EINVAL, "%s: server \"%s\": %s", c->file, c->server, what);
	return as_fail(c->err, AS_EINVAL, "%s: %s", c->file, what);
}

/* A name from the file, as a message shows it: printable ASCII, cut. */
static const char *shown(char *dst, size_t cap, const char *s)
{
	size_t i = 0;
	for (; s[i] && i + 4 < cap; i++)
		dst[i] = (unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e || s[i] == '"' ? '?' : s[i];
	snprintf(dst + i, cap - i, "%s", s[i] ? "..." : "");
	return dst;
}

/* jansson's error, as a person reads it: the input it quotes with its bytes escaped
 * (\xNN), not masked, and "'}' expected" after a member said as the comma it usually is. */
static int not_json(const struct ctx *c, const json_error_t *je)
{
	char t[sizeof je->text * 4 + 1], *o = t;
	for (const unsigned char *p = (const unsigned char *)je->text; *p && o + 5 < t + sizeof t; p++)
		o += *p < 0x20 || *p > 0x7e ? snprintf(o, 5, "\\x%02x", *p) : (*o = (char)*p, 1);
	*o = 0;
	const char *near = strstr(t, " near ");
	if (!strncmp(t, "'}' expected", 12) || !strncmp(t, "']' expected", 12))
		return bad(c, "not JSON: a comma is missing before%s (line %d, column %d: a ',' or '%c' was expected)",
			   near ? near + 5 : " this", je->line, je->column, t[1]);
	return bad(c, "not JSON: %s (line %d, column %d)", t, je->line, je->column);
}

/* A copy of a string member of 1..UP_STRING_MAX bytes (0: empty allowed). */
static int str_of(const struct ctx *c, const json_t *v, const char *what, int empty_ok, char **out)
{
	if (!json_is_string(v))
		return bad(c, "\"%s\" must be a string, not %s", what, json_kind(v));
	size_t n = json_string_length(v);
	if ((!n && !empty_ok) || n > UP_STRING_MAX)
		return bad(c, "\"%s\" must be 1 to %u bytes long (it is %zu)", what, UP_STRING_MAX, n);
	if (!(*out = strndup(json_string_value(v), n)))
		return as_fail(c->err, AS_ENOMEM, "out of memory");
	return 0;
}

static int abs_path(const struct ctx *c, const json_t *v, const char *what, char **out)
{
	GUARD(str_of(c, v, what, 0, out));
	return (*out)[0] == '/' ? 0 : bad(c, "\"%s\" must be an absolute path", what);
}

/* An environment variable's name, or an HTTP header's (a token, RFC 9110 5.6.2). */
static int env_header_name_ok(const char *k, int header)
{
	static const char env_first[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_";
	static const char tchar[] = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	size_t n = strlen(k);
	if (n == 0 || n > 256)
		return 0;
	if (header)
		return strspn(k, tchar) == n;
	return strchr(env_first, k[0]) &&
	       strspn(k, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_") == n;
}

/* env (name=value, any bytes in the value but NUL) or headers (token: value without CR, LF
 * or other controls, so that a value can never start another header). */
/* Headers the gate's HTTP client writes itself or that would change the request's framing:
 * an entry may not set them (uhttp.h refuses them too, later, in the worker). */
static const char *const reserved_headers[] = {
    "host",	  "content-length",    "content-type", "accept",  "mcp-session-id", "mcp-protocol-version",
    "connection", "transfer-encoding", "te",	       "trailer", "upgrade",	    "expect",
    "keep-alive", "proxy-connection",  "mcp-method",   "mcp-name"};

static int reserved_header(const char *k)
{
	for (size_t i = 0; i < sizeof reserved_headers / sizeof *reserved_headers; i++)
		if (!strcasecmp(k, reserved_headers[i]))
			return 1;
	return 0;
}

static int pairs_of(const struct ctx *c, const json_t *v, const char *what, int header, struct up_pair **out, size_t *n)
{
	if (!json_is_object(v))
		return bad(c, "\"%s\" must be an object of strings, not %s", what, json_kind(v));
	if (json_object_size(v) > UP_ENV_MAX)
		return bad(c, "\"%s\" has %zu entries; at most %u", what, json_object_size(v), UP_ENV_MAX);
	*out = calloc(json_object_size(v) + 1, sizeof **out);
	if (!*out)
		return as_fail(c->err, AS_ENOMEM, "out of memory");
	const char *k;
	const json_t *x;
	json_object_foreach((json_t *)v, k, x)
	{
		char kb[68];
		if (!env_header_name_ok(k, header))
			return bad(c, "\"%s\": \"%s\" is not a valid %s name", what, shown(kb, sizeof kb, k),
				   header ? "header" : "environment variable");
		if (header && reserved_header(k))
			return bad(c, "\"%s\": \"%s\" is set by assent itself and may not be given", what,
				   shown(kb, sizeof kb, k));
		struct up_pair *p = &(*out)[*n];
		if (!(p->key = strdup(k)))
			return as_fail(c->err, AS_ENOMEM, "out of memory");
		(*n)++;
		char label[300];
		snprintf(label, sizeof label, "%s.%s", what, k); /* k passed name_ok: printable */
		GUARD(str_of(c, x, label, 1, &p->value));
		for (const unsigned char *s = (const unsigned char *)p->value; header && *s; s++)
			if ((*s < 0x20 && *s != '\t') || *s == 0x7f)
				return bad(c, "\"%s\": a header value must not hold control characters", label);
	}
	return 0;
}

static int args_of(const struct ctx *c, const json_t *v, struct upstream *u)
{
	if (!json_is_array(v))
		return bad(c, "\"args\" must be an array of strings, not %s", json_kind(v));
	if (json_array_size(v) > UP_ARGS_MAX)
		return bad(c, "\"args\" has %zu items; at most %u", json_array_size(v), UP_ARGS_MAX);
	if (!(u->args = calloc(json_array_size(v) + 1, sizeof *u->args)))
		return as_fail(c->err, AS_ENOMEM, "out of memory");
	size_t i;
	const json_t *x;
	json_array_foreach(v, i, x)
	{
		char label[32];
		snprintf(label, sizeof label, "args[%zu]", i);
		GUARD(str_of(c, x, label, 1, &u->args[i]));
		u->nargs++;
	}
	return 0;
}

/* "roots": absolute directories the server's roots/list is answered with. */
static int roots_of(const struct ctx *c, const json_t *v, struct upstream *u)
{
	if (!json_is_array(v))
		return bad(c, "\"roots\" must be an array of absolute paths, not %s", json_kind(v));
	if (json_array_size(v) > UP_ROOTS_MAX)
		return bad(c, "\"roots\" has %zu items; at most %u", json_array_size(v), UP_ROOTS_MAX);
	if (!(u->roots = calloc(json_array_size(v) + 1, sizeof *u->roots)))
		return as_fail(c->err, AS_ENOMEM, "out of memory");
	size_t i;
	const json_t *x;
	json_array_foreach(v, i, x)
	{
		char label[32];
		snprintf(label, sizeof label, "roots[%zu]", i);
		GUARD(abs_path(c, x, label, &u->roots[i]));
		u->nroots++;
	}
	return 0;
}

int upstreams_file_uri(const char *path, char *out, size_t max)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;
	if (max < 8)
		return AS_ETOOBIG;
	memcpy(out, "file://", 7);
	n = 7;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		int plain = isalnum(*p) || strchr("-._~/", *p);
		if (n + (plain ? 1 : 3) >= max)
			return AS_ETOOBIG;
		if (plain) {
			out[n++] = (char)*p;
		} else {
			out[n++] = '%';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 15];
		}
	}
	out[n] = 0;
	return 0;
}

/* https://HOST[:PORT][/PATH] or http:// to a loopback host (common/urlsplit.h). */
static int url_of(const struct ctx *c, struct upstream *u)
{
	struct url_parts p;
	char why[AS_ERRLEN];
	if (url_split(u->url, &p, why, sizeof why) != 0)
		return bad(c, "\"url\": %s", why);
	snprintf(u->scheme, sizeof u->scheme, "%s", p.scheme);
	snprintf(u->host, sizeof u->host, "%s", p.host);
	u->port = p.port;
	if (!(u->path = strdup(*p.path ? p.path : "/")))
		return as_fail(c->err, AS_ENOMEM, "out of memory");
	return 0;
}

static int name_valid(const char *name)
{
	return up_name_ok(name, strlen(name));
}

static const char *const stdio_only[] = {"command", "args", "env", "cwd", "uid"};
static const char *const http_only[] = {"url", "headers", "ca"};

static int server_of(struct ctx *c, const char *name, const json_t *v, struct upstream *u)
{
	if (!json_is_object(v))
		return bad(c, "must be an object, not %s", json_kind(v));
	snprintf(u->name, sizeof u->name, "%s", name);
	const json_t *type = json_object_get(v, "type"), *cmd = json_object_get(v, "command"),
		     *url = json_object_get(v, "url");
	if (!cmd == !url)
		return bad(c, "needs exactly one of \"command\" (a local server over stdio) and \"url\" "
			      "(Streamable HTTP)");
	u->kind = cmd ? UP_STDIO : UP_HTTP;
	if (type) {
		const char *t = json_string_value(type);
		if (!t)
			return bad(c, "\"type\" must be a string, not %s", json_kind(type));
		if (!strcmp(t, "sse"))
			return bad(c, "\"type\": \"sse\" (the 2024-11-05 HTTP+SSE transport) is not served: use "
				      "the server's Streamable HTTP endpoint");
		int ok =
		    u->kind == UP_STDIO ? !strcmp(t, "stdio") : !strcmp(t, "http") || !strcmp(t, "streamable-http");
		char tb[36];
		if (!ok)
			return bad(c, "\"type\" is \"%s\", but the entry has a%s", shown(tb, sizeof tb, t),
				   u->kind == UP_STDIO ? " \"command\" (type stdio)" : " \"url\" (type http)");
	}
	const char *const *wrong = u->kind == UP_STDIO ? http_only : stdio_only;
	size_t nwrong = u->kind == UP_STDIO ? 3 : 5;
	for (size_t i = 0; i < nwrong; i++)
		if (json_object_get(v, wrong[i]))
			return bad(c, "\"%s\" belongs to %s server, and this one has a%s", wrong[i],
				   u->kind == UP_STDIO ? "an HTTP" : "a stdio",
				   u->kind == UP_STDIO ? " \"command\"" : "n \"url\"");
	const json_t *x;
	/* assent's own: "prefix": "" serves the tools under their own names (a client written
	 * for this one server, the conformance suite); any other value is refused. */
	if ((x = json_object_get(v, "prefix"))) {
		if (!json_is_string(x) || json_string_length(x) != 0)
			return bad(c,
				   "\"prefix\": only \"\" (the tools under their own names) is accepted; "
				   "leave it out for %s%sTOOL",
				   u->name, UP_SEPARATOR);
		u->bare = 1;
	}
	if ((x = json_object_get(v, "roots")))
		GUARD(roots_of(c, x, u));
	if (u->kind == UP_STDIO) {
		GUARD(str_of(c, cmd, "command", 0, &u->command));
		if ((x = json_object_get(v, "args")))
			GUARD(args_of(c, x, u));
		if ((x = json_object_get(v, "env")))
			GUARD(pairs_of(c, x, "env", 0, &u->env, &u->nenv));
		if ((x = json_object_get(v, "cwd")))
			GUARD(abs_path(c, x, "cwd", &u->cwd));
		if ((x = json_object_get(v, "uid"))) {
			if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) >= 4294967295LL)
				return bad(c, "\"uid\" must be a user id, a whole number from 0 to 4294967294");
			u->uid = (uid_t)json_integer_value(x);
			u->has_uid = 1;
		}
		return 0;
	}
	GUARD(str_of(c, url, "url", 0, &u->url));
	GUARD(url_of(c, u));
	if ((x = json_object_get(v, "headers")))
		GUARD(pairs_of(c, x, "headers", 1, &u->headers, &u->nheaders));
	if ((x = json_object_get(v, "ca"))) {
		GUARD(abs_path(c, x, "ca", &u->ca));
		if (strcmp(u->scheme, "https"))
			return bad(c, "\"ca\" pins a CA for TLS: the url must be https://");
	}
	return 0;
}

int upstreams_parse(const char *text, size_t n, const char *file, struct upstreams **out, char *err)
{
	*out = NULL;
	struct ctx c = {.file = file ? file : "upstreams", .err = err};
	if (n > UP_FILE_MAX)
		return as_fail(err, AS_ETOOBIG, "%s: over the limit of %u bytes", c.file, UP_FILE_MAX);
	json_error_t je;
	json_t *root = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return not_json(&c, &je);
	const json_t *servers = json_object_get(root, "mcpServers");
	int rc = 0;
	if (!json_is_object(root))
		rc = bad(&c, "must be a JSON object with \"mcpServers\", not %s", json_kind(root));
	else if (!json_is_object(servers))
		rc = bad(&c, "needs an \"mcpServers\" object (as in an MCP client's configuration)%s",
			 servers ? ", not another type" : "");
	else if (json_object_size(servers) == 0)
		rc = bad(&c, "\"mcpServers\" lists no server");
	else if (json_object_size(servers) > UP_MAX)
		rc = bad(&c, "\"mcpServers\" lists %zu servers; at most %u", json_object_size(servers), UP_MAX);
	struct upstreams *u = rc ? NULL : calloc(1, sizeof *u);
	if (!rc && (!u || !(u->u = calloc(json_object_size(servers), sizeof *u->u))))
		rc = as_fail(err, AS_ENOMEM, "out of memory");
	const char *name;
	const json_t *v;
	if (!rc)
		json_object_foreach((json_t *)servers, name, v)
		{
			char nb[UP_NAME_MAX + 8];
			c.server = shown(nb, sizeof nb, name);
			if (!name_valid(name)) {
				rc = bad(&c,
					 "a server's name must be 1 to %u letters, digits, '-' or '_', not starting "
					 "or ending with '_' and without \"" UP_SEPARATOR "\" (agents see "
					 "NAME" UP_SEPARATOR "TOOL)",
					 UP_NAME_MAX);
				break;
			}
			const json_t *dis = json_object_get(v, "disabled"); /* Cursor's way to keep an entry off */
			if (json_is_true(dis))
				continue;
			if (dis && !json_is_boolean(dis)) {
				rc = bad(&c, "\"disabled\" must be true or false");
				break;
			}
			rc = server_of(&c, name, v, &u->u[u->n]);
			u->n++; /* counted even when refused, so that upstreams_free frees what it holds */
			if (rc)
				break;
		}
	c.server = NULL; /* it pointed into the loop's buffer */
	if (!rc && u->n == 0)
		rc = bad(&c, "every server in \"mcpServers\" is disabled");
	json_decref(root);
	if (rc) {
		upstreams_free(u);
		return rc;
	}
	*out = u;
	return 0;
}

int upstreams_load(const char *path, struct upstreams **out, char *err)
{
	struct buf b;
	buf_init(&b, UP_FILE_MAX + 1);
	int rc = file_read(path, UP_FILE_MAX, &b, err);
	if (rc == 0)
		rc = upstreams_parse((const char *)b.p, b.len, path, out, err);
	else if (rc == AS_ETOOBIG)
		rc = as_fail(err, rc, "%s: over the limit of %u bytes", path, UP_FILE_MAX);
	buf_free(&b);
	return rc;
}

static void pairs_free(struct up_pair *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++) {
		free(p[i].key);
		free(p[i].value);
	}
	free(p);
}

void upstreams_free(struct upstreams *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->n; i++) {
		struct upstream *x = &u->u[i];
		free(x->command);
		for (size_t k = 0; k < x->nargs; k++)
			free(x->args[k]);
		free(x->args);
		pairs_free(x->env, x->nenv);
		free(x->cwd);
		free(x->url);
		free(x->path);
		pairs_free(x->headers, x->nheaders);
		free(x->ca);
		for (size_t k = 0; x->roots && x->roots[k]; k++) /* the one a refusal left too */
			free(x->roots[k]);
		free(x->roots);
	}
	free(u->u);
	free(u);
}
