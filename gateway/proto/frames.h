/* The field table of every frame type a worker sends (proto.h lists the types): each
 * field's key, type, maximum and whether it is required. ipc_dispatch checks a frame
 * against its type's table before any handler runs, so a handler reads its fields
 * without checking them again: present when required, of their type, within their
 * maximum, and no key the table does not name. */
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
	FT_ARRAY, /* max: items (each checked by its handler) */
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

/* The table of frame type t; NULL when t has none (a type only the signer sends). */
const struct frame_table *frame_table_find(uint32_t t);

/* 0 when body (a frame's map, "t" included) holds what table tb says; else AS_ECORRUPT
 * with err naming the frame type and the field: missing, of another type, over its
 * maximum, or not in the table. */
int frame_fields_check(const struct frame_table *tb, const struct cv *body, char *err);

#endif
