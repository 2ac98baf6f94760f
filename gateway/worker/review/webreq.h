/* One reviewer-listener request in the review worker, as its three files share it:
 * worker_web.c (the listener, the signer's answers, the event streams), webapi.c (the
 * page's JSON bodies) and webmcp.c (/review/mcp). Private to gateway/worker/review/. */
#ifndef ASSENT_WEBREQ_H
#define ASSENT_WEBREQ_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "gateway/proto/proto.h"
#include "gateway/worker/mcp/mcp.h"
#include "gateway/worker/review/webroute.h"

struct MHD_Connection;

enum { W_NEW, W_BODY, W_WAIT, W_READY, W_STREAM, W_STREAMING };

struct wreq {
	uint64_t id;
	struct MHD_Connection *mc;
	struct wr_out r;
	int st, suspended, on_proxy, finished;
	int too_big; /* the body went past WEB_BODY_MAX: read to its end, then answered 413 */
	struct buf body, out;
	unsigned status, retry;
	char ctype[64];
	uint32_t wsid;
	uint64_t next_keepalive;
	/* an event stream: whose, and when its lifetime ends (then the page opens another,
	 * authenticated again) */
	char reviewer[PROTO_NAME_MAX + 1];
	uint64_t stream_end;
	/* /review/mcp: the JSON-RPC call being answered */
	json_t *rpc_id;
	enum mcp_method rpc_m; /* what it asked */
	char protocol[16];
	uint64_t proof_seq; /* /review/api/proof: the entry, for the download's file name */
	struct wreq *next;
};

/* worker_web.c: h's answer (status, type, body), made ready to send; as JSON (j is
 * taken); as {"error": msg}; as a JSON-RPC error for /review/mcp. */
void web_answer(struct wreq *h, unsigned status, const char *ctype, const char *body, size_t n);
void web_answer_json(struct wreq *h, unsigned status, json_t *j);
void web_answer_error(struct wreq *h, unsigned status, const char *msg);
void web_rpc_error(struct wreq *h, unsigned status, int code, const char *msg);
/* worker_web.c: send h to the signer as a frame of type with args' fields and its
 * connection; h waits for the answer (F_WEB_REPLY). */
void web_to_signer(struct wreq *h, uint32_t type, json_t *args);
/* worker_web.c: the QA tools' prefix ("qa_"), "" when the records are off. */
const char *web_qa_prefix(void);

/* webapi.c: the page's request h, its body and query checked, to the signer (or a 400). */
void web_api_call(struct wreq *h);
/* webapi.c: submit_feedback's {session_id, approved, response?, selection?} into args;
 * -1 with why (160 bytes) when they are not that. */
int web_submit_args(json_t *in, json_t *args, char *why);

/* webmcp.c: a JSON-RPC message on /review/mcp, to the signer (or answered here). */
void web_mcp_call(struct wreq *h);
/* webmcp.c: the signer's answer j (status) to h's JSON-RPC message, as JSON-RPC. */
void web_mcp_reply(struct wreq *h, unsigned status, json_t *j);

#endif
