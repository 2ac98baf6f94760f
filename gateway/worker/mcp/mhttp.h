/* The agent listener's HTTP rules (Streamable HTTP, MCP 2025-06-18 / 2025-11-25),
 * decided from a request's method, path and headers alone: which endpoint, or which
 * status and error. Pure (no I/O, no allocation), so that it is fuzzed and tested
 * apart from libmicrohttpd. The bearer key and the session are only checked for
 * shape here; the signer decides whether they are valid. */
#ifndef ASSENT_MHTTP_H
#define ASSENT_MHTTP_H

#include <stddef.h>

#include "gateway/proto/httpcfg.h"

#define MH_BEARER_MAX 256
#define MH_SESSION_LEN 32 /* our session ids: 32 lowercase hex digits */

enum mh_route {
	MH_REJECT = 0,	/* answer status with a JSON-RPC error body (rpc_code, msg) */
	MH_HEALTH,	/* GET /health */
	MH_MCP_POST,	/* POST /mcp: one JSON-RPC message */
	MH_MCP_DELETE,	/* DELETE /mcp: end the session */
	MH_MCP_RESUME,	/* GET /mcp with Last-Event-ID: resume a call's answer stream (sseresume.h) */
	MH_LEGACY_SSE,	/* GET /sse (FEEDBACK_TRANSPORT=sse): the 2024-11-05 event stream */
	MH_LEGACY_POST, /* POST /messages?session_id=... (the same) */
	MH_REVIEWERS,	/* /pending, /feedback/submit, /admin/clear-stale-sessions: the reviewer listener's
			 * (where the seed's users look for them on this one): a redirect there */
};

/* What libmicrohttpd told us; any header may be NULL when absent. */
struct mh_head {
	const char *method, *path;
	const char *host, *origin, *content_type, *accept, *session, *protocol, *authorization;
	const char *cookie;		   /* refused when it carries a reviewer's session (assent_session) */
	const char *identity;		   /* the reverse proxy's reviewer identity header: never on this listener */
	const char *mcp_method, *mcp_name; /* 2026-07-28: Mcp-Method and Mcp-Name, checked against the body */
	const char *last_event_id;	   /* Last-Event-ID: a GET that resumes a stream */
};

struct mh_verdict {
	enum mh_route route;
	unsigned status;    /* MH_REJECT: 400, 401, 403, 404, 405, 406, 415 */
	int rpc_code;	    /* MH_REJECT: the JSON-RPC error code of the body */
	char msg[200];	    /* MH_REJECT: what was wrong, printable ASCII */
	const char *allow;  /* 405: the Allow header */
	int sse;	    /* the client accepts text/event-stream */
	int json;	    /* the client accepts application/json */
	const char *bearer; /* into head->authorization; NULL when absent */
	size_t bearer_len;
	char session[MH_SESSION_LEN + 1];  /* "" when absent */
	char protocol[32];		   /* MCP-Protocol-Version (cut to 31 bytes), "" when absent */
	int modern;			   /* MCP-Protocol-Version is 2026-07-28: a stateless request */
	int unsupported;		   /* MCP-Protocol-Version names a revision we do not speak: -32022 once
					    * the body's id is known */
	const char *method_hdr, *name_hdr; /* into head: Mcp-Method and Mcp-Name, NULL when absent */
	uint64_t resume_no;		   /* MH_MCP_RESUME: the stream and event of Last-Event-ID */
	uint32_t resume_seq;
	int events; /* POST /events: an event from an agent key (the records), served as a stateless
		     * tools/call of the QA tool that records events */
};

/* Classify one request. Always fills v; returns v->route. */
enum mh_route mh_classify(const struct http_cfg *cfg, const struct mh_head *h, struct mh_verdict *v);

/* The JSON-RPC error body for a rejection (no trailing newline), into out (cap bytes). */
size_t mh_error_body(const struct mh_verdict *v, char *out, size_t cap);

#endif
