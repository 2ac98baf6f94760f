/* Fuzz target: a line the daemon sends `assent request` (gateway/cli/cmd_request.c):
 * reqans_parse then, for an answer to the call, reqans_decision. Properties (abort when
 * violated):
 *   - 1 comes with a result object and 0 or < 0 without one; < 0 fills err;
 *   - a decision is an object whose status is a string; no decision fills err;
 *   - an answer's err is a C string within AS_ERRLEN. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "gateway/cli/reqans.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[AS_ERRLEN];
	json_t *res = NULL;
	err[0] = 0;
	/* the id the caller waits for: the first byte picks 1..4, so every id both matches and misses */
	long long want = size ? 1 + data[0] % 4 : 1;
	int r = reqans_parse((const char *)data, size, want, &res, err);
	if (r == 1) {
		if (!json_is_object(res))
			abort();
		json_t *d = reqans_decision(res, err);
		if (d && (!json_is_object(d) || !json_is_string(json_object_get(d, "status"))))
			abort();
		if (!d && (!err[0] || strnlen(err, AS_ERRLEN) == AS_ERRLEN))
			abort();
		json_decref(d);
	} else if (res) {
		abort();
	} else if (r < 0 && !err[0]) {
		abort();
	}
	json_decref(res);
	return 0;
}
