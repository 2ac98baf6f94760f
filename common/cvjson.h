/* JSON <-> CBOR values (struct cv), for the ledger tools and the mcp worker. */
#ifndef ASSENT_CVJSON_H
#define ASSENT_CVJSON_H

#include <jansson.h>

#include "common/cbor.h"
#include "common/attr.h"

/* JSON <-> CBOR values. JSON numbers must be integers (entries hold no floats).
 * Byte strings are exported as lowercase hex. */
int cv_from_json(struct cv_arena *a, const json_t *j, struct cv **out, char *err);
/* The same into *v, starting at nesting depth `depth`. reals_as_text: a JSON real
 * becomes the text of its shortest round-trip decimal form (what an agent's context
 * needs: the ledger holds no floats) instead of being refused. */
int cv_from_json_value(struct cv_arena *a, const json_t *j, struct cv *v, int depth, int reals_as_text, char *err);
json_t *cv_to_json(const struct cv *v);

/* What kind of JSON value v is, for messages: "an object", "a string", "an integer", ... */
const char *json_kind(const json_t *v);

#endif
