/* The mcp worker's message layer, its private helpers (mcp.c) shared by tools.c and
 * feedback.c: bounded renderings of untrusted bytes, and JSON builders that take every
 * value they are given. Private to gateway/worker/mcp/. */
#ifndef ASSENT_WORKER_MCP_MCPJSON_H
#define ASSENT_WORKER_MCP_MCPJSON_H

#include <jansson.h>
#include <stddef.h>

#include "gateway/worker/mcp/mcp.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* A bounded, printable-ASCII rendering of untrusted bytes for error messages: at most
 * 40 bytes of the value, others as \xNN, "..." when cut; dst holds QBUF bytes. */
#define QBUF 176
const char *mcp_q(char *dst, const char *s, size_t len);
/* A JSON string of s[0..n) cut to max bytes: as is when it is UTF-8, otherwise as
 * printable ASCII (\xNN escapes), so a builder never fails on a bad byte. */
json_t *mcp_safe_string(const char *s, size_t n, size_t max);
char *mcp_dup_n(const char *s, size_t n);
/* The end of mcp_jobj's list: a typed null pointer, which is what va_arg reads there. */
#define JEND ((const char *)NULL)
/* An object of the given members, in order: mcp_jobj("k1", v1, "k2", v2, JEND). Every
 * value is taken, even when building fails (then NULL). A NULL value fails the build. */
json_t *mcp_jobj(const char *key, ...);
/* A one-element array, taking v even on failure. */
json_t *mcp_jarr1(json_t *v);
/* feedback.c: a string argument v named what, of min..max bytes of text a terminal shows
 * as it is (multiline: newlines and tabs too). 0, or AS_EINVAL with err. */
int mcp_arg_str(const json_t *v, const char *what, size_t min, size_t max, int multiline, char *err);
/* A JSON-RPC id (a string or an integer), or -1. */
int mcp_id_read(const json_t *v, struct mcp_id *id);

#endif
