/* The upstream MCP servers assent stands in front of (issue 15), as an operator lists
 * them: the `mcpServers` JSON MCP clients already use (claude_desktop_config.json,
 * .mcp.json, Cursor's mcp.json), so an existing client configuration is handed over as
 * it is, plus assent's own optional fields (cwd, uid, ca, prefix, roots). assent.upstreams(5) is the
 * reference. This module only reads and checks the file: every refusal names the file,
 * the server and what is wrong. Pure over memory (upstreams_parse) plus one file read. */
#ifndef ASSENT_UPSTREAMS_H
#define ASSENT_UPSTREAMS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define UP_FILE_MAX (256u << 10)
#define UP_MAX 64	   /* servers in one file */
#define UP_NAME_MAX 32	   /* [A-Za-z0-9_-], no "__": agents see UPSTREAM__TOOL */
#define UP_ARGS_MAX 256	   /* args of one command */
#define UP_ENV_MAX 256	   /* env entries, and headers, of one server */
#define UP_STRING_MAX 4096 /* any one string */
#define UP_SEPARATOR "__"  /* between an upstream's name and its tool's */
#define UP_ROOTS_MAX 64	   /* "roots" of one server */

enum up_kind { UP_STDIO = 1, UP_HTTP };

struct up_pair {
	char *key, *value;
};

struct upstream {
	char name[UP_NAME_MAX + 1];
	enum up_kind kind;
	int bare; /* "prefix": "": its tools are served under their own names, not NAME__TOOL */
	/* assent's own "roots": absolute directories, the answer to the server's roots/list when
	 * no one call's client can answer it (at start-up, or with several calls in flight) */
	char **roots;
	size_t nroots;
	/* UP_STDIO: run command with args, in cwd (NULL: the daemon's), as uid when has_uid,
	 * with exactly env as its environment (the server's credentials live here) */
	char *command;
	char **args;
	size_t nargs;
	struct up_pair *env;
	size_t nenv;
	char *cwd;
	uid_t uid;
	int has_uid;
	/* UP_HTTP: Streamable HTTP at url (https://, or http:// to a loopback address), each
	 * request with headers; TLS verified against the system CA store, or ca (a PEM file) */
	char *url;
	char scheme[8]; /* "https" | "http" */
	char host[256]; /* the name or address, without brackets */
	uint16_t port;
	char *path; /* from the first '/', "/" when none */
	struct up_pair *headers;
	size_t nheaders;
	char *ca;
};

struct upstreams {
	struct upstream *u;
	size_t n;
};

/* Parse and check a whole file's text. 0 with *out (upstreams_free), or AS_EINVAL /
 * AS_ETOOBIG / AS_ENOMEM with err ("FILE: server \"NAME\": what is wrong"). file names
 * the file in messages. */
int upstreams_parse(const char *text, size_t n, const char *file, struct upstreams **out, char *err);
/* Read path (at most UP_FILE_MAX bytes) and parse it. */
int upstreams_load(const char *path, struct upstreams **out, char *err);
void upstreams_free(struct upstreams *u);
/* path (absolute) as a file:// URI into out (max bytes with its NUL; 3 * UP_STRING_MAX + 8
 * holds any): bytes other than unreserved ones and '/' percent-encoded. 0, or AS_ETOOBIG. */
int upstreams_file_uri(const char *path, char *out, size_t max);

#endif
