/* The canonical action of a request (the `action` map of an F_REQUEST frame, recorded
 * in the ledger and shown to reviewers): one table of its fields, with type, size and
 * character class, used by the mcp worker on what it built before sending it and by
 * the signer on what it received. So the signer's check is the worker's, by
 * construction; the worker's own argument checks (mcp.c) may only be stricter. */
#ifndef ASSENT_ACTION_H
#define ASSENT_ACTION_H

#include <stddef.h>

#include "common/cbor.h"
#include "gateway/proto/limits.h"
#include "common/text.h"

enum action_shape {
	AF_TEXT,     /* a text of min..max bytes in class cls */
	AF_TEXTS,    /* an array of min..max texts, each 1..item_max bytes in class cls */
	AF_CONTEXT,  /* a text, or a map nested at most MCP_CONTEXT_DEPTH deep, any UTF-8 */
	AF_SUBJECTS, /* an array of min..max subjects {name, digest {sha256}, computed, size?} */
};

struct action_field {
	const char *key;
	enum action_shape shape;
	size_t min, max, item_max;
	enum text_class cls;
	int required;
};

/* The table, in the order the worker builds the map. */
extern const struct action_field action_fields[];
extern const size_t action_nfields;

/* The client field: "name/version" cut to ACTION_CLIENT_MAX bytes on a character boundary
 * (out holds ACTION_CLIENT_MAX + 1); its length. */
size_t action_client(char *out, const char *name, const char *version);

/* 0 when a is an action the table allows (no unknown or repeated key, every field of
 * its shape, size and class); else AS_ECORRUPT with the field and offset in err. */
int action_check(const struct cv *a, char *err);

#endif
