/* The daemon's answers as `assent request` reads them (gateway/cli/cmd_request.c). */
#ifndef ASSENT_REQANS_H
#define ASSENT_REQANS_H

#include <jansson.h>
#include <stddef.h>

/* One line the daemon sent: 1 with *result (the JSON-RPC result, an object) when it
 * answers call want_id, 0 for any other message (a notification, another id), < 0 with
 * err when it is not a JSON object or the call was refused. */
int reqans_parse(const char *line, size_t len, long long want_id, json_t **result, char *err);
/* A tools/call result's decision (structuredContent with a string status), or NULL with
 * err saying why there is none (a tool error's text). */
json_t *reqans_decision(const json_t *result, char *err);

#endif
