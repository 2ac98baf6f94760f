/* Multi-round input (MCP 2026-07-28, SEP-2322): an `input` or `selection` request
 * answered by the requesting client's own user through an elicitation form, when the
 * policy rule that asks names the `client` channel. The answer is the requester's
 * word about itself: recorded with assurance self-attested, never with a token, and
 * never for an approval or a confirmation.
 *
 * The round trip carries a requestState the signer minted: the request's id, its
 * owner (as measured), the action's digest and the deadline, MACed (HMAC-SHA256)
 * with a key that exists only in this process's memory. On the way back it must
 * verify, be the caller's, name the very call being retried, be before its deadline,
 * and find the request still pending: the first use decides it, so a second is
 * refused. A restart forgets the key: a state from before it is refused (the request
 * itself survives and reviewers still see it). */
#define _GNU_SOURCE
#include "gateway/signer/state.h"

#include <mbedtls/md.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "ledger/merkle.h"

#define STATE_PAYLOAD_MAX 512

int mrtr_applies(const struct req *r)
{
	return r->has_pd && r->pd.action == POL_ASK && (r->pd.channels & POL_CH_CLIENT) &&
	       (!strcmp(r->type, "input") || !strcmp(r->type, "selection"));
}

static int mac(struct signer *s, const uint8_t *p, size_t n, uint8_t out[32])
{
	if (!s->mrtr_keyed) {
		if (getrandom(s->mrtr_key, sizeof s->mrtr_key, 0) != (ssize_t)sizeof s->mrtr_key)
			return AS_ECRYPTO;
		s->mrtr_keyed = 1;
	}
	return mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), s->mrtr_key, sizeof s->mrtr_key, p, n,
			       out) == 0
		   ? 0
		   : AS_ECRYPTO;
}

/* hex(payload) "." hex(HMAC(payload)) of payload's compact JSON (sorted keys), into out
 * (cap bytes); AS_ETOOBIG when the payload is over max bytes or out too small. */
int mrtr_seal(struct signer *s, const json_t *payload, size_t max, char *out, size_t cap)
{
	char *p = payload ? json_dumps(payload, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	uint8_t m[32];
	size_t n = p ? strlen(p) : 0;
	int rc = !p || n > max || 2 * n + 66 > cap ? AS_ETOOBIG : mac(s, (const uint8_t *)p, n, m);
	if (rc == 0) {
		hex_encode((const uint8_t *)p, n, out);
		out[2 * n] = '.';
		hex_encode(m, 32, out + 2 * n + 1);
	}
	free(p);
	return rc;
}

static int state_make(struct signer *s, const char *sid, const struct req *r, uint64_t exp, char *out, size_t cap)
{
	json_t *j = json_pack("{s:i,s:s,s:s,s:s,s:I}", "v", 1, "sid", sid, "owner", r->owner, "action", r->action,
			      "exp", (json_int_t)exp);
	int rc = mrtr_seal(s, j, STATE_PAYLOAD_MAX, out, cap);
	json_decref(j);
	return rc;
}

/* The request's offer to its client: what the form asks, and the state to send back. */
void mrtr_offer(struct signer *s, const struct op *o)
{
	const struct req *r = o->it.data;
	char st[2 * STATE_PAYLOAD_MAX + 70];
	if (state_make(s, o->it.session_id, r, o->it.deadline_ms, st, sizeof st) != 0) {
		slog("error", "request %s: no requestState could be made; it waits for a reviewer", o->it.session_id);
		json_t *res = result_base(o->it.session_id, "pending", 0);
		send_result(s, o->conn, r->rid, res, 0);
		json_decref(res);
		return;
	}
	json_t *opts = json_array();
	for (size_t i = 0; opts && i < r->noptions; i++)
		json_array_append_new(opts, json_string(r->options[i]));
	const json_t *view = r->view;
	json_t *ir =
	    json_pack("{s:s,s:s,s:O?,s:o,s:O?,s:s,s:I}", "session_id", o->it.session_id, "type", r->type, "message",
		      json_object_get(view, "message"), "options", opts, "default", json_object_get(view, "default"),
		      "requestState", st, "deadline", (json_int_t)(o->it.deadline_ms / 1000));
	json_t *res = ir ? json_pack("{s:o}", "input_required", ir) : NULL;
	send_result(s, o->conn, r->rid, res ? res : json_pack("{s:s}", "error", "out of memory"), !res);
	json_decref(res);
}

json_t *mrtr_unseal(struct signer *s, const char *st, size_t n, size_t max, const char **why)
{
	const char *dot = memchr(st, '.', n);
	size_t pn = dot ? (size_t)(dot - st) : 0;
	uint8_t got[32], want[32];
	*why = "requestState is not one this server issued";
	if (!dot || pn % 2 || pn / 2 > max || n - pn - 1 != 64 || hex_decode(dot + 1, 64, got, 32) != 0)
		return NULL;
	uint8_t *p = malloc(pn / 2 + 1);
	json_t *j = NULL;
	if (!p || hex_decode(st, pn, p, pn / 2) != 0)
		;
	else if (mac(s, p, pn / 2, want) != 0 || ct_memcmp(got, want, 32) != 0)
		*why = "requestState does not verify: altered, or minted before the daemon restarted";
	else
		j = json_loadb((const char *)p, pn / 2, 0, NULL);
	free(p);
	return j;
}

/* A request_feedback state (no "k": a gate's state is not one) that verifies, or NULL. */
static json_t *state_open(struct signer *s, const char *st, size_t n, const char **why)
{
	json_t *j = mrtr_unseal(s, st, n, STATE_PAYLOAD_MAX, why);
	if (j && json_object_get(j, "k")) {
		*why = "requestState is not one this server issued";
		json_decref(j);
		return NULL;
	}
	return j;
}

static void input_refused(struct signer *s, const struct conn *c, const char *rid, const char *why)
{
	json_t *j = json_pack("{s:s}", "error", why);
	send_result(s, c->id, rid, j, 1);
	json_decref(j);
}

/* The option a selection's answer names: 1-based, 0 when none. */
static uint64_t option_n(const struct req *r, const char *text)
{
	for (size_t i = 0; i < r->noptions; i++)
		if (!strcmp(r->options[i], text))
			return i + 1;
	return 0;
}

int h_input(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct conn *c;
	GUARD(get_conn(s, f, W_MCP, &c, err));
	char rid[PROTO_RID_MAX + 1], text[MCP_MESSAGE_MAX + 1] = "";
	frame_text(f, "rid", rid, sizeof rid);
	if (cv_get(f->body, "text"))
		frame_text(f, "text", text, sizeof text);
	const struct cv *st = cv_get(f->body, "state"), *act = cv_get(f->body, "action"),
			*hreq = cv_get(f->body, "hreq");
	int accepted = cv_get(f->body, "accepted")->t == CV_TRUE;
	uid_t uid;
	if (c->http && hreq)
		GUARD(measured_take(s, hreq->u, c->id, &uid, err));
	const char *why;
	json_t *p = state_open(s, (const char *)st->s, st->n, &why);
	const char *sid = json_string_value(json_object_get(p, "sid"));
	uint8_t d[32];
	char digest[72] = "sha256:";
	sha256(act->s, act->n, d);
	hex_encode(d, 32, digest + 7);
	struct pq_item *it = sid ? pq_find(s->q, sid) : NULL;
	struct req *r = it ? it->data : NULL;
	if (!p || !sid)
		; /* why says it */
	else if (strcmp(json_string_value(json_object_get(p, "owner")) ?: "", c->owner))
		why = "requestState belongs to another client";
	else if (strcmp(json_string_value(json_object_get(p, "action")) ?: "", digest))
		why = "requestState is for another call: retry the same tools/call with inputResponses";
	else if ((uint64_t)json_integer_value(json_object_get(p, "exp")) <= now_ms())
		why = "requestState has expired: the request's deadline passed";
	else if (!r || !r->mrtr || strcmp(r->owner, c->owner))
		why = "requestState was used already, or its request was decided, cancelled or timed out";
	else
		why = NULL;
	if (why) {
		slog("warning", "multi-round input refused (%s): %s", c->owner, why);
		input_refused(s, c, rid, why);
		json_decref(p);
		return 0;
	}
	uint64_t n = !strcmp(r->type, "selection") && accepted ? option_n(r, text) : 0;
	const char *outcome = !accepted ? "rejected" : n ? "selected" : "answered";
	if (!accepted)
		snprintf(text, sizeof text, "declined by the requesting client's user");
	/* The answer goes to this call; the request was collected, not waited on, till now. */
	r->conn = c->id;
	snprintf(r->rid, sizeof r->rid, "%s", rid);
	it->blocking = 1;
	struct answer a = decide_self_attested(s, it, outcome, text, n);
	if (a.j) { /* refused (not one of the options, an empty answer): still pending */
		it->blocking = 0;
		input_refused(s, c, rid, json_string_value(json_object_get(a.j, "error")) ?: "refused");
		json_decref(a.j);
	}
	json_decref(p);
	return 0;
}
