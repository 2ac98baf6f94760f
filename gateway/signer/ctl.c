/* A reviewer's commands over the control socket (the review worker's F_CTL frames). */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netdb.h>
#include <grp.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "ledger/ledger.h"
#include "gateway/proto/action.h"
#include "gateway/cli/bridge.h"
#include "common/cbor.h"
#include "ledger/entry.h"
#include "gateway/proto/httpcfg.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/workers.h"
#include "gateway/signer/lim.h"
#include "ledger/merkle.h"
#include "gateway/signer/metrics.h"
#include "gateway/signer/peeruid.h"
#include "policy/policy.h"
#include "gateway/proto/proto.h"
#include "gateway/signer/queue.h"
#include "common/redact.h"
#include "gateway/signer/registry.h"
#include "gateway/signer/token.h"
#include "common/util.h"
#include "gateway/signer/websess.h"

int h_ctl(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	const char *cmd, *sid = NULL, *outcome = NULL, *text = NULL;
	size_t cmdn, sidn = 0, outn = 0, textn = 0;
	uint64_t n = 0;
	GUARD(get_conn(s, f, W_REVIEW, &c, err));
	if (ctl_gone(s, c))
		return as_fail(err, AS_ENOTFOUND, "a command on connection %llu, whose reviewer has left: refused",
			       (unsigned long long)c->id);
	GUARD(ipc_get_text(f->body, "cmd", 16, &cmd, &cmdn, err));
	if (cv_get(f->body, "sid"))
		GUARD(ipc_get_text(f->body, "sid", 64, &sid, &sidn, err));
	if (cv_get(f->body, "outcome"))
		GUARD(ipc_get_text(f->body, "outcome", 16, &outcome, &outn, err));
	if (cv_get(f->body, "text"))
		GUARD(ipc_get_text(f->body, "text", 16384, &text, &textn, err));
	if (cv_get(f->body, "n"))
		GUARD(ipc_get_uint(f->body, "n", 64, &n, err));
	uint64_t offset = 0; /* pending: the page from this request on */
	if (cv_get(f->body, "offset"))
		GUARD(ipc_get_uint(f->body, "offset", PQ_MAX, &offset, err));
	char cm[17], id[65] = "", oc[17] = "", *tx = text ? strndup(text, textn) : NULL;
	snprintf(cm, sizeof cm, "%.*s", (int)cmdn, cmd);
	if (sid)
		snprintf(id, sizeof id, "%.*s", (int)sidn, sid);
	if (outcome)
		snprintf(oc, sizeof oc, "%.*s", (int)outn, outcome);
	reload_registry(s);
	const char *reviewer = registry_reviewer_by_uid(s->reg, c->uid);
	json_t *rep;
	if (!reviewer)
		rep = ctl_error("uid %u is not a registered reviewer (an operator runs: assent reviewer add NAME --uid %u)",
				(unsigned)c->uid, (unsigned)c->uid);
	else if (!strcmp(cm, "whoami"))
		rep = json_pack("{s:b,s:s,s:I}", "ok", 1, "reviewer", reviewer, "uid", (json_int_t)c->uid);
	else if (!strcmp(cm, "status"))
		rep = json_pack("{s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "ok", 1, "pid", (json_int_t)getpid(), "pending",
				(json_int_t)pq_count(s->q), "uptime_seconds", (json_int_t)((now_ms() - s->started_ms) / 1000),
				"ledger_size", (json_int_t)ledger_size(s->ledger), "entries_written",
				(json_int_t)s->committed, "commits", (json_int_t)s->commits, "mcp_worker_restarts",
				(json_int_t)s->w[W_MCP].restarts_total, "review_worker_restarts",
				(json_int_t)s->w[W_REVIEW].restarts_total);
	else if (!strcmp(cm, "pending")) {
		rep = list_reply_page(s, NULL, reviewer, (size_t)offset);
		json_object_set_new(rep, "ok", json_true());
	} else if (!strcmp(cm, "show")) {
		struct pq_item *it = id[0] ? pq_find(s->q, id) : NULL;
		rep = it && reviewer_may_see(s, reviewer, it->data) ? show_reply(it->data) : ctl_error("no pending request %s", id);
	} else if (!strcmp(cm, "decide") && id[0] && oc[0]) {
		struct who w = {reviewer, "cli", NULL, c->uid, c->id, 0};
		rep = decide(s, &w, id, oc, tx, n);
	} else {
		rep = ctl_error("malformed command");
	}
	free(tx);
	if (rep) /* NULL: a decision, answered once it is on disk */
		ctl_reply(s, c->id, rep);
	return 0;
}

json_t *ctl_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return json_pack("{s:b,s:s}", "ok", 0, "error", msg);
}

void reload_registry(struct signer *s)
{
	char path[4200], err[AS_ERRLEN];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", s->o->state, REG_FILE);
	time_t mt = stat(path, &st) == 0 ? st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec : 0;
	if (s->reg && mt == s->reg_mtime)
		return;
	struct registry *r;
	if (registry_load(s->o->state, &r, err) != 0) {
		slog("error", "identity registry: %s (keeping the one loaded)", err);
		return;
	}
	struct registry *old = s->reg;
	s->reg = r;
	s->reg_mtime = mt;
	if (old)
		web_credentials_changed(s, old);
	registry_free(old);
}
