/* Reviewers' web sessions and the failed-login limiter, held by the signer.
 * A session's secret is shown once to the page ("ws_" + 43 base64url characters of
 * 32 random bytes), which sends it back in a header (never a cookie: see
 * gateway/web/README.md); the table keeps only its SHA-256, and the hash of the
 * credential it was made with, so that it ends when that credential does. Pure
 * state: no I/O but getrandom, so it is unit-tested directly. */
#ifndef ASSENT_WEBSESS_H
#define ASSENT_WEBSESS_H

#include <stddef.h>
#include <stdint.h>

#define WS_MAX 1024 /* sessions at once; the least recently used goes first */
#define WS_PER_REVIEWER                                                                                                \
	32 /* one reviewer's at most: past it, their own oldest goes, so that                                          \
	    * one reviewer (a script logging in again and again) evicts no one else */
#define WS_COOKIE_LEN 46
#define WS_CSRF_LEN 43
#define WS_IDLE_MS (2ull * 3600 * 1000)	 /* unused for two hours: logged out */
#define WS_LIFE_MS (12ull * 3600 * 1000) /* and at most twelve hours in all */
#define WS_FAIL_WINDOW_MS 60000ull
#define WS_FAIL_PER_PEER                                                                                               \
	5	       /* failed logins a minute from one source (see ws_login_source): past                           \
			* it, a wrong token is answered 429. A right one always logs in: the                           \
			* tokens are 256-bit random secrets, so no rate of guessing finds one,                         \
			* and a limit that refused right tokens would let any local process                            \
			* lock every reviewer out. The limit slows clients and is logged. */
#define WS_FAIL_LOG 30 /* failed logins a minute from everyone: logged once, refuses no one */
#define WS_SOURCE_MAX 64

struct ws_session {
	uint8_t hash[32];
	char reviewer[65];
	char csrf[WS_CSRF_LEN + 1];
	char via[8];	  /* "token" or "proxy" */
	uint8_t cred[32]; /* the hash of the credential it was made with (registry_reviewer_credential) */
	uint32_t id;	  /* names its event streams to the worker; never 0, below 2^31 */
	uint64_t created, last;
	uint64_t told; /* cluster mode: when the cluster last heard of its use (WS_TELL_MS) */
	int used;
};
/* Cluster mode: a session is shared with the other replicas when made, when ended, and when
 * used this long after the cluster last heard of it (so that its idle time ends it on every
 * replica within this much of the same moment). */
#define WS_TELL_MS (WS_IDLE_MS / 8)

struct ws_peer {
	char addr[WS_SOURCE_MAX];
	uint64_t since;
	unsigned fails;
};

struct web_sessions {
	struct ws_session s[WS_MAX];
	struct ws_peer peers[256];
	uint64_t all_since;
	unsigned all_fails;
	int all_logged; /* this window's WS_FAIL_LOG line was written */
	uint32_t next_id;
	uint32_t evicted; /* the id of the session the last ws_create evicted (its streams end); 0: none */
	uint32_t gone[8]; /* ids ws_adopt evicted: ws_sweep reports them with the sessions it ends */
	size_t ngone;
};

/* The id of the event streams opened with a credential itself (a reviewer token as a
 * bearer, a proxy identity without a session): the credential's hash makes it, with the
 * top bit set, so it never names a session (their ids stay below 2^31). When that
 * credential ends, the streams with this id end. */
uint32_t ws_credential_stream_id(const uint8_t cred[32]);
/* A new session made with the credential whose hash is cred; cookie gets its
 * secret. NULL when no random bytes could be read. */
struct ws_session *ws_create(struct web_sessions *w, const char *reviewer, const char *via, const uint8_t cred[32],
			     uint64_t now, char cookie[WS_COOKIE_LEN + 1]);
/* Cluster mode: a session another replica made, known here by its hash (its secret never leaves
 * the replica that made it): added as ws_create adds one, or, when known, its use time and
 * told brought forward to in's. The session, or NULL when in is not one (no reviewer). */
struct ws_session *ws_adopt(struct web_sessions *w, const struct ws_session *in);
/* Ends the session with this hash, if any; its streams end at the next ws_sweep. */
void ws_drop(struct web_sessions *w, const uint8_t hash[32]);
/* The session with this hash, live or not yet swept; NULL: none. */
struct ws_session *ws_by_hash(struct web_sessions *w, const uint8_t hash[32]);
/* The live session a cookie names (its use time refreshed), or NULL. */
struct ws_session *ws_find(struct web_sessions *w, const char *cookie, size_t n, uint64_t now);
/* Whether csrf is the session's token (constant time). */
int ws_csrf_ok(const struct ws_session *s, const char *csrf, size_t n);
void ws_end(struct ws_session *s);
/* End sessions past their time, and every session whose credential no longer holds
 * (alive(arg, session) == 0: its reviewer removed, its token rotated or removed);
 * ended ids go to out (at most max). Returns how many ended. */
size_t ws_sweep(struct web_sessions *w, uint64_t now, int (*alive)(void *, const struct ws_session *), void *arg,
		uint32_t *out, size_t max);

/* The source a failed login is counted against, from a peer address as the signer
 * measured it ("127.0.0.5", "::1", "2001:db8::7", "proxy:198.51.100.7"): every
 * loopback address (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104) is one source, "loopback",
 * so that other loopback source addresses count with the rest; an IPv6 address
 * counts by its /64; anything else as given. */
void ws_login_source(const char *addr, char out[WS_SOURCE_MAX]);
/* A wrong token from addr at now. Returns 1 when the source is past WS_FAIL_PER_PEER
 * this minute (answer 429; retry_s: when its window ends), else 0. *log_all is set
 * once a window, when everyone's failures reach WS_FAIL_LOG (log it). */
int ws_login_failed(struct web_sessions *w, const char *addr, uint64_t now, unsigned *retry_s, unsigned *log_all);

#endif
