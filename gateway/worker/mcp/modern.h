/* MCP 2026-07-28, the stateless revision, as the mcp worker serves it next to the
 * initialize-based ones: no handshake, every request declares its protocol version
 * and the client's capabilities in params._meta, `server/discover` says what the
 * server is, every result says its resultType, and on HTTP the headers repeat what
 * the body says. Pure functions over memory, like mcp.h.
 *
 * Where the specification's schema and the conformance suite
 * (@modelcontextprotocol/conformance 0.2.0-alpha.12) differ, the suite is followed:
 * serverInfo travels in the discover result's _meta, not as a member of its own. */
#ifndef ASSENT_MODERN_H
#define ASSENT_MODERN_H

#include <jansson.h>
#include <stddef.h>

#include "common/util.h"
#include "gateway/worker/mcp/mcp.h"
#include "gateway/worker/mcp/mhttp.h"

#define MCP_VERSION_STATELESS "2026-07-28"
#define MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define MCP_META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define MCP_META_CLIENT "io.modelcontextprotocol/clientInfo"
#define MCP_META_SERVER "io.modelcontextprotocol/serverInfo"

/* Error codes the revision adds. */
#define MCP_HEADER_MISMATCH -32020    /* an HTTP header disagrees with the body (or is missing) */
#define MCP_MISSING_CLIENT_CAP -32021 /* the request needs a capability the client did not declare */
#define MCP_UNSUPPORTED_VERSION -32022

/* How long a client may keep server/discover and tools/list: the tools change only
 * with an upgrade, which restarts the daemon; five minutes bounds how long an old
 * list can outlive one. Both are the same for every caller: cacheScope "public". */
#define MCP_LIST_TTL_MS 300000
#define MCP_STR_(x) #x
#define MCP_STR(x) MCP_STR_(x)
#define MCP_LIST_CACHE_HINTS "\"ttlMs\":" MCP_STR(MCP_LIST_TTL_MS) ",\"cacheScope\":\"public\""

/* 1 when m is a request of the stateless revision: its params._meta names a protocol
 * version, or it is server/discover (which only that revision has). */
int mcp_is_modern(const struct mcp_msg *m);

/* What one stateless request declares (declared, never trusted). */
struct mcp_modern {
	const char *version; /* static: MCP_VERSION_STATELESS */
	struct mcp_client client;
};

/* Check params._meta of a stateless request: an object with protocolVersion a string
 * naming 2026-07-28 and clientCapabilities an object; clientInfo optional (an object
 * with string name/version, copied as declared). Returns 0, or the JSON-RPC error to
 * answer with: *code -32602 (missing or malformed, err says which) or -32022 (another
 * version; *data is the {supported, requested} the revision defines, caller owns). */
int mcp_modern_meta(const json_t *params, struct mcp_modern *out, int *code, json_t **data, char *err);

/* {supported: [the versions we speak], requested} for an UnsupportedProtocolVersionError.
 * New reference, NULL when out of memory. */
json_t *mcp_unsupported_data(const char *requested, size_t len);

/* The server/discover result: resultType, supportedVersions, capabilities, instructions,
 * ttlMs, cacheScope, and _meta[MCP_META_SERVER] = {name, title, version}. New reference. */
json_t *mcp_discover_result(const char *server_version);

/* Make the result line that starts at out->p[start] a 2026-07-28 one: insert
 * `"resultType":"complete"` (and extra, a list of members such as
 * `"ttlMs":1,"cacheScope":"public"`, or NULL) first in its result object. The line must be
 * one the mcp.h builders made: {"jsonrpc":"2.0","id":ID,"result":{...}}. A line that is
 * not a result (an error) is left as it is. 0, or AS_ETOOBIG / AS_EINVAL. */
int mcp_line_complete(struct buf *out, size_t start, const char *extra, char *err);

/* The JSON-RPC error code of an error line the builders made, 0 for any other line. */
int mcp_line_error_code(const char *line, size_t n);
/* The HTTP status a stateless error answers with: 400 for the revision's request errors,
 * 404 for -32601, 500 for internal errors, 200 for anything else (a tool's own error is a
 * result). */
unsigned mcp_http_status(int code);

/* On HTTP, a stateless request's headers must repeat its body: MCP-Protocol-Version the
 * _meta version (when the body names one), Mcp-Method the method, Mcp-Name the tool or
 * prompt name (params.name) or resource (params.uri) of tools/call, prompts/get and
 * resources/read. Header values are compared with surrounding whitespace removed
 * (RFC 9110 5.5), case-sensitively. 0 when they agree, else MCP_HEADER_MISMATCH with msg
 * saying which (printable ASCII, cap bytes). */
int mcp_http_headers_agree(const struct mh_verdict *v, const struct mcp_msg *m, char *msg, size_t cap);

/* ---- multi-round input (SEP-2322): a reviewer's question answered by the client's user ---- */

#define MCP_INPUT_KEY "assent_answer" /* the one input request's key */

/* The InputRequiredResult for the signer's offer ir = {type (input | selection), message,
 * options?, default?, requestState}: one elicitation/create form, whose one field
 * `answer` is free text (input) or one of the options (selection). New reference. */
json_t *mcp_input_required(const json_t *ir);

/* The answer a retried call carries in params.inputResponses[MCP_INPUT_KEY]: an
 * ElicitResult {action: accept | decline | cancel, content: {answer: string}}. 0 with
 * *accepted and *text (NULL unless accepted; borrowed from params), AS_ENOTFOUND when the
 * key is missing (ask again), AS_EINVAL for anything else (err says what). */
int mcp_input_response(const json_t *params, int *accepted, const char **text, char *err);

#endif
