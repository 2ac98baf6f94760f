/* One call record and one event, as the recorder holds them between the signer's frame
 * and the sinks (gateway/recorder/). Every text is NUL-terminated, owned by the record
 * (rec_call_free / rec_event_free), already redacted and bounded when a sink sees it.
 * Names are the seed's (FastMCP Feedback), so its SQL runs unchanged on our tables. */
#ifndef ASSENT_RECORD_H
#define ASSENT_RECORD_H

#include <stdint.h>

#define REC_ERROR_MAX 1000 /* characters of error_message kept (after redaction) */
#define REC_KIND_MAX 128   /* an event's kind: dotted, 1..128 characters */
#define REC_KEY_MAX 255	   /* an event's key */

struct rec_call {
	char *call_id;	      /* unique: "c" + 16 hex (the recorder makes it); events and links join on it */
	char *tool;	      /* as the agent named it (an upstream's tool carries its NAME__ prefix) */
	char *upstream;	      /* the upstream server's name; NULL for assent's own tools */
	int64_t started_ms;   /* unix ms */
	double duration_ms;   /* measured by the worker around the call */
	const char *outcome;  /* "ok" | "soft_error" | "error" (static) */
	int ok;		      /* outcome is ok */
	char *error_type;     /* NULL when ok; "SoftError", "ToolError", "ProtocolError", "Denied", "Timeout", ... */
	char *error_message;  /* redacted, at most REC_ERROR_MAX characters; NULL when ok */
	char *session_id;     /* the MCP session (Mcp-Session-Id), or "stdio:CONN" for a stdio connection */
	char *request_id;     /* the JSON-RPC id, as JSON text */
	char *user_sub;	      /* measured by the signer: "uid:1000", "agent:NAME", "anonymous" */
	char *caller_kind;    /* "uid" | "key" | "anonymous" */
	char *client_id;      /* what the client declared (clientInfo name/version), never trusted */
	char *identity;	      /* JSON object of other identity facts, or NULL */
	int64_t args_size;    /* bytes of the arguments' JSON */
	int64_t result_size;  /* bytes of the answer's compact JSON: the CallToolResult, or the JSON-RPC error
			       * object; for assent's own tools answered by the signer, their structured
			       * result; never the JSON-RPC envelope; -1 when none */
	char *arguments;      /* JSON, redacted: mode full only, else NULL */
	char *result;	      /* JSON, redacted: mode full only, else NULL */
	char *decision;	      /* the policy's: "allow" | "deny" | "ask" | "approved" | "rejected" | ...; NULL */
	char *rule;	      /* the policy rule that decided; NULL */
	int64_t ledger_seq;   /* the ledger sequence number of the call's last entry; -1 when none */
	double sample_rate;   /* 0 when recorded unconditionally (stored NULL), else the rate in (0, 1] */
	char *server_version; /* assent's version, or the upstream's declared serverInfo version */
	char *extra;	      /* JSON object, or NULL */
};

struct rec_event {
	int64_t occurred_ms; /* unix ms */
	char *kind;	     /* dotted, 1..REC_KIND_MAX */
	char *key;	     /* what others join on (a session_id, a job id); NULL */
	char *call_id;	     /* the call it happened in; NULL outside a call */
	char *session_id, *user_sub, *caller_kind, *client_id, *server_version; /* each may be NULL */
	char *attrs; /* JSON object, redacted and JSON-safe (NaN, infinities as strings) */
};

void rec_call_free(struct rec_call *c);
void rec_event_free(struct rec_event *e);

#endif
