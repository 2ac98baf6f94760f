/* The canonical action of a request (the `action` map of an F_REQUEST frame, recorded
 * in the ledger and shown to reviewers): one table of its fields, with type, size and
 * character class, used by the mcp worker on what it built before sending it and by
 * the signer on what it received. So the signer's check is the worker's, by
 * construction; the worker's own argument checks (mcp.c) may only be stricter. */
#ifndef ASSENT_ACTION_H
#define ASSENT_ACTION_H

#include <stddef.h>

#include "common/cbor.h"
#include "common/text.h"

/* The limits of the action's fields: the mcp worker checks an agent's arguments against
 * them (mcp.c), the signer the frame (action_check). */
#define MCP_NAME_MAX 256	   /* a tool name, clientInfo name/version, a subject name */
#define MCP_MESSAGE_MAX 65536	   /* request_feedback message, bytes (also after redaction) */
#define MCP_OPTIONS_MAX 32	   /* options of a selection */
#define MCP_OPTION_MAX 1024	   /* bytes of one option */
#define MCP_DEFAULT_MAX 4096	   /* bytes of `default` */
#define MCP_CONTEXT_DEPTH 16	   /* nesting of `context` (the ledger's CBOR allows 32 in all) */
#define MCP_SUBJECTS_MAX 16	   /* subjects of one request */
#define MCP_AUDIENCE_MAX 128	   /* [A-Za-z0-9._:/-] */

/* F_REQUEST and F_SESSION_INFO client: "name/version" as initialize declared it, TEXT_LINE,
 * cut by the worker (action_client) to what the signer keeps. */
#define ACTION_CLIENT_MAX 159

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
