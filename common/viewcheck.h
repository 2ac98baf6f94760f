/* The reviewer's view against the exact call (issue 28): an independent check that a
 * view shows every character of what will run, except in marked spans that say how
 * much they hide. It knows nothing of the redactor's rules; it only reads the marks
 * ("[secret: N chars]", "[secret: N chars, L lines]", common/redact.h) and aligns.
 * Used by the view fuzzer, by assent-verify on a retained exact call against the
 * ledger's view, and by unit tests. Pure functions over memory. */
#ifndef ASSENT_VIEWCHECK_H
#define ASSENT_VIEWCHECK_H

#include <jansson.h>
#include <stddef.h>

#include "common/util.h"

#define VIEWCHECK_STATES_MAX 65536 /* alignment states tried before a view is called ambiguous */

/* 0 when view[0..vn) is exact[0..en) with zero or more disjoint, non-empty spans each
 * replaced by a mark stating its characters; a span crosses no line break unless it is
 * the whole text (a multi-line value under a secret key, its lines stated). A mark's
 * text that the agent wrote itself may stand for itself. Else AS_ECORRUPT, err naming
 * the first place no alignment got past (AS_ETOOBIG when too ambiguous to decide). */
int viewcheck_text(const char *exact, size_t en, const char *view, size_t vn, char *err);

/* The same over JSON: objects with the same keys, arrays of the same length, equal
 * scalars, strings by viewcheck_text; any value may instead be one whole mark whose
 * count is its characters (a string's, else its compact JSON text's). */
int viewcheck_json(const json_t *exact, const json_t *view, char *err);

#endif
