/* What the mcp worker's files share (private to them): its state, and the calls between
 * worker_mcp.c (the loop and the receive table), wmcp_msg.c (messages, stdio lines),
 * wmcp_call.c (tools/call, gated or assent's own), wmcp_task.c (task calls), wmcp_http.c
 * and wmcp_hreply.c (the agent HTTP listener). */
#ifndef ASSENT_WORKER_MCP_WMCP_H
#define ASSENT_WORKER_MCP_WMCP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cbor.h"
#include "gateway/proto/httpcfg.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/limits.h"
#include "gateway/worker/mhdconn.h"
#include "gateway/worker/mcp/listen.h"
#include "gateway/worker/mcp/mcp.h"
#include "gateway/worker/mcp/mhttp.h"
#include "gateway/worker/mcp/sseresume.h"
#include "gateway/worker/mcp/tasks.h"

#define PROGRESS_EVERY_MS 10000
#define KEEPALIVE_EVERY_MS 15000 /* an SSE comment, so that proxies and idle timers see life */

struct call { /* a blocking tool call waiting for the signer */
	uint64_t conn;
	char rid[PROTO_RID_MAX + 1];
	struct mcp_id token; /* progress token, MCP_ID_NONE when the client gave none */
	uint64_t started, next_progress;
	double progress_sent; /* the last progress value told while it waited */
	int gated;	      /* a call of an upstream's tool: it may wait for a reviewer, then for the server */
	int used;
};

/* A task operation waiting for the signer's answer, which it turns into its revision's
 * shape (tasks.h). */
enum tkind { T_CREATE = 1, T_GET, T_RESULT, T_LIST, T_CANCEL, T_UPDATE, T_INPUT };
struct tcall {
	uint64_t conn;
	char rid[PROTO_RID_MAX + 1];
	char sid[MCP_SESSION_ID_MAX + 1]; /* T_RESULT: asked again while still pending */
	enum tkind kind;
	enum mcp_task_era era;
	int used;
};

struct mconn {
	uint64_t id;
	int listed; /* it initialized: it may be told notifications/tools/list_changed */
	int fd;	    /* -1 for an MCP session over HTTP: its messages come in HTTP requests */
	int http;
	struct hreq *legacy; /* FEEDBACK_TRANSPORT=sse: the GET /sse stream every answer goes to */
	struct buf in, out;
	int skipping; /* discarding the rest of an over-long line */
	size_t skipped;
	char head[MCP_PEEK_HEAD], tail[MCP_PEEK_TAIL]; /* of the line being skipped: where its id may be */
	size_t headn, tailn;
	struct mcp_client client;
	uint64_t hreq;	       /* HTTP: the request whose message is being handled (the signer measured its peer) */
	int modern;	       /* a 2026-07-28 request came on it: results carry resultType */
	int stateless;	       /* HTTP 2026-07-28: the connection is one request's, ended with it */
	uint32_t dflt_timeout; /* stdio: the bridge's notifications/assent/defaults, 0 when none */
	char agent[PROTO_NAME_MAX + 1]; /* HTTP: the agent key's name, as the signer said (listen.h's bound) */
	int used;
};

/* One HTTP request on the agent listener, from its headers to its last byte. */
enum hstate {
	HS_BODY,      /* reading the body */
	HS_AUTH,      /* suspended: the signer decides who is asking */
	HS_WAIT,      /* suspended: a JSON answer waits for the signer's result */
	HS_RESPOND,   /* the answer is in out: queue it when MHD calls back */
	HS_STREAM,    /* an SSE answer: queue the stream when MHD calls back */
	HS_STREAMING, /* out feeds the stream; finished marks its end */
	HS_DONE,
};

struct hreq {
	uint64_t id;
	struct MHD_Connection *mc;
	struct mh_verdict v;
	enum hstate st;
	struct buf body;
	int too_big;
	struct mcp_msg m;
	int have_msg;
	uint64_t conn;		     /* the MCP session's connection id, once the signer said */
	char rid[PROTO_RID_MAX + 1]; /* the JSON-RPC id whose answer this request waits for */
	int waiting;		     /* an answer from the signer is due */
	struct buf out;		     /* the JSON body, or SSE bytes not yet sent */
	unsigned status;
	char session[MH_SESSION_LEN + 1]; /* Mcp-Session-Id to send back */
	unsigned retry_s;		  /* Retry-After, for a refusal by a limit */
	int finished, suspended;
	int stateless;	    /* a 2026-07-28 request: its own connection at the signer, for its lifetime */
	char location[160]; /* a 307's Location (the reviewer listener's endpoints) */
	int deferred;	    /* refused (h->v), answered once the body is read: with its id when it shows */
	unsigned refused;   /* POST /events: the HTTP status of the signer's refusal (F_RESULT status) */
	uint64_t next_keepalive;
	struct sse_stream *ss; /* its answer's resumable stream (2025-11-25 clients), NULL: none */
	uint64_t poll_at;      /* ASSENT_HTTP_SSE_POLL_SECONDS: when assent ends that stream for a resume */
	struct hreq *next;
};

/* One TCP connection on the agent listener. libmicrohttpd's timeout counts silence
 * only, so a client trickling a byte a second would hold its slot for ever: each
 * request's head and body must arrive within request_s, or the socket is shut. */
struct mw {
	int ipcfd;
	struct ipc_conn ipc;
	struct cv_arena arena;
	struct mconn conns[PROTO_CONNS_MAX];
	struct call calls[1024];
	struct tcall tcalls[1024];
	char err[AS_ERRLEN];
	/* HTTP */
	struct http_cfg cfg;
	struct MHD_Daemon *mhd;
	struct hreq *hreqs;
	struct mc_list pconns; /* every TCP connection, for the whole-request deadline */
	struct sse_set sse;    /* resumable answer streams, held or parked (sseresume.h) */
	uint64_t next_hreq;
	uint64_t pending, uptime, stats_at;	   /* from F_STATS, for /health */
	char alarm[PROTO_WITNESS_ALARM_MAX + 1];   /* F_STATS witness_alarm, "" none */
	char cluster[PROTO_STATS_CLUSTER_MAX + 1]; /* F_STATS cluster (a JSON object the signer made), "" none */
	char proxy_header[64];			   /* the reviewer identity header a reverse proxy sets: refused here */
	/* the gate: the upstreams' tools as agents see them (F_CATALOG), and which upstream
	 * and tool each name is: {NAME: [upstream, tool]} */
	char *catalog;
	size_t catalogn;
	json_t *routes;
	json_t *more;	     /* {resources, resourceTemplates, prompts, resource_routes, template_routes, prompt_routes,
			      * completions} */
	struct callrec *rec; /* the call records (callrec.h); NULL: recording is off */
	char qa[40];	     /* the QA tools' prefix and separator ("qa_"); "" when the records are off */
	char review_url[96]; /* the reviewer listener, http://HOST:PORT; "" when it is off */
	char *qa_defs;	     /* their definitions, which tools/list shows before the upstreams' */
	struct listen_set listen; /* 2026-07-28 clients' subscriptions/listen streams */
};

#define wlog(w, ...) ipc_log((w)->ipcfd, __VA_ARGS__) /* a log line to the signer */

static inline void wake(struct hreq *h)
{
	mc_wake(h->mc, &h->suspended);
}

static inline void sleep_on(struct hreq *h)
{
	mc_sleep(h->mc, &h->suspended);
}

/* worker_mcp.c */
struct mconn *wm_conn_find(struct mw *w, uint64_t id);
void wm_id_json(const struct mcp_id *id, char out[PROTO_RID_MAX + 1]);
void wm_send_about(struct mw *w, uint32_t type, uint64_t conn, const char *rid);
void wm_conn_close(struct mw *w, struct mconn *c, int tell);
int wm_send_frame(struct mw *w, struct cv *f);
void wm_answer_frame(struct mw *w, uint64_t conn, uint64_t aid, const json_t *result, const json_t *error);

/* wmcp_msg.c */
void wm_handle_msg(struct mw *w, struct mconn *c, const struct mcp_msg *mp);
int wm_conn_read(struct mw *w, struct mconn *c);
int wm_conn_flush(struct mconn *c);

/* wmcp_call.c */
void wm_gate_caps(const struct mw *w, json_t *caps, int modern);
int wm_gated_other(struct mw *w, struct mconn *c, const struct mcp_msg *m);
int wm_set_catalog(struct mw *w, const char *up, size_t upn);
void wm_qa_defs_make(struct mw *w);
void wm_tools_call(struct mw *w, struct mconn *c, const struct mcp_msg *m);

/* wmcp_task.c */
struct tcall *wm_tcall_add(struct mw *w, uint64_t conn, const char *rid, enum tkind kind, enum mcp_task_era era,
			   const char *sid);
int wm_tcall_take_into(struct mw *w, uint64_t conn, const char *rid, size_t ridn, struct tcall *out);
void wm_tcall_take(struct mw *w, uint64_t conn, const char *rid, size_t ridn);
void wm_task_method(struct mw *w, struct mconn *c, const struct mcp_msg *m, enum mcp_task_era era);
void wm_task_answer(struct mw *w, struct mconn *c, const struct tcall *t, const struct mcp_id *id, const char *js,
		    size_t jsn, int iserr);

/* wmcp_http.c */
void wm_refusal_status(struct mw *w, const struct cv *body, uint64_t conn, const char *rid, size_t ridn);
/* Answer with status and a JSON body (len 0: none). */
void wm_set_answer(struct hreq *h, unsigned status, const char *body, size_t len);
void wm_set_reject(struct hreq *h, unsigned status, int code, const char *msg);
int wm_http_start(struct mw *w, struct cv_arena *a, char *err);

/* wmcp_hreply.c */
void wm_route_out(struct mw *w, struct mconn *c, const char *rid, size_t ridn, int final);
struct mconn *wm_free_slot(struct mw *w);
void wm_http_auth(struct mw *w, struct hreq *h, int init);
void wm_on_http_reply(struct mw *w, struct ipc_frame *f);
void wm_not_resumed(void *arg, uint64_t conn, const char *rid);
void wm_cancel_call(struct mw *w, struct hreq *h);
void wm_stream_left(struct mw *w, struct hreq *h, int delivered);
void wm_hangups(struct mw *w);
void wm_keepalive(struct mw *w, uint64_t now);

#endif
