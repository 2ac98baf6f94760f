/* A fixture for the unit tests that drive the signer through its test seam
 * (gateway/signer/testseam.h): a scratch state directory with a policy and reviewers, the
 * workers' ends to send frames from and read the signer's frames on, and the ledger's
 * entries read back. Header-only, for cmocka tests (gate_test.c, decide_test.c, web_test.c). */
#ifndef ASSENT_TESTS_SEAMFX_H
#define ASSENT_TESTS_SEAMFX_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/assent/err.h"
#include "common/cbor.h"
#include "common/util.h"
#include "gateway/proto/call.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/proto.h"
#include "gateway/state/registry.h"
#include "gateway/signer/testseam.h"
#include "tests/unit/scratch.h"

enum sfx_worker { SFX_MCP, SFX_REVIEW, SFX_UP };

struct sfx {
	char dir[64];
	struct signer *s;
	struct cv_arena a;	 /* frames being built */
	struct cv_arena ra;	 /* frames read */
	struct ipc_conn peer[3]; /* each worker's end (enum sfx_worker), reading what the signer sends */
	int open[3];
	char err[AS_ERRLEN];
};

/* A scratch state directory, no signer yet (reviewers are registered before it starts). */
static inline void sfx_dir(struct sfx *x, const char *tag)
{
	memset(x, 0, sizeof *x);
	snprintf(x->dir, sizeof x->dir, "/tmp/%s.XXXXXX", tag);
	assert_non_null(mkdtemp(x->dir));
	cv_arena_init(&x->a, 1u << 20);
	cv_arena_init(&x->ra, 1u << 20);
	setenv("FEEDBACK_SIGN_TOKENS", "false", 1);
	setenv("FEEDBACK_LOG_LEVEL", "ERROR", 1);
}

/* A reviewer in the registry, with one uid and at most one group; token: their new web token. */
static inline void sfx_reviewer(struct sfx *x, const char *name, uid_t uid, const char *group, char *token)
{
	struct registry *reg;
	assert_int_equal(registry_load(x->dir, &reg, x->err), 0);
	assert_int_equal(registry_reviewer_add(reg, name, &uid, 1, group ? &group : NULL, group ? 1 : 0, x->err), 0);
	if (token)
		assert_int_equal(registry_reviewer_token(reg, name, token, x->err), 0);
	assert_int_equal(registry_save(reg, x->dir, x->err), 0);
	registry_free(reg);
}

static inline void sfx_file(const struct sfx *x, const char *name, const char *text, char *path, size_t n)
{
	snprintf(path, n, "%s/%s", x->dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* The signer over the directory with this policy, and the upstreams (JSON text) when not NULL. */
static inline void sfx_start(struct sfx *x, const char *policy, const char *upstreams)
{
	char pol[128], ups[128];
	sfx_file(x, "t.policy", policy, pol, sizeof pol);
	x->s = signer_test_new(x->dir, pol, x->err);
	if (!x->s)
		fail_msg("signer_test_new: %s", x->err);
	int fd[3] = {signer_test_peer(x->s), signer_test_review_peer(x->s), -1};
	if (upstreams) {
		sfx_file(x, "t.upstreams.json", upstreams, ups, sizeof ups);
		if (signer_test_upstreams(x->s, ups, x->err) != 0)
			fail_msg("signer_test_upstreams: %s", x->err);
		fd[SFX_UP] = signer_test_up_peer(x->s, 0);
	}
	for (int k = 0; k < 3; k++)
		if (fd[k] >= 0) {
			assert_int_equal(ipc_conn_init(&x->peer[k], fd[k], x->err), 0);
			x->open[k] = 1;
		}
}

static inline void sfx_end(struct sfx *x)
{
	for (int k = 0; k < 3; k++)
		if (x->open[k])
			ipc_conn_free(&x->peer[k]);
	signer_test_free(x->s);
	cv_arena_free(&x->a);
	cv_arena_free(&x->ra);
	assert_int_equal(scratch_rm(x->dir), 0);
}

/* f from worker w, through the signer's receiver and dispatch table: what the seam says. */
static inline int sfx_send(struct sfx *x, enum sfx_worker w, const struct cv *f)
{
	struct buf b;
	buf_init(&b, IPC_FRAME_MAX);
	assert_int_equal(cbor_encode(f, &b, x->err), 0);
	x->err[0] = 0;
	int rc = w == SFX_UP	   ? signer_test_frame_up(x->s, 0, b.p, b.len, x->err)
		 : w == SFX_REVIEW ? signer_test_frame_from(x->s, 1, b.p, b.len, x->err)
				   : signer_test_frame(x->s, b.p, b.len, x->err);
	buf_free(&b);
	return rc;
}

/* The next frame of this type the signer sent worker w (others are skipped): 0, or
 * AS_ENOTFOUND when none is there. f lives in x->ra until the next call. */
static inline int sfx_next(struct sfx *x, enum sfx_worker w, int type, struct ipc_frame *f)
{
	assert_true(x->open[w]);
	for (;;) {
		cv_arena_reset(&x->ra);
		int g = ipc_next(&x->peer[w], &x->ra, f, x->err);
		if (g == AS_ENOTFOUND) {
			if (ipc_read(&x->peer[w], x->err) != 0)
				return AS_ENOTFOUND;
			continue;
		}
		assert_int_equal(g, 0);
		if (f->type == (uint32_t)type)
			return 0;
	}
}

/* How many frames of this type the signer sent worker w since the last look. */
static inline int sfx_count(struct sfx *x, enum sfx_worker w, int type)
{
	struct ipc_frame f;
	int n = 0;
	while (sfx_next(x, w, type, &f) == 0)
		n++;
	return n;
}

/* A text field of f holding JSON, parsed (the caller frees). */
static inline json_t *sfx_json(struct sfx *x, const struct ipc_frame *f, const char *key)
{
	const char *js;
	size_t n;
	assert_int_equal(ipc_get_text(f->body, key, IPC_FRAME_MAX, &js, &n, x->err), 0);
	json_t *j = json_loadb(js, n, 0, NULL);
	assert_non_null(j);
	return j;
}

/* The ledger's entries of one kind (about sid when not NULL): how many, the sequence number
 * of the last, and the last as JSON (when last is not NULL; the caller frees). */
struct sfx_find {
	const char *kind, *sid;
	int n;
	uint64_t seq;
	json_t *last;
};

static inline int sfx_find_one(uint64_t seq, const uint8_t *cbor, size_t len, void *arg)
{
	struct sfx_find *q = arg;
	struct cv_arena a;
	cv_arena_init(&a, 1u << 16);
	struct cv *e;
	if (cbor_decode(cbor, len, &a, &e, NULL) == 0 && cv_text_eq(cv_get(e, "kind"), q->kind) &&
	    (!q->sid || cv_text_eq(cv_get(e, "session_id"), q->sid))) {
		q->n++;
		q->seq = seq;
		json_decref(q->last);
		q->last = call_value_json(e);
	}
	cv_arena_free(&a);
	return 0;
}

static inline int sfx_entries(struct sfx *x, const char *kind, const char *sid, uint64_t *seq, json_t **last)
{
	struct sfx_find q = {kind, sid, 0, 0, NULL};
	assert_int_equal(signer_test_ledger_scan(x->s, sfx_find_one, &q, x->err), 0);
	if (seq)
		*seq = q.seq;
	if (last)
		*last = q.last;
	else
		json_decref(q.last);
	return q.n;
}

/* An agent's request on connection conn, as the mcp worker sends it (F_REQUEST): an action of
 * this type and message, waiting for its answer (wait) or not, timeout in seconds. */
static inline int sfx_request(struct sfx *x, uint64_t conn, const char *rid, const char *type, const char *msg,
			      uint64_t timeout, int wait)
{
	struct cv_arena *a = &x->a;
	cv_arena_reset(a);
	struct cv *act = cv_map(a, 2);
	assert_int_equal(cv_set_text(a, &act->items[0], "type", 4), 0);
	assert_int_equal(cv_set_text(a, &act->items[1], type, strlen(type)), 0);
	assert_int_equal(cv_set_text(a, &act->items[2], "message", 7), 0);
	assert_int_equal(cv_set_text(a, &act->items[3], msg, strlen(msg)), 0);
	struct buf enc;
	buf_init(&enc, 1u << 16);
	assert_int_equal(cbor_encode(act, &enc, x->err), 0);
	struct cv *f = ipc_frame_new(a, F_REQUEST, 6);
	assert_int_equal(ipc_put_uint(a, f, "conn", conn), 0);
	assert_int_equal(ipc_put_text(a, f, "rid", rid, strlen(rid)), 0);
	assert_int_equal(ipc_put_bytes(a, f, "action", enc.p, enc.len), 0);
	assert_int_equal(ipc_put_uint(a, f, "timeout", timeout), 0);
	assert_int_equal(ipc_put_bool(a, f, "wait", wait), 0);
	assert_int_equal(ipc_put_text(a, f, "client", "test/1", 6), 0);
	int rc = sfx_send(x, SFX_MCP, f);
	buf_free(&enc);
	return rc;
}

/* A reviewer's command on the control socket (F_CTL_DECIDE) from connection conn; text may be NULL. */
static inline int sfx_ctl_decide(struct sfx *x, uint64_t conn, const char *sid, const char *outcome, const char *text)
{
	cv_arena_reset(&x->a);
	struct cv *f = ipc_frame_new(&x->a, F_CTL_DECIDE, 4);
	assert_int_equal(ipc_put_uint(&x->a, f, "conn", conn), 0);
	assert_int_equal(ipc_put_text(&x->a, f, "sid", sid, strlen(sid)), 0);
	assert_int_equal(ipc_put_text(&x->a, f, "outcome", outcome, strlen(outcome)), 0);
	if (text)
		assert_int_equal(ipc_put_text(&x->a, f, "text", text, strlen(text)), 0);
	return sfx_send(x, SFX_REVIEW, f);
}

/* The control reply to connection conn: its status (enum proto_status) and JSON (the caller frees). */
static inline json_t *sfx_ctl_reply(struct sfx *x, uint64_t conn, uint64_t *status)
{
	struct ipc_frame f;
	for (;;) {
		if (sfx_next(x, SFX_REVIEW, F_CTL_REPLY, &f) != 0)
			fail_msg("no F_CTL_REPLY for connection %llu", (unsigned long long)conn);
		if (cv_get(f.body, "conn")->u == conn)
			break;
	}
	*status = cv_get(f.body, "status")->u;
	return sfx_json(x, &f, "json");
}

#endif
