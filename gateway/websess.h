/* Reviewers' web sessions and the failed-login limiter, held by the signer.
 * A session's cookie is a secret shown once to the browser ("ws_" + 43 base64url
 * characters of 32 random bytes); the table keeps only its SHA-256. Pure state:
 * no I/O but getrandom, so it is unit-tested directly. */
#ifndef ASSENT_WEBSESS_H
#define ASSENT_WEBSESS_H

#include <stddef.h>
#include <stdint.h>

#define WS_MAX 1024              /* sessions at once; the least recently used goes first */
#define WS_PER_REVIEWER 32       /* one reviewer's at most: past it, their own oldest goes, so that
				  * one reviewer (a script logging in again and again) evicts no one else */
#define WS_COOKIE_LEN 46
#define WS_CSRF_LEN 43
#define WS_IDLE_MS (2ull * 3600 * 1000)   /* unused for two hours: logged out */
#define WS_LIFE_MS (12ull * 3600 * 1000)  /* and at most twelve hours in all */
#define WS_FAIL_WINDOW_MS 60000ull
#define WS_FAIL_PER_PEER 5       /* failed logins a minute from one address */
#define WS_FAIL_TOTAL 30         /* and from everyone: a spread-out guesser is slowed too */

struct ws_session {
	uint8_t hash[32];
	char reviewer[65];
	char csrf[WS_CSRF_LEN + 1];
	char via[8];             /* "token" or "proxy" */
	uint32_t id;             /* names its event streams to the worker; never 0 */
	uint64_t created, last;
	int used;
};

struct ws_peer {
	char addr[64];
	uint64_t since;
	unsigned fails;
};

struct web_sessions {
	struct ws_session s[WS_MAX];
	struct ws_peer peers[256];
	uint64_t all_since;
	unsigned all_fails;
	uint32_t next_id;
	uint32_t evicted; /* the id of the session the last ws_create evicted (its streams end); 0: none */
};

/* A new session; cookie gets its secret. NULL when no random bytes could be read. */
struct ws_session *ws_create(struct web_sessions *w, const char *reviewer, const char *via, uint64_t now,
			     char cookie[WS_COOKIE_LEN + 1]);
/* The live session a cookie names (its use time refreshed), or NULL. */
struct ws_session *ws_find(struct web_sessions *w, const char *cookie, size_t n, uint64_t now);
/* Whether csrf is the session's token (constant time). */
int ws_csrf_ok(const struct ws_session *s, const char *csrf, size_t n);
void ws_end(struct ws_session *s);
/* End sessions past their time, and every session of a reviewer no longer in the
 * registry (alive(name) == 0); ended ids go to out (at most max). Returns how many ended. */
size_t ws_sweep(struct web_sessions *w, uint64_t now, int (*alive)(void *, const char *), void *arg, uint32_t *out,
		size_t max);
/* Failed logins: may this address try now? retry_s: when it may. */
int ws_login_allowed(struct web_sessions *w, const char *addr, uint64_t now, unsigned *retry_s);
void ws_login_failed(struct web_sessions *w, const char *addr, uint64_t now);

#endif
