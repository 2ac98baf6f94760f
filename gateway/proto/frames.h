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

/* One item of F_WITNESS_DONE's cosigs, which the signer checks before reading it: a map of
 * name (text), keyid (FRAME_COSIG_KEYID bytes), time (uint), sig (FRAME_COSIG_SIG bytes),
 * nothing else. 0, or AS_ECORRUPT with err. */
#define FRAME_COSIG_KEYID 4
#define FRAME_COSIG_SIG 64
int frame_cosig_check(const struct cv *item, char *err);

/* ---- builders, beside their tables ---- */

/* F_HELLO {kind} in arena a: a worker's first frame ("mcp", "review", "upstream", "notify",
 * "recorder"). NULL when the arena is full. */
struct cv *frame_hello(struct cv_arena *a, const char *kind);
/* F_UP_RESULT {cid, error, unknown?} in arena a: dispatched call cid ended without the
 * server's result, for the reason error (at most PROTO_UP_ERROR_MAX bytes: the table's);
 * unknown: the server may have run it. NULL when the arena is full. */
struct cv *frame_up_failed(struct cv_arena *a, uint64_t cid, const char *error, int unknown);

/* The signer's frames to its workers, each as its table says (frames_test checks what each
 * builds passes frame_down_check). Each builds in arena a and returns NULL when the arena is
 * full; text is copied, C strings unless a length is given. */
struct frame_result {
	uint64_t conn;
	const char *rid, *json; /* json: n bytes */
	size_t n;
	int iserror;
	int raw;	 /* json is an upstream's result itself */
	int rpc_error;	 /* json is a JSON-RPC error */
	unsigned status; /* a refusal's enum proto_status; 0 (PS_OK): none sent */
};
struct cv *frame_result(struct cv_arena *a, const struct frame_result *r);
struct cv *frame_conn_new(struct cv_arena *a, uint64_t conn); /* the descriptor rides with it */
struct cv *frame_ctl_reply(struct cv_arena *a, uint64_t conn, unsigned status, const char *json, size_t n);
/* alarm: the witnesses' alarm for /health (witness.c), NULL or "" when none */
/* cluster: /health's "cluster" member, a JSON object the signer made (NULL: not in cluster mode) */
struct cv *frame_stats(struct cv_arena *a, uint64_t pending, uint64_t uptime, const char *alarm, const char *cluster);
struct cv *frame_task_status(struct cv_arena *a, uint64_t conn, const char *json, size_t n);
struct cv *frame_note(struct cv_arena *a, uint64_t conn, const char *rid, const char *method, const char *json);
struct cv *frame_ask(struct cv_arena *a, uint64_t conn, const char *rid, uint64_t aid, const char *method,
		     const char *json);
struct cv *frame_up_cancel(struct cv_arena *a, uint64_t cid);
/* key: "result" or "error"; p: n bytes of canonical CBOR. */
struct cv *frame_up_answer(struct cv_arena *a, const char *sid, const char *key, const uint8_t *p, size_t n);
/* caps: 0 for none; state: NULL for none. */
struct cv *frame_dispatch(struct cv_arena *a, uint64_t cid, const uint8_t *cbor, size_t n, const char *digest,
			  unsigned caps, const char *state);
/* ended: at most PROTO_PUSH_ENDED_MAX of them are named (the rest: another push). */
struct cv *frame_web_push(struct cv_arena *a, uint64_t version, uint64_t pending, const uint32_t *ended, size_t nended);
struct cv *frame_catalog(struct cv_arena *a, const char *tools, const char *routes, const char *more);
struct frame_web_reply {
	uint64_t hreq;
	unsigned status; /* enum proto_status */
	const char *body;
	size_t n;
	const char *ctype, *cookie; /* NULL: none */
	int clear;
	unsigned retry; /* 0: none */
	uint32_t wsid;	/* 0: none */
};
struct cv *frame_web_reply(struct cv_arena *a, const struct frame_web_reply *r);
struct frame_http_reply {
	uint64_t hreq;
	unsigned status;   /* HTTP */
	const char *error; /* NULL: none */
	unsigned retry;	   /* 0: none */
	/* status 200: the connection it goes on as (session non-NULL) */
	uint64_t conn;
	const char *session, *principal, *client, *protocol;
};
struct cv *frame_http_reply(struct cv_arena *a, const struct frame_http_reply *r);

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
