/* Unit tests for the reviewers' web API in the signer (gateway/signer/web.c, webhist.c),
 * driven through the test seam: F_WEB_* frames as the review worker forwards them with
 * their connection on the reviewer listener, and what the signer answers (F_WEB_REPLY):
 * login with a reviewer's token, a decision's session and CSRF token, the pending list,
 * the history after a decision, and the decision entry on the ledger. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/unit/seamfx.h"

#define AGENT_UID 4242

struct wx {
	struct sfx x;
	uint64_t agent, hreq;
	char alice_tok[REG_KEY_LEN + 1], bob_tok[REG_KEY_LEN + 1];
	char cookie[128], csrf[128]; /* alice's session, once logged in */
};

/* A signer whose rule names alice (bob is a reviewer too), with its reviewer listener. */
static struct wx *web_up(void)
{
	struct wx *w = calloc(1, sizeof *w);
	assert_non_null(w);
	sfx_dir(&w->x, "web_test");
	sfx_reviewer(&w->x, "alice", 5001, NULL, w->alice_tok);
	sfx_reviewer(&w->x, "bob", 5002, NULL, w->bob_tok);
	setenv("ASSENT_REVIEW_HOST", "127.0.0.1", 1);
	setenv("ASSENT_REVIEW_PORT", "0", 1);
	sfx_start(&w->x, "ask type approval reviewers alice\ndefault deny reason \"no\"\n", NULL);
	if (signer_test_web(w->x.s, w->x.err) != 0)
		fail_msg("signer_test_web: %s", w->x.err);
	w->agent = signer_test_agent(w->x.s, AGENT_UID);
	return w;
}

static void web_down(struct wx *w)
{
	sfx_end(&w->x);
	free(w);
}

/* A web frame of this type with its request id, the credentials given (NULL: none), and room for more. */
static struct cv *web_frame(struct wx *w, int type, const char *cookie, const char *csrf, size_t more)
{
	cv_arena_reset(&w->x.a);
	struct cv *f = ipc_frame_new(&w->x.a, (uint32_t)type, 3 + more);
	assert_int_equal(ipc_put_uint(&w->x.a, f, "hreq", ++w->hreq), 0);
	if (cookie)
		assert_int_equal(ipc_put_text(&w->x.a, f, "cookie", cookie, strlen(cookie)), 0);
	if (csrf)
		assert_int_equal(ipc_put_text(&w->x.a, f, "csrf", csrf, strlen(csrf)), 0);
	return f;
}

/* f through the seam; the answer to its hreq: its status and body (the caller frees). */
static json_t *web_ask(struct wx *w, const struct cv *f, uint64_t *status)
{
	struct buf b;
	buf_init(&b, IPC_FRAME_MAX);
	assert_int_equal(cbor_encode(f, &b, w->x.err), 0);
	if (signer_test_frame_web(w->x.s, b.p, b.len, w->x.err) != 0)
		fail_msg("web frame refused: %s", w->x.err);
	buf_free(&b);
	struct ipc_frame r;
	uint64_t hreq = 0;
	while (hreq != w->hreq) {
		if (sfx_next(&w->x, SFX_REVIEW, F_WEB_REPLY, &r) != 0)
			fail_msg("no F_WEB_REPLY for hreq %llu", (unsigned long long)w->hreq);
		assert_int_equal(ipc_get_uint(r.body, "hreq", UINT64_MAX, &hreq, w->x.err), 0);
	}
	assert_int_equal(ipc_get_uint(r.body, "status", UINT64_MAX, status, w->x.err), 0);
	return sfx_json(&w->x, &r, "body");
}

/* Log in with a token: the status; on success the session's cookie and CSRF token kept. */
static uint64_t login(struct wx *w, const char *token, json_t **body)
{
	struct cv *f = web_frame(w, F_WEB_LOGIN, NULL, NULL, 1);
	assert_int_equal(ipc_put_text(&w->x.a, f, "token", token, strlen(token)), 0);
	uint64_t st;
	json_t *j = web_ask(w, f, &st);
	if (st == PS_OK) {
		snprintf(w->cookie, sizeof w->cookie, "%s", json_string_value(json_object_get(j, "session")));
		snprintf(w->csrf, sizeof w->csrf, "%s", json_string_value(json_object_get(j, "csrf")));
	}
	*body = j;
	return st;
}

/* A decision on the web with these credentials: the status. */
static uint64_t web_decide(struct wx *w, const char *cookie, const char *csrf, const char *sid, const char *outcome)
{
	struct cv *f = web_frame(w, F_WEB_DECIDE, cookie, csrf, 2);
	assert_int_equal(ipc_put_text(&w->x.a, f, "sid", sid, strlen(sid)), 0);
	assert_int_equal(ipc_put_text(&w->x.a, f, "outcome", outcome, strlen(outcome)), 0);
	uint64_t st;
	json_decref(web_ask(w, f, &st));
	return st;
}

/* A right token logs in as its reviewer (a session and a CSRF token); a wrong one does not. */
static void test_login_with_token(void **state)
{
	(void)state;
	struct wx *w = web_up();
	json_t *j;
	assert_int_equal(login(w, "rt_not-a-token-of-anyone", &j), PS_UNAUTHORIZED);
	assert_null(json_object_get(j, "session"));
	json_decref(j);
	assert_int_equal(login(w, w->alice_tok, &j), PS_OK);
	assert_string_equal(json_string_value(json_object_get(j, "reviewer")), "alice");
	assert_string_equal(json_string_value(json_object_get(j, "via")), "token");
	assert_true(strlen(w->cookie) > 16 && strlen(w->csrf) > 16);
	json_decref(j);
	uint64_t st; /* the session is alice's */
	j = web_ask(w, web_frame(w, F_WEB_ME, w->cookie, NULL, 0), &st);
	assert_int_equal(st, PS_OK);
	assert_string_equal(json_string_value(json_object_get(j, "reviewer")), "alice");
	json_decref(j);
	web_down(w);
}

/* A decision needs the session and its CSRF token: without the session, with a wrong or no
 * CSRF token, it is refused and nothing is written; with both it is the decision entry,
 * naming alice on the web. */
static void test_decide_needs_session_and_csrf(void **state)
{
	(void)state;
	struct wx *w = web_up();
	json_t *j;
	assert_int_equal(login(w, w->alice_tok, &j), PS_OK);
	json_decref(j);
	assert_int_equal(sfx_request(&w->x, w->agent, "1", "approval", "deploy?", 600, 1), 0);
	char sid[37];
	assert_int_equal(signer_test_newest_sid(w->x.s, sid), 0);
	uint64_t before = signer_test_ledger_size(w->x.s);
	assert_int_equal(web_decide(w, NULL, w->csrf, sid, "approved"), PS_UNAUTHORIZED);
	assert_int_equal(web_decide(w, "0123456789abcdef0123456789abcdef", w->csrf, sid, "approved"), PS_UNAUTHORIZED);
	assert_int_equal(web_decide(w, w->cookie, "0123456789abcdef", sid, "approved"), PS_FORBIDDEN);
	assert_int_equal(web_decide(w, w->cookie, NULL, sid, "approved"), PS_FORBIDDEN);
	assert_int_equal(signer_test_pending(w->x.s), 1);
	assert_int_equal(signer_test_ledger_size(w->x.s), before);
	assert_int_equal(web_decide(w, w->cookie, w->csrf, sid, "approved"), PS_OK);
	assert_int_equal(signer_test_pending(w->x.s), 0);
	json_t *e;
	assert_int_equal(sfx_entries(&w->x, "decision", sid, NULL, &e), 1);
	json_t *rv = json_object_get(e, "reviewer");
	assert_string_equal(json_string_value(json_object_get(rv, "name")), "alice");
	assert_string_equal(json_string_value(json_object_get(rv, "channel")), "web");
	assert_string_equal(json_string_value(json_object_get(rv, "via")), "session");
	assert_string_equal(json_string_value(json_object_get(e, "outcome")), "approved");
	json_decref(e);
	web_down(w);
}

/* The messages of a pending list's requests, joined with '|'. */
static void pending_of(struct wx *w, const char *cookie, char *out, size_t n, json_int_t *total)
{
	uint64_t st;
	json_t *j = web_ask(w, web_frame(w, F_WEB_PENDING, cookie, NULL, 0), &st);
	assert_int_equal(st, PS_OK);
	*total = json_integer_value(json_object_get(j, "pending"));
	out[0] = 0;
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(j, "requests"), i, r)
	{
		size_t at = strlen(out);
		snprintf(out + at, n - at, "%s%s", at ? "|" : "", json_string_value(json_object_get(r, "message")));
	}
	json_decref(j);
}

/* The pending list: alice sees both requests the rule names her for; bob, whom it does not
 * name, sees none; without a session, nothing. */
static void test_pending_list(void **state)
{
	(void)state;
	struct wx *w = web_up();
	json_t *j;
	assert_int_equal(sfx_request(&w->x, w->agent, "1", "approval", "deploy?", 600, 0), 0);
	assert_int_equal(sfx_request(&w->x, w->agent, "2", "approval", "rotate keys?", 600, 0), 0);
	char list[256];
	json_int_t total;
	assert_int_equal(login(w, w->bob_tok, &j), PS_OK);
	json_decref(j);
	pending_of(w, w->cookie, list, sizeof list, &total);
	assert_int_equal(total, 0);
	assert_string_equal(list, "");
	assert_int_equal(login(w, w->alice_tok, &j), PS_OK);
	json_decref(j);
	pending_of(w, w->cookie, list, sizeof list, &total);
	assert_int_equal(total, 2);
	assert_true(!strcmp(list, "deploy?|rotate keys?") || !strcmp(list, "rotate keys?|deploy?"));
	uint64_t st;
	json_decref(web_ask(w, web_frame(w, F_WEB_PENDING, NULL, NULL, 0), &st));
	assert_int_equal(st, PS_UNAUTHORIZED);
	web_down(w);
}

/* After alice's decision the history lists it: the request, its outcome, by alice, the
 * decision entry's seq; the pending list is empty again. */
static void test_history_after_decision(void **state)
{
	(void)state;
	struct wx *w = web_up();
	json_t *j;
	assert_int_equal(login(w, w->alice_tok, &j), PS_OK);
	json_decref(j);
	assert_int_equal(sfx_request(&w->x, w->agent, "1", "approval", "deploy?", 600, 0), 0);
	char sid[37];
	assert_int_equal(signer_test_newest_sid(w->x.s, sid), 0);
	uint64_t st, seq;
	j = web_ask(w, web_frame(w, F_WEB_HISTORY, w->cookie, NULL, 0), &st);
	assert_int_equal(st, PS_OK);
	assert_int_equal(json_array_size(json_object_get(j, "decisions")), 0);
	json_decref(j);
	assert_int_equal(web_decide(w, w->cookie, w->csrf, sid, "approved"), PS_OK);
	assert_int_equal(sfx_entries(&w->x, "decision", sid, &seq, NULL), 1);
	j = web_ask(w, web_frame(w, F_WEB_HISTORY, w->cookie, NULL, 0), &st);
	assert_int_equal(st, PS_OK);
	json_t *ds = json_object_get(j, "decisions");
	assert_int_equal(json_array_size(ds), 1);
	json_t *d = json_array_get(ds, 0);
	assert_string_equal(json_string_value(json_object_get(d, "session_id")), sid);
	assert_string_equal(json_string_value(json_object_get(d, "outcome")), "approved");
	assert_string_equal(json_string_value(json_object_get(d, "by")), "alice");
	assert_string_equal(json_string_value(json_object_get(d, "message")), "deploy?");
	assert_int_equal(json_integer_value(json_object_get(d, "seq")), (json_int_t)seq);
	json_decref(j);
	char list[256];
	json_int_t total;
	pending_of(w, w->cookie, list, sizeof list, &total);
	assert_int_equal(total, 0);
	web_down(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_login_with_token),
	    cmocka_unit_test(test_decide_needs_session_and_csrf),
	    cmocka_unit_test(test_pending_list),
	    cmocka_unit_test(test_history_after_decision),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
