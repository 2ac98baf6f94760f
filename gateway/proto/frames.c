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
static const struct frame_field web_decide[] = {WEB, SID(REQ), OUTCOME, TEXT, OPTION_N};
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
    {"caps", FT_UINT, 15, OPT},			   /* PROTO_CAP_*: a 2026-07-28 client's call, and what it declared */
    {"state", FT_TEXT, PROTO_GATE_STATE_MAX, OPT}, /* the requestState it returns (gatemrtr.c) */
};
static const struct frame_field up_tools[] = {{"tools", FT_BYTES, PROTO_UP_TOOLS_MAX, REQ},
					      {"resources", FT_BYTES, PROTO_UP_TOOLS_MAX, OPT},
					      {"templates", FT_BYTES, PROTO_UP_TOOLS_MAX, OPT},
					      {"prompts", FT_BYTES, PROTO_UP_TOOLS_MAX, OPT},
					      {"completions", FT_BOOL, 0, OPT},
					      {"subscribe", FT_BOOL, 0, OPT}};
static const struct frame_field up_note[] = {
    {"cid", FT_UINT, UINT64_MAX, REQ}, {"method", FT_TEXT, 64, REQ}, {"params", FT_BYTES, PROTO_UP_NOTE_MAX, REQ}};
static const struct frame_field up_ask[] = {
    {"sid", FT_TEXT, PROTO_RID_MAX, REQ}, {"method", FT_TEXT, 64, REQ}, {"params", FT_BYTES, PROTO_UP_NOTE_MAX, REQ}};
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

/* A call's record (gateway/worker/mcp/callrec.c): sizes in bytes, times in ms and us. */
static const struct frame_field callrec[] = {
    CONN,
    RID,
    {"tool", FT_TEXT, RECCFG_NAME_MAX, REQ},
    {"up", FT_TEXT, 32, OPT},
    {"t0", FT_UINT, UINT64_MAX, REQ},  /* unix ms */
    {"dur", FT_UINT, UINT64_MAX, REQ}, /* microseconds */
    {"outcome", FT_UINT, 2, REQ},      /* 0 ok, 1 soft_error, 2 error */
    {"etype", FT_TEXT, 64, OPT},
    {"emsg", FT_TEXT, PROTO_REC_ERROR_MAX, OPT},
    {"asz", FT_UINT, UINT64_MAX, REQ},
    {"rsz", FT_UINT, UINT64_MAX, OPT},
    {"rate", FT_UINT, 1000000, OPT}, /* parts per million: a sampled tool's ok call */
    {"args", FT_TEXT, RECCFG_PAYLOAD_MAX, OPT},
    {"res", FT_TEXT, RECCFG_PAYLOAD_MAX, OPT},
    {"atot", FT_UINT, UINT64_MAX, OPT}, /* args was cut: its whole size */
    {"rtot", FT_UINT, UINT64_MAX, OPT},
    {"client", FT_TEXT, ACTION_CLIENT_MAX, OPT}, /* declared by the client: the signer's own when it has one */
    {"extra", FT_TEXT, RECCFG_PAYLOAD_MAX, OPT}, /* the enricher's keys of the result (records.extra_keys) */
    {"xtot", FT_UINT, UINT64_MAX, OPT},
};
static const struct frame_field callrecs[] = {{"recs", FT_ARRAY, PROTO_CALLRECS_MAX, REQ}}; /* each: callrec */
static const struct frame_field rec_stats[] = {{"written", FT_UINT, UINT64_MAX, REQ},
					       {"dropped", FT_UINT, UINT64_MAX, REQ},
					       {"failed", FT_UINT, UINT64_MAX, REQ},
					       {"queued", FT_UINT, UINT64_MAX, REQ},
					       {"events", FT_UINT, UINT64_MAX, REQ}};
static const struct frame_field rec_answer[] = {{"qid", FT_UINT, UINT64_MAX, REQ},
						{"status", FT_UINT, PS_COUNT - 1, REQ},
						{"json", FT_TEXT, IPC_FRAME_MAX / 2, REQ}};
static const struct frame_field notify_done[] = {
    {"id", FT_UINT, UINT64_MAX, REQ}, {"status", FT_UINT, 599, REQ}, {"error", FT_TEXT, PROTO_NOTIFY_ERROR_MAX, OPT}};

/* What a question about the records may carry (qa.c checks who may ask which op). */
#define QA_FIELDS                                                                                                      \
	{"op", FT_TEXT, 16, REQ}, {"type", FT_TEXT, 16, OPT}, {"title", FT_TEXT, 1000, OPT},                           \
	    {"description", FT_TEXT, 20000, OPT}, {"contact", FT_TEXT, 1000, OPT}, {"status", FT_TEXT, 16, OPT},       \
	    {"id", FT_UINT, INT64_MAX, OPT}, {"offset", FT_UINT, 1000000, OPT}, {"limit", FT_UINT, 10000, OPT},        \
	    {"key", FT_TEXT, PROTO_EVENT_KEY_MAX, OPT}, {"kind", FT_TEXT, PROTO_EVENT_KIND_MAX, OPT},                  \
	    {"kinds", FT_ARRAY, 16, OPT}, {"attrs", FT_TEXT, RECCFG_PAYLOAD_MAX, OPT},                                 \
	    {"older", FT_UINT, UINT64_MAX, OPT}, {"by", FT_TEXT, PROTO_EVENT_BY_MAX, OPT},                             \
	    {"ref", FT_TEXT, PROTO_FEEDBACK_REF_MAX, OPT},                                                             \
	{                                                                                                              \
		"call", FT_TEXT, 64, OPT                                                                               \
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
    TABLE(F_WEB_HISTORY, web_history),
    TABLE(F_WEB_PROOF, web_proof),
};

const struct frame_table *frame_table_find(uint32_t t)
{
	for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
		if (tables[i].type == t)
			return &tables[i];
	return NULL;
}

static const char *ftype_name(enum frame_ftype t)
{
	static const char *const names[] = {"an unsigned integer", "a text string", "a byte string", "a boolean",
					    "an array"};
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
		*size = v->n;
		return v->t == (fd->type == FT_TEXT ? CV_TEXT : fd->type == FT_BYTES ? CV_BYTES : CV_ARRAY);
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
				       fd->type == FT_ARRAY ? "items" : "bytes", (unsigned long long)fd->max);
		seen |= (uint64_t)1 << f;
	}
	for (size_t f = 0; f < tb->nfields; f++)
		if (tb->fields[f].required && !(seen >> f & 1))
			return as_fail(err, AS_ECORRUPT, "IPC %s: missing field \"%s\"", tb->name, tb->fields[f].key);
	return 0;
}
