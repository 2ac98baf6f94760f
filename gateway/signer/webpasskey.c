/* The page's passkey ceremonies (POST /review/api/passkey, F_WEB_PASSKEY): a reviewer's
 * registration (its options, then the attestation, enrolled on the ledger), and the
 * options of an approval whose challenge commits to the decision; the assertion itself
 * comes with the decision (POST /review/api/decide, web.c) and is checked by decide.c
 * through passkey.c. And the reviewer's own passkeys, listed and removed. Always a reviewer's
 * own session or token; a change, so a session's CSRF token too. */
#define _GNU_SOURCE
#include "gateway/signer/state.h"
#include "gateway/signer/web_int.h"

#include <stdio.h>
#include <string.h>

static int op_is(const struct web_req *q, const char *op)
{
	return q->op && q->opn == strlen(op) && !memcmp(q->op, op, q->opn);
}

static void approve_options(struct signer *s, const struct web_req *q)
{
	char sid[PQ_SID_LEN + 1], oc[PROTO_OUTCOME_MAX + 1], err[AS_ERRLEN];
	snprintf(sid, sizeof sid, "%.*s", (int)q->sidn, q->sid ? q->sid : "");
	snprintf(oc, sizeof oc, "%.*s", (int)q->outcomen, q->outcome ? q->outcome : "");
	const struct pq_item *it = q->sid ? pq_find(s->q, sid) : NULL;
	const struct req *r = it ? it->data : NULL;
	if (it && r->has_pd && !reviewer_allowed(s, q->reviewer, &r->pd))
		it = NULL; /* a reviewer the rule does not name learns nothing of it */
	if (!it)
		return web_error(s, q->hreq, PS_NOT_FOUND, "no pending request %s (decided, timed out or cancelled?)",
				 sid);
	if (!r->has_pd || !r->pd.passkey)
		return web_error(s, q->hreq, PS_BAD_REQUEST, "request %s needs no passkey: decide it as usual", sid);
	if (!q->outcome)
		return web_error(s, q->hreq, PS_BAD_REQUEST, "\"outcome\" is required");
	char *tx = q->text ? strndup(q->text, q->textn) : NULL;
	json_t *j = q->text && !tx ? NULL : passkey_approve_options(s, q->reviewer, it, oc, tx, err);
	free(tx);
	if (!j)
		return web_error(s, q->hreq, PS_BAD_REQUEST, "%s", q->text && !tx ? "out of memory" : err);
	reply_to(s, q->hreq, 1, answer_ok(j));
}

int h_web_passkey(void *ctx, struct ipc_frame *f, char *err)
{
	struct signer *s = ctx;
	struct web_req q;
	GUARD(web_begin(s, f, &q, err));
	if (!web_reviewer_ok(s, &q, 1))
		return 0;
	if (op_is(&q, "register-options")) {
		json_t *j = passkey_register_options(s, q.reviewer, err);
		if (!j)
			web_error(s, q.hreq, PS_INTERNAL, "%s", err);
		else
			reply_to(s, q.hreq, 1, answer_ok(j));
	} else if (op_is(&q, "register")) {
		if (!q.pk.authdata || !q.pk.cdj)
			web_error(s, q.hreq, PS_BAD_REQUEST,
				  "a registration needs authenticator_data and client_data_json");
		else
			passkey_register(s, &(struct who){q.reviewer, "web", q.via, (uid_t)-1, q.hreq, 1, NULL}, &q.pk);
	} else if (op_is(&q, "approve-options")) {
		approve_options(s, &q);
	} else if (op_is(&q, "list")) {
		json_t *j = passkey_list(s, q.reviewer);
		if (!j)
			web_error(s, q.hreq, PS_INTERNAL, "out of memory");
		else
			reply_to(s, q.hreq, 1, answer_ok(j));
	} else if (op_is(&q, "remove")) {
		if (!q.pk.cred)
			web_error(s, q.hreq, PS_BAD_REQUEST, "a removal needs the passkey's credential_id");
		else
			passkey_remove(s, &(struct who){q.reviewer, "web", q.via, (uid_t)-1, q.hreq, 1, NULL},
				       q.pk.cred, q.pk.credn);
	} else {
		web_error(s, q.hreq, PS_BAD_REQUEST,
			  "op must be register-options, register, approve-options, list or remove");
	}
	return 0;
}
