/* Deterministic CBOR (RFC 8949 section 4.2) for ledger entries and IPC frames:
 * a strict decoder for untrusted bytes that accepts only the canonical form we
 * write, and an encoder that always writes it. We do not use libcbor for either:
 * its loader allocates what the input declares, accepts non-shortest forms and
 * duplicate keys, and its encoder keeps insertion order (see NOTES.md). */
#ifndef ASSENT_CBOR_H
#define ASSENT_CBOR_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "common/attr.h"

enum cv_type { CV_UINT, CV_NINT, CV_BYTES, CV_TEXT, CV_ARRAY, CV_MAP, CV_FALSE, CV_TRUE, CV_NULL };

/* A decoded or to-be-encoded value. For CV_NINT the value is -1 - u.
 * Arrays hold n items; maps hold n pairs as 2n items (key, value, key, value...).
 * Strings point into the decoded input or into memory the builder owns. */
struct cv {
	enum cv_type t;
	uint64_t u;
	const uint8_t *s;
	size_t n;
	struct cv *items;
};

/* Items are allocated from an arena of chunks (pointers stay valid until reset);
 * reset keeps the memory for the next decode, so verifying a million entries
 * allocates once. Strings copied by the builders are freed on reset. */
struct cv_chunk;
struct cv_strcopy;
struct cv_arena {
	struct cv_chunk *head, *cur;
	struct cv_strcopy *strs;
	size_t used, max; /* items handed out since reset, and the limit */
};
void cv_arena_init(struct cv_arena *a, size_t max_items);
void cv_arena_reset(struct cv_arena *a);
void cv_arena_free(struct cv_arena *a);
struct cv *cv_alloc(struct cv_arena *a, size_t n); /* zeroed; NULL past max */

#define CBOR_MAX_DEPTH 32

/* Decode exactly one canonical item filling all of data[0..len). Errors name the
 * offset and what was wrong. Strings in the result point into data. */
int cbor_decode(const uint8_t *data, size_t len, struct cv_arena *a, struct cv **out, char *err) AS_MUST_USE;

/* Encode v canonically (shortest heads, map keys sorted by their encoding,
 * duplicate keys refused) and append to out. */
int cbor_encode(const struct cv *v, struct buf *out, char *err) AS_MUST_USE;

/* Builders (strings are copied into the arena). */
struct cv *cv_map(struct cv_arena *a, size_t npairs);
struct cv *cv_array(struct cv_arena *a, size_t n);
void cv_set_uint(struct cv *v, uint64_t u);
void cv_set_int(struct cv *v, int64_t i);
int cv_set_text(struct cv_arena *a, struct cv *v, const char *s, size_t n) AS_MUST_USE;
int cv_set_bytes(struct cv_arena *a, struct cv *v, const uint8_t *s, size_t n) AS_MUST_USE;

/* Map lookup by text key; NULL when absent or when m is not a map. */
const struct cv *cv_get(const struct cv *m, const char *key);
int cv_text_eq(const struct cv *v, const char *s) AS_MUST_USE;

/* RFC 3629 UTF-8 well-formedness. */
int utf8_valid(const uint8_t *s, size_t n) AS_MUST_USE;

#endif
