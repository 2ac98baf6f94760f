/* The QA tools an agent sees beside its upstreams' (qa_submit_feedback, qa_record_event,
 * qa_link_feedback, under the configured prefix): definitions and argument checks. */
#ifndef ASSENT_WORKER_MCP_QATOOLS_H
#define ASSENT_WORKER_MCP_QATOOLS_H

#include <jansson.h>

#include "common/cbor.h"

enum qa_tool { QA_NONE, QA_SUBMIT, QA_EVENT, QA_LINK };

/* The three tools' definitions under prefix qa ("qa_"), as tools/list lists them: JSON
 * objects separated by commas, malloc'd (the caller frees); NULL when out of memory. */
char *qatools_defs(const char *qa);

/* Which QA tool name is under prefix qa; QA_NONE when none (an empty prefix: none). */
enum qa_tool qatools_which(const char *qa, const char *name);

/* Tool t's arguments (name: as called, for messages) checked and put into F_QA frame f in
 * arena a: 0; AS_EINVAL with err naming the argument (unknown ones included); -1 when the
 * frame cannot hold them. */
int qatools_fields(enum qa_tool t, const char *name, struct cv_arena *a, struct cv *f, const json_t *args, char *err);

#endif
