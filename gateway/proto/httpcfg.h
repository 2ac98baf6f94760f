/* The agent HTTP listener's configuration: read from the environment by the
 * signer (the worker has none), sent to the mcp worker in its F_CONFIG frame,
 * and read back there. Nothing in it is secret. */
#ifndef ASSENT_HTTPCFG_H
#define ASSENT_HTTPCFG_H

#include <stddef.h>
#include <stdint.h>

#include "common/cbor.h"

#define HTTPCFG_ENV_MAX 16  /* entries an operator may list */
#define HTTPCFG_LIST_MAX 24 /* room for those and the loopback names added to them */
#define HTTPCFG_NAME_MAX 255

struct http_cfg {
	int on;		   /* serve HTTP at all (FEEDBACK_SSE_PORT=off: no) */
	int port_explicit; /* FEEDBACK_SSE_PORT was set: failing to bind is fatal */
	char host[64];	   /* FEEDBACK_SSE_HOST, default 127.0.0.1 */
	unsigned port;	   /* FEEDBACK_SSE_PORT, default 8765; 0: any free port */
	int anonymous;	   /* FEEDBACK_ALLOW_ANONYMOUS: loopback agents without a key */
	int legacy_sse;	   /* FEEDBACK_TRANSPORT=sse: also /sse and /messages */
	/* Host header values accepted (DNS rebinding); empty: any (a non-loopback
	 * listener with no ASSENT_HTTP_ALLOWED_HOSTS). Origins accepted when present. */
	char hosts[HTTPCFG_LIST_MAX][HTTPCFG_NAME_MAX + 1];
	size_t nhosts;
	char origins[HTTPCFG_LIST_MAX][HTTPCFG_NAME_MAX + 1];
	size_t norigins;
	size_t body_max;	     /* ASSENT_HTTP_MAX_BODY bytes (4 MiB) */
	size_t header_max;	     /* ASSENT_HTTP_MAX_HEADER bytes of request head (32 KiB) */
	unsigned conns_max;	     /* ASSENT_HTTP_MAX_CONNECTIONS (128) */
	unsigned sessions_max;	     /* ASSENT_HTTP_MAX_SESSIONS (256) */
	unsigned sessions_per_agent; /* ASSENT_HTTP_MAX_SESSIONS_PER_AGENT (32): of those, one agent key's */
	unsigned unauth_per_addr;    /* ASSENT_HTTP_MAX_UNAUTH_PER_ADDRESS (16): connections from one address
				      * (all of 127.0.0.0/8 is one) not yet past the signer's check */
	unsigned idle_s;	     /* ASSENT_HTTP_IDLE_SECONDS: a silent connection is closed (30) */
	unsigned request_s;	     /* ASSENT_HTTP_REQUEST_SECONDS: a request's head and body must arrive
				      * within this, however slowly they trickle (30) */
	unsigned session_idle_s;     /* ASSENT_HTTP_SESSION_IDLE_SECONDS: an unused session ends (3600) */
	unsigned sse_poll_s;	     /* ASSENT_HTTP_SSE_POLL_SECONDS: a 2025-11-25 call's SSE stream is ended after this
				      * long, its client resuming it with Last-Event-ID (SEP-1699 polling); 0: never (0) */
	unsigned cleanup_s;	     /* FEEDBACK_SESSION_CLEANUP_INTERVAL: how often the signer looks (60) */
};

/* From the environment; err names the variable and what was wrong with it. The
 * reviewer listener's: ASSENT_REVIEW_HOST, ASSENT_REVIEW_PORT (8766),
 * ASSENT_REVIEW_ALLOWED_HOSTS and _ORIGINS, and the same ASSENT_HTTP_* limits. */
int http_cfg_from_env(struct http_cfg *c, char *err);
int http_cfg_review_from_env(struct http_cfg *c, char *err);
/* One numeric variable (unset or empty: dflt), with the same checks and message. */
int http_cfg_env_uint(const char *name, uint64_t min, uint64_t max, uint64_t dflt, uint64_t *out, char *err);
/* Once the listener is bound: its port (FEEDBACK_SSE_PORT may have been 0), and
 * whether its address is loopback (decided from the bound address, not from how
 * FEEDBACK_SSE_HOST spells it). A loopback listener accepts the loopback names and
 * its own address as Host and Origin, plus the configured extras. */
void http_cfg_finish(struct http_cfg *c, unsigned bound_port, int loopback);

/* As a CBOR map for F_CONFIG, and back (checked: the worker trusts the signer,
 * but a bad frame still must not overflow anything). */
struct cv *http_cfg_to_cv(const struct http_cfg *c, struct cv_arena *a);
int http_cfg_from_cv(const struct cv *m, struct http_cfg *c, char *err);

#endif
