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
#define PROTO_CAPS_MAX (PROTO_CAP_MODERN | PROTO_CAP_SAMPLING | PROTO_CAP_ELICIT | PROTO_CAP_ROOTS)
#define PROTO_BEARER_MAX 512  /* an Authorization: Bearer credential */
#define PROTO_SESSION_MAX 64  /* an Mcp-Session-Id */
#define PROTO_PROTOCOL_MAX 15 /* the protocol revision initialize agreed ("2025-11-25") */
#define PROTO_SID_MAX 64      /* a request's session_id as a reviewer names it */
#define PROTO_OUTCOME_MAX 16  /* approved, rejected, answered, selected */
#define PROTO_TEXT_MAX 16384  /* a reviewer's message or answer */
/* A passkey ceremony's fields as base64url text (common/webauthn.h's bounds, 4/3 of them): */
#define PROTO_PK_CRED_MAX 1364	   /* a credential id, at most 1023 bytes */
#define PROTO_PK_AUTHDATA_MAX 1868 /* authenticator data, at most WA_AUTHDATA_MAX (1400) bytes */
#define PROTO_PK_CDJ_MAX 1366	   /* client data JSON, at most WA_CDJ_MAX (1024) bytes */
#define PROTO_PK_SIG_MAX 108	   /* a DER ECDSA P-256 signature, at most 80 bytes */
#define PROTO_PK_OP_MAX 16	   /* register-options, register, approve-options, list, remove */
#define PROTO_OPTION_N_MAX 64	   /* a selection's option number, from 1 */
#define PROTO_OFFSET_MAX 100000	   /* a page's first item (the queue holds at most this many) */
#define PROTO_COOKIE_MAX 64	   /* a web session's secret */
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
#define PROTO_DIGEST_MAX 71	       /* F_DISPATCH digest: "sha256:" and 64 hex digits (call_digest) */
#define PROTO_METHOD_MAX 64	       /* a JSON-RPC method a frame names (F_NOTE, F_ASK, F_UP_NOTE, F_UP_ASK) */
#define PROTO_UP_NAME_MAX 32	       /* F_CONFIG name: an upstream's name, as the upstream worker logs it */
#define PROTO_EVENT_KIND_MAX 128       /* an event's kind: dotted, 1 to 128 characters */
#define PROTO_EVENT_KEY_MAX 255	       /* an event's key */
#define PROTO_FEEDBACK_REF_MAX 128     /* an outside report's id that qa_link_feedback links calls to */
#define PROTO_EVENT_BY_MAX 79	       /* who recorded an event: struct conn's owner, "agent:NAME", "uid:N" */
#define PROTO_CALLRECS_MAX 64	       /* F_CALLRECS recs: records in one batch */
#define PROTO_REC_ERROR_MAX 4096       /* F_CALLREC emsg: a call's error text before redaction (then cut) */
#define PROTO_REC_ETYPE_MAX 64	       /* F_CALLREC etype: an error's type */
#define PROTO_REC_OUTCOME_MAX 2	       /* F_CALLREC outcome: 0 ok, 1 soft_error, 2 error */
#define PROTO_REC_RATE_ONE 1000000     /* F_CALLREC rate: parts per million, at most all of them */
#define PROTO_REC_ANSWER_MAX (IPC_FRAME_MAX / 2) /* F_REC_ANSWER json: the recorder's answer, passed on */
/* A question about the records (F_QA, F_CTL_QA, F_WEB_QA, passed on as F_REC_QUERY) */
#define PROTO_QA_WORD_MAX 16	    /* op, type, status: one word of a fixed list */
#define PROTO_QA_TITLE_MAX 1000	    /* a QA report's title */
#define PROTO_QA_DESC_MAX 20000	    /* its description */
#define PROTO_QA_CONTACT_MAX 1000   /* its contact */
#define PROTO_QA_OFFSET_MAX 1000000 /* a listing's first item */
#define PROTO_QA_LIMIT_MAX 10000    /* items in one answer */
#define PROTO_QA_KINDS_MAX 16	    /* kinds: event kinds to list */
#define PROTO_QA_CALL_MAX 64	    /* call: a call's id, as an agent names it */
/* webhooks (the notify worker) */
#define PROTO_NOTIFY_HOOKS_MAX 16      /* webhooks in STATE/notify.json */
#define PROTO_NOTIFY_INFLIGHT 32       /* deliveries in flight at once, each on its own connection */
#define PROTO_NOTIFY_BODY_MAX 8192     /* one delivery's body (the signer makes it) */
#define PROTO_NOTIFY_ERROR_MAX 256     /* F_NOTIFY_DONE error */
#define PROTO_NOTIFY_HEADERS_MAX 8     /* F_NOTIFY_POST headers: [name, value] pairs */
#define PROTO_NOTIFY_HEADER_MAX 1099   /* one header's name, or its value */
#define PROTO_NOTIFY_TIMEOUT_MS 20000u /* a delivery's whole exchange, connect to response */
/* witnesses (C2SP tlog-witness), through the notify worker */
#define PROTO_WITNESS_MAX 8 /* witnesses in ASSENT_WITNESSES */
/* The cluster client's frames (issue 32): an entry (ledger/entry.h ENTRY_MAX), a checkpoint note
 * (ledger/note.h CKPT_MAX), an error, the PostgreSQL URL, a replica's name, entries per commit. */
#define PROTO_CL_ENTRY_MAX (1u << 20)
#define PROTO_STATS_CLUSTER_MAX 1024 /* F_STATS cluster: /health's "cluster" object */
#define PROTO_CL_NOTE_MAX 4096
#define PROTO_CL_CLAIM_MAX 320 /* ledger/sync.c CLAIM_MAX */
#define PROTO_CL_ERR_MAX 600
#define PROTO_CL_URL_MAX 1024
#define PROTO_CL_REPLICA_MAX 64
#define PROTO_CL_PUSH_MAX 65536
#define PROTO_CL_HOOK_MAX 64	    /* gateway/state/hooks.h HOOK_NAME_MAX */
#define PROTO_CL_EVENT_MAX 24	    /* a webhook event's name */
#define PROTO_CL_REG_MAX (1u << 20) /* the identity registry's file (identities.json) */
#define PROTO_CL_WS_MAX 1024	    /* a web session as the cluster keeps it (cluster_reg.c) */
#define PROTO_WITNESS_BODY_MAX 8192 /* an add-checkpoint body: old line, 64 proof lines, a checkpoint */
#define PROTO_WITNESS_RESP_MAX 4096 /* a witness's answer the worker reads (an Ed25519 line: ~100 bytes) */
#define PROTO_WITNESS_COSIGS_MAX 8  /* Ed25519 cosignature lines taken from one answer */
#define PROTO_WITNESS_NAME_MAX 255  /* a cosigner's name, as a checkpoint origin */
#define PROTO_WITNESS_ALARM_MAX 512 /* F_STATS witness_alarm: /health's "NAME at N; ..." */
#define PROTO_WITNESS_SIZE_MAX 0x7fffffffffffffffull /* a 409's tree size, and a cosignature's timestamp */

/* ---- what the signer sends its workers (frames.c's second direction) ---- */
#define PROTO_HTTP_STATUS_MAX 599	/* F_HTTP_REPLY status, and F_NOTIFY_DONE's */
#define PROTO_HTTP_ERROR_MAX 200	/* F_HTTP_REPLY error: the refusal the agent reads */
#define PROTO_HTTP_RETRY_MAX 86400	/* F_HTTP_REPLY retry, seconds (Retry-After) */
#define PROTO_WEB_RETRY_MAX 3600	/* F_WEB_REPLY retry, seconds (Retry-After) */
#define PROTO_CTYPE_MAX 63		/* F_WEB_REPLY ctype: a Content-Type */
#define PROTO_SET_COOKIE_MAX 512	/* F_WEB_REPLY cookie: a web session's Set-Cookie value */
#define PROTO_PUSH_ENDED_MAX 64		/* F_WEB_PUSH ended: web sessions one push names */
#define PROTO_CATALOG_MAX IPC_FRAME_MAX /* F_CATALOG tools, routes, more: JSON text, together one frame */
#define PROTO_CKIND_MAX 16		/* F_REC_* ckind: how the caller was known (key, anonymous, uid) */
#define PROTO_IDENTITY_MAX 199		/* F_REC_CALL identity: the caller as the signer measured, JSON */
#define PROTO_VERSION_MAX 64		/* F_REC_* version: the daemon's */
#define PROTO_CALL_ID_MAX 17		/* F_REC_CALL id: "c" and 16 hex digits */
#define PROTO_RULE_MAX 23		/* F_REC_CALL rule: "line N" */
#define PROTO_DECISION_MAX 23		/* F_REC_CALL decision: how the signer decided the call (approved, ...) */
/* F_CONFIG: the configuration each worker reads before its jail */
#define PROTO_CONFIG_MAP_MAX 64		 /* pairs of its http or url map (each checked by its parser) */
#define PROTO_RECORDS_CFG_MAX (1u << 20) /* records: the call records' configuration, JSON */
#define PROTO_PROXY_HEADER_MAX 63	 /* proxy_header: the reverse proxy's identity header's name */
#define PROTO_REVIEW_URL_MAX 511	 /* review_url: the reviewer listener's origin */
#define PROTO_URL_SCHEME_MAX 5		 /* a webhook's scheme: http, https */
#define PROTO_URL_HOST_MAX 255		 /* a webhook's host */
#define PROTO_URL_PATH_MAX 1024		 /* a webhook's path */
#define PROTO_URL_PORT_MAX 65535
#define PROTO_CA_PATH_MAX 1023 /* a webhook's CA file */

#endif
