/* The canonical call of the gate (issue 15): a tools/call an agent made of an upstream
 * MCP server (or a resources/read, prompts/get, completion/complete), as the mcp worker
 * encodes it, the signer checks, digests, decides and
 * records, and the upstream worker forwards once dispatched. One CBOR map,
 *   {"method": "tools/call", "upstream": NAME, "tool": TOOL, "arguments": {...}, "input"?: {...}}
 * encoded canonically, so its sha256 names exactly one call. JSON arguments become CBOR
 * as they are, except that a JSON number with a fraction or exponent (CBOR here has no
 * floats) becomes a byte string holding its shortest round-trip decimal text: JSON has
 * no bytes, so a byte string in a call always means such a number, and the upstream
 * receives the same number the agent sent (common/cvjson.h: CVJ_REALS_BYTES, the one bridge). */
#ifndef ASSENT_PROTO_CALL_H
#define ASSENT_PROTO_CALL_H

#include <jansson.h>
#include <stddef.h>

#include "common/cbor.h"
#include "common/util.h"

#define CALL_MAX (512u << 10) /* encoded bytes of one call: larger arguments are refused */
#define CALL_TOOL_MAX 128     /* an upstream's tool name, as MCP bounds it */
#define CALL_DEPTH 16	      /* nesting of the arguments */

/* An upstream's name: 1 to 32 of [A-Za-z0-9_-], not starting or ending with '_', without
 * "__" (the separator agents see: NAME__TOOL). A tool's: 1 to CALL_TOOL_MAX of
 * [A-Za-z0-9_.-], as MCP names tools. 1 when p[0..n) is one. */
int up_name_ok(const char *p, size_t n);
int call_tool_name_ok(const char *p, size_t n);

#define CALL_URI_MAX 4096 /* a resource's URI */

/* The same for any method the gate forwards: tools/call (name: the tool; obj: its
 * arguments), prompts/get (the prompt; its arguments), resources/read (the URI; obj NULL),
 * completion/complete (name NULL; obj: the request's params, ref and argument). The map's
 * keys: method, upstream, and tool | prompt | uri, arguments | params. */
int call_encode_ex(const char *method, const char *upstream, const char *name, const json_t *obj, struct buf *out,
		   char *err);

/* The same with a retry's answers (MCP 2026-07-28 multi-round input, SEP-2322): input, when
 * not NULL, is the request's params.inputResponses, an object of at most CALL_INPUTS_MAX
 * objects, kept under the key "input" of a tools/call or prompts/get. They are part of what
 * runs: digested, shown to reviewers and forwarded with the call. */
#define CALL_INPUTS_MAX 16
int call_encode_input(const char *method, const char *upstream, const char *name, const json_t *obj,
		      const json_t *input, struct buf *out, char *err);
/* A checked call's "input" as JSON (a new reference), NULL when it has none. */
json_t *call_input_json(const struct cv *c);

/* A checked call's method (a static string), and its name (tool, prompt or URI; "" for a
 * completion) copied into out (max bytes with the NUL; cut to "" when it does not fit). */
const char *call_method(const struct cv *c);
size_t call_name(const struct cv *c, char *out, size_t max);

/* The mcp worker: encode upstream, tool and args (an object; NULL: {}) into out. 0, or
 * AS_EINVAL / AS_ETOOBIG with err naming what is wrong. */
int call_encode(const char *upstream, const char *tool, const json_t *args, struct buf *out, char *err);

/* The signer and the upstream worker: 0 when c is a call as call_encode builds it (keys,
 * types, names of [A-Za-z0-9_.-] within their bounds, arguments JSON-shaped); else
 * AS_ECORRUPT with err. */
int call_check(const struct cv *c, char *err);

/* A checked call's parts: its upstream and tool (NUL-terminated copies; the tool "" for
 * another method than tools/call and prompts/get) and its arguments or params as JSON
 * (a new reference; {} for resources/read; NULL when out of memory). */
void call_names(const struct cv *c, char upstream[33], char tool[CALL_TOOL_MAX + 1]);
json_t *call_args_json(const struct cv *c);

/* Any JSON value (an upstream's result, a tool catalog) as CBOR the same way, at most max
 * bytes, appended to out; and back. The signer reads what an upstream said only so. */
int call_value_encode(const json_t *j, size_t max, struct buf *out, char *err);
json_t *call_value_json(const struct cv *v);

/* "sha256:" and the hex digest of the encoded call, NUL-terminated (72 bytes). */
void call_digest(const uint8_t *p, size_t n, char out[72]);

#endif
