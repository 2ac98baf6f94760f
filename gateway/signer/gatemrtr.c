/* A gated call's multi-round input (MCP 2026-07-28, SEP-2322), carried between an agent
 * and an upstream server that both speak that revision. The server answers a tools/call
 * or prompts/get with resultType "input_required": inputRequests (elicitation, sampling,
 * roots/list questions for the client) and an optional requestState of its own. The
 * agent retries the same call with params.inputResponses and the requestState it got.
 *
 * Each round is a call of its own: its answers are part of the canonical call (its
 * "input", gateway/proto/call.h), so the retry is decided, shown to reviewers, ledgered
 * and dispatched like any call; approving the first round approves nothing the second
 * round runs. The server's requestState is never handed to the agent as it is: the agent
 * gets a state the signer minted (mrtr.c's HMAC under a key of this process's memory)
 * that carries it and binds it to the caller, the upstream, the method and name, and a
 * deadline, so that an agent cannot give one server's state to another, replay another
 * client's, or forge one. A state that fails any check is a protocol error (-32602) and
 * nothing is forwarded. A restart forgets the key: a state from before it is refused. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GATE_STATE_TTL_MS (15 * 60 * 1000ull) /* a retry comes within this, or starts over */
#define GATE_STATE_PAYLOAD ((PROTO_GATE_STATE_MAX - 65) / 2)
#define INPUT_KEY_MAX 64

static const char *const asks[] = {"elicitation/create", "sampling/createMessage", "roots/list"};

/* inputRequests as the server sent them: 1 to CALL_INPUTS_MAX requests, each under a key
 * of 1 to INPUT_KEY_MAX printable bytes, of a method the client may be asked, with params
 * an object when present. 0, or AS_ECORRUPT with err. */
static int requests_ok(const json_t *ir, char *err)
{
	if (!json_is_object(ir) || !json_object_size(ir) || json_object_size(ir) > CALL_INPUTS_MAX)
		return as_fail(err, AS_ECORRUPT, "inputRequests: expected an object of 1 to %d requests",
			       CALL_INPUTS_MAX);
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)ir, k, v)
	{
		size_t n = strlen(k), i = 0;
		while (i < n && (unsigned char)k[i] >= 0x20 && k[i] != 0x7f)
			i++;
		if (!n || n > INPUT_KEY_MAX || i < n)
			return as_fail(err, AS_ECORRUPT, "inputRequests: a key of 1 to %d printable bytes expected",
				       INPUT_KEY_MAX);
		const char *m = json_string_value(json_object_get(v, "method"));
		const json_t *p = json_object_get(v, "params");
		int known = 0;
		for (size_t j = 0; m && j < sizeof asks / sizeof *asks; j++)
			known |= !strcmp(m, asks[j]);
		if (!json_is_object(v) || !known || (p && !json_is_object(p)))
			return as_fail(
			    err, AS_ECORRUPT,
			    "inputRequests.%.64s: expected {method: elicitation/create, sampling/createMessage "
			    "or roots/list, params?: object}",
			    k);
	}
	return 0;
}

json_t *gate_input_required(struct signer *s, const struct gcall *c, const json_t *res, char *err)
{
	const json_t *ir = json_object_get(res, "inputRequests"), *us = json_object_get(res, "requestState");
	if (!(c->caps & PROTO_CAP_MODERN)) {
		as_fail(err, AS_ECORRUPT, "an input_required result to a call that was not made in 2026-07-28");
		return NULL;
	}
	if (c->task) {
		as_fail(err, AS_EINVAL,
			"the server asks the client for input (input_required), which assent does not carry through a "
			"task: call the tool without a task");
		return NULL;
	}
	if (requests_ok(ir, err) != 0)
		return NULL;
	if (us && (!json_is_string(us) || !json_string_length(us) || json_string_length(us) > PROTO_UP_STATE_MAX)) {
		as_fail(err, AS_ECORRUPT, "requestState: expected a string of 1 to %d bytes", PROTO_UP_STATE_MAX);
		return NULL;
	}
	json_t *p =
	    json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:I,s:O?}", "v", 1, "k", "gate", "owner", c->owner, "up", c->upstream,
		      "m", c->method, "n", c->tool, "exp", (json_int_t)(now_ms() + GATE_STATE_TTL_MS), "us", us);
	static char st[PROTO_GATE_STATE_MAX + 1];
	int rc = mrtr_seal(s, p, GATE_STATE_PAYLOAD, st, sizeof st);
	json_decref(p);
	if (rc != 0) {
		as_fail(err, rc, "the server's requestState cannot be carried (over %d bytes with its binding)",
			GATE_STATE_PAYLOAD);
		return NULL;
	}
	return json_pack("{s:s,s:O,s:s}", "resultType", "input_required", "inputRequests", ir, "requestState", st);
}

int gate_state_open(struct signer *s, struct gate_req *g, const struct cv *st, const char **why)
{
	json_t *p = mrtr_unseal(s, (const char *)st->s, st->n, GATE_STATE_PAYLOAD, why);
	const json_t *us = json_object_get(p, "us"); /* null: the server gave none */
	if (!json_is_string(us))
		us = NULL;
	if (!p)
		; /* why says it */
	else if (strcmp(json_string_value(json_object_get(p, "k")) ?: "", "gate"))
		*why = "requestState is not one this server issued";
	else if (strcmp(json_string_value(json_object_get(p, "owner")) ?: "", g->owner))
		*why = "requestState belongs to another client";
	else if (strcmp(json_string_value(json_object_get(p, "up")) ?: "", g->upstream) ||
		 strcmp(json_string_value(json_object_get(p, "m")) ?: "", g->method) ||
		 strcmp(json_string_value(json_object_get(p, "n")) ?: "", g->tool))
		*why = "requestState is for another call: retry the same call with inputResponses";
	else if ((uint64_t)json_integer_value(json_object_get(p, "exp")) <= now_ms())
		*why = "requestState has expired: call again without it";
	else if (us && !(g->ustate = strdup(json_string_value(us))))
		*why = "out of memory";
	else
		*why = NULL;
	json_decref(p);
	return *why ? AS_EINVAL : 0;
}
