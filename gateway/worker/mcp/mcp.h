/* The MCP / JSON-RPC 2.0 message layer of the jailed mcp worker: parse one line of
 * untrusted bytes into a classified message, answer the protocol's own methods
 * (initialize, tools/list), validate tool arguments into a normalised request, and
 * build every outgoing line. Pure functions over memory: no I/O, no files, no
 * sockets, no global state (jansson must have been seeded before the jail, NOTES.md).
 *
 * Protocol revisions: 2025-11-25 and 2025-06-18 (initialize-based). JSON-RPC batches
 * are not part of them: a JSON array is an invalid request. The stateless 2026-07-28
 * revision (modern.h) adds server/discover to the table in mcp.c and reads
 * params._meta; nothing here assumes a session beyond what the caller keeps.
 *
 * Ownership: struct mcp_msg owns its parsed JSON (mcp_msg_free); pointers into it
 * (method, params) live as long as the message. struct mcp_feedback owns copies of
 * everything (mcp_feedback_free). Builders append to a struct buf whose max the
 * caller chose; functions documented as stealing a json_t take the reference even
 * when they fail. */
#ifndef ASSENT_MCP_H
#define ASSENT_MCP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/redact.h"
#include "common/util.h"
#include "gateway/proto/limits.h" /* the limits the signer checks too: MCP_MESSAGE_MAX ... */

/* ---- limits (each checked before the work it bounds; shared ones in gateway/proto/limits.h) ---- */
#define MCP_LINE_MAX (4u << 20) /* one incoming line, without its newline: 4 MiB */
#define MCP_OUT_MAX (4u << 20)	/* the largest line the builders are meant to produce */
#define MCP_DEPTH_MAX 64	/* array/object nesting of a message, counted on the raw bytes */
#define MCP_WAIT_MAX 50		/* get_feedback wait_seconds: under the 60 s client default */
#define MCP_WAIT_DEFAULT 30
#define MCP_REASON_MAX 512 /* notifications/cancelled reason kept, bytes */

/* ---- JSON-RPC error codes ---- */
#define MCP_PARSE_ERROR -32700	    /* not JSON (id null) */
#define MCP_INVALID_REQUEST -32600  /* JSON, but not a valid JSON-RPC 2.0 message for us */
#define MCP_METHOD_NOT_FOUND -32601 /* decided by the dispatcher: see mcp_method_known */
#define MCP_INVALID_PARAMS -32602
#define MCP_INTERNAL_ERROR -32603

#define MCP_VERSION_LATEST "2025-11-25"
#define MCP_VERSION_PREVIOUS "2025-06-18"
#define MCP_SERVER_NAME "assent"

/* What the server tells agents at initialize (the `instructions` field). */
extern const char mcp_instructions[];

/* ---- parsing ---- */

enum mcp_kind {
	MCP_MSG_INVALID = 0,  /* answer with code when `answer` is set */
	MCP_MSG_REQUEST,      /* method and id: must be answered */
	MCP_MSG_NOTIFICATION, /* method, no id: never answered */
	MCP_MSG_RESPONSE,     /* result or error to a request of ours: never answered */
};

enum mcp_id_type { MCP_ID_NONE = 0, MCP_ID_NULL, MCP_ID_INT, MCP_ID_STR };

/* A request id or progress token: a string or an integer, echoed exactly. */
struct mcp_id {
	enum mcp_id_type t;
	json_int_t i;
	size_t len; /* MCP_ID_STR: bytes in s (no NUL inside: jansson refuses \u0000) */
	char s[MCP_ID_MAX + 1];
};

enum mcp_method {
	MCP_M_UNKNOWN = 0,
	MCP_M_INITIALIZE,
	MCP_M_PING,
	MCP_M_TOOLS_LIST,
	MCP_M_TOOLS_CALL,
	MCP_M_LOGGING_SET_LEVEL,
	MCP_M_INITIALIZED,	  /* notifications/initialized */
	MCP_M_CANCELLED,	  /* notifications/cancelled */
	MCP_M_PROGRESS,		  /* notifications/progress (for requests of ours) */
	MCP_M_ROOTS_LIST_CHANGED, /* notifications/roots/list_changed: nothing to do */
	MCP_M_DISCOVER,		  /* server/discover (2026-07-28, modern.h) */
	MCP_M_TASKS_GET,	  /* tasks/get (tasks.h) */
	MCP_M_TASKS_RESULT,	  /* tasks/result (2025-11-25 only) */
	MCP_M_TASKS_LIST,	  /* tasks/list (2025-11-25 only) */
	MCP_M_TASKS_CANCEL,	  /* tasks/cancel */
	MCP_M_TASKS_UPDATE,	  /* tasks/update (the 2026-07-28 extension only) */
	MCP_M_ASSENT_DEFAULTS,	  /* notifications/assent/defaults: the stdio bridge's (mcp_defaults) */
	MCP_M_LISTEN,		  /* subscriptions/listen (2026-07-28, listen.h) */
};

struct mcp_msg {
	enum mcp_kind kind;
	struct mcp_id id;   /* requests and responses; MCP_ID_NULL when an error's id is unknown */
	const char *method; /* NUL-terminated, in root; NULL unless request or notification */
	size_t method_len;
	enum mcp_method m;	      /* MCP_M_UNKNOWN for names not in the table */
	const json_t *params;	      /* an object, or NULL when absent */
	const json_t *result, *error; /* responses: exactly one is set */
	struct mcp_id progress_token; /* params._meta.progressToken of a request, MCP_ID_NONE if none */
	int code;		      /* MCP_MSG_INVALID: the JSON-RPC error code */
	int answer;		      /* MCP_MSG_INVALID: 1 when an error must be sent (0 for
				       * notifications, responses and blank lines) */
	json_t *root;		      /* owned */
};

/* Parse one line (the bytes between two newlines; a trailing '\r' is whitespace).
 * Returns 0 for a request, notification or response, and AS_EINVAL (AS_ETOOBIG
 * for a line over MCP_LINE_MAX, AS_ENOMEM) for anything else, with out->kind ==
 * MCP_MSG_INVALID, out->code the error to answer with, out->answer whether to
 * answer at all, out->id the id when one could be read (else MCP_ID_NULL), and err
 * saying what was wrong in printable ASCII. Codes:
 *   -32700  not JSON: syntax, invalid UTF-8, \u0000, numbers jansson cannot hold
 *   -32600  over MCP_LINE_MAX (not parsed), nesting over MCP_DEPTH_MAX (counted before
 *           parsing), a duplicate key, not an object, a batch (array), jsonrpc not
 *           exactly "2.0", id not a string or integer (or a string over MCP_ID_MAX),
 *           method not a string, params not an object or array, no method and no
 *           result/error, or both result and error
 *   -32602  params an array (valid JSON-RPC, but MCP params are objects), or
 *           params._meta.progressToken neither a string nor an integer
 * An empty or all-whitespace line is MCP_MSG_INVALID with answer 0 (ignored).
 * A transport that meets a longer line stops buffering at MCP_LINE_MAX + 1 bytes,
 * skips to the next newline and passes the length it saw (line may then be NULL),
 * to get the -32600.
 * out is always initialised: call mcp_msg_free whatever the result. */
int mcp_parse_line(const char *line, size_t len, struct mcp_msg *out, char *err);
/* An id as JSON: its integer or string, or null (MCP_ID_NULL, MCP_ID_NONE). New reference. */
json_t *mcp_id_json(const struct mcp_id *id);
void mcp_msg_free(struct mcp_msg *m);

/* The method table. mcp_method_known: 1 when `name` is served as that kind
 * (MCP_MSG_REQUEST or MCP_MSG_NOTIFICATION). A request for an unknown method is
 * answered -32601; an unknown notification is ignored (JSON-RPC forbids answering). */
enum mcp_method mcp_method_lookup(const char *name, size_t len, enum mcp_kind *kind);
int mcp_method_known(const char *name, size_t len, enum mcp_kind kind);

/* ---- initialize ---- */

/* The version we answer: the client's when it is one we speak, else our latest. */
const char *mcp_negotiate_version(const char *requested);

/* Copy a declared string (a JSON string) into dst: cut to max bytes at a character
 * boundary, with what a terminal would act on or reorder (controls, bidi overrides)
 * turned into '?': the reviewer sees the client's declared name. */
void mcp_copy_declared(char *dst, size_t max, const json_t *s);

/* What a client declared at initialize: recorded as declared, never trusted. */
struct mcp_client {
	const char *version; /* negotiated (static string) */
	char name[MCP_NAME_MAX + 1], client_version[MCP_NAME_MAX + 1];
	int elicitation, roots, sampling; /* capabilities it declared */
	int tasks;			  /* 2026-07-28: it declared the tasks extension (tasks.h) */
};

/* Validate initialize params (protocolVersion a string; capabilities an object when
 * present; clientInfo an object with string name and version when present, copied
 * cut to MCP_NAME_MAX bytes with control and bidi characters shown as '?') and
 * build the result: protocolVersion, capabilities
 * {tools: {listChanged: false}, logging: {}}, serverInfo {name "assent", title, version},
 * instructions. Returns 0 with *result (caller owns), or AS_EINVAL meaning -32602
 * with err saying why. */
int mcp_initialize(const json_t *params, const char *server_version, struct mcp_client *client, json_t **result,
		   char *err);

/* ---- logging ---- */

enum mcp_log_level {
	MCP_LOG_DEBUG = 0,
	MCP_LOG_INFO,
	MCP_LOG_NOTICE,
	MCP_LOG_WARNING,
	MCP_LOG_ERROR,
	MCP_LOG_CRITICAL,
	MCP_LOG_ALERT,
	MCP_LOG_EMERGENCY,
};
/* logging/setLevel params: {"level": one of the RFC 5424 names}. AS_EINVAL: -32602. */
int mcp_log_set_level(const json_t *params, enum mcp_log_level *out, char *err);
const char *mcp_log_level_name(enum mcp_log_level l);

/* ---- tools ---- */

enum mcp_tool {
	MCP_TOOL_UNKNOWN = 0,
	MCP_TOOL_REQUEST_FEEDBACK,
	MCP_TOOL_GET_FEEDBACK,
	MCP_TOOL_LIST_PENDING,
	MCP_TOOL_SUBMIT_FEEDBACK, /* defined for reviewers; the gateway refuses it for agents */
};

/* {"tools": [...]}: each with name, title, description, inputSchema and outputSchema
 * (JSON Schema objects of "type": "object"). New reference, NULL when out of memory. */
json_t *mcp_tools_list(void);
/* The whole tools/list answer line for request id, appended to out without parsing
 * or printing the definitions (the fast path: byte for byte what mcp_line_result
 * makes of mcp_tools_list()). */
int mcp_line_tools_list(struct buf *out, const struct mcp_id *id, char *err);
/* The same with more tools after assent's own: extra is the text of JSON objects separated by
 * commas (the upstreams' tools, as the signer renamed them), extran 0 for none. */
int mcp_line_tools_list_with(struct buf *out, const struct mcp_id *id, const char *extra, size_t extran, char *err);

/* tools/call params: name a string naming one of our tools, arguments an object
 * (absent or null: treated as {}). AS_EINVAL means -32602 (the spec's answer to an
 * unknown tool and a malformed call); argument errors are the tool's to report, as
 * isError results. *args is borrowed from params, NULL when absent. */
int mcp_tools_call(const json_t *params, enum mcp_tool *tool, const json_t **args, char *err);

/* notifications/cancelled params: requestId (string or integer) and an optional
 * reason (copied, cut to MCP_REASON_MAX bytes at a character boundary). */
int mcp_cancelled(const json_t *params, struct mcp_id *request_id, char reason[MCP_REASON_MAX + 1], char *err);

/* notifications/assent/defaults params, which `assentd --stdio` sends first on its
 * connection: timeoutSeconds, the client's own FEEDBACK_TIMEOUT_SECONDS (an integer
 * 1..MCP_TIMEOUT_MAX), the default of every request_feedback on that connection that
 * gives no timeout_override. It is the agent's own default, asking no more than a
 * timeout_override on each call would: the signer caps it alike. *timeout is 0 on error. */
int mcp_defaults(const json_t *params, uint32_t *timeout, char *err);

/* ---- request_feedback ---- */

enum mcp_fb_type { MCP_FB_APPROVAL = 0, MCP_FB_INPUT, MCP_FB_SELECTION, MCP_FB_CONFIRMATION };
const char *mcp_fb_type_name(enum mcp_fb_type t);

struct mcp_subject {
	char name[MCP_NAME_MAX + 1];
	size_t name_len;
	char sha256[65];  /* lowercase hex */
	int computed;	  /* 1: hashed here from content; 0: asserted by the agent */
	uint8_t *content; /* owned; NULL when only a digest was given */
	size_t content_len;
};

/* A validated, normalised request_feedback call. Strings are NUL-terminated copies
 * (no NUL inside). */
struct mcp_feedback {
	enum mcp_fb_type type;
	char *message;
	size_t message_len;
	json_t *context; /* a string or an object (a deep copy), NULL when absent */
	char **options;	 /* noptions strings; selection only */
	size_t *option_len;
	size_t noptions;
	char *dflt; /* `default`, NULL when absent; input and selection only */
	size_t dflt_len;
	uint32_t timeout; /* timeout_override seconds, 0 when absent */
	struct mcp_subject subjects[MCP_SUBJECTS_MAX];
	size_t nsubjects;
	char audience[MCP_AUDIENCE_MAX + 1]; /* "" when absent */
	int wait;			     /* 1 (default): block until decided; 0: return the session_id */
	int redacted;			     /* set by mcp_feedback_redact */
	int truncated;			     /* the context was cut to its bound */
	struct redact_stats stats;
};

/* Validate request_feedback arguments (args may be NULL: no arguments), every size
 * checked before anything is copied. Optional arguments given as null count as
 * absent. Unknown arguments are refused. Each error names the argument and what was
 * expected (e.g. "subject[1].digest.sha256: expected 64 lowercase hex digits, got 63
 * characters"): send it back as an isError result. Rules beyond the schema:
 *   - message: 1..MCP_MESSAGE_MAX bytes; no control characters but \t, \n and \r\n,
 *     no C1 controls and no bidirectional overrides (U+202A-202E, U+2066-2069): a
 *     terminal reviewer must see exactly the text that was approved
 *   - options: selection only (and required there), 1..MCP_OPTIONS_MAX distinct
 *     strings of 1..MCP_OPTION_MAX bytes, no control characters at all
 *   - default: input and selection only (an approval needs an explicit decision;
 *     Enter must never approve); for a selection it must be one of the options
 *   - context: a string or an object, nested at most MCP_CONTEXT_DEPTH deep
 *   - subject: an object or an array of 1..MCP_SUBJECTS_MAX objects {name, digest:
 *     {sha256}} and/or {name, content}; content is standard base64 (whitespace
 *     ignored), at most MCP_CONTENT_MAX bytes decoded over all subjects; given both,
 *     the digest must match the content; names distinct
 *   - timeout_override: an integer 1..MCP_TIMEOUT_MAX; audience [A-Za-z0-9._:/-]{1,128}
 * On error *out holds nothing (it is still safe to mcp_feedback_free). */
int mcp_check_request_feedback(const json_t *args, struct mcp_feedback *out, char *err);
void mcp_feedback_free(struct mcp_feedback *f);

/* Redact message, options, default and context (redact.h), then bound the context
 * to context_max bytes (0: REDACT_CONTEXT_MAX; at most MCP_ACTION_MAX / 2, so the
 * action always fits). Options and default are redacted too, since they reach the
 * ledger; a selection then answers with the redacted text the reviewer saw. A
 * message, option or default longer than its maximum after redaction is refused
 * (AS_ETOOBIG, naming it). Sets f->redacted. */
int mcp_feedback_redact(struct mcp_feedback *f, const struct redact_rules *r, size_t context_max, char *err);

/* The rules the worker redacts requests with: the built-in ones, marks in view style
 * ("[secret: N chars]"), since what it redacts is what reviewers read. */
extern const struct redact_rules mcp_view_rules;

/* The canonical CBOR (common/cbor.h) of the action, which the action digest covers:
 * a map of
 *   type, message                                  text
 *   context     (when given)   the redacted, bounded value: objects as maps, arrays,
 *               text, integers, true/false/null; a JSON real becomes the text of its
 *               shortest round-trip decimal form (the ledger holds no floats; the
 *               reviewer sees the same text)
 *   options     (selection)    array of text
 *   default     (when given)   text
 *   subject     (when given)   array of maps {name, digest: {sha256: hex text},
 *                              computed: bool, size: uint (computed only)}
 *   audience    (when given)   text
 * timeout_override and wait are how to ask, not what is asked: they are not in it.
 * Subject bytes are not either (their digest is). Refuses (AS_EINVAL) a request
 * that mcp_feedback_redact has not processed. Appends to out (give it a max of at
 * least MCP_ACTION_MAX). */
int mcp_feedback_action(const struct mcp_feedback *f, struct buf *out, char *err);

/* get_feedback arguments: session_id (required, [A-Za-z0-9._-]{1,64}) and
 * wait_seconds (integer 0..MCP_WAIT_MAX, default MCP_WAIT_DEFAULT). */
int mcp_check_get_feedback(const json_t *args, char session_id[MCP_SESSION_ID_MAX + 1], uint32_t *wait_seconds,
			   char *err);
/* list_pending_feedback takes no arguments: only {} (or none) is accepted. */
int mcp_check_list_pending(const json_t *args, char *err);

/* ---- tool results ----
 * A result for a tool with an outputSchema: content holds the compact JSON text of
 * structured (for clients that read only text), structuredContent the value itself,
 * isError false. Steals structured; NULL when out of memory. */
json_t *mcp_tool_result(json_t *structured);
/* An isError result whose text is msg (made printable ASCII when it is not UTF-8). */
json_t *mcp_tool_error(const char *msg);

/* ---- outgoing lines ----
 * Each appends one compact JSON text and a '\n' to out, or nothing on failure
 * (AS_ETOOBIG past out->max, AS_ENOMEM, AS_EINVAL for bad arguments). The text
 * never holds a raw newline (jansson escapes them in strings, JSON_COMPACT adds
 * none), so the '\n' is the only one. Strings that are not valid UTF-8 are made
 * printable ASCII rather than refused. */

/* The line of a successful tool result whose structured content js is compact JSON text
 * of an object as jansson prints it (the signer's): spliced, not parsed and printed again
 * (the fast path: byte for byte what mcp_line_result makes of mcp_tool_result(js parsed)). */
int mcp_line_tool_json(struct buf *out, const struct mcp_id *id, const char *js, size_t jsn, char *err);
/* {"jsonrpc":"2.0","id":ID,"result":RESULT}. Steals result. id: a string or integer. */
int mcp_line_result(struct buf *out, const struct mcp_id *id, json_t *result, char *err);
/* {"jsonrpc":"2.0","id":ID|null,"error":{"code","message","data"?}}. Steals data (may be NULL).
 * id NULL or MCP_ID_NONE/MCP_ID_NULL gives "id": null. message is cut to 1024 bytes. */
int mcp_line_error(struct buf *out, const struct mcp_id *id, int code, const char *message, json_t *data, char *err);
/* The error answering an invalid message (m->kind MCP_MSG_INVALID, m->answer set):
 * m->code with the standard phrase and detail, e.g. "Invalid Request: jsonrpc must be \"2.0\"". */
int mcp_line_invalid(struct buf *out, const struct mcp_msg *m, const char *detail, char *err);

/* The id of a line too long to parse, read from what was kept of it: the head (its first
 * bytes: a top-level "id" member before anything longer than the head) or else the tail
 * (its last bytes ending `"id": VALUE }`, as the official SDKs write it). 1 and *id
 * set when found (a string or integer id), else 0. Either part may be NULL. The answer
 * to an over-long request then carries its id, and the client does not wait for ever. */
#define MCP_PEEK_HEAD 4096
#define MCP_PEEK_TAIL 512
int mcp_peek_id(const char *head, size_t hn, const char *tail, size_t tn, struct mcp_id *id);
/* notifications/progress {progressToken, progress, total?, message?}. total < 0: absent;
 * progress and total must be finite and >= 0; message may be NULL. */
int mcp_line_progress(struct buf *out, const struct mcp_id *token, double progress, double total, const char *message,
		      char *err);
/* A notification {method, params}. Steals params (an object). */
int mcp_line_notification(struct buf *out, const char *method, json_t *params, char *err);
/* notifications/message {level, logger?, data}. Steals data; logger may be NULL. */
int mcp_line_log(struct buf *out, enum mcp_log_level level, const char *logger, json_t *data, char *err);

#endif
