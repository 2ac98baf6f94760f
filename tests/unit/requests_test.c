/* Unit tests for gateway/signer/requests.c (and the frame tables it relies on), driven
 * through the test seam (gateway/signer/testseam.h): a real signer state over a scratch
 * ledger, frames sent as the mcp worker sends them, answers read back, the ledger
 * checked with the verifier afterwards. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "include/assent/err.h"
#include "include/assent/verify.h"
#include "common/cbor.h"
#include "common/util.h"
#include "ledger/ledger.h"
#include "ledger/merkle.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/proto.h"
#include "gateway/signer/testseam.h"

struct fx {
	char dir[64];
	struct signer *s;
	struct cv_arena a;
	struct ipc_conn peer; /* the mcp worker's end, reading the signer's answers */
	char err[AS_ERRLEN];
	uint64_t conn;
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof *x);
	snprintf(x->dir, sizeof x->dir, "/tmp/requests_test.XXXXXX");
	assert_non_null(mkdtemp(x->dir));
	setenv("FEEDBACK_SIGN_TOKENS", "false", 1);
	x->s = signer_test_new(x->dir, NULL, x->err);
	if (!x->s)
		fail_msg("signer_test_new: %s", x->err);
	assert_int_equal(ipc_conn_init(&x->peer, signer_test_peer(x->s), x->err), 0);
	cv_arena_init(&x->a, 1u << 20);
	x->conn = signer_test_agent(x->s, 4242);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;
	ipc_conn_free(&x->peer);
	signer_test_free(x->s);
	cv_arena_free(&x->a);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", x->dir);
	assert_int_equal(system(cmd), 0);
	free(x);
	return 0;
}

/* The ledger as an auditor sees it: intact, with this many entries. */
static void ledger_ok(struct fx *x, uint64_t entries)
{
	char dir[128];
	snprintf(dir, sizeof dir, "%s/ledger", x->dir);
	struct av_ledger_opts o = {.key_from_state = 1};
	struct av_ledger_report r;
	assert_int_equal(av_verify_ledger(dir, &o, &r), 0);
	if (!r.ok)
		fail_msg("ledger: %s", r.reason);
	assert_int_equal(r.entries, entries);
}

static struct cv *action(struct cv_arena *a, const char *type, const char *msg)
{
	struct cv *m = cv_map(a, 2);
	assert_int_equal(cv_set_text(a, &m->items[0], "type", 4), 0);
	assert_int_equal(cv_set_text(a, &m->items[1], type, strlen(type)), 0);
	assert_int_equal(cv_set_text(a, &m->items[2], "message", 7), 0);
	assert_int_equal(cv_set_text(a, &m->items[3], msg, strlen(msg)), 0);
	return m;
}

/* An F_REQUEST as the mcp worker builds it: the action's canonical CBOR as bytes. */
static struct cv *request(struct fx *x, const struct cv *act, const char *rid, int wait, struct buf *enc)
{
	buf_init(enc, 1u << 20);
	assert_int_equal(cbor_encode(act, enc, x->err), 0);
	struct cv *f = ipc_frame_new(&x->a, F_REQUEST, 8);
	assert_int_equal(ipc_put_uint(&x->a, f, "conn", x->conn), 0);
	assert_int_equal(ipc_put_text(&x->a, f, "rid", rid, strlen(rid)), 0);
	assert_int_equal(ipc_put_bytes(&x->a, f, "action", enc->p, enc->len), 0);
	assert_int_equal(ipc_put_uint(&x->a, f, "timeout", 600), 0);
	assert_int_equal(ipc_put_bool(&x->a, f, "wait", wait), 0);
	assert_int_equal(ipc_put_text(&x->a, f, "client", "test/1", 6), 0);
	return f;
}

static int send_frame(struct fx *x, const struct cv *f)
{
	struct buf b;
	buf_init(&b, IPC_FRAME_MAX);
	assert_int_equal(cbor_encode(f, &b, x->err), 0);
	int rc = signer_test_frame(x->s, b.p, b.len, x->err);
	buf_free(&b);
	return rc;
}

/* The next F_RESULT the signer sent: its JSON, parsed (the caller frees). */
static json_t *result(struct fx *x, const char *rid, int *iserror)
{
	struct ipc_frame f;
	static struct cv_arena ra;
	cv_arena_init(&ra, 1u << 16);
	for (int tries = 0; tries < 64; tries++) {
		cv_arena_reset(&ra);
		int g = ipc_next(&x->peer, &ra, &f, x->err);
		if (g == AS_ENOTFOUND) {
			assert_int_equal(ipc_read(&x->peer, x->err), 0);
			continue;
		}
		assert_int_equal(g, 0);
		if (f.type != F_RESULT)
			continue;
		const char *r, *js;
		size_t rn, jn;
		assert_int_equal(ipc_get_text(f.body, "rid", PROTO_RID_MAX, &r, &rn, x->err), 0);
		assert_int_equal(rn, strlen(rid));
		assert_memory_equal(r, rid, rn);
		assert_int_equal(ipc_get_text(f.body, "json", PROTO_JSON_MAX, &js, &jn, x->err), 0);
		assert_int_equal(ipc_get_bool(f.body, "iserror", iserror, x->err), 0);
		json_t *j = json_loadb(js, jn, 0, NULL);
		assert_non_null(j);
		cv_arena_free(&ra);
		return j;
	}
	fail_msg("no F_RESULT for rid %s", rid);
	return NULL;
}

/* A request that waits not: recorded (one entry), pending, answered with its session_id;
 * get_feedback then finds it pending, by that id, for its owner. */
static void test_request_recorded_and_collected(void **state)
{
	struct fx *x = *state;
	uint64_t before = signer_test_ledger_size(x->s);
	struct buf enc;
	struct cv *f = request(x, action(&x->a, "approval", "deploy?"), "7", 0, &enc);
	assert_int_equal(send_frame(x, f), 0);
	buf_free(&enc);
	assert_int_equal(signer_test_ledger_size(x->s), before + 1);
	assert_int_equal(signer_test_pending(x->s), 1);
	int iserr;
	json_t *j = result(x, "7", &iserr);
	assert_int_equal(iserr, 0);
	const char *sid = json_string_value(json_object_get(j, "session_id"));
	assert_non_null(sid);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "pending");
	cv_arena_reset(&x->a);
	struct cv *c = ipc_frame_new(&x->a, F_COLLECT, 4);
	assert_int_equal(ipc_put_uint(&x->a, c, "conn", x->conn), 0);
	assert_int_equal(ipc_put_text(&x->a, c, "rid", "8", 1), 0);
	assert_int_equal(ipc_put_text(&x->a, c, "sid", sid, strlen(sid)), 0);
	assert_int_equal(ipc_put_uint(&x->a, c, "wait", 0), 0);
	assert_int_equal(send_frame(x, c), 0);
	json_t *k = result(x, "8", &iserr);
	assert_int_equal(iserr, 0);
	assert_string_equal(json_string_value(json_object_get(k, "status")), "pending");
	assert_string_equal(json_string_value(json_object_get(k, "session_id")), sid);
	json_decref(j);
	json_decref(k);
	ledger_ok(x, before + 1);
}

/* get_feedback (F_COLLECT, wait 0) of sid on connection conn: its JSON (the caller frees). */
static json_t *collect(struct fx *x, uint64_t conn, const char *rid, const char *sid, int *iserr)
{
	cv_arena_reset(&x->a);
	struct cv *c = ipc_frame_new(&x->a, F_COLLECT, 4);
	assert_int_equal(ipc_put_uint(&x->a, c, "conn", conn), 0);
	assert_int_equal(ipc_put_text(&x->a, c, "rid", rid, strlen(rid)), 0);
	assert_int_equal(ipc_put_text(&x->a, c, "sid", sid, strlen(sid)), 0);
	assert_int_equal(ipc_put_uint(&x->a, c, "wait", 0), 0);
	assert_int_equal(send_frame(x, c), 0);
	return result(x, rid, iserr);
}

/* A restart (a new signer over the same state): the requests whose callers collect later
 * (wait false: "poll"; a task) are pending again, for their measured requester only;
 * the blocking one is cancelled (its connection went with the old signer). */
static void test_restart_keeps_what_is_collected_later(void **state)
{
	struct fx *x = *state;
	uint64_t before = signer_test_ledger_size(x->s);
	struct buf enc;
	char sid[2][64];
	for (int k = 0; k < 3; k++) { /* poll, task, wait */
		cv_arena_reset(&x->a);
		char rid[2] = {(char)('1' + k), 0};
		struct cv *f = request(x, action(&x->a, "approval", "deploy?"), rid, k == 2, &enc);
		if (k == 1)
			assert_int_equal(ipc_put_bool(&x->a, f, "task", 1), 0);
		assert_int_equal(send_frame(x, f), 0);
		buf_free(&enc);
		if (k == 2)
			break;
		int iserr;
		json_t *j = result(x, rid, &iserr);
		assert_int_equal(iserr, 0);
		snprintf(sid[k], sizeof sid[k], "%s", json_string_value(json_object_get(j, "session_id")));
		json_decref(j);
	}
	assert_int_equal(signer_test_pending(x->s), 3);
	ipc_conn_free(&x->peer);
	signer_test_free(x->s);
	x->s = signer_test_new(x->dir, NULL, x->err);
	if (!x->s)
		fail_msg("signer_test_new: %s", x->err);
	assert_int_equal(ipc_conn_init(&x->peer, signer_test_peer(x->s), x->err), 0);
	x->conn = signer_test_agent(x->s, 4242);
	uint64_t other = signer_test_agent(x->s, 4343);
	assert_int_equal(signer_test_pending(x->s), 2);
	for (int k = 0; k < 2; k++) {
		int iserr;
		json_t *j = collect(x, x->conn, "9", sid[k], &iserr);
		assert_int_equal(iserr, 0);
		assert_string_equal(json_string_value(json_object_get(j, "status")), "pending");
		json_decref(j);
		j = collect(x, other, "10", sid[k], &iserr); /* another uid: not theirs */
		assert_int_equal(iserr, 1);
		json_decref(j);
	}
	ledger_ok(x, before + 3 + 1); /* three requests, and the blocking one's `cancelled` */
}

struct find_kind {
	const char *kind, *sid;
	char reason[300];
	int n;
};

static int find_kind(uint64_t seq, const uint8_t *cbor, size_t len, void *arg)
{
	(void)seq;
	struct find_kind *fk = arg;
	struct cv_arena a;
	cv_arena_init(&a, 4096);
	struct cv *e;
	if (cbor_decode(cbor, len, &a, &e, NULL) == 0 && cv_text_eq(cv_get(e, "kind"), fk->kind) &&
	    cv_text_eq(cv_get(e, "session_id"), fk->sid)) {
		const struct cv *r = cv_get(e, "reason");
		snprintf(fk->reason, sizeof fk->reason, "%.*s", r ? (int)r->n : 0, r ? (const char *)r->s : "");
		fk->n++;
	}
	cv_arena_free(&a);
	return 0;
}

/* The scratch state's ledger, opened as the signer opens it (with its checkpoint key), while
 * no signer has it open: LMDB opens an environment once per process. */
static struct ledger *ledger_of(struct fx *x)
{
	char dir[128], kdir[128];
	snprintf(dir, sizeof dir, "%s/ledger", x->dir);
	snprintf(kdir, sizeof kdir, "%s/keys", x->dir);
	struct ledger_opts lo = {.keys_dir = kdir};
	struct ledger *l;
	assert_int_equal(ledger_open(dir, &lo, &l, x->err), 0);
	return l;
}

/* The ledger's entries of one kind about sid, and the reason of the last. */
static int ledger_count(struct fx *x, const char *kind, const char *sid, char reason[300])
{
	struct ledger *l = ledger_of(x);
	struct find_kind fk = {kind, sid, "", 0};
	assert_int_equal(ledger_scan(l, find_kind, &fk, x->err), 0);
	ledger_close(l);
	snprintf(reason, 300, "%s", fk.reason);
	return fk.n;
}

/* A request entry an older assent wrote (no collect, owner or terms), left pending: a
 * restart cannot tell how its caller collects the answer, takes it as a blocking call
 * and cancels it, saying why (it was `abandoned` before issue 14). */
static void test_restart_cancels_an_older_entry(void **state)
{
	struct fx *x = *state;
	ipc_conn_free(&x->peer);
	signer_test_free(x->s);
	static const char sid[] = "req-0123456789abcdef0123456789abcdef";
	struct ledger *l = ledger_of(x);
	cv_arena_reset(&x->a);
	struct cv *m = cv_map(&x->a, 6), *rq = cv_map(&x->a, 2);
	const char *k[] = {"kind", "session_id", "type", "message"}, *v[] = {"request", sid, "approval", "old"};
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(cv_set_text(&x->a, &m->items[2 * i], k[i], strlen(k[i])), 0);
		assert_int_equal(cv_set_text(&x->a, &m->items[2 * i + 1], v[i], strlen(v[i])), 0);
	}
	assert_int_equal(cv_set_text(&x->a, &m->items[8], "deadline", 8), 0);
	cv_set_uint(&m->items[9], now_unix_ms() + 600000);
	assert_int_equal(cv_set_text(&x->a, &m->items[10], "requester", 9), 0);
	assert_int_equal(cv_set_text(&x->a, &rq->items[0], "uid", 3), 0);
	cv_set_uint(&rq->items[1], 4242);
	assert_int_equal(cv_set_text(&x->a, &rq->items[2], "client", 6), 0);
	assert_int_equal(cv_set_text(&x->a, &rq->items[3], "old/1", 5), 0);
	m->items[11] = *rq;
	struct buf enc;
	buf_init(&enc, 1u << 16);
	assert_int_equal(cbor_encode(m, &enc, x->err), 0);
	struct ledger_rec rec = {enc.p, enc.len};
	struct ledger_pos pos;
	assert_int_equal(ledger_append(l, &rec, 1, &pos, x->err), 0);
	buf_free(&enc);
	ledger_close(l);
	x->s = signer_test_new(x->dir, NULL, x->err);
	if (!x->s)
		fail_msg("signer_test_new: %s", x->err);
	assert_int_equal(signer_test_pending(x->s), 0);
	signer_test_free(x->s);
	char reason[300];
	assert_int_equal(ledger_count(x, "abandoned", sid, reason), 0);
	assert_int_equal(ledger_count(x, "cancelled", sid, reason), 1);
	if (!strstr(reason, "an older assent wrote it"))
		fail_msg("cancelled, but why: %s", reason);
	x->s = signer_test_new(x->dir, NULL, x->err); /* for teardown */
	if (!x->s)
		fail_msg("signer_test_new: %s", x->err);
	assert_int_equal(ipc_conn_init(&x->peer, signer_test_peer(x->s), x->err), 0);
	ledger_ok(x, pos.seq + 2); /* everything before, the old request, its `cancelled` */
}

/* The claims of a JWT (base64url payload), parsed. */
static json_t *claims(const char *jwt)
{
	const char *a = strchr(jwt, '.'), *b = a ? strchr(a + 1, '.') : NULL;
	assert_non_null(b);
	char b64[4096];
	size_t n = 0;
	for (const char *p = a + 1; p < b && n < sizeof b64 - 4; p++)
		b64[n++] = *p == '-' ? '+' : *p == '_' ? '/' : *p;
	while (n % 4)
		b64[n++] = '=';
	uint8_t out[4096];
	size_t outn;
	assert_int_equal(b64_decode(b64, n, out, sizeof out, &outn), 0);
	json_t *j = json_loadb((const char *)out, outn, 0, NULL);
	assert_non_null(j);
	return j;
}

/* The token's action digest (DESIGN.md: sha256 of the canonical action) is SHA-256 of
 * the bytes the worker sent, as received; the policy allowed at once, both entries on disk. */
static void test_digest_of_bytes_as_received(void **state)
{
	struct fx *x = *state;
	signer_test_free(x->s);
	ipc_conn_free(&x->peer);
	char pol[128];
	snprintf(pol, sizeof pol, "%s/p.policy", x->dir);
	FILE *pf = fopen(pol, "w");
	assert_non_null(pf);
	fputs("allow type input\ndefault ask\n", pf);
	fclose(pf);
	setenv("FEEDBACK_SIGN_TOKENS", "true", 1);
	setenv("FEEDBACK_TOKEN_SECRET", "0123456789abcdef0123456789abcdef0123456789", 1);
	x->s = signer_test_new(x->dir, pol, x->err);
	setenv("FEEDBACK_SIGN_TOKENS", "false", 1);
	unsetenv("FEEDBACK_TOKEN_SECRET");
	if (!x->s)
		fail_msg("signer_test_new: %s", x->err);
	assert_int_equal(ipc_conn_init(&x->peer, signer_test_peer(x->s), x->err), 0);
	x->conn = signer_test_agent(x->s, 4242);
	uint64_t before = signer_test_ledger_size(x->s);
	struct buf enc;
	struct cv *f = request(x, action(&x->a, "input", "which region?"), "1", 1, &enc);
	uint8_t h[32];
	char want[72] = "sha256:";
	sha256(enc.p, enc.len, h);
	hex_encode(h, 32, want + 7);
	assert_int_equal(send_frame(x, f), 0);
	buf_free(&enc);
	int iserr;
	json_t *j = result(x, "1", &iserr);
	assert_int_equal(iserr, 0);
	assert_true(json_is_true(json_object_get(j, "approved")));
	const char *tok = json_string_value(json_object_get(j, "approval_token"));
	assert_non_null(tok);
	json_t *c = claims(tok);
	assert_string_equal(json_string_value(json_object_get(c, "action")), want);
	json_decref(c);
	json_decref(j);
	ledger_ok(x, before + 2); /* request and decision */
}

/* What the field table refuses never reaches the handler, and the error names the field:
 * a nested action (the old wire form), an over-long rid, an unknown key, a missing one. */
static void test_table_refuses_before_handler(void **state)
{
	struct fx *x = *state;
	uint64_t before = signer_test_ledger_size(x->s);
	struct buf enc;
	struct cv *f = request(x, action(&x->a, "approval", "a"), "1", 0, &enc);
	/* action as a map, not its bytes */
	for (size_t i = 0; i < f->n; i++)
		if (cv_text_eq(&f->items[2 * i], "action"))
			f->items[2 * i + 1] = *action(&x->a, "approval", "a");
	assert_int_equal(send_frame(x, f), AS_ECORRUPT);
	assert_non_null(strstr(x->err, "field \"action\" is not a byte string"));
	buf_free(&enc);

	cv_arena_reset(&x->a);
	x->conn = signer_test_agent(x->s, 4242); /* the restart ended the connections */
	char rid[PROTO_RID_MAX + 2];
	memset(rid, '1', sizeof rid - 1);
	rid[sizeof rid - 1] = 0;
	f = request(x, action(&x->a, "approval", "a"), rid, 0, &enc);
	assert_int_equal(send_frame(x, f), AS_ECORRUPT);
	char want[96];
	snprintf(want, sizeof want, "field \"rid\" holds %u bytes, over its maximum of %u", PROTO_RID_MAX + 1,
		 PROTO_RID_MAX);
	assert_non_null(strstr(x->err, want));
	buf_free(&enc);

	cv_arena_reset(&x->a);
	x->conn = signer_test_agent(x->s, 4242);
	f = request(x, action(&x->a, "approval", "a"), "1", 0, &enc);
	f->u++; /* room for one more pair */
	assert_int_equal(ipc_put_text(&x->a, f, "uid", "0", 1), 0);
	assert_int_equal(send_frame(x, f), AS_ECORRUPT);
	assert_non_null(strstr(x->err, "field \"uid\" is not one of its fields"));
	buf_free(&enc);

	cv_arena_reset(&x->a);
	x->conn = signer_test_agent(x->s, 4242);
	struct cv *c = ipc_frame_new(&x->a, F_CANCEL, 1);
	assert_int_equal(ipc_put_uint(&x->a, c, "conn", x->conn), 0);
	assert_int_equal(send_frame(x, c), AS_ECORRUPT);
	assert_non_null(strstr(x->err, "F_CANCEL: missing field \"rid\""));
	assert_int_equal(signer_test_ledger_size(x->s), before);
	ledger_ok(x, before);
}

/* An action that is not canonical CBOR (a non-shortest length) is refused: the digest
 * is only ever of canonical bytes. */
static void test_noncanonical_action_refused(void **state)
{
	struct fx *x = *state;
	uint64_t before = signer_test_ledger_size(x->s);
	struct buf enc;
	struct cv *f = request(x, action(&x->a, "approval", "a"), "1", 0, &enc);
	/* {"type": "approval", "message": "a"} with "a" as 0x78 0x01 'a' (not shortest) */
	static const uint8_t bad[] = {0xa2, 0x64, 't',	'y', 'p', 'e', 0x68, 'a', 'p', 'p', 'r',  'o',	'v',
				      'a',  'l',  0x67, 'm', 'e', 's', 's',  'a', 'g', 'e', 0x78, 0x01, 'a'};
	for (size_t i = 0; i < f->n; i++)
		if (cv_text_eq(&f->items[2 * i], "action"))
			assert_int_equal(cv_set_bytes(&x->a, &f->items[2 * i + 1], bad, sizeof bad), 0);
	assert_int_equal(send_frame(x, f), AS_ECORRUPT);
	assert_non_null(strstr(x->err, "action: not one canonical CBOR item"));
	assert_int_equal(signer_test_pending(x->s), 0);
	assert_int_equal(signer_test_ledger_size(x->s), before);
	buf_free(&enc);
}

/* get_feedback with a session_id as long as the worker allows (MCP_SESSION_ID_MAX) is
 * answered, not taken for an attack (the signer allowed 44 bytes before the table). */
static void test_collect_long_session_id_answered(void **state)
{
	struct fx *x = *state;
	char sid[65];
	memset(sid, 'a', 64);
	sid[64] = 0;
	struct cv *c = ipc_frame_new(&x->a, F_COLLECT, 4);
	assert_int_equal(ipc_put_uint(&x->a, c, "conn", x->conn), 0);
	assert_int_equal(ipc_put_text(&x->a, c, "rid", "3", 1), 0);
	assert_int_equal(ipc_put_text(&x->a, c, "sid", sid, 64), 0);
	assert_int_equal(ipc_put_uint(&x->a, c, "wait", 0), 0);
	assert_int_equal(send_frame(x, c), 0);
	int iserr;
	json_t *j = result(x, "3", &iserr);
	assert_int_equal(iserr, 1);
	assert_non_null(strstr(json_string_value(json_object_get(j, "error")), "no request of yours"));
	json_decref(j);
}

/* A cancel of a pending blocking call records `cancelled` and empties the queue. */
static void test_cancel_records(void **state)
{
	struct fx *x = *state;
	uint64_t before = signer_test_ledger_size(x->s);
	struct buf enc;
	struct cv *f = request(x, action(&x->a, "confirmation", "really?"), "\"abc\"", 1, &enc);
	assert_int_equal(send_frame(x, f), 0);
	buf_free(&enc);
	assert_int_equal(signer_test_pending(x->s), 1);
	cv_arena_reset(&x->a);
	struct cv *c = ipc_frame_new(&x->a, F_CANCEL, 2);
	assert_int_equal(ipc_put_uint(&x->a, c, "conn", x->conn), 0);
	assert_int_equal(ipc_put_text(&x->a, c, "rid", "\"abc\"", 5), 0);
	assert_int_equal(send_frame(x, c), 0);
	assert_int_equal(signer_test_pending(x->s), 0);
	assert_int_equal(signer_test_ledger_size(x->s), before + 2);
	ledger_ok(x, before + 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_request_recorded_and_collected, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restart_keeps_what_is_collected_later, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restart_cancels_an_older_entry, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_digest_of_bytes_as_received, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_table_refuses_before_handler, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_noncanonical_action_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_collect_long_session_id_answered, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cancel_records, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
