/* The field table of every frame type (proto.h lists the types), in both directions:
 * each field's key, type, maximum and whether it is required. ipc_dispatch checks a
 * worker's frame against its type's table before any of the signer's handlers runs;
 * a worker checks each frame from the signer with frame_down_check before its own. So a
 * handler reads its fields without checking them again (frame_get_*): present when
 * required, of their type, within their maximum, and no key the table does not name. */
#ifndef ASSENT_PROTO_FRAMES_H
#define ASSENT_PROTO_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "common/cbor.h"

enum frame_ftype {
	FT_UINT,  /* max: the largest value */
	FT_TEXT,  /* max: bytes (the decoder checked UTF-8) */
	FT_BYTES, /* max: bytes */
	FT_BOOL,  /* max unused */
	FT_ARRAY, /* max: items (each checked by its handler, or by an item table: frames.c) */
	FT_MAP,	  /* max: pairs (its members checked by its reader) */
};

struct frame_field {
	const char *key;
	enum frame_ftype type;
	uint64_t max;
	int required;
};

struct frame_table {
	uint32_t type; /* F_* */
	const char *name;
	const struct frame_field *fields;
	size_t nfields;
};

/* The table of frame type t as a worker sends it; NULL when t has none (a type only the
 * signer sends). */
const struct frame_table *frame_table_find(uint32_t t);
/* The table of frame type t as the signer sends it to a worker; NULL when t has none. */
const struct frame_table *frame_down_find(uint32_t t);

/* 0 when body (a frame's map, "t" included) holds what table tb says; else AS_ECORRUPT
 * with err naming the frame type and the field: missing, of another type, over its
 * maximum, or not in the table. */
int frame_fields_check(const struct frame_table *tb, const struct cv *body, char *err);

/* A frame from the signer (its type t, its body), checked before any handler runs: 0 when
 * frame_down_find(t) has a table and body holds what it says; else AS_ECORRUPT with err
 * naming the frame type and the field (a type with no table too). The maps in an array
 * with an item table (F_REC_CALLS recs: F_REC_CALL's; F_CONFIG hooks) are checked too. */
int frame_down_check(uint32_t t, const struct cv *body, char *err);

/* ---- builders, beside their tables ---- */

/* F_HELLO {kind} in arena a: a worker's first frame ("mcp", "review", "upstream", "notify",
 * "recorder"). NULL when the arena is full. */
struct cv *frame_hello(struct cv_arena *a, const char *kind);
/* F_UP_RESULT {cid, error, unknown?} in arena a: dispatched call cid ended without the
 * server's result, for the reason error (at most PROTO_UP_ERROR_MAX bytes: the table's);
 * unknown: the server may have run it. NULL when the arena is full. */
struct cv *frame_up_failed(struct cv_arena *a, uint64_t cid, const char *error, int unknown);

/* ---- reading the fields of a checked frame ----
 * m is a frame's body (or an item) that frame_fields_check passed: its table guarantees
 * each field's type and maximum, and a required field's presence, so no maximum is
 * repeated here. An absent optional field reads as 0, NULL (with *n = 0) or false; so
 * does a value of another type, which a checked frame never holds. Text points into the
 * frame's arena, valid UTF-8, not NUL-terminated. */
uint64_t frame_get_uint(const struct cv *m, const char *key);
const char *frame_get_text(const struct cv *m, const char *key, size_t *n);
const uint8_t *frame_get_bytes(const struct cv *m, const char *key, size_t *n);
int frame_get_bool(const struct cv *m, const char *key);
/* An array or a map (NULL when absent). */
const struct cv *frame_get(const struct cv *m, const char *key, enum cv_type t);

#endif
