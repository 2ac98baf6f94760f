/* The upstream worker's state, shared by its files (worker_upstream.c: the loop, calls and
 * what passes through them; uplists.c: the catalog). Private to gateway/worker/upstream/. */
#ifndef ASSENT_WORKER_UPSTREAM_UPW_H
#define ASSENT_WORKER_UPSTREAM_UPW_H

#include <jansson.h>
#include <stdint.h>

#include "common/cbor.h"
#include "common/util.h"
#include "gateway/proto/ipc.h"
#include "gateway/worker/mcp/mcp.h"
#include "gateway/worker/upstream/uphttp.h"

#define UP_LINE_MAX (4u << 20)	 /* one message from the server; a longer line is skipped */
#define UP_OUT_MAX (16u << 20)	 /* what may wait to be written to the server */
#define UP_INFLIGHT 1024	 /* dispatched calls awaiting the server's answer */
#define UP_PAGES_MAX 50		 /* tools/list pages */
#define UP_TOOLS_MAX 2000	 /* tools of one server */
#define UP_INIT_MS 30000	 /* to answer initialize; else this worker exits and is restarted */
#define UP_PROTOCOL "2025-11-25" /* the revision assent asks its upstreams for (older answers taken) */
#define UP_MODERN "2026-07-28"	 /* spoken per request to a server whose server/discover offers it */
#define UP_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define UP_META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define UP_NOTES_PER_S 100 /* progress and log notifications relayed a second */

struct uw {
	int ipcfd, in_fd, out_fd; /* the signer; the server's stdin (we write); its stdout (we read) */
	struct ipc_conn ipc;
	char name[PROTO_UP_NAME_MAX + 1];
	struct buf rx, tx;
	int skipping; /* inside a line over UP_LINE_MAX */
	int ready;    /* initialized */
	int modern;   /* its server/discover offers 2026-07-28 (stdio): a 2026 client's calls go so */
	uint64_t init_at;
	/* The lists being gathered, one after another (phase): tools, then what the server's
	 * capabilities say it has (resources, resource templates, prompts). */
	json_t *lists[4];
	unsigned phase, pages, list_seq;
	int has[4], completions, subscribe;
	uint64_t last_cid; /* the signer numbers dispatches upward: each is forwarded once */
	uint64_t inflight[UP_INFLIGHT];
	size_t ninflight;
	uint64_t log_window, logs;   /* rate of logs about the server's misbehaviour */
	uint64_t note_window, notes; /* rate of notifications relayed */
	/* a skipped line's first and last bytes, to find the call it answers */
	char skip_head[MCP_PEEK_HEAD], skip_tail[MCP_PEEK_TAIL];
	size_t skip_hlen, skip_tlen;
	struct cv_arena arena;
	struct uphttp *http; /* a url upstream: its connections (NULL: stdio) */
	unsigned asked;	     /* sockets asked of the signer, not yet given */
};

/* What the server did wrong, to the log, at most 20 lines a minute: a flood of garbage
 * must not become a flood of log lines. */
void misbehaved(struct uw *w, const char *fmt, ...) AS_PRINTF(2, 3);
int send_frame(struct uw *w, struct cv *f);
/* One JSON-RPC message to the server (taken): a line on its stdin, or a POST. */
int to_server(struct uw *w, json_t *msg);

/* uplists.c: the whole catalog again (a list in progress is dropped); a page of the list
 * being gathered; that list failed (none of it is served). */
void list_start(struct uw *w);
void on_list(struct uw *w, const json_t *res);
void list_failed(struct uw *w);

#endif
