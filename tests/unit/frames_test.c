/* Unit tests for gateway/proto/frames.c: the field table of every frame type a worker
 * sends, and its checker. Each table is exercised generically: a frame holding every
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
    F_HELLO,	       F_CONN_CLOSED,  F_LOG,	      F_REQUEST,    F_COLLECT,	      F_LIST,	     F_CANCEL,
    F_HTTP_AUTH,       F_SESSION_INFO, F_SESSION_END, F_CTL_WHOAMI, F_CTL_STATUS,     F_CTL_PENDING, F_CTL_SHOW,
    F_CTL_DECIDE,      F_CTL_REVEAL,   F_WEB_METRICS, F_WEB_JWKS,   F_WEB_CHECKPOINT, F_WEB_LOGIN,   F_WEB_ME,
    F_WEB_LOGOUT,      F_WEB_EVENTS,   F_WEB_PENDING, F_WEB_LIST,   F_WEB_DECIDE,     F_WEB_REVEAL,  F_WEB_SUBMIT,
    F_WEB_ADMIN_CLEAR, F_WEB_HISTORY,  F_WEB_PROOF};

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
		if (mine && how == 3)
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

static void test_tables_accept_and_refuse(void **state)
{
	(void)state;
	memset(big, 'x', sizeof big);
	char err[AS_ERRLEN];
	struct cv_arena a;
	cv_arena_init(&a, 1u << 22);
	for (size_t t = 0; t < sizeof worker_types / sizeof *worker_types; t++) {
		const struct frame_table *tb = frame_table_find(worker_types[t]);
		cv_arena_reset(&a);
		assert_int_equal(frame_fields_check(tb, frame(&a, tb, -1, 0, 0), err), 0);
		cv_arena_reset(&a);
		assert_int_equal(frame_fields_check(tb, frame(&a, tb, -1, 0, 1), err), AS_ECORRUPT);
		assert_non_null(strstr(err, "\"zz_not_a_field\" is not one of its fields"));
		assert_non_null(strstr(err, tb->name));
		for (size_t i = 0; i < tb->nfields; i++) {
			const struct frame_field *fd = &tb->fields[i];
			char want[96];
			cv_arena_reset(&a);
			if (fd->type != FT_BOOL && fd->max < sizeof big && fd->max < UINT64_MAX) {
				assert_int_equal(frame_fields_check(tb, frame(&a, tb, (long)i, 0, 0), err), 0);
				cv_arena_reset(&a);
				assert_int_equal(frame_fields_check(tb, frame(&a, tb, (long)i, 1, 0), err),
						 AS_ECORRUPT);
				snprintf(want, sizeof want, "%s: field \"%s\" ", tb->name, fd->key);
				assert_non_null(strstr(err, want));
				assert_non_null(strstr(err, "over its maximum"));
			}
			cv_arena_reset(&a);
			assert_int_equal(frame_fields_check(tb, frame(&a, tb, (long)i, 2, 0), err), AS_ECORRUPT);
			snprintf(want, sizeof want, "field \"%s\" is not ", fd->key);
			assert_non_null(strstr(err, want));
			cv_arena_reset(&a);
			int rc = frame_fields_check(tb, frame(&a, tb, (long)i, 3, 0), err);
			if (fd->required) {
				assert_int_equal(rc, AS_ECORRUPT);
				snprintf(want, sizeof want, "missing field \"%s\"", fd->key);
				assert_non_null(strstr(err, want));
			} else {
				assert_int_equal(rc, 0);
			}
		}
	}
	cv_arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_worker_type_has_a_table),
	    cmocka_unit_test(test_tables_accept_and_refuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
