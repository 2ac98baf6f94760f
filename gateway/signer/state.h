/* The signer's state and what its modules share (issue 13 split signer.c by role:
 * log, listen, supervise, commit, reply, requests, policyglue, view, decide, session,
 * ctl, web, webpush, start, loop). Internal to gateway/signer/: nothing outside it includes this. */
#ifndef ASSENT_SIGNER_STATE_H
#define ASSENT_SIGNER_STATE_H

#include <jansson.h>
#include <poll.h>
#include <sys/socket.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gateway/signer/signer.h"
#include "gateway/signer/core/core.h"
#include "ledger/ledger.h"
#include "gateway/proto/action.h"
#include "gateway/proto/statedir.h"
#include "common/cbor.h"
#include "ledger/entry.h"
#include "gateway/proto/httpcfg.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/workers.h"
#include "gateway/signer/core/lim.h"
#include "ledger/merkle.h"
#include "gateway/signer/core/metrics.h"
#include "gateway/signer/core/peeruid.h"
#include "policy/policy.h"
#include "gateway/proto/proto.h"
#include "gateway/signer/core/queue.h"
#include "common/redact.h"
#include "gateway/state/registry.h"
#include "gateway/state/token.h"
#include "gateway/state/upstreams.h"
#include "gateway/proto/call.h"
#include "gateway/proto/reccfg.h"
#include "common/util.h"
#include "gateway/signer/websess.h"

#include "gateway/proto/statedir.h"

/* The gate (gate.c): a tool of an upstream, as its server declared it; an upstream's
 * server process and catalog; a gated call (struct req's gate); a dispatched call. */
struct up_tool {
	char name[CALL_TOOL_MAX + 1];
	unsigned ann;  /* POL_ANN_*: what the server declared, never checked */
	json_t *def;   /* the tool as agents are shown it (renamed) */
	json_t *shown; /* title, description and annotations for reviewers */
};
struct upw {
	const struct upstream *cfg;
	pid_t spid; /* its server process (a process group of its own) */
	int err_fd; /* the server's stderr, read into the log */
	char errline[400];
	size_t errlen;
	uint64_t err_window, err_lines;
	struct up_tool *tools;
	size_t ntools;
	/* its resources and templates (as listed: URIs are not renamed), prompts (renamed as
	 * tools are: {def, name}), and whether it completes arguments */
	json_t *resources, *templates, *prompts;
	int completions, subscribe;
	int ready; /* its worker said hello and its tools are known */
	/* a url upstream: the address its host resolved to at start, which alone its worker may
	 * reach (the signer connects every socket it gets), and how many it asked for lately */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	uint64_t conn_window, conns;
	uint64_t stale[64]; /* calls given up on (a late answer to one is not an attack) */
	size_t nstale;
};
struct gate_req {
	int k;	       /* the upstream's worker */
	uint8_t *call; /* the canonical call, as the mcp worker encoded it */
	size_t n;
	char upstream[33], tool[CALL_TOOL_MAX + 1];
	char method[24]; /* tools/call, resources/read, prompts/get, completion/complete */
	int task;	 /* collected as an MCP task: its answer is kept, not sent */
	char owner[80];
	uint64_t created_ms;
	char *token;  /* the approval token its reviewer's decision issued (token yes) */
	char *name;   /* the URI a resources/read reads */
	json_t *args; /* the exact arguments, which the policy reads */
	unsigned ann;
	uint64_t seq;  /* the decision's ledger sequence number; 0: none (record calls) */
	unsigned caps; /* PROTO_CAP_*: a 2026-07-28 client's call (gatemrtr.c) */
	char *ustate;  /* the server's own requestState its retry returns (gatemrtr.c) */
	json_t *input; /* a retry's inputResponses, exactly (NULL: none), part of the call */
};
#define GCALLS_MAX 4096
struct gcall {
	int used, k, ledgered;
	unsigned caps; /* the gate_req's */
	uint64_t cid, conn, seq, started_ms, until_ms;
	char sid[PQ_SID_LEN + 1];
	char rid[PROTO_RID_MAX + 1];
	char upstream[33], tool[CALL_TOOL_MAX + 1];
	char method[24];
	unsigned rule;
	int task; /* an MCP task's: the answer is kept for its owner (task_end) */
	char owner[80];
	uint64_t created_ms;
	char digest[72];  /* "sha256:" of the exact call */
	char token[1600]; /* an approval token for it (ask ... token yes), "" when none */
};

#define GASKS_MAX 256
struct gask { /* a server's request (sampling, elicitation, roots) relayed to the client of its call */
	int used, k;
	uint64_t aid, cid, conn;
	char sid[PROTO_RID_MAX + 1]; /* the server's id for it, as JSON text */
};

/* What the signer decided about a call (records.c), kept until the call's record comes. */
#define REC_NOTES 1024
#define INSIGHTS_OPS 10	 /* the QA operations counted (insights.c) */
#define INSIGHTS_TYPES 5 /* bug, feature, improvement, question, other */
struct rec_note {
	int used;
	uint64_t conn;
	char rid[PROTO_RID_MAX + 1];
	char decision[24];
	unsigned rule;	  /* the policy line */
	uint64_t seq;	  /* the ledger entry that ended it */
	char call_id[18]; /* "c" and 16 hex digits: its record's call_id, and its events' */
	int open;	  /* its agent has not been answered yet: events it records are inside it */
};

/* A question about the records waiting for the recorder's answer (qa.c). */
#define QA_WAITS 256
struct qa_wait {
	int used, to;	    /* to: who hears the answer (qa.c) */
	uint64_t qid, conn; /* conn: the agent's or reviewer's connection, or the web request */
	char rid[PROTO_RID_MAX + 1];
	uint64_t until;
};

struct req { /* what the signer keeps of a pending request (pq_item.data) */
	uint64_t conn;
	char rid[PROTO_RID_MAX + 1];
	char type[16];
	char audience[MCP_AUD_MAX + 1];
	char action[72]; /* "sha256:" hex */
	json_t *view;	 /* what a reviewer is shown */
	char **options;
	size_t noptions;
	json_t *subjects;	/* [{name, sha256, computed}] */
	char owner[80];		/* the requester, as struct conn names it */
	struct pol_decision pd; /* what the policy said (an ask, with its terms), when one is loaded */
	int has_pd;
	char pol_digest[65]; /* of the policy that said it (a reload does not change a pending request's terms) */
	char approvers[16][REG_NAME_MAX + 1]; /* a quorum's approvals so far: distinct people */
	size_t napprovers;
	uint8_t *content[16]; /* a subject's bytes, when the agent sent them (hashed here) */
	size_t content_len[16];
	char client[160];
	uid_t uid;	       /* the requester's, as measured: SO_PEERCRED, or the loopback HTTP connection's owner */
	const char *collect;   /* how its caller hears of the decision: "wait", "poll" or "task" (restore.c) */
	int mrtr;	       /* its client's user may answer it (mrtr.c): collected, not waited on */
	struct gate_req *gate; /* a gated call (gate.c); NULL for request_feedback */
	uint64_t seq;	       /* its decision's ledger sequence number, once decided */
	unsigned told;	       /* notify.c: NOTIFY_REQUEST it waited for a person, NOTIFY_DEADLINE its end nears */
	const char *why;       /* while request_log runs: a rejection's or cancellation's reason (NULL: none) */
};

struct done { /* decided requests whose requester may still collect the answer */
	char sid[PQ_SID_LEN + 1];
	uint64_t owner_conn;
	char owner[80];
	json_t *result;
	uint64_t until;
	uint64_t created_ms, at_ms; /* when it was asked and decided (unix ms): a task's times */
};

/* The uid the signer measured on an HTTP request's TCP connection (F_HTTP_AUTH), kept
 * until the request frame that request leads to (F_REQUEST names its hreq) takes it.
 * One use each; as many as the mcp worker can have connections in flight. */
#define MAX_MEASURED 8192
struct measured {
	uint64_t hreq, conn;
	uid_t uid; /* (uid_t)-1: not a loopback peer, no uid to measure */
	int used;
};

struct waiter { /* a get_feedback call waiting for a decision */
	uint64_t conn;
	char owner[80]; /* whose call it is (struct conn's owner): it counts in their blocking limit */
	char rid[PROTO_RID_MAX + 1];
	char sid[PQ_SID_LEN + 9];
	uint64_t until;
	int used;
};

/* An entry waiting for the end of the event loop's turn, and what to do once it is
 * on disk (pos) or could not be written (pos NULL, err says why). */

/* A decision, for the web page's "recent" list and its history (GET /review/api/history):
 * the last HISTORY_MAX, in memory, rebuilt from the ledger's tail at start (restore.c). */
#define HISTORY_MAX 1000
#define HISTORY_RECENT 20	/* the newest of them, in the pending list's "recent" */
#define HISTORY_MESSAGE_MAX 120 /* bytes of a request's message kept with its decision */
struct recent {
	char sid[PQ_SID_LEN + 1], outcome[17], by[80], message[HISTORY_MESSAGE_MAX + 1];
	char requester[80];		/* struct conn's owner: "agent:NAME", "uid:N" */
	char audience[MCP_AUD_MAX + 1]; /* "" when none */
	uint64_t seq, at;		/* the decision's entry; at: unix s */
	uint64_t created_ms, at_ms;	/* asked, decided (unix ms) */
	unsigned rule;			/* the policy line that decided or asked; 0: no policy */
	struct pol_decision *pd; /* restricted: its terms (owned), shown only to reviewers who could have decided it */
	int restricted;
};

struct notifier; /* notify.c: the webhooks and their deliveries */
struct worker_kind;
struct signer {
	struct notifier *nt;
	uint8_t mrtr_key[32]; /* MACs requestStates (mrtr.c); made at first use, in memory only */
	int mrtr_keyed;
	const struct signer_opts *o;
	struct worker w[NWORKERS];
	const struct worker_kind *kinds[NWORKERS]; /* what each worker's capability registered (supervise.c) */
	const struct rec_hooks *rech;		   /* the records' (events.c); NULL: off */
	rec_event_fn rec_sink;			   /* where events go (events.c); NULL: nowhere */
	phase_fn phase[PH_N][PHASE_HOOKS_MAX];	   /* a request's phases' hooks (events.c) */
	size_t nphase[PH_N];
	finish_fn gate_finish; /* a gated call's end (events.c) */
	int agent_fd, control_fd, sig_fd;
	int http_fd; /* the agent HTTP listener, handed to the mcp worker; -1: none */
	struct http_cfg http;
	/* The reviewer listener (TCP) and the reverse proxy's own (unix socket), both
	 * handed to the review worker; -1: none. Only on the proxy's socket, or with the
	 * proxy's shared secret, is an identity header believed. */
	int review_fd, proxy_fd;
	struct http_cfg review;
	char proxy_path[108], proxy_header[64], proxy_secret[129];
	struct web_sessions *ws;
	struct metrics m;
	struct recent recent[HISTORY_MAX]; /* a ring: the newest at recent_head - 1 (history_nth) */
	size_t nrecent, recent_head;
	uint64_t web_bumps, web_sent; /* the queue's view changed without an entry (a quorum's approval); last pushed */
	uint64_t next_stats, next_sweep;
	size_t stats_pending;
	struct conn conns[MAX_CONNS];
	/* The signer's own copy of each CLI reviewer's connection, watched for its end only
	 * (ctl_watch): slot i of conns, -1 when none. */
	int ctl_ep, ctl_fd[MAX_CONNS];
	uint64_t ctl_id[MAX_CONNS];
	uint64_t next_conn;
	/* Connections and sessions that ended lately. The worker may still be sending
	 * about one (a cancel racing the end of its session): such a frame is stale, not
	 * an attack, and is dropped. A connection never handed out is an attack. */
	uint64_t ended[1024];
	size_t ended_at;
	struct pq *q;
	/* A ring in the order of decision: every entry lives an hour from its insertion, so the
	 * oldest, and the first to expire, is always at done_head (no scan per decision). */
	struct done done[MAX_DONE];
	size_t ndone, done_head;
	struct waiter waiters[MAX_CONNS];
	struct measured measured[MAX_MEASURED];
	size_t measured_at;
	uid_t self_uid; /* the daemon's own: a requester with it could read the keys and the registry */
	struct ledger *ledger;
	struct policy *pol; /* NULL: no --policy, every request waits for a person */
	struct tokkeys *tk;
	struct tok_config tcfg;
	struct registry *reg;
	time_t reg_mtime;
	uint64_t next_regcheck; /* the registry is looked at once a second: a rotated token ends its sessions */
	unsigned web_streams_max, web_stream_s; /* event streams per reviewer, and how long one lasts */
	uint32_t timeout_s;
	struct cv_arena arena;
	struct op **batch; /* entries for the next commit, in order */
	size_t nbatch, batch_cap;
	uint64_t commits, committed; /* durable commits, and the entries they carried */
	uint64_t started_ms;
	size_t peak; /* most requests pending since the heap was last trimmed */
	int cur;     /* the worker whose frame is being handled */
	int stop;
	struct lim_state lim; /* limits per principal (lim.h) */
	/* the gate (gate.c) */
	struct upstreams *ups;
	struct upw up[UP_WORKERS];
	size_t nup;
	struct gcall *gcalls; /* GCALLS_MAX */
	size_t gcall_hi;      /* one past the highest slot in use */
	struct gask *asks;    /* GASKS_MAX: servers' requests relayed to an agent's client */
	json_t *subs;	      /* resource subscriptions: [[conn, upstream, uri], ...] */
	uint64_t next_aid;
	uint64_t next_cid;
	unsigned call_timeout_s; /* ASSENT_UPSTREAM_CALL_TIMEOUT: a dispatched call's answer */
	/* the call records (records.c) */
	struct rec_cfg *rec;
	int insights; /* FEEDBACK_INSIGHTS_ENABLED (insights.c) */
	uint64_t ins_uses[INSIGHTS_OPS], ins_subs[INSIGHTS_TYPES];
	struct rec_note *rec_notes;	/* REC_NOTES */
	uint64_t rec_ids;		/* the next call id (records.c): a random start, then counted */
	uint64_t rec_sent, rec_dropped; /* toward the recorder; dropped here */
	uint64_t rec_written, rec_dropped_rec, rec_failed, rec_queued, rec_events; /* its F_REC_STATS */
	struct qa_wait *qa_waits;						   /* QA_WAITS */
	size_t qa_waiting;							   /* of them, in use */
	uint64_t qa_next;
};

/* Lists hold summaries, never whole requests: a reply is one frame, and a thousand
 * 64 KiB messages would not fit. `show` (reviewers) has everything. */
#define LIST_MAX 1000
#define LIST_MESSAGE_MAX 512
/* Reviewer and agent views are pages: items go in while their JSON fits in
 * VIEW_PAGE_BYTES, so that an answer is one frame (IPC_FRAME_MAX) whatever the
 * queue holds; the rest are counted ("more") and the next page starts at
 * "next_offset". */
#define VIEW_PAGE_BYTES (IPC_FRAME_MAX / 2)

struct decision {
	char rule[24];
	char *reviewer, *response;
	char outcome[17];
	int approved, with_token;
	uint64_t n;
	struct tok_request tr;
	struct tok_ticket t;
	struct tok_subject subj[16];
	size_t ns;
};
/* Who decides, as the signer measured it: the reviewer's name, the channel (cli:
 * the control socket, uid from SO_PEERCRED; web: the reviewer listener, by session
 * cookie, proxy identity or reviewer token), and where the answer goes. */
struct who {
	const char *reviewer;
	const char *channel; /* "cli" | "web" */
	const char *via;     /* web: "session" | "proxy" | "token" */
	uid_t uid;	     /* cli only; (uid_t)-1 on the web */
	uint64_t reply;	     /* the control connection, or the web request */
	int web;
};

int decide_may(struct signer *s, const struct who *c, const struct pq_item *it, char *why, size_t n); /* decide.c */
int no_reviewer_warning(struct signer *s, json_t *res); /* decide.c: res NULL: the log */

/* ended.c: the ends of requests */
void request_refused(struct signer *s, uint64_t conn, struct req *r, const char *why);
void req_free(struct req *r);
void gate_req_free(struct gate_req *g);
struct done *done_at(struct signer *s, size_t i);
/* The history ring (ended.c): x pushed as the newest (over the oldest when full; the ring
 * takes x->pd), the i-th newest (0: the newest) or NULL past the last, and a message cut to
 * HISTORY_MESSAGE_MAX bytes on a character boundary with its line breaks as spaces. */
void history_push(struct signer *s, const struct recent *x);
void history_free(struct signer *s); /* the ring's terms, and the ring emptied (the process's end frees the rest) */
void history_summary(char out[HISTORY_MESSAGE_MAX + 1], const char *msg, size_t n);
const struct recent *history_nth(const struct signer *s, size_t i);
void request_log(struct signer *s, const struct pq_item *it, const struct req *r, const char *outcome,
		 const char *reviewer, uint64_t seq);
void finish(struct signer *s, struct pq_item *it, json_t *result);
json_t *result_base(const char *sid, const char *status, int approved);
void task_end(struct signer *s, const char *sid, uint64_t conn, const char *owner, uint64_t created_ms, json_t *result);
/* A request out of the queue is cancelled: its entry, then the log, the webhooks and the
 * history once it is on disk. Takes out->data. */
void request_cancelled(struct signer *s, struct pq_item *out, const char *reason);
/* The daemon stops: every call still waiting on its connection (a blocking request, a
 * held gated call) is cancelled on the ledger and its agent told at once. How many. */
size_t cancel_waiting(struct signer *s);
void fail_conn_requests(struct signer *s, uint64_t conn, const char *reason);

/* requests.c */
void conn_end(struct signer *s, struct conn *c);
int client_ok(const char *s, size_t n, char *err);
int h_request(void *ctx, struct ipc_frame *f, char *err);
int request_over_limit(struct signer *s, const struct conn *c, uid_t uid, const char *rid, size_t ridn, int wait);
void request_terms(struct signer *s, const struct conn *c, struct req *r, uint64_t timeout, struct pq_item *it);
void request_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err);
int h_collect(void *ctx, struct ipc_frame *f, char *err);
int h_cancel(void *ctx, struct ipc_frame *f, char *err);
int h_conn_closed(void *ctx, struct ipc_frame *f, char *err);
int h_log(void *ctx, struct ipc_frame *f, char *err);
int h_hello(void *ctx, struct ipc_frame *f, char *err);

/* notify.c: webhooks (STATE/notify.json) and the notify worker that sends them */
enum { NOTIFY_REQUEST = 1, NOTIFY_DECISION = 2, NOTIFY_DEADLINE = 4 }; /* hooks.h's HOOK_EV_* */
int notify_start(struct signer *s);
void notify_tick(struct signer *s);
uint64_t notify_due(const struct signer *s); /* when the next delivery waiting for its time is due */
void notify_free(struct signer *s);
int h_notify_done(void *ctx, struct ipc_frame *f, char *err);

/* reqrecord.c */
int put_terms(struct cv_arena *a, struct cv *slot, const struct pol_decision *d) AS_MUST_USE;
/* The policy's citation and terms, back into the decision they came from (r->pd). NULL, or why not. */
const char *terms_read(const struct cv *pol, const struct cv *t, struct req *r);
struct cv *request_entry(struct cv_arena *a, const struct cv *action, const struct conn *c, const struct req *r,
			 const struct pq_item *it, const char *uid_agent);
void request_view(struct req *r, const struct conn *c, const struct pq_item *it, const char *uid_agent);

/* policyglue.c */
size_t req_subjects(const struct req *r, struct tok_subject out[16]);
const char *req_token_aud(const struct req *r);
int put_token(struct cv_arena *a, struct cv *slot, const struct tok_ticket *t) AS_MUST_USE;
void evaluate(struct signer *s, const struct conn *c, const struct req *r, struct pol_decision *d);
int put_policy(struct cv_arena *a, struct cv *slot, const struct pol_decision *d, const char *digest) AS_MUST_USE;
void policy_decide(struct signer *s, const struct conn *c, const struct pq_item *it, struct req *r);
int load_policy(struct signer *s, char *err);

/* view.c */
void page_add(json_t *arr, json_t *v, size_t *used, size_t *more, size_t max_items);
int reviewer_may_see(struct signer *s, const char *reviewer, const struct req *r);
json_t *list_reply_page(struct signer *s, const char *owner, const char *reviewer, size_t offset);
/* Sets view's "masked" ({spans, chars}) from the marks in its message, context, options
 * and default, unless it has one (a gated call counts its own); marks an agent wrote
 * itself count too, which only ever says more is hidden than is. */
void view_note_masks(json_t *view);
void view_fit(json_t *v, size_t max);
const char *view_risk(const json_t *view);
json_t *show_reply(const struct req *r);
int h_list(void *ctx, struct ipc_frame *f, char *err);
/* tasks.c */
int h_task(void *ctx, struct ipc_frame *f, char *err);
/* mrtr.c */
int mrtr_applies(const struct req *r);
/* A requestState the client returns unchanged: payload's JSON (at most max bytes) and its
 * HMAC under a key of this process's memory; and back (NULL: why says which check failed). */
int mrtr_seal(struct signer *s, const json_t *payload, size_t max, char *out, size_t cap);
json_t *mrtr_unseal(struct signer *s, const char *st, size_t n, size_t max, const char **why);
void mrtr_offer(struct signer *s, const struct op *o);
int h_input(void *ctx, struct ipc_frame *f, char *err);
struct answer decide_self_attested(struct signer *s, struct pq_item *it, const char *outcome, const char *text,
				   uint64_t n); /* decide.c */

/* decide.c */
int reviewer_allowed(struct signer *s, const char *reviewer, const struct pol_decision *pd);
struct answer decide(struct signer *s, const struct who *c, const char *sid, const char *outcome, const char *text,
		     uint64_t n);
void expire(struct signer *s);

/* session.c */
int h_http_auth(void *ctx, struct ipc_frame *f, char *err);
int h_session_info(void *ctx, struct ipc_frame *f, char *err);
int h_session_end(void *ctx, struct ipc_frame *f, char *err);
void sweep_sessions(struct signer *s, uint64_t now);
void send_stats(struct signer *s);

/* ctl.c: one handler per F_CTL_* frame type */
int h_ctl_whoami(void *ctx, struct ipc_frame *f, char *err);
int h_ctl_status(void *ctx, struct ipc_frame *f, char *err);
int h_ctl_pending(void *ctx, struct ipc_frame *f, char *err);
/* exact.c: the exact call of a view that masks, kept in STATE/exact/ by its digest
 * (written and synced; 0 also when already there); and `assent show --full`. */
int exact_keep(struct signer *s, const uint8_t *call, size_t n, const char *digest, char *err);
/* Show w's reviewer the exact arguments of pending gated call id, once a `reveal` entry
 * naming them is on disk; the answer (or why not) goes to w->reply. */
void reveal(struct signer *s, const struct who *w, const char *id);
int h_ctl_reveal(void *ctx, struct ipc_frame *f, char *err);
int h_ctl_show(void *ctx, struct ipc_frame *f, char *err);
int h_ctl_decide(void *ctx, struct ipc_frame *f, char *err);

/* webpush.c */
void reload_registry(struct signer *s);
int web_session_alive(void *arg, const struct ws_session *ss);
void web_push(struct signer *s, const uint32_t *ended, size_t nended);
void web_sweep(struct signer *s, uint64_t now);
void web_credentials_changed(struct signer *s, const struct registry *old);

/* web.c */
/* one handler per F_WEB_* frame type */
int h_web_metrics(void *ctx, struct ipc_frame *f, char *err);
int h_web_jwks(void *ctx, struct ipc_frame *f, char *err);
int h_web_checkpoint(void *ctx, struct ipc_frame *f, char *err);
int h_web_login(void *ctx, struct ipc_frame *f, char *err);
int h_web_me(void *ctx, struct ipc_frame *f, char *err);
int h_web_logout(void *ctx, struct ipc_frame *f, char *err);
int h_web_events(void *ctx, struct ipc_frame *f, char *err);
int h_web_pending(void *ctx, struct ipc_frame *f, char *err);
int h_web_list(void *ctx, struct ipc_frame *f, char *err);
int h_web_decide(void *ctx, struct ipc_frame *f, char *err);
int h_web_reveal(void *ctx, struct ipc_frame *f, char *err);
int h_web_submit(void *ctx, struct ipc_frame *f, char *err);
int h_web_admin_clear(void *ctx, struct ipc_frame *f, char *err);
int h_web_qa(void *ctx, struct ipc_frame *f, char *err);
int h_web_history(void *ctx, struct ipc_frame *f, char *err);
int h_web_proof(void *ctx, struct ipc_frame *f, char *err);

/* restore.c: what survives a restart (README "Restarts") */
void restore_pending(struct signer *s);
/* The history of decisions as the ledger's tail has it: the last HISTORY_MAX decisions whose
 * request entries are on it too, read backwards from the newest entry. */
void restore_history(struct signer *s);

/* gate.c */
int gate_start(struct signer *s);
void gate_register(struct signer *s); /* its part of a request's end (finish_hook) */
void gate_kinds(struct signer *s);    /* the upstreams' workers' kind, registered (gate_server.c) */
int gate_spawn_server(struct signer *s, int k, int *to_server, int *from_server);
void gate_worker_down(struct signer *s, int k, const char *why);
void gate_hello(struct signer *s, int k);
/* gatemrtr.c: an upstream's input_required result for c's agent, checked, with a
 * requestState of ours (NULL: err says why); a retry's state, checked against g, its
 * server's own state kept in g->ustate (AS_EINVAL: why says which check failed). */
json_t *gate_input_required(struct signer *s, const struct gcall *c, const json_t *res, char *err);
int gate_state_open(struct signer *s, struct gate_req *g, const struct cv *st, const char **why);
void gate_tick(struct signer *s);
void gate_reap(struct signer *s, pid_t p, int st);
void gate_restore(struct signer *s, const char *kind, const struct cv *e, json_t *open);
size_t gate_fds(struct signer *s, struct pollfd *pf, int *who);
void gate_stderr(struct signer *s, int i);
void gate_stop(struct signer *s);
int h_call(void *ctx, struct ipc_frame *f, char *err);
int h_up_tools(void *ctx, struct ipc_frame *f, char *err);
int h_up_result(void *ctx, struct ipc_frame *f, char *err);
int h_up_note(void *ctx, struct ipc_frame *f, char *err);
int h_up_connect(void *ctx, struct ipc_frame *f, char *err);
int gate_config(struct signer *s, int k, struct cv_arena *a, struct cv *f);
int h_up_ask(void *ctx, struct ipc_frame *f, char *err);
int h_answer(void *ctx, struct ipc_frame *f, char *err);
void gate_cancel(struct signer *s, uint64_t conn, const char *rid);
void gate_conn_end(struct signer *s, uint64_t conn);
json_t *gate_task_state(struct signer *s, const char *sid, const char *owner);
int gate_task_cancel(struct signer *s, const char *sid, const char *owner);

/* records.c: the call records */
int records_start(struct signer *s);
void records_register(struct signer *s); /* the call notes (events.c) */
int records_worker_cfg(struct signer *s, struct cv_arena *a, struct cv *f) AS_MUST_USE;
int records_recorder_cfg(struct signer *s, struct cv_arena *a, struct cv *f, int *passfd) AS_MUST_USE;
/* The call of conn still waiting for its answer, when exactly one is: the call an event its
 * agent records now is inside (issue 29); NULL when none or several are. */
const char *rec_call_open(const struct signer *s, uint64_t conn, const char *except_rid);
int h_callrecs(void *ctx, struct ipc_frame *f, char *err);
int h_rec_stats(void *ctx, struct ipc_frame *f, char *err);
int records_metrics(const struct signer *s, struct buf *o);
/* Usage insights (insights.c): FEEDBACK_INSIGHTS_ENABLED read at start (0, or 2 on a bad value,
 * logged); each QA operation counted by tool, a report's metadata recorded (never its text);
 * their lines of /metrics. */
int insights_start(struct signer *s);
/* The records' program sink (recsink.c): ASSENT_RECORD_JSONL=|PROGRAM checked at start (0, or
 * -1 with why), and the program started for a recorder: the pipe's end to hand it, or -1. */
int recsink_check(const char *jsonl, char *err, size_t n);
int recsink_start(const char *prog);
void insights_use(struct signer *s, const char *channel, const char *op, const struct ipc_frame *f);
int insights_metrics(const struct signer *s, struct buf *o);
/* qa.c: QA reports and events */
void qa_register(struct signer *s); /* assent's own events go to the recorder (events.c) */
/* evclaim.c: 1 when kind is one of assent's own (reserved: nobody else records it); and
 * whether principal `by` may record kind under key (NULL: none): PS_OK, or a status and why.
 * operator: root or the daemon's own uid, whose keys are not checked (their kinds are). */
int event_kind_reserved(const char *kind);
int event_claim(struct signer *s, const char *by, const char *kind, const char *key, int operator, char * why,
		size_t n);
int h_qa(void *ctx, struct ipc_frame *f, char *err);
int h_ctl_qa(void *ctx, struct ipc_frame *f, char *err);
int h_rec_answer(void *ctx, struct ipc_frame *f, char *err);
int records_answer(struct signer *s, const struct ipc_frame *f, char *err);
void records_tick(struct signer *s);
void qa_web(struct signer *s, const struct ipc_frame *f, uint64_t hreq, const char *reviewer, const char *admin);

/* start.c */
int start_state(const struct signer_opts *o);
int start_limits(struct signer *s);
int start_keys(struct signer *s);
void start_banner(const struct signer *s);

/* front.c: what the capabilities register with the core before anything starts (records,
 * QA, the gate's finish, the mcp and review workers' kinds) */
void signer_register(struct signer *s);

/* loop.c */
/* One frame of worker k through its dispatch table (in worker k's state). */
int signer_dispatch(struct signer *s, int k, struct ipc_frame *f, char *err);
void worker_input(struct signer *s, int k); /* what worker k sent: read, checked, handled */

#endif
