/* What the view hides, kept (issue 28), and revealed by reveal() below (`assent show
 * --full`, the page's Reveal). A gated call whose view masks anything has its exact
 * canonical call kept in STATE/exact/ (the retained store, named by the digest the
 * ledger's request entry carries, so assent-verify exact checks one against the other),
 * and a reviewer who may see a pending request can ask for its exact arguments: a
 * `reveal` entry names who, on disk before the answer. Why a store and not the ledger:
 * the ledger is what auditors are handed and exports whole; the masked values are
 * secrets, so they stay in a directory only the daemon's user reads (0700), bound to
 * the ledger by digest, never beside it in clear. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <limits.h>
#include <unistd.h>

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int exact_keep(struct signer *s, const uint8_t *call, size_t n, const char *digest, char *err)
{
	char dir[PATH_MAX], path[PATH_MAX + 96], tmp[PATH_MAX + 104];
	snprintf(dir, sizeof dir, "%s/" STATE_EXACT_DIR, s->o->state);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return as_fail(err, AS_EIO, "%s: %s", dir, strerror(errno));
	/* "sha256:HEX" -> sha256-HEX.cbor, a name with no ':' for any file system */
	snprintf(path, sizeof path, "%s/sha256-%s.cbor", dir, digest + 7);
	if (access(path, F_OK) == 0) /* the same call, kept before: its bytes are its name */
		return 0;
	snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return as_fail(err, AS_EIO, "%s: %s", tmp, strerror(errno));
	int bad = write_all(fd, call, n) != 0 || fdatasync(fd) != 0;
	close(fd);
	if (bad || rename(tmp, path) != 0) {
		unlink(tmp);
		return as_fail(err, AS_EIO, "%s: %s", path, strerror(errno));
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) { /* the name is durable too, before the entry that refers to it */
		(void)fsync(dfd);
		close(dfd);
	}
	return 0;
}

/* The reveal entry is on disk (or could not be written): now the reviewer sees. */
static void reveal_done(struct signer *s, struct op *o, const struct ledger_pos *pos, const char *err)
{
	if (pos) {
		json_object_set_new(o->answer, "reveal_seq", json_integer((json_int_t)pos->seq));
		reply_to(s, o->conn, o->web, answer_ok(o->answer));
		return;
	}
	json_decref(o->answer);
	slog("error", "reveal of %s not recorded: %s", o->it.session_id, err);
	reply_to(s, o->conn, o->web,
		 ctl_error(PS_UNAVAILABLE, "the reveal could not be recorded, so nothing is shown: %s", err));
}

/* The `reveal` entry: {kind, session_id, reviewer: {name, channel, uid | via}}. */
static struct op *reveal_entry(struct signer *s, const struct who *w, const char *id, char *err)
{
	struct cv_arena *a = &s->arena;
	cv_arena_reset(a);
	struct cv *m = cv_map(a, 3), *rv;
	size_t i = 0, j = 0;
	int rc = m ? 0 : AS_ENOMEM;
	rc |= kv_text(a, m, &i, "kind", "reveal", 6) | kv_text(a, m, &i, "session_id", id, strlen(id));
	rv = kv(a, m, &i, "reviewer");
	rc |= slot_map(a, rv, 3);
	rc |= kv_text(a, rv, &j, "name", w->reviewer, strlen(w->reviewer)) |
	      kv_text(a, rv, &j, "channel", w->channel, strlen(w->channel));
	if (w->web)
		rc |= kv_text(a, rv, &j, "via", w->via, strlen(w->via));
	else
		rc |= kv_uint(a, rv, &j, "uid", (uint64_t)w->uid);
	if (rc) {
		as_fail(err, AS_ENOMEM, "out of memory");
		return NULL;
	}
	return op_add(s, m, reveal_done, err);
}

void reveal(struct signer *s, const struct who *w, const char *id)
{
	struct pq_item *it = pq_find(s->q, id);
	struct req *r = it ? it->data : NULL;
	if (!r || !reviewer_may_see(s, w->reviewer, r)) {
		reply_to(s, w->reply, w->web, ctl_error(PS_NOT_FOUND, "no pending request %s", id));
		return;
	}
	const char *held_by = json_string_value(json_object_get(r->view, "held_by"));
	if (r->remote && held_by) { /* cluster mode: the exact bytes are kept where the call is held */
		reply_to(s, w->reply, w->web,
			 ctl_error(PS_NOT_FOUND,
				   "request %s is a gated call held by replica %s: its exact arguments are kept there "
				   "only, so reveal it on that replica (approving it here is fine: the digest shown is "
				   "what replica %s dispatches)",
				   id, held_by, held_by));
		return;
	}
	if (!r->gate || !r->gate->args) { /* request_feedback: the worker masked it before the signer saw it */
		reply_to(s, w->reply, w->web,
			 ctl_error(PS_NOT_FOUND,
				   "request %s is not a gated call: its masked text was never sent to the daemon, "
				   "so there is nothing to reveal (the marks say how much each hides)",
				   id));
		return;
	}
	char err[AS_ERRLEN] = "out of memory";
	struct op *o = reveal_entry(s, w, id, err);
	if (!o) {
		reply_to(s, w->reply, w->web, ctl_error(PS_UNAVAILABLE, "the reveal could not be recorded: %s", err));
		return;
	}
	slog("info", "request %s: exact call revealed to %s (%s)", id, w->reviewer, w->channel);
	snprintf(o->it.session_id, sizeof o->it.session_id, "%.*s", (int)(sizeof o->it.session_id - 1), id);
	o->conn = w->reply;
	o->web = w->web;
	o->answer = json_pack("{s:b,s:s,s:s,s:s,s:s,s:O,s:O?,s:s}", "ok", 1, "session_id", id, "upstream",
			      r->gate->upstream, "tool", r->gate->tool, "method", r->gate->method, "arguments",
			      r->gate->args, "input", r->gate->input, "call", r->action);
}
