/* The field tables of the frames workers send, and their checker (frames.h). */
#include "gateway/proto/frames.h"

#include <string.h>

#include "gateway/proto/limits.h"
#include "gateway/proto/proto.h"
#include "gateway/proto/reccfg.h"
#include "gateway/proto/ipc.h"

#define REQ 1
#define OPT 0
#define CONN                                                                                                           \
	{                                                                                                              \
		"conn", FT_UINT, UINT64_MAX, REQ                                                                       \
	}
#define RID                                                                                                            \
	{                                                                                                              \
		"rid", FT_TEXT, PROTO_RID_MAX, REQ                                                                     \
	}

static const struct frame_field hello[] = {{"kind", FT_TEXT, PROTO_KIND_MAX, REQ}};
static const struct frame_field conn_only[] = {CONN};
static const struct frame_field log_f[] = {{"level", FT_TEXT, PROTO_LOG_LEVEL_MAX, REQ},
					   {"text", FT_TEXT, PROTO_LOG_TEXT_MAX, REQ}};
static const struct frame_field request[] = {
    CONN,
    RID,
    {"action", FT_BYTES, MCP_ACTION_MAX, REQ}, /* canonical CBOR, as the worker encoded it */
    {"timeout", FT_UINT, MCP_TIMEOUT_MAX, REQ},
    {"wait", FT_BOOL, 0, REQ},
    {"client", FT_TEXT, ACTION_CLIENT_MAX, REQ},
    {"contents", FT_ARRAY, MCP_SUBJECTS_MAX, OPT}, /* one item per subject: bytes or null */
    {"hreq", FT_UINT, UINT64_MAX, OPT},		   /* HTTP sessions: the F_HTTP_AUTH it follows */
    {"task", FT_BOOL, 0, OPT},			   /* collected as an MCP task (wait is then false) */
    {"elicit", FT_BOOL, 0, OPT},		   /* 2026-07-28: its client's user may answer (multi-round input) */
};
static const struct frame_field collect[] = {
    CONN, RID, {"sid", FT_TEXT, MCP_SESSION_ID_MAX, REQ}, {"wait", FT_UINT, PROTO_WAIT_MAX, REQ}};
static const struct frame_field conn_rid[] = {CONN, RID};
static const struct frame_field input[] = {
    CONN,
    RID,
    {"action", FT_BYTES, MCP_ACTION_MAX, REQ}, /* the retried call's, which the state must name */
    {"state", FT_TEXT, PROTO_STATE_MAX, REQ},
    {"accepted", FT_BOOL, 0, REQ},
    {"text", FT_TEXT, MCP_MESSAGE_MAX, OPT},
    {"hreq", FT_UINT, UINT64_MAX, OPT},
};
static const struct frame_field task[] = {
    CONN, RID, {"op", FT_UINT, PROTO_TASK_LIST, REQ}, {"sid", FT_TEXT, MCP_SESSION_ID_MAX, OPT}};
/* A reviewer's commands: one frame type each, each with its own fields. */
#define SID(req)                                                                                                       \
	{                                                                                                              \
		"sid", FT_TEXT, PROTO_SID_MAX, req                                                                     \
	}
#define OUTCOME                                                                                                        \
	{                                                                                                              \
		"outcome", FT_TEXT, PROTO_OUTCOME_MAX, REQ                                                             \
	}
#define TEXT                                                                                                           \
	{                                                                                                              \
		"text", FT_TEXT, PROTO_TEXT_MAX, OPT                                                                   \
	}
#define OPTION_N                                                                                                       \
	{                                                                                                              \
		"n", FT_UINT, PROTO_OPTION_N_MAX, OPT                                                                  \
	}
#define OFFSET                                                                                                         \
	{                                                                                                              \
		"offset", FT_UINT, PROTO_OFFSET_MAX, OPT                                                               \
	}
static const struct frame_field ctl_pending[] = {CONN, OFFSET};
static const struct frame_field ctl_show[] = {CONN, SID(REQ)};
static const struct frame_field ctl_decide[] = {CONN, SID(REQ), OUTCOME, TEXT, OPTION_N};
/* Every web request: its id and the credentials it came with (PROTO_WEB_CREDENTIALS). */
#define WEB                                                                                                            \
	{"hreq", FT_UINT, UINT64_MAX, REQ}, {"cookie", FT_TEXT, PROTO_COOKIE_MAX, OPT},                                \
	    {"csrf", FT_TEXT, PROTO_CSRF_MAX, OPT}, {"bearer", FT_TEXT, PROTO_BEARER_MAX, OPT},                        \
	    {"proxy_user", FT_TEXT, PROTO_PROXY_USER_MAX, OPT},                                                        \
	    {"proxy_secret", FT_TEXT, PROTO_PROXY_SECRET_MAX, OPT},                                                    \
	{                                                                                                              \
		"client_addr", FT_TEXT, PROTO_ADDR_MAX, OPT                                                            \
	}
static const struct frame_field web[] = {WEB};
static const struct frame_field web_me[] = {WEB, {"mcp", FT_BOOL, 0, OPT}}; /* mcp: from /review/mcp */
static const struct frame_field web_login[] = {WEB, {"token", FT_TEXT, PROTO_TOKEN_MAX, OPT}};
static const struct frame_field web_page[] = {WEB, OFFSET};
/* A passkey assertion (or, without pk_sig, an attestation), base64url as the page sent it. */
#define PASSKEY                                                                                                        \
	{"pk_cred", FT_TEXT, PROTO_PK_CRED_MAX, OPT}, {"pk_authdata", FT_TEXT, PROTO_PK_AUTHDATA_MAX, OPT},            \
	    {"pk_cdj", FT_TEXT, PROTO_PK_CDJ_MAX, OPT},                                                                \
	{                                                                                                              \
		"pk_sig", FT_TEXT, PROTO_PK_SIG_MAX, OPT                                                               \
	}
static const struct frame_field web_decide[] = {WEB, SID(REQ), OUTCOME, TEXT, OPTION_N, PASSKEY};
static const struct frame_field web_passkey[] = {
    WEB, {"op", FT_TEXT, PROTO_PK_OP_MAX, REQ}, SID(OPT), {"outcome", FT_TEXT, PROTO_OUTCOME_MAX, OPT}, TEXT, PASSKEY};
static const struct frame_field web_reveal[] = {WEB, SID(REQ)};
static const struct frame_field web_submit[] = {WEB, SID(REQ), {"approved", FT_BOOL, 0, REQ}, TEXT, OPTION_N};
static const struct frame_field http_auth[] = {
    {"hreq", FT_UINT, UINT64_MAX, REQ},
    {"init", FT_BOOL, 0, REQ},
    {"bearer", FT_TEXT, PROTO_BEARER_MAX, OPT},
    {"session", FT_TEXT, PROTO_SESSION_MAX, OPT},
    {"stateless", FT_BOOL, 0, OPT}, /* 2026-07-28: a connection for this one request */
};
static const struct frame_field call[] = {
    CONN,
    RID,
    {"call", FT_BYTES, PROTO_CALL_MAX, REQ},
    {"client", FT_TEXT, ACTION_CLIENT_MAX, REQ},
    {"hreq", FT_UINT, UINT64_MAX, OPT},
    {"task", FT_BOOL, 0, OPT},			   /* collected as an MCP task */
    {"caps", FT_UINT, PROTO_CAPS_MAX, OPT},	   /* PROTO_CAP_*: a 2026-07-28 client's call, and what it declared */
    {"state", FT_TEXT, PROTO_GATE_STATE_MAX, OPT}, /* the requestState it returns (gatemrtr.c) */
};
static const struct frame_field up_tools[] = {{"tools", FT_BYTES, PROTO_UP_TOOLS_MAX, REQ},
					      {"resources", FT_BYTES, PROTO_UP_TOOLS_MAX, OPT},
					      {"templates", FT_BYTES, PROTO_UP_TOOLS_MAX, OPT},
					      {"prompts", FT_BYTES, PROTO_UP_TOOLS_MAX, OPT},
					      {"completions", FT_BOOL, 0, OPT},
					      {"subscribe", FT_BOOL, 0, OPT}};
static const struct frame_field up_note[] = {{"cid", FT_UINT, UINT64_MAX, REQ},
					     {"method", FT_TEXT, PROTO_METHOD_MAX, REQ},
					     {"params", FT_BYTES, PROTO_UP_NOTE_MAX, REQ}};
static const struct frame_field up_ask[] = {{"sid", FT_TEXT, PROTO_RID_MAX, REQ},
					    {"method", FT_TEXT, PROTO_METHOD_MAX, REQ},
					    {"params", FT_BYTES, PROTO_UP_NOTE_MAX, REQ}};
static const struct frame_field answer[] = {CONN,
					    {"aid", FT_UINT, UINT64_MAX, REQ},
					    {"result", FT_BYTES, PROTO_UP_RESULT_MAX, OPT},
					    {"error", FT_BYTES, PROTO_UP_NOTE_MAX, OPT}};
static const struct frame_field up_result[] = {{"cid", FT_UINT, UINT64_MAX, REQ},
					       {"result", FT_BYTES, PROTO_UP_RESULT_MAX, OPT},
					       {"error", FT_TEXT, PROTO_UP_ERROR_MAX, OPT},
					       {"unknown", FT_BOOL, 0, OPT}}; /* error: the server may have run it */
static const struct frame_field none[] = {{"t", FT_UINT, UINT64_MAX, OPT}};   /* no field but the type */
static const struct frame_field session_info[] = {
    CONN, {"client", FT_TEXT, ACTION_CLIENT_MAX, REQ}, {"protocol", FT_TEXT, PROTO_PROTOCOL_MAX, REQ}};

/* A call's record (gateway/worker/mcp/callrec.c): sizes in bytes, times in ms and us. The
 * signer passes it on to the recorder in F_REC_CALL, with its own fields added. */
#define CALLREC_FIELDS                                                                                                 \
	RID, {"tool", FT_TEXT, RECCFG_NAME_MAX, REQ}, {"up", FT_TEXT, PROTO_UP_NAME_MAX, OPT},                         \
	    {"t0", FT_UINT, UINT64_MAX, REQ},		      /* unix ms */                                            \
	    {"dur", FT_UINT, UINT64_MAX, REQ},		      /* microseconds */                                       \
	    {"outcome", FT_UINT, PROTO_REC_OUTCOME_MAX, REQ}, /* 0 ok, 1 soft_error, 2 error */                        \
	    {"etype", FT_TEXT, PROTO_REC_ETYPE_MAX, OPT}, {"emsg", FT_TEXT, PROTO_REC_ERROR_MAX, OPT},                 \
	    {"asz", FT_UINT, UINT64_MAX, REQ}, {"rsz", FT_UINT, UINT64_MAX, OPT},                                      \
	    {"rate", FT_UINT, PROTO_REC_RATE_ONE, OPT}, /* parts per million: a sampled tool's ok call */              \
	    {"args", FT_TEXT, RECCFG_PAYLOAD_MAX, OPT}, {"res", FT_TEXT, RECCFG_PAYLOAD_MAX, OPT},                     \
	    {"atot", FT_UINT, UINT64_MAX, OPT}, /* args was cut: its whole size */                                     \
	    {"rtot", FT_UINT, UINT64_MAX, OPT},                                                                        \
	    {"client", FT_TEXT, ACTION_CLIENT_MAX, OPT}, /* as declared; the signer's own when it has one */           \
	    {"extra", FT_TEXT, RECCFG_PAYLOAD_MAX, OPT}, /* the enricher's keys of the result (records.extra_keys) */  \
	{                                                                                                              \
		"xtot", FT_UINT, UINT64_MAX, OPT                                                                       \
	}
static const struct frame_field callrec[] = {CONN, CALLREC_FIELDS};
static const struct frame_field callrecs[] = {{"recs", FT_ARRAY, PROTO_CALLRECS_MAX, REQ}}; /* each: callrec */
/* The cluster client (gateway/recorder/cluster.c) and the signer's end (gateway/signer/cluster.c). */
static const struct frame_field cl_ready[] = {{"size", FT_UINT, UINT64_MAX, REQ},
					      {"replicas", FT_UINT, UINT32_MAX, REQ}};
static const struct frame_field cl_ent[] = {{"seq", FT_UINT, UINT64_MAX, REQ},
					    {"e", FT_BYTES, PROTO_CL_ENTRY_MAX, REQ}};
static const struct frame_field cl_ckpt[] = {
    {"size", FT_UINT, UINT64_MAX, REQ}, {"note", FT_BYTES, PROTO_CL_NOTE_MAX, REQ}, {"periodic", FT_BOOL, 0, REQ}};
static const struct frame_field cl_end[] = {
    {"ok", FT_BOOL, 0, REQ}, {"err", FT_TEXT, PROTO_CL_ERR_MAX, OPT}, {"size", FT_UINT, UINT64_MAX, OPT}};
static const struct frame_field cl_notify[] = {{"size", FT_UINT, UINT64_MAX, REQ}};
static const struct frame_field cl_dead[] = {{"replica", FT_TEXT, PROTO_CL_REPLICA_MAX, REQ}};
#define CL_DLV_FIELDS                                                                                                  \
	{"id", FT_UINT, UINT64_MAX, REQ}, {"hook", FT_TEXT, PROTO_CL_HOOK_MAX, REQ},                                   \
	    {"event", FT_TEXT, PROTO_CL_EVENT_MAX, REQ}, {"body", FT_TEXT, PROTO_NOTIFY_BODY_MAX, REQ},                \
	{                                                                                                              \
		"mac", FT_TEXT, 64, REQ                                                                                \
	}
static const struct frame_field cl_reg[] = {{"version", FT_UINT, UINT64_MAX, REQ},
					    {"body", FT_TEXT, PROTO_CL_REG_MAX, REQ},
					    {"mac", FT_TEXT, 64, REQ},
					    {"base", FT_UINT, UINT64_MAX, OPT},
					    {"file", FT_UINT, 1, OPT}};
static const struct frame_field cl_ws[] = {
    {"body", FT_TEXT, PROTO_CL_WS_MAX, REQ}, {"mac", FT_TEXT, 64, REQ}, {"ended", FT_BOOL, 0, REQ}};
static const struct frame_field d_cl_ws_put[] = {{"key", FT_TEXT, 64, REQ},
						 {"body", FT_TEXT, PROTO_CL_WS_MAX, REQ},
						 {"mac", FT_TEXT, 64, REQ},
						 {"ended", FT_BOOL, 0, REQ}};
static const struct frame_field cl_dlv[] = {{"origin", FT_TEXT, PROTO_CL_REPLICA_MAX, REQ}, CL_DLV_FIELDS};
static const struct frame_field rec_stats[] = {{"written", FT_UINT, UINT64_MAX, REQ},
					       {"dropped", FT_UINT, UINT64_MAX, REQ},
					       {"failed", FT_UINT, UINT64_MAX, REQ},
					       {"queued", FT_UINT, UINT64_MAX, REQ},
					       {"events", FT_UINT, UINT64_MAX, REQ}};
static const struct frame_field rec_answer[] = {{"qid", FT_UINT, UINT64_MAX, REQ},
						{"status", FT_UINT, PS_COUNT - 1, REQ},
						{"json", FT_TEXT, PROTO_REC_ANSWER_MAX, REQ}};
static const struct frame_field notify_done[] = {{"id", FT_UINT, UINT64_MAX, REQ},
						 {"status", FT_UINT, PROTO_HTTP_STATUS_MAX, REQ},
						 {"error", FT_TEXT, PROTO_NOTIFY_ERROR_MAX, OPT}};
/* A witness's answer as the notify worker read it: the signer never sees its bytes, only
 * these fields, and rebuilds each cosignature line from them once its signature verifies. */
static const struct frame_field witness_done[] = {
    {"id", FT_UINT, UINT64_MAX, REQ},
    {"status", FT_UINT, PROTO_HTTP_STATUS_MAX, REQ},
    {"error", FT_TEXT, PROTO_NOTIFY_ERROR_MAX, OPT},
    {"size", FT_UINT, PROTO_WITNESS_SIZE_MAX, OPT},	  /* a 409's text/x.tlog.size */
    {"cosigs", FT_ARRAY, PROTO_WITNESS_COSIGS_MAX, OPT}}; /* a 200's lines: each a witness_cosig */
static const struct frame_field witness_cosig[] = {{"name", FT_TEXT, PROTO_WITNESS_NAME_MAX, REQ},
						   {"keyid", FT_BYTES, FRAME_COSIG_KEYID, REQ},
						   {"time", FT_UINT, PROTO_WITNESS_SIZE_MAX, REQ},
						   {"sig", FT_BYTES, FRAME_COSIG_SIG, REQ}};

/* What a question about the records may carry (qa.c checks who may ask which op). */
#define QA_FIELDS                                                                                                      \
	{"op", FT_TEXT, PROTO_QA_WORD_MAX, REQ}, {"type", FT_TEXT, PROTO_QA_WORD_MAX, OPT},                            \
	    {"title", FT_TEXT, PROTO_QA_TITLE_MAX, OPT}, {"description", FT_TEXT, PROTO_QA_DESC_MAX, OPT},             \
	    {"contact", FT_TEXT, PROTO_QA_CONTACT_MAX, OPT}, {"status", FT_TEXT, PROTO_QA_WORD_MAX, OPT},              \
	    {"id", FT_UINT, INT64_MAX, OPT}, {"offset", FT_UINT, PROTO_QA_OFFSET_MAX, OPT},                            \
	    {"limit", FT_UINT, PROTO_QA_LIMIT_MAX, OPT}, {"key", FT_TEXT, PROTO_EVENT_KEY_MAX, OPT},                   \
	    {"kind", FT_TEXT, PROTO_EVENT_KIND_MAX, OPT}, {"kinds", FT_ARRAY, PROTO_QA_KINDS_MAX, OPT},                \
	    {"attrs", FT_TEXT, RECCFG_PAYLOAD_MAX, OPT}, {"older", FT_UINT, UINT64_MAX, OPT},                          \
	    {"by", FT_TEXT, PROTO_EVENT_BY_MAX, OPT}, {"ref", FT_TEXT, PROTO_FEEDBACK_REF_MAX, OPT},                   \
	{                                                                                                              \
		"call", FT_TEXT, PROTO_QA_CALL_MAX, OPT                                                                \
	}
static const struct frame_field qa_mcp[] = {
    CONN, RID, QA_FIELDS, {"client", FT_TEXT, ACTION_CLIENT_MAX, OPT}}; /* declared, for stdio */
static const struct frame_field qa_ctl[] = {CONN, QA_FIELDS};
static const struct frame_field qa_web[] = {WEB, QA_FIELDS};
static const struct frame_field web_history[] = {WEB,
						 {"who", FT_TEXT, PROTO_HIST_WHO_MAX, OPT},
						 {"outcome", FT_TEXT, PROTO_OUTCOME_MAX, OPT},
						 {"audience", FT_TEXT, PROTO_HIST_AUD_MAX, OPT},
						 {"rule", FT_UINT, PROTO_HIST_RULE_MAX, OPT},
						 {"since", FT_UINT, PROTO_HIST_TIME_MAX, OPT},
						 {"until", FT_UINT, PROTO_HIST_TIME_MAX, OPT},
						 {"limit", FT_UINT, PROTO_HIST_LIMIT_MAX, OPT}};
static const struct frame_field web_proof[] = {WEB, {"seq", FT_UINT, PROTO_SEQ_MAX, REQ}};
/* tree sizes: a sequence number's bound plus one, both required (the worker says which is missing) */
static const struct frame_field web_consistency[] = {
    WEB, {"old", FT_UINT, PROTO_SEQ_MAX + 1, REQ}, {"new", FT_UINT, PROTO_SEQ_MAX + 1, REQ}};

#define TABLE(t, f)                                                                                                    \
	{                                                                                                              \
		t, #t, f, sizeof f / sizeof *f                                                                         \
	}
static const struct frame_table tables[] = {
    TABLE(F_HELLO, hello),
    TABLE(F_CONN_CLOSED, conn_only),
    TABLE(F_LOG, log_f),
    TABLE(F_REQUEST, request),
    TABLE(F_COLLECT, collect),
    TABLE(F_LIST, conn_rid),
    TABLE(F_CANCEL, conn_rid),
    TABLE(F_TASK, task),
    TABLE(F_INPUT, input),
    TABLE(F_CALL, call),
    TABLE(F_UP_TOOLS, up_tools),
    TABLE(F_UP_RESULT, up_result),
    TABLE(F_UP_NOTE, up_note),
    TABLE(F_UP_ASK, up_ask),
    TABLE(F_UP_CONNECT, none),
    TABLE(F_ANSWER, answer),
    TABLE(F_HTTP_AUTH, http_auth),
    TABLE(F_SESSION_INFO, session_info),
    TABLE(F_SESSION_END, conn_only),
    TABLE(F_CTL_WHOAMI, conn_only),
    TABLE(F_CTL_STATUS, conn_only),
    TABLE(F_CTL_PENDING, ctl_pending),
    TABLE(F_CTL_SHOW, ctl_show),
    TABLE(F_CTL_REVEAL, ctl_show),
    TABLE(F_CTL_DECIDE, ctl_decide),
    TABLE(F_WEB_METRICS, web),
    TABLE(F_WEB_JWKS, web),
    TABLE(F_WEB_CHECKPOINT, web),
    TABLE(F_WEB_LOGIN, web_login),
    TABLE(F_WEB_ME, web_me),
    TABLE(F_WEB_LOGOUT, web),
    TABLE(F_WEB_EVENTS, web),
    TABLE(F_WEB_PENDING, web_page),
    TABLE(F_WEB_LIST, web_page),
    TABLE(F_WEB_DECIDE, web_decide),
    TABLE(F_WEB_REVEAL, web_reveal),
    TABLE(F_WEB_SUBMIT, web_submit),
    TABLE(F_WEB_ADMIN_CLEAR, web),
    TABLE(F_CALLREC, callrec),
    TABLE(F_CALLRECS, callrecs),
    TABLE(F_QA, qa_mcp),
    TABLE(F_CTL_QA, qa_ctl),
    TABLE(F_WEB_QA, qa_web),
    TABLE(F_REC_STATS, rec_stats),
    TABLE(F_REC_ANSWER, rec_answer),
    TABLE(F_NOTIFY_DONE, notify_done),
    TABLE(F_WITNESS_DONE, witness_done),
    TABLE(F_WEB_HISTORY, web_history),
    TABLE(F_WEB_PROOF, web_proof),
    TABLE(F_WEB_CONSISTENCY, web_consistency),
    TABLE(F_WEB_PASSKEY, web_passkey),
    TABLE(F_CL_READY, cl_ready),
    TABLE(F_CL_ENT, cl_ent),
    TABLE(F_CL_CKPT, cl_ckpt),
    TABLE(F_CL_END, cl_end),
    TABLE(F_CL_NOTIFY, cl_notify),
    TABLE(F_CL_DEAD, cl_dead),
    TABLE(F_CL_DLV, cl_dlv),
    TABLE(F_CL_REG, cl_reg),
    TABLE(F_CL_WS, cl_ws),
};

const struct frame_table *frame_table_find(uint32_t t)
{
	for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
		if (tables[i].type == t)
			return &tables[i];
	return NULL;
}

/* ---- the frames the signer sends its workers (proto.h: signer -> worker) ----
 * Each worker checks every frame from its signer against these (frame_down_check) before
 * its handler runs: a frame that breaks its table is refused with an error naming the field. */
static const struct frame_field d_result[] = {CONN,
					      RID,
					      {"json", FT_TEXT, PROTO_JSON_MAX, REQ},
					      {"iserror", FT_BOOL, 0, REQ},
					      {"raw", FT_BOOL, 0, OPT},	      /* json is an upstream's result itself */
					      {"rpc_error", FT_BOOL, 0, OPT}, /* json is a JSON-RPC error */
					      {"status", FT_UINT, PS_COUNT - 1, OPT}}; /* a refusal's */
static const struct frame_field d_ctl_reply[] = {
    CONN, {"status", FT_UINT, PS_COUNT - 1, REQ}, {"json", FT_TEXT, PROTO_JSON_MAX, REQ}};
/* One table for every worker's configuration, each field optional here: which worker needs
 * which is its reader's business (a missing one fails its start), as is each map's content
 * (httpcfg.c, uphttp.c). */
static const struct frame_field d_config[] = {
    {"http", FT_MAP, PROTO_CONFIG_MAP_MAX, OPT},	    /* mcp, review: its listener */
    {"proxy", FT_UINT, 1, OPT},				    /* review: a reverse proxy's socket came with it */
    {"proxy_header", FT_TEXT, PROTO_PROXY_HEADER_MAX, OPT}, /* mcp, review */
    {"records", FT_TEXT, PROTO_RECORDS_CFG_MAX, OPT},	    /* mcp, review, recorder: JSON */
    {"review_url", FT_TEXT, PROTO_REVIEW_URL_MAX, OPT},	    /* mcp */
    {"name", FT_TEXT, PROTO_UP_NAME_MAX, OPT},		    /* upstream: whose worker it is */
    {"url", FT_MAP, PROTO_CONFIG_MAP_MAX, OPT},		    /* upstream: a url server's */
    {"hooks", FT_ARRAY, PROTO_NOTIFY_HOOKS_MAX, OPT},	    /* notify: each a d_hook */
    {"witnesses", FT_ARRAY, PROTO_WITNESS_MAX, OPT},	    /* notify: each a d_hook (path: add-checkpoint's) */
};
static const struct frame_field d_hook[] = {{"scheme", FT_TEXT, PROTO_URL_SCHEME_MAX, REQ},
					    {"host", FT_TEXT, PROTO_URL_HOST_MAX, REQ},
					    {"path", FT_TEXT, PROTO_URL_PATH_MAX, REQ},
					    {"port", FT_UINT, PROTO_URL_PORT_MAX, REQ},
					    {"ca", FT_TEXT, PROTO_CA_PATH_MAX, OPT}};
/* {hreq, status, error?, retry?}, or {hreq, status 200, conn, session, principal, client?, protocol?} */
static const struct frame_field d_http_reply[] = {{"hreq", FT_UINT, UINT64_MAX, REQ},
						  {"status", FT_UINT, PROTO_HTTP_STATUS_MAX, REQ},
						  {"error", FT_TEXT, PROTO_HTTP_ERROR_MAX, OPT},
						  {"retry", FT_UINT, PROTO_HTTP_RETRY_MAX, OPT},
						  {"conn", FT_UINT, UINT64_MAX, OPT},
						  {"session", FT_TEXT, PROTO_SESSION_MAX, OPT},
						  {"principal", FT_TEXT, PROTO_NAME_MAX, OPT},
						  {"client", FT_TEXT, ACTION_CLIENT_MAX, OPT},
						  {"protocol", FT_TEXT, PROTO_PROTOCOL_MAX, OPT}};
static const struct frame_field d_stats[] = {
    {"pending", FT_UINT, UINT64_MAX, REQ},
    {"uptime", FT_UINT, UINT64_MAX, REQ},
    {"witness_alarm", FT_TEXT, PROTO_WITNESS_ALARM_MAX, OPT}, /* witness.c */
    {"cluster", FT_TEXT, PROTO_STATS_CLUSTER_MAX, OPT}};      /* cluster.c: a JSON object */
static const struct frame_field d_web_reply[] = {
    {"hreq", FT_UINT, UINT64_MAX, REQ},
    {"status", FT_UINT, PS_COUNT - 1, REQ},
    {"body", FT_TEXT, PROTO_JSON_MAX, REQ},
    {"ctype", FT_TEXT, PROTO_CTYPE_MAX, OPT},
    {"cookie", FT_TEXT, PROTO_SET_COOKIE_MAX, OPT},
    {"clear", FT_BOOL, 0, OPT},
    {"retry", FT_UINT, PROTO_WEB_RETRY_MAX, OPT},
    {"wsid", FT_UINT, UINT32_MAX, OPT}}; /* the event stream's web session */
static const struct frame_field d_task_status[] = {CONN, {"json", FT_TEXT, PROTO_JSON_MAX, REQ}};
static const struct frame_field d_web_push[] = {{"version", FT_UINT, UINT64_MAX, REQ},
						{"pending", FT_UINT, UINT64_MAX, REQ},
						{"ended", FT_ARRAY, PROTO_PUSH_ENDED_MAX, REQ}}; /* web session ids */
static const struct frame_field d_dispatch[] = {{"cid", FT_UINT, UINT64_MAX, REQ},
						{"call", FT_BYTES, PROTO_CALL_MAX, REQ},
						{"digest", FT_TEXT, PROTO_DIGEST_MAX, REQ},
						{"caps", FT_UINT, PROTO_CAPS_MAX, OPT},
						{"state", FT_TEXT, PROTO_UP_STATE_MAX, OPT}};
static const struct frame_field d_note[] = {
    CONN, RID, {"method", FT_TEXT, PROTO_METHOD_MAX, REQ}, {"json", FT_TEXT, PROTO_JSON_MAX, REQ}};
static const struct frame_field d_cid[] = {{"cid", FT_UINT, UINT64_MAX, REQ}};
static const struct frame_field d_ask[] = {CONN,
					   RID,
					   {"aid", FT_UINT, UINT64_MAX, REQ},
					   {"method", FT_TEXT, PROTO_METHOD_MAX, REQ},
					   {"json", FT_TEXT, PROTO_JSON_MAX, REQ}};
static const struct frame_field d_up_answer[] = {
    {"sid", FT_TEXT, PROTO_RID_MAX, REQ},
    {"result", FT_BYTES, PROTO_UP_RESULT_MAX, OPT},
    {"error", FT_BYTES, PROTO_UP_NOTE_MAX, OPT}}; /* F_ANSWER's, or the signer's */
/* Who a record or a question is about, as the signer measured them (qa.c's struct qa_who). */
#define WHO                                                                                                            \
	{"user", FT_TEXT, PROTO_EVENT_BY_MAX, OPT}, {"ckind", FT_TEXT, PROTO_CKIND_MAX, OPT},                          \
	    {"client", FT_TEXT, ACTION_CLIENT_MAX, OPT},                                                               \
	{                                                                                                              \
		"session", FT_TEXT, PROTO_SESSION_MAX, OPT                                                             \
	}
static const struct frame_field d_rec_calls[] = {{"recs", FT_ARRAY, PROTO_CALLRECS_MAX, REQ}}; /* each: d_rec_call */
/* F_CALLREC's fields (but conn), and the signer's: who made the call, and what it decided. */
static const struct frame_field d_rec_call[] = {CALLREC_FIELDS,
						{"user", FT_TEXT, PROTO_EVENT_BY_MAX, REQ},
						{"ckind", FT_TEXT, PROTO_CKIND_MAX, REQ},
						{"session", FT_TEXT, PROTO_SESSION_MAX, OPT},
						{"identity", FT_TEXT, PROTO_IDENTITY_MAX, REQ},
						{"version", FT_TEXT, PROTO_VERSION_MAX, REQ},
						{"id", FT_TEXT, PROTO_CALL_ID_MAX, OPT},
						{"decision", FT_TEXT, PROTO_DECISION_MAX, OPT},
						{"rule", FT_TEXT, PROTO_RULE_MAX, OPT},
						{"seq", FT_UINT, UINT64_MAX, OPT}};
static const struct frame_field d_rec_event[] = {{"at", FT_UINT, UINT64_MAX, REQ}, /* unix ms */
						 {"version", FT_TEXT, PROTO_VERSION_MAX, REQ},
						 WHO,
						 {"kind", FT_TEXT, PROTO_EVENT_KIND_MAX, REQ},
						 {"key", FT_TEXT, PROTO_EVENT_KEY_MAX, OPT},
						 {"attrs", FT_TEXT, RECCFG_PAYLOAD_MAX, OPT}, /* JSON */
						 {"call", FT_TEXT, PROTO_QA_CALL_MAX, OPT}};
/* A question, as a worker asked it (QA_FIELDS), and who asked. */
static const struct frame_field d_rec_query[] = {{"qid", FT_UINT, UINT64_MAX, REQ}, WHO, QA_FIELDS};
static const struct frame_field d_cl_hello[] = {{"url", FT_TEXT, PROTO_CL_URL_MAX, REQ},
						{"replica", FT_TEXT, PROTO_CL_REPLICA_MAX, REQ},
						{"policy", FT_TEXT, 64, REQ},
						{"lock", FT_TEXT, 8, REQ},
						{"adopt", FT_BOOL, 0, OPT}, /* this policy becomes the cluster's */
						{"lease", FT_UINT, 3600000, OPT}}; /* ms; none: no heartbeat */
static const struct frame_field d_cl_put[] = {{"seq", FT_UINT, UINT64_MAX, REQ},
					      {"e", FT_BYTES, PROTO_CL_ENTRY_MAX, REQ},
					      {"claim", FT_TEXT, PROTO_CL_CLAIM_MAX, OPT}}; /* ledger.h: taken once */
static const struct frame_field d_cl_dlv_add[] = {CL_DLV_FIELDS};
static const struct frame_field d_cl_dlv_done[] = {{"origin", FT_TEXT, PROTO_CL_REPLICA_MAX, REQ},
						   {"id", FT_UINT, UINT64_MAX, REQ},
						   {"hook", FT_TEXT, PROTO_CL_HOOK_MAX, REQ}};
static const struct frame_field d_cl_pull[] = {{"have", FT_UINT, UINT64_MAX, REQ}, {"lock", FT_BOOL, 0, REQ}};
static const struct frame_field d_cl_push[] = {{"from", FT_UINT, UINT64_MAX, REQ},
					       {"n", FT_UINT, PROTO_CL_PUSH_MAX, REQ},
					       {"note", FT_BYTES, PROTO_CL_NOTE_MAX, REQ},
					       {"periodic", FT_BOOL, 0, REQ}};
static const struct frame_field d_notify_post[] = {
    {"id", FT_UINT, UINT64_MAX, REQ},
    {"hook", FT_UINT, PROTO_NOTIFY_HOOKS_MAX - 1, REQ}, /* F_CONFIG's */
    {"body", FT_TEXT, PROTO_NOTIFY_BODY_MAX, REQ},
    {"headers", FT_ARRAY, PROTO_NOTIFY_HEADERS_MAX, REQ}}; /* [name, value] */
static const struct frame_field d_witness_post[] = {{"id", FT_UINT, UINT64_MAX, REQ},
						    {"witness", FT_UINT, PROTO_WITNESS_MAX - 1, REQ}, /* F_CONFIG's */
						    {"body", FT_TEXT, PROTO_WITNESS_BODY_MAX, REQ}};
static const struct frame_field d_catalog[] = {{"tools", FT_TEXT, PROTO_CATALOG_MAX, REQ},  /* JSON array */
					       {"routes", FT_TEXT, PROTO_CATALOG_MAX, REQ}, /* JSON */
					       {"more", FT_TEXT, PROTO_CATALOG_MAX, OPT}};  /* JSON object */

static const struct frame_table down[] = {
    TABLE(F_CONN_NEW, conn_only), /* + the connection's descriptor */
    TABLE(F_RESULT, d_result),
    TABLE(F_CTL_REPLY, d_ctl_reply),
    TABLE(F_CONFIG, d_config),
    TABLE(F_HTTP_REPLY, d_http_reply),
    TABLE(F_STATS, d_stats),
    TABLE(F_WEB_REPLY, d_web_reply),
    TABLE(F_TASK_STATUS, d_task_status),
    TABLE(F_WEB_PUSH, d_web_push),
    TABLE(F_DISPATCH, d_dispatch),
    TABLE(F_NOTE, d_note),
    TABLE(F_UP_CANCEL, d_cid),
    TABLE(F_ASK, d_ask),
    TABLE(F_UP_SOCKET, none), /* + a socket connecting to its server */
    TABLE(F_UP_ANSWER, d_up_answer),
    TABLE(F_REC_CALLS, d_rec_calls),
    TABLE(F_REC_CALL, d_rec_call),
    TABLE(F_REC_EVENT, d_rec_event),
    TABLE(F_REC_QUERY, d_rec_query),
    TABLE(F_NOTIFY_POST, d_notify_post),
    TABLE(F_WITNESS_POST, d_witness_post),
    TABLE(F_CATALOG, d_catalog),
    TABLE(F_CL_HELLO, d_cl_hello),
    TABLE(F_CL_PULL, d_cl_pull),
    TABLE(F_CL_PUT, d_cl_put),
    TABLE(F_CL_PUSH, d_cl_push),
    TABLE(F_CL_RELEASE, none),
    TABLE(F_CL_DLV_ADD, d_cl_dlv_add),
    TABLE(F_CL_DLV_DONE, d_cl_dlv_done),
    TABLE(F_CL_REG_PUT, cl_reg),
    TABLE(F_CL_WS_PUT, d_cl_ws_put),
};
/* The items of an array that are maps with a table of their own. */
static const struct frame_table hook_item = {F_CONFIG, "F_CONFIG hooks item", d_hook, sizeof d_hook / sizeof *d_hook};
static const struct {
	uint32_t type;
	const char *key;
	uint32_t item_type;		/* its table: the down table of this type, */
	const struct frame_table *item; /* or this one */
} down_items[] = {{F_REC_CALLS, "recs", F_REC_CALL, NULL},
		  {F_CONFIG, "hooks", 0, &hook_item},
		  {F_CONFIG, "witnesses", 0, &hook_item}};

static const struct frame_table cosig_item = {F_WITNESS_DONE, "F_WITNESS_DONE cosigs item", witness_cosig,
					      sizeof witness_cosig / sizeof *witness_cosig};

int frame_cosig_check(const struct cv *item, char *err)
{
	if (item->t != CV_MAP)
		return as_fail(err, AS_ECORRUPT, "IPC F_WITNESS_DONE: a cosigs item is not a map");
	GUARD(frame_fields_check(&cosig_item, item, err));
	if (cv_get(item, "keyid")->n != FRAME_COSIG_KEYID || cv_get(item, "sig")->n != FRAME_COSIG_SIG)
		return as_fail(err, AS_ECORRUPT, "IPC F_WITNESS_DONE: a cosigs item's keyid or sig is short");
	return 0;
}

const struct frame_table *frame_down_find(uint32_t t)
{
	for (size_t i = 0; i < sizeof down / sizeof *down; i++)
		if (down[i].type == t)
			return &down[i];
	return NULL;
}

static const char *ftype_name(enum frame_ftype t)
{
	static const char *const names[] = {"an unsigned integer", "a text string", "a byte string",
					    "a boolean",	   "an array",	    "a map"};
	return names[t];
}

static int value_ok(const struct frame_field *fd, const struct cv *v, uint64_t *size)
{
	switch (fd->type) {
	case FT_UINT:
		*size = v->u;
		return v->t == CV_UINT;
	case FT_TEXT:
	case FT_BYTES:
	case FT_ARRAY:
	case FT_MAP:
		*size = v->n;
		return v->t == (fd->type == FT_TEXT    ? CV_TEXT
				: fd->type == FT_BYTES ? CV_BYTES
				: fd->type == FT_ARRAY ? CV_ARRAY
						       : CV_MAP);
	case FT_BOOL:
		*size = 0;
		return v->t == CV_TRUE || v->t == CV_FALSE;
	}
	return 0;
}

int frame_fields_check(const struct frame_table *tb, const struct cv *body, char *err)
{
	uint64_t seen = 0; /* bit i: field i is present (ipc_next refused repeated keys) */
	for (size_t i = 0; i < body->n; i++) {
		const struct cv *k = &body->items[2 * i], *v = k + 1;
		if (cv_text_eq(k, "t"))
			continue;
		size_t f = 0;
		while (f < tb->nfields && !cv_text_eq(k, tb->fields[f].key))
			f++;
		if (f == tb->nfields)
			return as_fail(err, AS_ECORRUPT, "IPC %s: field \"%.*s\" is not one of its fields", tb->name,
				       (int)(k->n > 32 ? 32 : k->n), (const char *)k->s);
		const struct frame_field *fd = &tb->fields[f];
		uint64_t size;
		if (!value_ok(fd, v, &size))
			return as_fail(err, AS_ECORRUPT, "IPC %s: field \"%s\" is not %s", tb->name, fd->key,
				       ftype_name(fd->type));
		if (fd->type == FT_UINT && size > fd->max)
			return as_fail(err, AS_ECORRUPT, "IPC %s: field \"%s\" = %llu is over its maximum of %llu",
				       tb->name, fd->key, (unsigned long long)size, (unsigned long long)fd->max);
		if (fd->type != FT_UINT && fd->type != FT_BOOL && size > fd->max)
			return as_fail(err, AS_ECORRUPT, "IPC %s: field \"%s\" holds %llu %s, over its maximum of %llu",
				       tb->name, fd->key, (unsigned long long)size,
				       fd->type == FT_ARRAY ? "items"
				       : fd->type == FT_MAP ? "pairs"
							    : "bytes",
				       (unsigned long long)fd->max);
		seen |= (uint64_t)1 << f;
	}
	for (size_t f = 0; f < tb->nfields; f++)
		if (tb->fields[f].required && !(seen >> f & 1))
			return as_fail(err, AS_ECORRUPT, "IPC %s: missing field \"%s\"", tb->name, tb->fields[f].key);
	return 0;
}

int frame_down_check(uint32_t t, const struct cv *body, char *err)
{
	const struct frame_table *tb = frame_down_find(t);
	if (!tb)
		return as_fail(err, AS_ECORRUPT, "IPC: frame type %u is none the signer sends", (unsigned)t);
	int rc = frame_fields_check(tb, body, err);
	for (size_t i = 0; rc == 0 && i < sizeof down_items / sizeof *down_items; i++) {
		const struct cv *arr = down_items[i].type == t ? cv_get(body, down_items[i].key) : NULL;
		const struct frame_table *it =
		    down_items[i].item ? down_items[i].item : frame_down_find(down_items[i].item_type);
		for (size_t k = 0; arr && rc == 0 && k < arr->n; k++)
			rc = arr->items[k].t != CV_MAP ? as_fail(err, AS_ECORRUPT, "IPC %s: %s item %zu is not a map",
								 tb->name, down_items[i].key, k)
						       : frame_fields_check(it, &arr->items[k], err);
	}
	return rc;
}

/* ---- builders ---- */

struct cv *frame_hello(struct cv_arena *a, const char *kind)
{
	struct cv *f = ipc_frame_new(a, F_HELLO, 1);
	return f && ipc_put_text(a, f, "kind", kind, strlen(kind)) == 0 ? f : NULL;
}

struct cv *frame_up_failed(struct cv_arena *a, uint64_t cid, const char *error, int unknown)
{
	struct cv *f = ipc_frame_new(a, F_UP_RESULT, 3);
	if (!f || ipc_put_uint(a, f, "cid", cid) || ipc_put_text(a, f, "error", error, strlen(error)) ||
	    (unknown && ipc_put_bool(a, f, "unknown", 1)))
		return NULL;
	return f;
}

/* The signer's. */

static int put_str(struct cv_arena *a, struct cv *f, const char *k, const char *v)
{
	return ipc_put_text(a, f, k, v, strlen(v));
}

struct cv *frame_result(struct cv_arena *a, const struct frame_result *r)
{
	struct cv *f = ipc_frame_new(a, F_RESULT, 5);
	int rc = !f || ipc_put_uint(a, f, "conn", r->conn) || put_str(a, f, "rid", r->rid) ||
		 ipc_put_text(a, f, "json", r->json, r->n) || ipc_put_bool(a, f, "iserror", r->iserror) ||
		 (r->raw && ipc_put_bool(a, f, "raw", 1)) || (r->rpc_error && ipc_put_bool(a, f, "rpc_error", 1)) ||
		 (r->status && ipc_put_uint(a, f, "status", r->status));
	return rc ? NULL : f;
}

struct cv *frame_conn_new(struct cv_arena *a, uint64_t conn)
{
	struct cv *f = ipc_frame_new(a, F_CONN_NEW, 1);
	return f && ipc_put_uint(a, f, "conn", conn) == 0 ? f : NULL;
}

struct cv *frame_ctl_reply(struct cv_arena *a, uint64_t conn, unsigned status, const char *json, size_t n)
{
	struct cv *f = ipc_frame_new(a, F_CTL_REPLY, 3);
	int rc = !f || ipc_put_uint(a, f, "conn", conn) || ipc_put_uint(a, f, "status", status) ||
		 ipc_put_text(a, f, "json", json, n);
	return rc ? NULL : f;
}

struct cv *frame_stats(struct cv_arena *a, uint64_t pending, uint64_t uptime, const char *alarm, const char *cluster)
{
	struct cv *f = ipc_frame_new(a, F_STATS, 4);
	size_t al = alarm ? strnlen(alarm, PROTO_WITNESS_ALARM_MAX) : 0;
	size_t cl = cluster ? strnlen(cluster, PROTO_STATS_CLUSTER_MAX) : 0;
	int rc = !f || ipc_put_uint(a, f, "pending", pending) || ipc_put_uint(a, f, "uptime", uptime) ||
		 (al && ipc_put_text(a, f, "witness_alarm", alarm, al)) ||
		 (cl && ipc_put_text(a, f, "cluster", cluster, cl));
	return rc ? NULL : f;
}

struct cv *frame_task_status(struct cv_arena *a, uint64_t conn, const char *json, size_t n)
{
	struct cv *f = ipc_frame_new(a, F_TASK_STATUS, 2);
	int rc = !f || ipc_put_uint(a, f, "conn", conn) || ipc_put_text(a, f, "json", json, n);
	return rc ? NULL : f;
}

struct cv *frame_note(struct cv_arena *a, uint64_t conn, const char *rid, const char *method, const char *json)
{
	struct cv *f = ipc_frame_new(a, F_NOTE, 4);
	int rc = !f || ipc_put_uint(a, f, "conn", conn) || put_str(a, f, "rid", rid) ||
		 put_str(a, f, "method", method) || put_str(a, f, "json", json);
	return rc ? NULL : f;
}

struct cv *frame_ask(struct cv_arena *a, uint64_t conn, const char *rid, uint64_t aid, const char *method,
		     const char *json)
{
	struct cv *f = ipc_frame_new(a, F_ASK, 5);
	int rc = !f || ipc_put_uint(a, f, "conn", conn) || put_str(a, f, "rid", rid) ||
		 ipc_put_uint(a, f, "aid", aid) || put_str(a, f, "method", method) || put_str(a, f, "json", json);
	return rc ? NULL : f;
}

struct cv *frame_up_cancel(struct cv_arena *a, uint64_t cid)
{
	struct cv *f = ipc_frame_new(a, F_UP_CANCEL, 1);
	return f && ipc_put_uint(a, f, "cid", cid) == 0 ? f : NULL;
}

struct cv *frame_up_answer(struct cv_arena *a, const char *sid, const char *key, const uint8_t *p, size_t n)
{
	struct cv *f = ipc_frame_new(a, F_UP_ANSWER, 2);
	int rc = !f || put_str(a, f, "sid", sid) || ipc_put_bytes(a, f, key, p, n);
	return rc ? NULL : f;
}

struct cv *frame_dispatch(struct cv_arena *a, uint64_t cid, const uint8_t *cbor, size_t n, const char *digest,
			  unsigned caps, const char *state)
{
	struct cv *f = ipc_frame_new(a, F_DISPATCH, 5);
	int rc = !f || ipc_put_uint(a, f, "cid", cid) || ipc_put_bytes(a, f, "call", cbor, n) ||
		 put_str(a, f, "digest", digest) || (caps && ipc_put_uint(a, f, "caps", caps)) ||
		 (state && put_str(a, f, "state", state));
	return rc ? NULL : f;
}

struct cv *frame_web_push(struct cv_arena *a, uint64_t version, uint64_t pending, const uint32_t *ended, size_t nended)
{
	struct cv *f = ipc_frame_new(a, F_WEB_PUSH, 3),
		  *arr = cv_array(a, nended > PROTO_PUSH_ENDED_MAX ? PROTO_PUSH_ENDED_MAX : nended), *slot;
	for (size_t i = 0; arr && i < arr->n; i++)
		cv_set_uint(&arr->items[i], ended[i]);
	if (!f || !arr || ipc_put_uint(a, f, "version", version) || ipc_put_uint(a, f, "pending", pending) ||
	    !(slot = ipc_put(a, f, "ended")))
		return NULL;
	*slot = *arr;
	return f;
}

struct cv *frame_catalog(struct cv_arena *a, const char *tools, const char *routes, const char *more)
{
	struct cv *f = ipc_frame_new(a, F_CATALOG, 3);
	int rc = !f || put_str(a, f, "tools", tools) || put_str(a, f, "routes", routes) || put_str(a, f, "more", more);
	return rc ? NULL : f;
}

struct cv *frame_web_reply(struct cv_arena *a, const struct frame_web_reply *r)
{
	struct cv *f = ipc_frame_new(a, F_WEB_REPLY, 8);
	int rc = !f || ipc_put_uint(a, f, "hreq", r->hreq) || ipc_put_uint(a, f, "status", r->status) ||
		 ipc_put_text(a, f, "body", r->body, r->n) || (r->ctype && put_str(a, f, "ctype", r->ctype)) ||
		 (r->cookie && put_str(a, f, "cookie", r->cookie)) || (r->clear && ipc_put_bool(a, f, "clear", 1)) ||
		 (r->retry && ipc_put_uint(a, f, "retry", r->retry)) ||
		 (r->wsid && ipc_put_uint(a, f, "wsid", r->wsid));
	return rc ? NULL : f;
}

struct cv *frame_http_reply(struct cv_arena *a, const struct frame_http_reply *r)
{
	struct cv *f = ipc_frame_new(a, F_HTTP_REPLY, 9);
	int rc = !f || ipc_put_uint(a, f, "hreq", r->hreq) || ipc_put_uint(a, f, "status", r->status) ||
		 (r->error && put_str(a, f, "error", r->error)) || (r->retry && ipc_put_uint(a, f, "retry", r->retry));
	if (!rc && r->session)
		rc = ipc_put_uint(a, f, "conn", r->conn) || put_str(a, f, "session", r->session) ||
		     put_str(a, f, "principal", r->principal) || put_str(a, f, "client", r->client) ||
		     put_str(a, f, "protocol", r->protocol);
	return rc ? NULL : f;
}

/* ---- reading a checked frame's fields ---- */

uint64_t frame_get_uint(const struct cv *m, const char *key)
{
	const struct cv *v = cv_get(m, key);
	return v && v->t == CV_UINT ? v->u : 0;
}

const char *frame_get_text(const struct cv *m, const char *key, size_t *n)
{
	const struct cv *v = cv_get(m, key);
	*n = v && v->t == CV_TEXT ? v->n : 0;
	return v && v->t == CV_TEXT ? (v->n ? (const char *)v->s : "") : NULL; /* present: never NULL */
}

const uint8_t *frame_get_bytes(const struct cv *m, const char *key, size_t *n)
{
	const struct cv *v = cv_get(m, key);
	*n = v && v->t == CV_BYTES ? v->n : 0;
	return v && v->t == CV_BYTES ? (v->n ? v->s : (const uint8_t *)"") : NULL;
}

int frame_get_bool(const struct cv *m, const char *key)
{
	const struct cv *v = cv_get(m, key);
	return v && v->t == CV_TRUE;
}

const struct cv *frame_get(const struct cv *m, const char *key, enum cv_type t)
{
	const struct cv *v = cv_get(m, key);
	return v && v->t == t ? v : NULL;
}
