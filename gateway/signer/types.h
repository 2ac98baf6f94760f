/* The signer's state: the structs its capabilities share and struct signer, which holds them
 * (issue 13 split signer.c by role; issue 30 split its prototypes by capability: core/core.h,
 * requests.h, review.h, gate.h, records.h, notify.h, loop.h). Internal to gateway/signer/. */
#ifndef ASSENT_SIGNER_TYPES_H
#define ASSENT_SIGNER_TYPES_H

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
#include "gateway/state/hsm.h"
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
	void *pre;     /* its dispatch entry, in the batch with its decision (gate.c, predispatch) */
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
	int remote;	       /* cluster mode: another replica's request, shown here (cluster_apply.c) */
};

/* Cluster mode: another replica's request is queued here CLUSTER_GRACE_MS after its deadline
 * (restore_request), so that its own replica times it out first; it is shown with its own
 * deadline. */
#define CLUSTER_GRACE_MS 30000
static inline uint64_t shown_deadline_ms(const struct pq_item *it)
{
	const struct req *r = it->data;
	return r && r->remote && it->deadline_ms >= CLUSTER_GRACE_MS ? it->deadline_ms - CLUSTER_GRACE_MS
								     : it->deadline_ms;
}

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

struct notifier;  /* notify.c: the webhooks and their deliveries */
struct witnesses; /* witness.c: the witnesses and their requests */
struct worker_kind;

/* The gate's state (gate.c): its upstreams, their workers, the calls in flight. */
struct gate_state {
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
};

/* The call records' state (records.c), the insights' (insights.c) and the records'
 * questions in flight (qa.c). */
struct records_state {
	struct rec_cfg *cfg;
	int insights; /* FEEDBACK_INSIGHTS_ENABLED (insights.c) */
	uint64_t ins_uses[INSIGHTS_OPS], ins_subs[INSIGHTS_TYPES];
	struct rec_note *notes; /* REC_NOTES */
	uint64_t ids;		/* the next call id (records.c): a random start, then counted */
	uint64_t sent, dropped; /* toward the recorder; dropped here */
	uint64_t written, dropped_rec, failed, queued, events; /* its F_REC_STATS */
	struct qa_wait *qa_waits;			       /* QA_WAITS */
	size_t qa_waiting;				       /* of them, in use */
	uint64_t qa_next;
};

struct signer {
	struct notifier *nt;
	struct witnesses *wit; /* NULL: no ASSENT_WITNESSES */
	uint8_t mrtr_key[32];  /* MACs requestStates (mrtr.c); made at first use, in memory only */
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
	struct cluster *cluster; /* cluster mode (cluster.c); NULL: this machine alone */
	/* notify.c registers it (notify_adopt): a webhook delivery another replica left, which the
	 * cluster client handed over */
	void (*dlv_adopt)(struct signer *s, const char *origin, uint64_t id, const char *hook, const char *event,
			  const char *body, size_t len, const char *mac);
	/* cluster.c registers it: a reviewer's web session made, used (WS_TELL_MS after the cluster
	 * last heard of it) or ended here, for the other replicas */
	void (*ws_share)(struct signer *s, const struct ws_session *ss, int ended);
	struct policy *pol; /* NULL: no --policy, every request waits for a person */
	struct tokkeys *tk;
	struct tok_config tcfg;
	struct hsm hsm; /* the keys in a PKCS#11 token, when ASSENT_PKCS11_MODULE is set */
	struct registry *reg;
	time_t reg_mtime;
	uint64_t next_regcheck; /* the registry is looked at once a second: a rotated token ends its sessions */
	unsigned web_streams_max, web_stream_s; /* event streams per reviewer, and how long one lasts */
	uint32_t timeout_s;
	int consistency_proofs;	  /* ASSENT_CONSISTENCY_PROOFS=on: GET /checkpoint/consistency served (start.c) */
	struct passkey_state *pk; /* the reviewers' passkeys (passkey.c) */
	struct cv_arena arena;
	struct op **batch; /* entries for the next commit, in order */
	size_t nbatch, batch_cap;
	uint64_t commits, committed; /* durable commits, and the entries they carried */
	uint64_t started_ms;
	size_t peak;	    /* most requests pending since the heap was last trimmed */
	uint64_t idle_from; /* ms of the last turn with work, until the ledger's pages were let go (loop.c) */
	int cur;	    /* the worker whose frame is being handled */
	int stop;
	struct lim_state lim;	   /* limits per principal (lim.h) */
	struct gate_state gate;	   /* the gate (gate.c) */
	struct records_state recs; /* the call records (records.c) */
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
	const struct pk_assertion *pk; /* the page's passkey assertion of this decision; NULL: none */
};

#endif
