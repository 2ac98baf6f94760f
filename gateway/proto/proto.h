/* The frames the signer and its workers exchange (gateway/proto/ipc.h carries them).
 * Every frame has a field table (frames.c), one per direction: a worker's frame is
 * checked against its table and by the signer against its own state, and a worker
 * checks each frame from the signer against its table before its handler runs. A
 * frame a worker may not send in its state is an attack (gateway/signer/loop.c, whose
 * dispatch tables have one row per type a worker may send). */
#ifndef ASSENT_PROTO_H
#define ASSENT_PROTO_H

enum {
	/* worker -> signer */
	F_HELLO = 1,	   /* {kind: "mcp" | "review"}: once, first */
	F_CONN_CLOSED = 2, /* {conn}: a client connection ended */
	F_LOG = 3,	   /* {level, text} */
	F_REQUEST = 10, /* mcp: {conn, rid, action (bytes: its canonical CBOR), timeout, wait, client, contents?, hreq?,
			 * task?} contents: one item per action.subject, its bytes or null; hreq (HTTP
			 * sessions only): the F_HTTP_AUTH whose connection the signer measured; task:
			 * the worker delivers the result as a task (a restart keeps the request) */
	F_COLLECT = 11, /* mcp: {conn, rid, sid, wait} get_feedback */
	F_LIST = 12,	/* mcp: {conn, rid} list_pending_feedback */
	F_CANCEL = 13,	/* mcp: {conn, rid} notifications/cancelled */
	F_INPUT = 15,	/* mcp: {conn, rid, action, state, accepted, text?, hreq?} a multi-round answer */
	F_TASK = 14,	/* mcp: {conn, rid, op: PROTO_TASK_*, sid?} a task's state, its cancel, the list */
	F_CALL = 16,	/* mcp: {conn, rid, call (bytes: canonical CBOR, gateway/proto/call.h), client, hreq?, task?,
			 * caps?, state?}
			 * a tools/call of an upstream's tool (the gate) */
	F_UP_TOOLS = 17,   /* upstream: {tools, resources?, templates?, prompts? (bytes: canonical CBOR arrays
			    * of the MCP objects its lists returned), completions?} its catalog */
	F_UP_RESULT = 18,  /* upstream: {cid, result? (bytes: the CallToolResult), error?} a dispatched call's end */
	F_UP_ASK = 20,	   /* upstream: {sid, method, params} the server asks the client something (sampling,
			    * elicitation, roots) during a call; sid: the server's request id, as JSON text */
	F_UP_CONNECT = 22, /* upstream (url): {} a new connection to its server, please: F_UP_SOCKET */
	F_ANSWER = 21,	   /* mcp: {conn, aid, result? | error? (bytes)} the client's answer to F_ASK aid */
	F_CALLREC = 23,	  /* mcp: {conn, rid, tool, up?, t0, dur, outcome, etype?, emsg?, asz, rsz?, rate?, args?, res?,
			   * atot?, rtot?} a tools/call ended: what the worker saw of it (the call records,
			   * issue 16); the signer adds who made it, as it measured them, and what it decided */
	F_QA = 26,	  /* mcp: {conn, rid, op: submit | event, QA fields} a QA report, an event (qa_* tools) */
	F_CALLRECS = 27,  /* mcp: {recs: [F_CALLREC's map, ...]} the calls ended since the last batch (at most
			   * PROTO_CALLRECS_MAX), sent once per turn of its loop: a syscall per batch, not per call */
	F_REC_STATS = 24, /* recorder: {written, dropped, failed, queued, events} its counters, now and then */
	F_REC_ANSWER = 25,   /* recorder: {qid, status, json} the answer to F_REC_QUERY qid */
	F_NOTIFY_DONE = 28,  /* notify: {id, status, error?} delivery id ended: its HTTP status, 0 when none came */
	F_WITNESS_DONE = 29, /* notify: {id, status, error?, size?, cosigs?} witness delivery id ended: its HTTP
			      * status (0: none came), a 409's size, a 200's cosignature lines as fields */
	F_UP_NOTE = 19, /* upstream: {cid, method, params (bytes)} a call's progress (cid), or a log message (cid 0) */
	/* review: a reviewer's command on the control socket, one frame type each (the
	 * signer's dispatch table has a row for each); conn names the connection, whose
	 * uid the signer measured. Fields other than those named are refused. */
	F_CTL_WHOAMI = 40,  /* {conn} */
	F_CTL_STATUS = 41,  /* {conn} */
	F_CTL_PENDING = 42, /* {conn, offset?} the page of requests from offset on */
	F_CTL_SHOW = 43,    /* {conn, sid} */
	F_CTL_DECIDE = 44,  /* {conn, sid, outcome, text?, n?} */
	F_CTL_REVEAL = 46,  /* {conn, sid} `assent show --full`: a gated call's exact arguments, ledgered as a reveal */
	F_CTL_QA = 45,	    /* {conn, op, QA fields} `assent qa|events|event|calls prune` */
	/* review: a reviewer listener request, one frame type per endpoint, each with the HTTP
	 * connection's fd: {hreq, PROTO_WEB_CREDENTIALS (each optional), ...its own fields} */
	F_WEB_METRICS = 50,    /* GET /metrics */
	F_WEB_JWKS = 51,       /* GET /.well-known/jwks.json */
	F_WEB_CHECKPOINT = 52, /* GET /checkpoint */
	F_WEB_LOGIN = 53,      /* {token?} POST /review/api/login */
	F_WEB_ME = 54,	       /* GET /review/api/me; /review/mcp's methods other than tools/call */
	F_WEB_LOGOUT = 55,     /* POST /review/api/logout */
	F_WEB_EVENTS = 56,     /* GET /review/events */
	F_WEB_PENDING = 57,    /* {offset?} GET /review/api/pending; list_pending_feedback */
	F_WEB_LIST = 58,       /* {offset?} GET /pending */
	F_WEB_DECIDE = 59,     /* {sid, outcome, text?, n?, pk_*?} POST /review/api/decide; pk_*: a passkey assertion */
	F_WEB_SUBMIT = 60,     /* {sid, approved, text?, n?} POST /feedback/submit; submit_feedback */
	F_WEB_ADMIN_CLEAR = 61, /* POST /admin/clear-stale-sessions */
	F_WEB_QA = 62,		/* {op, QA fields} /review/mcp's qa_* tools, POST /review/api/qa */
	F_HTTP_AUTH = 30,	/* mcp: {hreq, bearer?, session?, init, stateless?} + the TCP connection's
				 * fd: may this HTTP request go on, and as which MCP session? stateless
				 * (2026-07-28): as a connection of its own, ended by F_CONN_CLOSED */
	F_SESSION_INFO = 31,	/* mcp: {conn, client, protocol} what initialize declared */
	F_SESSION_END = 32,	/* mcp: {conn} DELETE /mcp */
	/* signer -> worker */
	F_CONN_NEW = 100,     /* {conn} + the connection's descriptor */
	F_RESULT = 101,	      /* mcp: {conn, rid, json, iserror, raw?, rpc_error?, status?} the answer to a tool
			       * call; raw: json is the result itself (an upstream's), not a result to wrap;
			       * rpc_error: json is a JSON-RPC error {code, message, data?}; status: a refusal's
			       * enum proto_status (POST /events answers with its HTTP status) */
	F_CTL_REPLY = 102,    /* review: {conn, status, json} status: enum proto_status */
	F_CONFIG = 103,	      /* {http: {on, hosts, origins, limits...}} first, before the jail;
			       * review also {proxy, proxy_header} */
	F_HTTP_REPLY = 104,   /* mcp: {hreq, status, error?} or {hreq, status 200, conn, session,
			       * principal, client?, protocol?} */
	F_STATS = 105,	      /* mcp, review: {pending, uptime, witness_alarm?} for /health, about once a second */
	F_WEB_REPLY = 106,    /* review: {hreq, status, body, ctype?, cookie?, clear?, retry?, wsid?}
			       * status: enum proto_status, which the review worker maps to HTTP */
	F_TASK_STATUS = 108,  /* mcp: {conn, json} a task of conn's ended: notifications/tasks/status */
	F_WEB_PUSH = 107,     /* review: {version, pending, ended: [wsid]} the queue changed; sessions that ended */
	F_DISPATCH = 109,     /* upstream: {cid, call, digest, caps?, state?} forward this call, once; caps: a
			       * 2026-07-28 client's (PROTO_CAP_*), state: the server's own requestState */
	F_NOTE = 111,	      /* mcp: {conn, rid, method, json} a notification about call rid of conn (progress, log) */
	F_UP_CANCEL = 112,    /* upstream: {cid} the agent cancelled this dispatched call */
	F_ASK = 113,	      /* mcp: {conn, rid, aid, method, json} ask the client of call rid (a server's request) */
	F_UP_SOCKET = 115,    /* upstream (url): {} + a socket connecting to its server, TCP_NODELAY */
	F_UP_ANSWER = 114,    /* upstream: {sid, result? | error? (bytes)} the answer to the server's request sid */
	F_REC_CALLS = 119,    /* recorder: {recs: [F_REC_CALL's map, ...]} a batch */
	F_REC_CALL = 116,     /* recorder, the items of F_REC_CALLS: F_CALLREC's fields and the signer's: user, ckind,
			       * client, session, decision?,    rule?, seq? */
	F_REC_EVENT = 117,    /* recorder: {at, kind, key?, call?, session?, user?, ckind?, client?, attrs} */
	F_REC_QUERY = 118,    /* recorder: {qid, op, json} a question about the records (QA reports, events, prune) */
	F_NOTIFY_POST = 120,  /* notify: {id, hook, body, headers: [[name, value]...]} + a socket connecting to
			       * webhook `hook` (the F_CONFIG hooks' index): POST body there, once */
	F_WITNESS_POST = 121, /* notify: {id, witness, body} + a socket connecting to witness `witness` (the
			       * F_CONFIG witnesses' index): POST body to its add-checkpoint, once */
	F_CATALOG = 110,      /* mcp: {tools, routes, more (text: JSON)} the upstreams' tools (renamed),
			       * where each goes, and their resources, templates and prompts */
	/* review, appended (issue 17, the page's history): */
	F_WEB_HISTORY = 63, /* {who?, outcome?, audience?, rule?, since?, until?, limit?} GET /review/api/history */
	F_WEB_PROOF = 64,   /* {seq} GET /review/api/proof: a decision's inclusion proof (assent-verify proof) */
	F_WEB_REVEAL = 65,  /* {sid} POST /review/api/reveal: a gated call's exact arguments, ledgered as a reveal */
	F_WEB_CONSISTENCY = 66, /* {old, new} GET /checkpoint/consistency: a consistency proof (a witness's) */
	/* review, appended (issue 31, passkeys): */
	F_WEB_PASSKEY = 67, /* {op, sid?, outcome?, text?, pk_cred?, pk_authdata?, pk_cdj?} POST /review/api/passkey:
			     * register-options, register (an attestation), approve-options (a decision's challenge),
			     * list, remove (the reviewer's own passkeys) */
	/* the cluster client (assent-cluster, issue 32: the shared ledger in PostgreSQL), appended: */
	F_CL_READY = 70,  /* {size, replicas} connected, schema in place: the shared ledger's size */
	F_CL_ENT = 71,	  /* {seq, e} one entry of a pull, in order */
	F_CL_CKPT = 72,	  /* {size, note, periodic} one checkpoint of a pull, after its entries */
	F_CL_END = 73,	  /* {ok, err?, size?} the end of a pull (the lock is held when ok), of a push or a release */
	F_CL_NOTIFY = 74, /* {size} another replica committed: the shared ledger has size entries now */
	F_CL_DEAD = 75,	  /* {replica} a replica's lease expired and this one took it over (its ends are ours) */
	F_CL_DLV = 76,	  /* {origin, id, hook, event, body, mac} a webhook delivery a dead replica left: ours now */
	F_CL_REG = 77,	  /* {version, body, mac, file?} the cluster's identity registry, or (file 1) its
			   * webhooks, sealed (at start, when it changes, after a put) */
	F_CL_WS = 78,	  /* {body, mac, ended} a reviewer's web session, made, used or ended on a replica */
	/* and down, to it: */
	F_CL_HELLO = 130,   /* {url, replica, policy, lock, adopt?, lease?} first: connect (lock: "row" |
			     * "advisory"; adopt: this replica's policy digest becomes the cluster's; lease: ms
			     * without a heartbeat after which a replica is taken over) */
	F_CL_PULL = 131,    /* {have, lock} take the append lock (lock; else a consistent read without it), send
			     * the entries after `have` and their checkpoints */
	F_CL_DLV_ADD = 135, /* {id, hook, event, body, mac} a webhook delivery waits (kept for a takeover; no answer) */
	F_CL_DLV_DONE = 136, /* {origin, id, hook} it ended (delivered or given up; no answer) */
	F_CL_REG_PUT = 137, /* {version, body, mac, base?, file?} this replica's registry (or webhooks) changed, made on
			     * the cluster's version base (no answer; the cluster's F_CL_REG follows) */
	F_CL_WS_PUT = 138,  /* {body, mac, ended} a web session made, used or ended here (no answer) */
	F_CL_PUT = 134,	    /* {seq, e, claim?} one entry of this commit, in order (after a pull that ended ok),
			     * and what it takes once for the cluster (ledger.h, struct ledger_sync push) */
	F_CL_PUSH = 132,    /* {from, n, note, periodic} store the n entries put, then commit: the lock goes */
	F_CL_RELEASE = 133, /* {} roll back: the lock goes, nothing stored */
};

/* The credentials any F_WEB_* frame may carry, as the request brought them: a web
 * session's secret ("cookie": it comes as a bearer ws_...), the page's CSRF token, a
 * reviewer or admin token, the proxy's identity header and shared secret, and the
 * client's address the proxy passed (X-Real-IP). The signer judges every one. */
#define PROTO_WEB_CREDENTIALS "cookie", "csrf", "bearer", "proxy_user", "proxy_secret", "client_addr"

/* How a command went, in F_CTL_REPLY and F_WEB_REPLY: typed, so that nobody matches an
 * error's words. The review worker maps it to HTTP (webroute.c, web_http_status). */
enum proto_status {
	PS_OK,		 /* 200 */
	PS_BAD_REQUEST,	 /* 400: the command cannot be done as asked (a rejection without a reason...) */
	PS_UNAUTHORIZED, /* 401: no credential, or one that names nobody */
	PS_FORBIDDEN,	 /* 403: a known caller who may not do this */
	PS_NOT_FOUND,	 /* 404: no such pending request (for this reviewer), or no such file */
	PS_TOO_MANY,	 /* 429: a limiter said no; retry says when to try again */
	PS_UNAVAILABLE,	 /* 503: the ledger could not record it */
	PS_INTERNAL,	 /* 500: out of memory, an answer too big for a frame */
	PS_COUNT
};

#include "gateway/proto/limits.h" /* PROTO_RID_MAX and every other shared limit */

#endif
