/* Every limit the signer and its workers share: what a worker bounds before it sends,
 * and what the signer's field tables (frames.c) refuse past. One place, so that the
 * two sides cannot drift apart. Sizes are bytes unless said otherwise. */
#ifndef ASSENT_PROTO_LIMITS_H
#define ASSENT_PROTO_LIMITS_H

/* ---- the canonical action (action.h's table; the mcp worker's checks in mcp.c) ---- */
#define MCP_NAME_MAX 256	   /* a tool name, clientInfo name/version, a subject name */
#define MCP_MESSAGE_MAX 65536	   /* request_feedback message (also after redaction) */
#define MCP_OPTIONS_MAX 32	   /* options of a selection */
#define MCP_OPTION_MAX 1024	   /* one option */
#define MCP_DEFAULT_MAX 4096	   /* `default` */
#define MCP_CONTEXT_DEPTH 16	   /* nesting of `context` (the ledger's CBOR allows 32 in all) */
#define MCP_SUBJECTS_MAX 16	   /* subjects of one request */
#define MCP_CONTENT_MAX (1u << 20) /* decoded subject bytes, all subjects together */
#define MCP_AUDIENCE_MAX 128	   /* [A-Za-z0-9._:/-] */
#define MCP_TIMEOUT_MAX 86400	   /* timeout_override, seconds; the daemon may lower it */
#define MCP_SESSION_ID_MAX 64	   /* a session_id as get_feedback takes it, [A-Za-z0-9._-] */
/* Largest canonical CBOR action: message, options, default, a bounded context
 * (REDACT_CONTEXT_MAX), subjects and audience, with room to spare. */
#define MCP_ACTION_MAX (512u << 10)
/* F_REQUEST and F_SESSION_INFO client: "name/version" as initialize declared it, TEXT_LINE,
 * cut by the worker (action_client) to what the signer keeps. */
#define ACTION_CLIENT_MAX 159

/* ---- frames ---- */
#define MCP_ID_MAX 256 /* bytes of a string id or progress token */
/* A JSON-RPC id as JSON text (the worker's id_json), which the signer echoes back: as
 * long as the longest id escapes to (every byte of a MCP_ID_MAX-byte string as \u00XX,
 * and the quotes), so that the text is never cut. At 300, an id of some 50 escaped
 * characters was cut, and its answer was never delivered. */
#define PROTO_RID_MAX (2 + 6 * MCP_ID_MAX)
#define PROTO_JSON_MAX (4u << 20) /* a JSON answer the signer sends */
#define PROTO_CONNS_MAX 256	  /* client connections one worker serves */
#define PROTO_NAME_MAX 64	  /* a reviewer's or agent's name (the registry's REG_NAME_MAX) */
#define PROTO_KIND_MAX 16	  /* F_HELLO kind */
#define PROTO_LOG_LEVEL_MAX 16	  /* F_LOG level */
#define PROTO_LOG_TEXT_MAX 1024	  /* F_LOG text (ipc_log sends at most 511) */
#define PROTO_WAIT_MAX 60	  /* F_COLLECT wait, seconds (get_feedback allows MCP_WAIT_MAX) */
/* F_TASK op */
#define PROTO_TASK_GET 1
#define PROTO_TASK_CANCEL 2
#define PROTO_TASK_LIST 3
#define PROTO_STATE_MAX 1200	  /* F_INPUT state: a requestState the signer minted (mrtr.c) */
#define PROTO_GATE_STATE_MAX 6000 /* F_CALL state: a requestState wrapping an upstream's (gatemrtr.c) */
#define PROTO_UP_STATE_MAX 2048	  /* an upstream's own requestState, carried in that wrapper */
/* F_CALL / F_DISPATCH caps: a 2026-07-28 client's request, and what it declared */
#define PROTO_CAP_MODERN 1u
#define PROTO_CAP_SAMPLING 2u
#define PROTO_CAP_ELICIT 4u
#define PROTO_CAP_ROOTS 8u
#define PROTO_BEARER_MAX 512	/* an Authorization: Bearer credential */
#define PROTO_SESSION_MAX 64	/* an Mcp-Session-Id */
#define PROTO_PROTOCOL_MAX 15	/* the protocol revision initialize agreed ("2025-11-25") */
#define PROTO_SID_MAX 64	/* a request's session_id as a reviewer names it */
#define PROTO_OUTCOME_MAX 16	/* approved, rejected, answered, selected */
#define PROTO_TEXT_MAX 16384	/* a reviewer's message or answer */
#define PROTO_OPTION_N_MAX 64	/* a selection's option number, from 1 */
#define PROTO_OFFSET_MAX 100000 /* a page's first item (the queue holds at most this many) */
#define PROTO_COOKIE_MAX 64	/* a web session's secret */
#define PROTO_CSRF_MAX 64
#define PROTO_PROXY_USER_MAX 254 /* the reverse proxy's identity header */
#define PROTO_PROXY_SECRET_MAX 256
#define PROTO_TOKEN_MAX 512 /* a reviewer's web token */
#define PROTO_ADDR_MAX 45   /* a client address the proxy passes (X-Real-IP) */
/* F_WEB_HISTORY's filters (gateway/worker/review/histq.h parses them from the query) */
#define PROTO_HIST_WHO_MAX PROTO_NAME_MAX   /* a reviewer's name, "policy" or "deadline" */
#define PROTO_HIST_AUD_MAX MCP_AUDIENCE_MAX /* an audience: [A-Za-z0-9._:/-] */
#define PROTO_HIST_RULE_MAX 1000000	    /* a policy rule's line */
#define PROTO_HIST_TIME_MAX 99999999999ull  /* unix seconds (year 5138) */
#define PROTO_HIST_LIMIT_MAX 1000	    /* decisions in one answer (the signer keeps at most this many) */
#define PROTO_SEQ_MAX (1ull << 53)	    /* a ledger sequence number a page can name (JSON's exact integers) */
/* the gate */
#define PROTO_UP_TOOLS_MAX (1u << 20)  /* F_UP_TOOLS tools: one upstream's catalog, encoded */
#define PROTO_UP_RESULT_MAX (2u << 20) /* F_UP_RESULT result: one call's result, encoded */
#define PROTO_UP_ERROR_MAX 1024	       /* F_UP_RESULT error */
#define PROTO_UP_NOTE_MAX (64u << 10)  /* F_UP_NOTE params: one progress or log notification */
#define PROTO_CALL_MAX (512u << 10)    /* F_CALL call: CALL_MAX (gateway/proto/call.h) */
#define PROTO_EVENT_KIND_MAX 128       /* an event's kind: dotted, 1 to 128 characters */
#define PROTO_EVENT_KEY_MAX 255	       /* an event's key */
#define PROTO_FEEDBACK_REF_MAX 128     /* an outside report's id that qa_link_feedback links calls to */
#define PROTO_EVENT_BY_MAX 79	       /* who recorded an event: struct conn's owner, "agent:NAME", "uid:N" */
#define PROTO_CALLRECS_MAX 64	       /* F_CALLRECS recs: records in one batch */
#define PROTO_REC_ERROR_MAX 4096       /* F_CALLREC emsg: a call's error text before redaction (then cut) */
/* webhooks (the notify worker) */
#define PROTO_NOTIFY_HOOKS_MAX 16      /* webhooks in STATE/notify.json */
#define PROTO_NOTIFY_INFLIGHT 32       /* deliveries in flight at once, each on its own connection */
#define PROTO_NOTIFY_BODY_MAX 8192     /* one delivery's body (the signer makes it) */
#define PROTO_NOTIFY_ERROR_MAX 256     /* F_NOTIFY_DONE error */
#define PROTO_NOTIFY_TIMEOUT_MS 20000u /* a delivery's whole exchange, connect to response */

#endif
