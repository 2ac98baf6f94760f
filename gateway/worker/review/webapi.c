/* The page's JSON bodies and query strings (POST /review/api/..., GET ...?offset=,
 * ?who=...), checked in the jailed review worker before anything goes to the signer:
 * each endpoint's fields, typed and bounded, into its frame (worker_web.c sends it). */
#define _GNU_SOURCE
#include <jansson.h>
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "gateway/proto/proto.h"
#include "gateway/worker/review/histq.h"
#include "gateway/worker/review/webreq.h"

/* ---- the page's JSON bodies, checked before anything goes to the signer ---- */

static int str_arg(json_t *body, const char *k, size_t max, int required, json_t *args, const char *as, char *why)
{
	json_t *v = json_object_get(body, k);
	if (!v || json_is_null(v)) {
		if (required)
			snprintf(why, 160, "\"%s\" is required", k);
		return required ? -1 : 0;
	}
	if (!json_is_string(v) || json_string_length(v) > max) {
		snprintf(why, 160, "\"%s\" must be a string of at most %zu bytes", k, max);
		return -1;
	}
	json_object_set(args, as, v);
	return 0;
}

static int int_arg(json_t *body, const char *k, json_t *args, char *why)
{
	json_t *v = json_object_get(body, k);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 64) {
		snprintf(why, 160, "\"%s\" must be a number from 1 (as the options are numbered)", k);
		return -1;
	}
	json_object_set(args, "n", v);
	return 0;
}

/* {"session_id", "approved": bool, "response"?, "selection"?}: the seed's submit shape. */
int web_submit_args(json_t *in, json_t *args, char *why)
{
	json_t *ap = json_object_get(in, "approved");
	if (!json_is_boolean(ap)) {
		snprintf(why, 160, "\"approved\" must be true or false");
		return -1;
	}
	json_object_set(args, "approved", ap);
	if (str_arg(in, "session_id", 64, 1, args, "sid", why) ||
	    str_arg(in, "response", 16384, 0, args, "text", why) || int_arg(in, "selection", args, why))
		return -1;
	return 0;
}

/* A passkey ceremony's fields: {credential_id, authenticator_data, client_data_json,
 * signature?} as base64url text (the browser's ArrayBuffers, encoded by the page), each
 * decoded here once to refuse what is not base64url before it reaches the signer. */
static int pk_args(json_t *pk, json_t *args, int id_only, char *why)
{
	static const struct {
		const char *k, *as;
		size_t max;
		int required;
	} f[] = {{"credential_id", "pk_cred", PROTO_PK_CRED_MAX, 0},
		 {"authenticator_data", "pk_authdata", PROTO_PK_AUTHDATA_MAX, 1},
		 {"client_data_json", "pk_cdj", PROTO_PK_CDJ_MAX, 1},
		 {"signature", "pk_sig", PROTO_PK_SIG_MAX, 0}};
	static uint8_t raw[PROTO_PK_AUTHDATA_MAX];
	if (!json_is_object(pk)) {
		snprintf(why, 160, "\"passkey\" must be an object of base64url fields");
		return -1;
	}
	for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
		size_t n;
		if (str_arg(pk, f[i].k, f[i].max, f[i].required && !id_only, args, f[i].as, why))
			return -1;
		json_t *v = json_object_get(args, f[i].as);
		if (v && b64url_decode(json_string_value(v), json_string_length(v), raw, sizeof raw, &n) != 0) {
			snprintf(why, 160, "passkey \"%s\" is not base64url (no padding)", f[i].k);
			return -1;
		}
	}
	return 0;
}

struct query_ctx {
	struct histq q;
	int proof, bad;
	char why[HISTQ_WHY_MAX];
};

static enum MHD_Result query_one(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	struct query_ctx *c = cls;
	c->bad = histq_arg(&c->q, c->proof, key, value, c->why) != 0;
	return c->bad ? MHD_NO : MHD_YES;
}

/* ?who=&outcome=&audience=&rule=&since=&until=&limit= (history), ?seq= (proof), ?old=&new=
 * (consistency proof): parsed
 * here, in the jail, into typed fields; the signer gets numbers and checked names only. */
static int query_args(struct wreq *h, json_t *args, char *why)
{
	struct query_ctx c = {.proof = h->r.route == WR_PROOF	      ? HISTQ_PROOF
				       : h->r.route == WR_CONSISTENCY ? HISTQ_CONSISTENCY
								      : HISTQ_HISTORY};
	histq_init(&c.q);
	MHD_get_connection_values(h->mc, MHD_GET_ARGUMENT_KIND, query_one, &c);
	if (c.bad || histq_done(&c.q, c.proof, c.why) != 0) {
		snprintf(why, 160, "%s", c.why);
		return -1;
	}
	const struct histq *q = &c.q;
	if (c.proof == HISTQ_CONSISTENCY) {
		int rc = json_object_set_new(args, "old", json_integer((json_int_t)q->old));
		return rc | json_object_set_new(args, "new", json_integer((json_int_t)q->new));
	}
	if (c.proof) {
		h->proof_seq = q->seq;
		return json_object_set_new(args, "seq", json_integer((json_int_t)q->seq));
	}
	int rc = json_object_set_new(args, "limit", json_integer((json_int_t)q->limit));
	if (q->has & HQ_WHO)
		rc |= json_object_set_new(args, "who", json_string(q->who));
	if (q->has & HQ_OUTCOME)
		rc |= json_object_set_new(args, "outcome", json_string(q->outcome));
	if (q->has & HQ_AUDIENCE)
		rc |= json_object_set_new(args, "audience", json_string(q->audience));
	if (q->has & HQ_RULE)
		rc |= json_object_set_new(args, "rule", json_integer((json_int_t)q->rule));
	if (q->has & HQ_SINCE)
		rc |= json_object_set_new(args, "since", json_integer((json_int_t)q->since));
	if (q->has & HQ_UNTIL)
		rc |= json_object_set_new(args, "until", json_integer((json_int_t)q->until));
	if (rc)
		snprintf(why, 160, "out of memory");
	return rc;
}

/* GET /checkpoint/consistency is open to anyone and reads the ledger's first N entries in the
 * signer's event loop (from its tiles; a ledger from before them, about 2 ms per 1,000 entries,
 * docs/audit.md): WEB_CONSIST_BURST proofs at
 * once, then one per WEB_CONSIST_EVERY_MS, whoever asks (a GCRA bucket: `due` is when the next
 * proof would be on time). Witnesses ask about once a minute. */
#define WEB_CONSIST_BURST 5
#define WEB_CONSIST_EVERY_MS 500
static int consistency_allowed(void)
{
	static uint64_t due;
	uint64_t now = mono_ms(), tat = due > now ? due : now;
	if (tat - now > (WEB_CONSIST_BURST - 1) * WEB_CONSIST_EVERY_MS)
		return 0;
	due = tat + WEB_CONSIST_EVERY_MS;
	return 1;
}

void web_api_call(struct wreq *h)
{
	json_t *args = json_object(), *in = NULL;
	char why[160] = "";
	if (h->r.post && !(h->r.route == WR_ADMIN_CLEAR && h->body.len == 0)) { /* no body there: none needed */
		json_error_t je;
		in = json_loadb((const char *)h->body.p, h->body.len, JSON_REJECT_DUPLICATES, &je);
		if (!json_is_object(in)) {
			snprintf(why, sizeof why, "the body is not a JSON object: %.100s",
				 in ? "another JSON value" : je.text);
			goto bad;
		}
	}
	switch (h->r.route) {
	case WR_LOGIN:
		if (str_arg(in, "token", 128, 0, args, "token", why))
			goto bad;
		break;
	case WR_DECIDE:
		if (str_arg(in, "session_id", 64, 1, args, "sid", why) ||
		    str_arg(in, "outcome", 16, 1, args, "outcome", why) ||
		    str_arg(in, "text", 16384, 0, args, "text", why) || int_arg(in, "option", args, why) ||
		    (json_object_get(in, "passkey") && pk_args(json_object_get(in, "passkey"), args, 0, why)))
			goto bad;
		break;
	case WR_PASSKEY: /* {op, session_id?, outcome?, text?, passkey?} */
		if (str_arg(in, "op", PROTO_PK_OP_MAX, 1, args, "op", why) ||
		    str_arg(in, "session_id", 64, 0, args, "sid", why) ||
		    str_arg(in, "outcome", 16, 0, args, "outcome", why) ||
		    str_arg(in, "text", 16384, 0, args, "text", why) ||
		    (json_object_get(in, "passkey") &&
		     pk_args(json_object_get(in, "passkey"), args,
			     json_is_string(json_object_get(in, "op")) &&
				 !strcmp(json_string_value(json_object_get(in, "op")), "remove"),
			     why)))
			goto bad;
		break;
	case WR_REVEAL:
		if (str_arg(in, "session_id", 64, 1, args, "sid", why))
			goto bad;
		break;
	case WR_SUBMIT:
		if (web_submit_args(in, args, why))
			goto bad;
		break;
	case WR_QA: { /* the records' reports and events: {op, type?, status?, key?, by?, id?, offset?, limit?} */
		static const char *const nums[] = {"id", "offset", "limit"};
		if (str_arg(in, "op", 16, 1, args, "op", why) || str_arg(in, "type", 16, 0, args, "type", why) ||
		    str_arg(in, "status", 16, 0, args, "status", why) || str_arg(in, "key", 255, 0, args, "key", why) ||
		    str_arg(in, "by", PROTO_EVENT_BY_MAX, 0, args, "by", why))
			goto bad;
		for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
			json_t *v = json_object_get(in, nums[i]);
			if (v &&
			    (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1000000)) {
				snprintf(why, sizeof why, "\"%s\" must be a number from 0", nums[i]);
				goto bad;
			}
			if (v)
				json_object_set(args, nums[i], v);
		}
		break;
	}
	case WR_PENDING:
	case WR_API_PENDING: { /* ?offset=N: the next page of a big queue */
		const char *off = MHD_lookup_connection_value(h->mc, MHD_GET_ARGUMENT_KIND, "offset");
		uint64_t o;
		if (off && (strlen(off) > 6 || parse_u64(off, &o) != 0 || o > 100000)) {
			snprintf(why, sizeof why, "offset must be a number from 0 to 100000");
			goto bad;
		}
		if (off)
			json_object_set_new(args, "offset", json_integer((json_int_t)o));
		break;
	}
	case WR_HISTORY:
	case WR_PROOF:
	case WR_CONSISTENCY:
		if (query_args(h, args, why))
			goto bad;
		if (h->r.route == WR_CONSISTENCY && !consistency_allowed()) {
			h->retry = 1;
			web_answer_error(h, 429, "consistency proofs: a few a second at most, whoever asks; retry");
			goto out;
		}
		break;
	default:
		break;
	}
	web_to_signer(h, h->r.frame, args);
	goto out;
bad:
	web_answer_error(h, 400, why);
out:
	json_decref(args);
	json_decref(in);
}
