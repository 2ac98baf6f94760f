/* Unit tests for gateway/proto/frames.c: the field table of every frame type, both those a
 * worker sends and those the signer sends, and their checkers (frame_fields_check, and
 * frame_down_check, which the workers run). Each table is exercised generically: a frame holding every
 * field at its maximum passes; each field one over its maximum, of another type,
 * missing (when required) or joined by an unknown key is refused with an error naming
 * the frame type and the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "include/assent/err.h"
#include "common/cbor.h"
#include "gateway/proto/frames.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/proto.h"

static const uint32_t worker_types[] = {
    F_HELLO,	      F_CONN_CLOSED,	 F_LOG,		 F_REQUEST,	F_COLLECT,	   F_LIST,
    F_CANCEL,	      F_HTTP_AUTH,	 F_SESSION_INFO, F_SESSION_END, F_CTL_WHOAMI,	   F_CTL_STATUS,
    F_CTL_PENDING,    F_CTL_SHOW,	 F_CTL_DECIDE,	 F_CTL_REVEAL,	F_WEB_METRICS,	   F_WEB_JWKS,
    F_WEB_CHECKPOINT, F_WEB_LOGIN,	 F_WEB_ME,	 F_WEB_LOGOUT,	F_WEB_EVENTS,	   F_WEB_PENDING,
    F_WEB_LIST,	      F_WEB_DECIDE,	 F_WEB_REVEAL,	 F_WEB_SUBMIT,	F_WEB_ADMIN_CLEAR, F_WEB_HISTORY,
    F_WEB_PROOF,      F_WEB_CONSISTENCY, F_WEB_PASSKEY,	 F_TASK,	F_INPUT,	   F_CALL,
    F_UP_TOOLS,	      F_UP_RESULT,	 F_UP_NOTE,	 F_UP_ASK,	F_UP_CONNECT,	   F_ANSWER,
    F_CALLREC,	      F_CALLRECS,	 F_QA,		 F_CTL_QA,	F_WEB_QA,	   F_REC_STATS,
    F_REC_ANSWER,     F_NOTIFY_DONE,	 F_WITNESS_DONE};
/* Every type the signer sends a worker (proto.h: signer -> worker). */
static const uint32_t signer_types[] = {
    F_CONN_NEW, F_RESULT,    F_CTL_REPLY, F_CONFIG,	 F_HTTP_REPLY, F_STATS,	      F_WEB_REPLY, F_TASK_STATUS,
    F_WEB_PUSH, F_DISPATCH,  F_NOTE,	  F_UP_CANCEL,	 F_ASK,	       F_UP_SOCKET,   F_UP_ANSWER, F_REC_CALLS,
    F_REC_CALL, F_REC_EVENT, F_REC_QUERY, F_NOTIFY_POST, F_CATALOG,    F_WITNESS_POST};

static char big[1u << 20];

/* Field fd's value at size (a uint's value, a string's bytes, an array's items). */
static void value(struct cv_arena *a, struct cv *v, const struct frame_field *fd, uint64_t size, int wrong_type)
{
	enum frame_ftype t = fd->type;
	if (wrong_type) { /* any other type: a text for a uint, a uint for the rest */
		t = t == FT_UINT ? FT_TEXT : FT_UINT;
		size = 1;
	}
	switch (t) {
	case FT_UINT:
		cv_set_uint(v, size);
		break;
	case FT_TEXT:
		assert_true(size <= sizeof big);
		assert_int_equal(cv_set_text(a, v, big, (size_t)size), 0);
		break;
	case FT_BYTES:
		assert_int_equal(cv_set_bytes(a, v, (const uint8_t *)big, (size_t)size), 0);
		break;
	case FT_BOOL:
		v->t = CV_TRUE;
		break;
	case FT_ARRAY: {
		struct cv *arr = cv_array(a, (size_t)size);
		*v = arr ? *arr : (struct cv){.t = CV_ARRAY};
		for (size_t i = 0; i < size; i++)
			arr->items[i].t = CV_NULL;
		break;
	}
	case FT_MAP: { /* size pairs, each "k": null (the checker counts them; their reader reads them) */
		struct cv *m = cv_map(a, (size_t)size);
		assert_non_null(m);
		for (size_t i = 0; i < size; i++) {
			assert_int_equal(cv_set_text(a, &m->items[2 * i], "k", 1), 0);
			m->items[2 * i + 1].t = CV_NULL;
		}
		*v = *m;
		break;
	}
	}
}

/* A frame of table tb with every field at its maximum, except field `which` (-1: none)
 * made `how`: 0 at max, 1 over max, 2 of another type, 3 absent. */
static struct cv *frame(struct cv_arena *a, const struct frame_table *tb, long which, int how, int extra)
{
	struct cv *f = ipc_frame_new(a, tb->type, tb->nfields + 1);
	assert_non_null(f);
	for (size_t i = 0; i < tb->nfields; i++) {
		const struct frame_field *fd = &tb->fields[i];
		int mine = (long)i == which;
		if ((mine && how == 3) || !strcmp(fd->key, "t")) /* "t": the type, in a table of no field */
			continue;
		uint64_t max = fd->type == FT_UINT || fd->type == FT_BOOL ? fd->max : fd->max > 4096 ? 4096 : fd->max;
		/* Large strings are tried at their maximum only for the field under test. */
		uint64_t size = mine ? fd->max : max;
		if (mine && how == 1)
			size = fd->max + 1;
		struct cv *slot = ipc_put(a, f, fd->key);
		assert_non_null(slot);
		value(a, slot, fd, size, mine && how == 2);
	}
	if (extra)
		assert_int_equal(ipc_put_uint(a, f, "zz_not_a_field", 1), 0);
	return f;
}

static void test_every_worker_type_has_a_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof worker_types / sizeof *worker_types; i++) {
		const struct frame_table *tb = frame_table_find(worker_types[i]);
		assert_non_null(tb);
		assert_int_equal(tb->type, worker_types[i]);
		assert_true(tb->nfields > 0 && tb->nfields <= 64);
	}
	/* What only the signer sends has none. */
	assert_null(frame_table_find(F_RESULT));
	assert_null(frame_table_find(F_CONN_NEW));
}

/* Every field of tb at its maximum, one over, of another type, absent, and an unknown key. */
static void table_accepts_and_refuses(struct cv_arena *a, const struct frame_table *tb)
{
	char err[AS_ERRLEN];
	cv_arena_reset(a);
	assert_int_equal(frame_fields_check(tb, frame(a, tb, -1, 0, 0), err), 0);
	cv_arena_reset(a);
	assert_int_equal(frame_fields_check(tb, frame(a, tb, -1, 0, 1), err), AS_ECORRUPT);
	assert_non_null(strstr(err, "\"zz_not_a_field\" is not one of its fields"));
	assert_non_null(strstr(err, tb->name));
	for (size_t i = 0; i < tb->nfields; i++) {
		const struct frame_field *fd = &tb->fields[i];
		char want[96];
		if (!strcmp(fd->key, "t"))
			continue;
		cv_arena_reset(a);
		if (fd->type != FT_BOOL && fd->max < sizeof big && fd->max < UINT64_MAX) {
			assert_int_equal(frame_fields_check(tb, frame(a, tb, (long)i, 0, 0), err), 0);
			cv_arena_reset(a);
			assert_int_equal(frame_fields_check(tb, frame(a, tb, (long)i, 1, 0), err), AS_ECORRUPT);
			snprintf(want, sizeof want, "%s: field \"%s\" ", tb->name, fd->key);
			assert_non_null(strstr(err, want));
			assert_non_null(strstr(err, "over its maximum"));
		}
		cv_arena_reset(a);
		assert_int_equal(frame_fields_check(tb, frame(a, tb, (long)i, 2, 0), err), AS_ECORRUPT);
		snprintf(want, sizeof want, "field \"%s\" is not ", fd->key);
		assert_non_null(strstr(err, want));
		cv_arena_reset(a);
		int rc = frame_fields_check(tb, frame(a, tb, (long)i, 3, 0), err);
		if (fd->required) {
			assert_int_equal(rc, AS_ECORRUPT);
			snprintf(want, sizeof want, "missing field \"%s\"", fd->key);
			assert_non_null(strstr(err, want));
		} else {
			assert_int_equal(rc, 0);
		}
	}
}

static void test_tables_accept_and_refuse(void **state)
{
	(void)state;
	memset(big, 'x', sizeof big);
	struct cv_arena a;
	cv_arena_init(&a, 1u << 22);
	for (size_t t = 0; t < sizeof worker_types / sizeof *worker_types; t++)
		table_accepts_and_refuses(&a, frame_table_find(worker_types[t]));
	cv_arena_free(&a);
}

static void test_every_signer_type_has_a_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof signer_types / sizeof *signer_types; i++) {
		const struct frame_table *tb = frame_down_find(signer_types[i]);
		assert_non_null(tb);
		assert_int_equal(tb->type, signer_types[i]);
		assert_true(tb->nfields > 0 && tb->nfields <= 64);
		for (size_t k = 0; k < tb->nfields; k++) /* a maximum of 0 is a literal nobody named */
			assert_true(tb->fields[k].type == FT_BOOL || tb->fields[k].max > 0);
	}
	/* Each direction has its own lookup: a reader sees each frame once. */
	assert_null(frame_down_find(F_HELLO));
	assert_null(frame_down_find(F_REQUEST));
	assert_null(frame_table_find(F_DISPATCH));
	assert_null(frame_down_find(999));
}

static void test_signer_tables_accept_and_refuse(void **state)
{
	(void)state;
	memset(big, 'x', sizeof big);
	struct cv_arena a;
	cv_arena_init(&a, 1u << 22);
	for (size_t t = 0; t < sizeof signer_types / sizeof *signer_types; t++)
		table_accepts_and_refuses(&a, frame_down_find(signer_types[t]));
	cv_arena_free(&a);
}

/* What the workers run on each frame from the signer: the table, and the items of an array
 * that have one (F_REC_CALLS recs, F_CONFIG hooks); an unknown type is refused. */
static void test_down_check(void **state)
{
	(void)state;
	memset(big, 'x', sizeof big);
	char err[AS_ERRLEN];
	struct cv_arena a;
	cv_arena_init(&a, 1u << 22);
	struct cv *f = ipc_frame_new(&a, 999, 0);
	assert_int_equal(frame_down_check(999, f, err), AS_ECORRUPT);
	assert_non_null(strstr(err, "frame type 999"));
	f = ipc_frame_new(&a, F_HELLO, 1); /* a worker's frame, never the signer's */
	assert_int_equal(ipc_put_text(&a, f, "kind", "mcp", 3), 0);
	assert_int_equal(frame_down_check(F_HELLO, f, err), AS_ECORRUPT);

	/* F_DISPATCH, as gate.c builds it: passes; a caps past PROTO_CAPS_MAX does not. */
	cv_arena_reset(&a);
	f = ipc_frame_new(&a, F_DISPATCH, 4);
	assert_int_equal(ipc_put_uint(&a, f, "cid", 7), 0);
	assert_int_equal(ipc_put_bytes(&a, f, "call", (const uint8_t *)"\xa0", 1), 0);
	assert_int_equal(ipc_put_text(&a, f, "digest", big, PROTO_DIGEST_MAX), 0);
	assert_int_equal(frame_down_check(F_DISPATCH, f, err), 0);
	assert_int_equal(ipc_put_uint(&a, f, "caps", PROTO_CAPS_MAX + 1), 0);
	assert_int_equal(frame_down_check(F_DISPATCH, f, err), AS_ECORRUPT);
	assert_non_null(strstr(err, "F_DISPATCH: field \"caps\""));

	/* F_REC_CALLS: each record is checked against F_REC_CALL's table. */
	const struct frame_table *rc = frame_down_find(F_REC_CALL);
	for (int bad = 0; bad < 3; bad++) {
		cv_arena_reset(&a);
		struct cv *item = frame(&a, rc, -1, 0, bad == 1), *arr = cv_array(&a, 2), *slot;
		assert_non_null(arr);
		arr->items[0] = *item;
		arr->items[1] = *item;
		if (bad == 2)
			arr->items[1].t = CV_NULL;
		f = ipc_frame_new(&a, F_REC_CALLS, 1);
		assert_non_null(slot = ipc_put(&a, f, "recs"));
		*slot = *arr;
		int r = frame_down_check(F_REC_CALLS, f, err);
		assert_int_equal(r, bad ? AS_ECORRUPT : 0);
		if (bad == 1)
			assert_non_null(strstr(err, "F_REC_CALL: field \"zz_not_a_field\""));
		if (bad == 2)
			assert_non_null(strstr(err, "F_REC_CALLS: recs item 1 is not a map"));
	}

	/* F_CONFIG hooks: each hook's fields, by name. */
	cv_arena_reset(&a);
	struct cv *hook = cv_map(&a, 3), *hooks = cv_array(&a, 1), *slot;
	assert_non_null(hook);
	assert_non_null(hooks);
	assert_int_equal(cv_set_text(&a, &hook->items[0], "scheme", 6), 0);
	assert_int_equal(cv_set_text(&a, &hook->items[1], "https", 5), 0);
	assert_int_equal(cv_set_text(&a, &hook->items[2], "host", 4), 0);
	assert_int_equal(cv_set_text(&a, &hook->items[3], "h", 1), 0);
	assert_int_equal(cv_set_text(&a, &hook->items[4], "port", 4), 0);
	cv_set_uint(&hook->items[5], PROTO_URL_PORT_MAX + 1);
	hooks->items[0] = *hook;
	f = ipc_frame_new(&a, F_CONFIG, 1);
	assert_non_null(slot = ipc_put(&a, f, "hooks"));
	*slot = *hooks;
	assert_int_equal(frame_down_check(F_CONFIG, f, err), AS_ECORRUPT);
	assert_non_null(strstr(err, "field \"port\""));
	cv_set_uint(&hook->items[5], 443);
	hooks->items[0] = *hook;
	*slot = *hooks;
	assert_int_equal(frame_down_check(F_CONFIG, f, err), AS_ECORRUPT);
	assert_non_null(strstr(err, "missing field \"path\""));
	cv_arena_free(&a);
}

/* The accessors read what a checked frame holds, and an absent optional field as nothing. */
static void test_get(void **state)
{
	(void)state;
	struct cv_arena a;
	cv_arena_init(&a, 4096);
	struct cv *f = ipc_frame_new(&a, F_WEB_REPLY, 4);
	assert_int_equal(ipc_put_uint(&a, f, "hreq", 5), 0);
	assert_int_equal(ipc_put_text(&a, f, "body", "{}", 2), 0);
	assert_int_equal(ipc_put_bool(&a, f, "clear", 1), 0);
	assert_int_equal(ipc_put_bytes(&a, f, "b", (const uint8_t *)"xy", 2), 0);
	size_t n = 9;
	assert_int_equal(frame_get_uint(f, "hreq"), 5);
	assert_int_equal(frame_get_uint(f, "retry"), 0);
	assert_memory_equal(frame_get_text(f, "body", &n), "{}", 2);
	assert_int_equal(n, 2);
	assert_null(frame_get_text(f, "ctype", &n));
	assert_int_equal(n, 0);
	assert_null(frame_get_text(f, "hreq", &n)); /* another type: nothing */
	assert_true(frame_get_bool(f, "clear"));
	assert_false(frame_get_bool(f, "absent"));
	assert_memory_equal(frame_get_bytes(f, "b", &n), "xy", 2);
	assert_null(frame_get(f, "body", CV_ARRAY));
	assert_non_null(frame_get(f, "body", CV_TEXT));
	cv_arena_free(&a);
}

/* A builder makes what its table allows: the signer's check passes it. */
static void test_builders(void **state)
{
	(void)state;
	char err[AS_ERRLEN];
	struct cv_arena a;
	cv_arena_init(&a, 4096);
	const struct frame_table *tb = frame_table_find(F_UP_RESULT);
	struct cv *f = frame_up_failed(&a, 9, "the server is not reading", 0);
	assert_non_null(f);
	assert_int_equal(frame_fields_check(tb, f, err), 0);
	assert_int_equal(frame_get_uint(f, "cid"), 9);
	assert_false(frame_get_bool(f, "unknown"));
	f = frame_up_failed(&a, 10, "connection reset", 1);
	assert_int_equal(frame_fields_check(tb, f, err), 0);
	assert_true(frame_get_bool(f, "unknown"));
	size_t n;
	assert_memory_equal(frame_get_text(f, "error", &n), "connection reset", 16);
	f = frame_hello(&a, "upstream");
	assert_non_null(f);
	assert_int_equal(frame_fields_check(frame_table_find(F_HELLO), f, err), 0);
	assert_memory_equal(frame_get_text(f, "kind", &n), "upstream", 8);
	cv_arena_free(&a);
}

/* What each of the signer's builders makes passes the check its worker runs. */
static void test_signer_builders(void **state)
{
	(void)state;
	char err[AS_ERRLEN];
	struct cv_arena a;
	cv_arena_init(&a, 1u << 16);
	const uint32_t ended[70] = {1, 2, 3};
	struct frame_result res = {.conn = 3, .rid = "7", .json = "{}", .n = 2, .iserror = 1, .status = PS_FORBIDDEN};
	struct frame_result raw = {.conn = 3, .rid = "\"x\"", .json = "{}", .n = 2, .raw = 1};
	struct frame_web_reply wr = {.hreq = 4,
				     .status = PS_TOO_MANY,
				     .body = "{}",
				     .n = 2,
				     .ctype = "text/plain",
				     .cookie = "ws_x; HttpOnly",
				     .clear = 1,
				     .retry = 30,
				     .wsid = 9};
	struct frame_http_reply refuse = {.hreq = 5, .status = 429, .error = "too many sessions", .retry = 60};
	struct frame_http_reply go = {.hreq = 5,
				      .status = 200,
				      .conn = 8,
				      .session = "0123456789abcdef0123456789abcdef",
				      .principal = "anonymous",
				      .client = "sdk/1.0",
				      .protocol = "2025-11-25"};
	static const uint8_t call[] = {0xa0};
	struct {
		uint32_t type;
		struct cv *f;
	} built[] = {
	    {F_RESULT, frame_result(&a, &res)},
	    {F_RESULT, frame_result(&a, &raw)},
	    {F_CONN_NEW, frame_conn_new(&a, 1)},
	    {F_CTL_REPLY, frame_ctl_reply(&a, 1, PS_NOT_FOUND, "{\"ok\":false}", 12)},
	    {F_STATS, frame_stats(&a, 2, 100, "w.example/1 at 7", "{\"replica\":\"r1\"}")},
	    {F_TASK_STATUS, frame_task_status(&a, 1, "{}", 2)},
	    {F_NOTE, frame_note(&a, 1, "7", "notifications/progress", "{}")},
	    {F_ASK, frame_ask(&a, 1, "7", 2, "sampling/createMessage", "{}")},
	    {F_UP_CANCEL, frame_up_cancel(&a, 4)},
	    {F_UP_ANSWER, frame_up_answer(&a, "12", "result", call, 1)},
	    {F_UP_ANSWER, frame_up_answer(&a, "12", "error", call, 1)},
	    {F_DISPATCH, frame_dispatch(&a, 4, call, 1, "sha256:00", PROTO_CAPS_MAX, "st")},
	    {F_DISPATCH, frame_dispatch(&a, 4, call, 1, "sha256:00", 0, NULL)},
	    {F_WEB_PUSH, frame_web_push(&a, 1, 2, ended, 70)}, /* cut to PROTO_PUSH_ENDED_MAX */
	    {F_CATALOG, frame_catalog(&a, "[]", "{}", "{}")},
	    {F_WEB_REPLY, frame_web_reply(&a, &wr)},
	    {F_HTTP_REPLY, frame_http_reply(&a, &refuse)},
	    {F_HTTP_REPLY, frame_http_reply(&a, &go)},
	};
	for (size_t i = 0; i < sizeof built / sizeof *built; i++) {
		assert_non_null(built[i].f);
		assert_int_equal(built[i].f->items[1].u, built[i].type); /* "t" */
		assert_int_equal(frame_down_check(built[i].type, built[i].f, err), 0);
	}
	assert_int_equal(frame_get(built[13].f, "ended", CV_ARRAY)->n, PROTO_PUSH_ENDED_MAX);
	assert_int_equal(frame_get_uint(built[0].f, "status"), PS_FORBIDDEN);
	assert_null(cv_get(built[1].f, "status"));
	cv_arena_free(&a);
}

/* F_WITNESS_DONE's cosigs items: a map of exactly name, keyid (4 bytes), time, sig (64 bytes). */
static void cosig_item(struct cv_arena *a, struct cv *m, size_t keyid, size_t sig, const char *extra)
{
	const uint8_t z[80] = {0};
	*m = *cv_map(a, extra ? 5 : 4);
	assert_int_equal(cv_set_text(a, &m->items[0], "name", 4), 0);
	assert_int_equal(cv_set_text(a, &m->items[1], "w.example/1", 11), 0);
	assert_int_equal(cv_set_text(a, &m->items[2], "keyid", 5), 0);
	assert_int_equal(cv_set_bytes(a, &m->items[3], z, keyid), 0);
	assert_int_equal(cv_set_text(a, &m->items[4], "time", 4), 0);
	cv_set_uint(&m->items[5], 1700000000);
	assert_int_equal(cv_set_text(a, &m->items[6], "sig", 3), 0);
	assert_int_equal(cv_set_bytes(a, &m->items[7], z, sig), 0);
	if (extra) {
		assert_int_equal(cv_set_text(a, &m->items[8], extra, strlen(extra)), 0);
		cv_set_uint(&m->items[9], 1);
	}
}

static void test_cosig_items(void **st)
{
	(void)st;
	struct cv_arena a;
	struct cv m, u;
	char err[AS_ERRLEN] = "";
	cv_arena_init(&a, 64);
	cosig_item(&a, &m, 4, 64, NULL);
	assert_int_equal(frame_cosig_check(&m, err), 0);
	cosig_item(&a, &m, 3, 64, NULL);
	assert_int_equal(frame_cosig_check(&m, err), AS_ECORRUPT);
	cosig_item(&a, &m, 4, 63, NULL);
	assert_int_equal(frame_cosig_check(&m, err), AS_ECORRUPT);
	cosig_item(&a, &m, 4, 65, NULL);
	assert_int_equal(frame_cosig_check(&m, err), AS_ECORRUPT);
	cosig_item(&a, &m, 4, 64, "line");
	assert_int_equal(frame_cosig_check(&m, err), AS_ECORRUPT);
	assert_non_null(strstr(err, "line"));
	cv_set_uint(&u, 1);
	assert_int_equal(frame_cosig_check(&u, err), AS_ECORRUPT);
	cv_arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_worker_type_has_a_table),
	    cmocka_unit_test(test_tables_accept_and_refuse),
	    cmocka_unit_test(test_every_signer_type_has_a_table),
	    cmocka_unit_test(test_signer_tables_accept_and_refuse),
	    cmocka_unit_test(test_down_check),
	    cmocka_unit_test(test_get),
	    cmocka_unit_test(test_builders),
	    cmocka_unit_test(test_signer_builders),
	    cmocka_unit_test(test_cosig_items),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
