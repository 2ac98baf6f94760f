/* Turning what the signer sends the recorder into records a sink may store: every text that
 * came from an agent, a reviewer or an upstream (arguments, results, error messages, event
 * attributes) is redacted here, with the redactor requests use (common/redact.h) plus the
 * operator's keys, prefixes and regular expressions, and bounded. Pure: no I/O. */
#ifndef ASSENT_PREP_H
#define ASSENT_PREP_H

#include <jansson.h>
#include <regex.h>
#include <stddef.h>

#include "common/cbor.h"
#include "common/redact.h"
#include "gateway/proto/reccfg.h"
#include "gateway/recorder/record.h"

struct prep {
	struct redact_rules rules;
	const char *keys[RECCFG_LIST_MAX], *prefixes[RECCFG_LIST_MAX];
	regex_t re[RECCFG_LIST_MAX];
	size_t nre;
	uint64_t ids; /* call ids: a random start, then counted */
};

/* From the configuration: the operator's rules, their expressions compiled. p borrows c's keys
 * and prefixes (redact_rules holds pointers): c must outlive p. */
int prep_init(struct prep *p, const struct rec_cfg *c, uint64_t id_seed, char *err);
void prep_free(struct prep *p);

/* An F_REC_CALL body into *out (rec_call_free). AS_EINVAL names a missing or bad field. */
int prep_call(struct prep *p, const struct cv *body, struct rec_call *out, char *err);

/* An F_REC_EVENT body into *out (rec_event_free): its attributes redacted like arguments. */
int prep_event(struct prep *p, const struct cv *body, struct rec_event *out, char *err);
json_t *prep_event_json(const struct rec_event *e);

/* Redact text (patterns included) into a new string, cut to at most max bytes. */
char *prep_text(struct prep *p, const char *s, size_t n, size_t max);
/* Redact a JSON value in place, at any depth (keys, shapes, patterns in every string). */
int prep_json(struct prep *p, json_t *v);

/* One JSON line for the JSON lines sink: the record's columns and "record": "tool_call". */
json_t *prep_call_json(const struct rec_call *c);

#endif
