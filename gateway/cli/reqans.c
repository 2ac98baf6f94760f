/* What `assent request` reads from the daemon: one JSON-RPC line, and a tools/call
 * result's decision (fuzz/reqans.c). Apart from cmd_request.c so the harness links it. */
#include "gateway/cli/reqans.h"

#include "common/util.h"

int reqans_parse(const char *line, size_t len, long long want_id, json_t **result, char *err)
{
	*result = NULL;
	json_error_t je;
	json_t *m = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(m)) {
		json_decref(m);
		return as_fail(err, AS_EINVAL, "the daemon sent a line that is not a JSON object: %s", je.text);
	}
	const json_t *id = json_object_get(m, "id");
	if (!json_is_integer(id) || json_integer_value(id) != want_id) {
		json_decref(m); /* a notification (progress) or another call's answer */
		return 0;
	}
	const json_t *e = json_object_get(m, "error");
	if (e) {
		const char *msg = json_string_value(json_object_get(e, "message"));
		as_fail(err, AS_EINVAL, "the daemon refused the call: %s", msg ? msg : "(no message)");
		json_decref(m);
		return -1;
	}
	json_t *r = json_object_get(m, "result");
	if (!json_is_object(r)) {
		json_decref(m);
		return as_fail(err, AS_EINVAL, "the daemon's answer has no result object");
	}
	*result = json_incref(r);
	json_decref(m);
	return 1;
}

json_t *reqans_decision(const json_t *result, char *err)
{
	json_t *sc = json_object_get(result, "structuredContent");
	if (json_is_object(sc) && json_is_string(json_object_get(sc, "status")))
		return json_incref(sc);
	/* a tool error (bad arguments): its text says what was wrong */
	const char *t =
	    json_string_value(json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
	as_fail(err, AS_EINVAL, "%s", t ? t : "the daemon's answer has no decision");
	return NULL;
}
