/* JSON <-> CBOR values (struct cv): the one bridge, for the ledger tools, the mcp worker
 * and the canonical call (gateway/proto/call.c). */
#ifndef ASSENT_CVJSON_H
#define ASSENT_CVJSON_H

#include <jansson.h>

#include "common/cbor.h"
#include "common/attr.h"

/* How JSON and CBOR meet. CBOR here has no floats, so what a JSON real becomes is a choice:
 * refused (an entry), the text of its shortest round-trip decimal form (an agent's context),
 * or a byte string of that text (the canonical call: JSON has no bytes, so a byte string
 * there always means such a number, and reads back as the same real). */
enum cvj_reals { CVJ_REALS_REFUSE, CVJ_REALS_TEXT, CVJ_REALS_BYTES };
struct cvj_opts {
	enum cvj_reals reals;
	int max_depth; /* the deepest nesting accepted (the depth a value starts at counts) */
	/* NULL: the ledger's messages ("JSON nested deeper than 32") and AS_ENOMEM when the
	 * arena runs out. Else the name every message starts with ("arguments: nested deeper
	 * than 16"), and the arena's bound is the input's: AS_ETOOBIG "WHAT: too many values". */
	const char *what;
};
/* The ledger's: reals refused, nested at most CBOR_MAX_DEPTH, its messages. */
extern const struct cvj_opts cvj_ledger;
/* The same with reals as text: what an agent's context needs (the ledger holds no floats). */
extern const struct cvj_opts cvj_context;

/* JSON -> CBOR: *out allocated in a, with the ledger's options. */
int cv_from_json(struct cv_arena *a, const json_t *j, struct cv **out, char *err);
/* The same into *v, starting at nesting depth `depth`, with o's choices. */
int cv_from_json_value(struct cv_arena *a, const json_t *j, struct cv *v, int depth, const struct cvj_opts *o,
		       char *err);

/* CBOR -> JSON (a new reference; NULL when out of memory). The ledger's export: integers
 * beyond 64 signed bits as decimal strings, byte strings as lowercase hex, a key that is
 * not text as "#" and its position. */
json_t *cv_to_json(const struct cv *v);
/* With o's choices: CVJ_REALS_BYTES reads byte strings back as reals, and gives only what
 * JSON carries exactly (NULL for an integer beyond 64 signed bits or a key not text);
 * CVJ_REALS_TEXT reads byte strings, keys too, as the text they hold (a call's reals as an
 * entry shows them); CVJ_REALS_REFUSE is cv_to_json. */
json_t *cv_to_json_with(const struct cv *v, const struct cvj_opts *o);

/* Shortest decimal text that reads back as the same double (C locale); its length. */
size_t cv_real_text(double d, char out[32]);

/* What kind of JSON value v is, for messages: "an object", "a string", "an integer", ... */
const char *json_kind(const json_t *v);

#endif
