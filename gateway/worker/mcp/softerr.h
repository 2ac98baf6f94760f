/* Soft errors: tool results that report a failure as data instead of raising
 * ({"status": "failed", "error": "disk full"}), so that call records count them as
 * errors (issue 16; the FastMCP Feedback seed, "Errors returned as data"). A pure
 * classifier for the jailed mcp worker: no I/O, no files, no state that changes; jansson
 * only (and it must have been seeded before the jail, NOTES.md). Classifying never
 * changes the result: the client receives it as it was.
 *
 * The rules, exactly. `result` is an MCP CallToolResult object as the client receives it
 * (the caller passes results only, never a JSON-RPC error: a protocol error is an error,
 * not a soft one).
 *
 *   1. The payload. The result's structuredContent when it is an object. Else, the first
 *      item of the result's content array that is an object with "type": "text" and a
 *      string "text", when that text is at most SOFTERR_TEXT_MAX bytes and is, as a
 *      whole, a JSON object (jansson; \u0000 allowed, nesting at most 2048, of duplicate
 *      keys the last counts); later text items are never looked at. Else there is no payload.
 *   2. A payload is a soft error when, among its own members (nested objects and arrays
 *      never count):
 *        - "ok" or "success" is JSON false (not 0, null, "false" or a missing member), or
 *        - "status" or "state" is a string equal, ASCII case-insensitively and over its
 *          whole length, to "error", "failed", "failure" or one of the operator's
 *          statuses ("Failed" is one, "failing" and " failed" are not).
 *   3. The result is a soft error too when its "isError" is JSON true, whatever its
 *      payload says.
 *   4. The detail of a payload: the first non-empty string among its members "error",
 *      "message", "detail", "reason", in that order; an "error" that is an object gives
 *      its own "message" member instead (when that is a non-empty string).
 *   5. The message, first that applies:
 *        - a status triggered rule 2: "KEY=VALUE", then ": DETAIL" when there is a detail
 *          (KEY is "status", else "state"; VALUE as the payload spells it):
 *          "status=failed: disk full";
 *        - a payload with a detail: the detail ("disk full");
 *        - "ok" triggered rule 2: "ok=false"; "success" did: "success=false";
 *        - isError (rule 3 alone): the text of the first text item when it is not
 *          empty (any size, JSON or not), else "isError".
 *      Bytes that are not UTF-8, and NUL, are written as U+FFFD. The message is cut at a
 *      character boundary to fit msgmax bytes with its NUL, no marker added. It is NOT
 *      redacted: whoever stores it redacts it first (common/redact.h), as any error text. */
#ifndef ASSENT_MCP_SOFTERR_H
#define ASSENT_MCP_SOFTERR_H

#include <jansson.h>
#include <stddef.h>

#define SOFTERR_TEXT_MAX (64u << 10) /* a text item larger than this is not parsed: 64 KiB */
#define SOFTERR_STATUSES_MAX 32	     /* operator statuses, at most */
#define SOFTERR_STATUS_MAX 64	     /* bytes of one operator status, at most (at least 1) */

/* Operator-added status values (the seed's extra_statuses), [A-Za-z0-9_.-], compared
 * ASCII case-insensitively. The caller owns the strings; they must outlive every
 * softerr_classify call that uses them. */
struct softerr_rules {
	const char *const *statuses;
	size_t nstatuses;
};

/* 0 when r is usable by softerr_classify: at most SOFTERR_STATUSES_MAX statuses, each
 * 1..SOFTERR_STATUS_MAX bytes of [A-Za-z0-9_.-]. r NULL, or no statuses, is fine.
 * Else AS_EINVAL with a message in err (AS_ERRLEN bytes, may be NULL) naming the
 * status by its index and what is wrong with it. Checked once, at start. */
int softerr_rules_check(const struct softerr_rules *r, char *err);

/* 1 when result is a soft error by the rules above, its message written into msg (at
 * most msgmax bytes with the NUL; nothing written when msg is NULL or msgmax is 0);
 * else 0, msg left as it was. A result that is NULL or not an object is not a soft error.
 * r: rules that passed softerr_rules_check, or NULL for the built-in statuses only.
 * The same result and rules always give the same answer and message. */
int softerr_classify(const json_t *result, const struct softerr_rules *r, char *msg, size_t msgmax);

#endif
