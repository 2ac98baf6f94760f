/* The reviewer listener's HTTP rules, as a pure function of a request's head: which
 * endpoint, and whether the method, Host, Origin, fetch site and content type let
 * it go on. Credentials are not judged here (the signer does that). Unit-tested
 * and fuzzed (fuzz/webroute.c). */
#ifndef ASSENT_WEBROUTE_H
#define ASSENT_WEBROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "gateway/proto/httpcfg.h"
#include "gateway/proto/proto.h"

enum web_route {
	WR_NONE,
	/* open to anyone who reaches the listener */
	WR_PAGE,
	WR_JS,
	WR_CSS,
	WR_FAVICON, /* 204: browsers ask for it on every page load */
	WR_HEALTH,
	WR_METRICS,
	WR_JWKS,
	WR_CHECKPOINT,
	WR_CONSISTENCY, /* a consistency proof between two tree sizes, for witnesses (the last open one) */
	/* the page's API and the reviewers' endpoints (credentials checked by the signer) */
	WR_ME,
	WR_LOGIN,
	WR_LOGOUT,
	WR_API_PENDING,
	WR_DECIDE,
	WR_REVEAL, /* a gated call's exact arguments (the card's Reveal) */
	WR_EVENTS,
	WR_PENDING,
	WR_SUBMIT,
	WR_MCP,
	WR_ADMIN_CLEAR,
	WR_QA,
	WR_HISTORY, /* the page's history of decisions and its chart's figures */
	WR_PROOF,   /* a decision's inclusion proof, for assent-verify proof --check */
	WR_PASSKEY, /* a passkey ceremony's options, or a registration (the last: fuzz/webroute.c) */
};

struct wr_in {
	const char *method, *url;
	const char *host, *origin, *content_type, *sec_fetch_site, *authorization;
	const char *forwarded_proto; /* X-Forwarded-Proto, believed on the proxy's socket only */
	int on_proxy;		     /* the request came in on the reverse proxy's own socket */
};

struct wr_out {
	enum web_route route;
	unsigned status; /* 0: go on; else refuse with this status and error */
	const char *error;
	const char *allow; /* 405: the methods the path takes */
	uint32_t frame;	   /* the frame type it goes to the signer as (F_WEB_*; 0: the worker answers
			    * alone); /review/mcp: F_WEB_ME, tools/call by its tool */
	int post;
};

void web_classify(const struct http_cfg *c, const struct wr_in *in, struct wr_out *out);

/* The HTTP status of a signer's answer (F_WEB_REPLY's enum proto_status): the one
 * place a typed status becomes HTTP; anything else is 500. */
unsigned web_http_status(uint64_t st);

/* The token of "Authorization: Bearer TOKEN" (n: its length), or NULL. */
const char *web_bearer(const char *header, size_t *n);

#endif
