/* The frames the signer and its workers exchange (gateway/proto/ipc.h carries them).
 * Every field a worker sends is checked against its type's field table (frames.c)
 * and by the signer against its own state; a frame a worker may not send in its
 * state is an attack (gateway/signer/loop.c). */
#ifndef ASSENT_PROTO_H
#define ASSENT_PROTO_H

enum {
	/* worker -> signer */
	F_HELLO = 1,        /* {kind: "mcp" | "review"}: once, first */
	F_CONN_CLOSED = 2,  /* {conn}: a client connection ended */
	F_LOG = 3,          /* {level, text} */
	F_REQUEST = 10,     /* mcp: {conn, rid, action (bytes: its canonical CBOR), timeout, wait, client, contents?, hreq?}
			     * contents: one item per action.subject, its bytes or null; hreq (HTTP
			     * sessions only): the F_HTTP_AUTH whose connection the signer measured */
	F_COLLECT = 11,     /* mcp: {conn, rid, sid, wait} get_feedback */
	F_LIST = 12,        /* mcp: {conn, rid} list_pending_feedback */
	F_CANCEL = 13,      /* mcp: {conn, rid} notifications/cancelled */
	F_CTL = 20,         /* review: {conn, cmd, sid?, text?, n?} a reviewer's command */
	F_WEB = 21,         /* review: {hreq, cmd, cookie?, csrf?, bearer?, proxy_user?, proxy_secret?, token?,
			     * sid?, outcome?, text?, n?} + the HTTP connection's fd: a reviewer listener request */
	F_HTTP_AUTH = 30,   /* mcp: {hreq, bearer?, session?, init} + the TCP connection's fd:
			     * may this HTTP request go on, and as which MCP session? */
	F_SESSION_INFO = 31, /* mcp: {conn, client, protocol} what initialize declared */
	F_SESSION_END = 32, /* mcp: {conn} DELETE /mcp */
	/* signer -> worker */
	F_CONN_NEW = 100,   /* {conn} + the connection's descriptor */
	F_RESULT = 101,     /* mcp: {conn, rid, json, iserror} the answer to a tool call */
	F_CTL_REPLY = 102,  /* review: {conn, json} */
	F_CONFIG = 103,     /* {http: {on, hosts, origins, limits...}} first, before the jail;
			     * review also {proxy, proxy_header} */
	F_HTTP_REPLY = 104, /* mcp: {hreq, status, error?} or {hreq, status 200, conn, session,
			     * principal, client?, protocol?} */
	F_STATS = 105,      /* mcp, review: {pending, uptime} for /health, about once a second */
	F_WEB_REPLY = 106,  /* review: {hreq, status, body, ctype?, cookie?, clear?, retry?, wsid?} */
	F_WEB_PUSH = 107,   /* review: {version, pending, ended: [wsid]} the queue changed; sessions that ended */
};

#include "gateway/proto/limits.h" /* PROTO_RID_MAX and every other shared limit */

#endif
