/* What the reviewer listener's handlers share (web.c, webproof.c): a web request as its
 * frame carries it, who asks, and how an answer or an error goes back. Internal to them. */
#ifndef ASSENT_SIGNER_WEB_INT_H
#define ASSENT_SIGNER_WEB_INT_H

#include "gateway/signer/state.h"

struct web_req {
	uint64_t hreq;
	const char *cookie, *csrf, *bearer, *proxy_user, *proxy_secret, *token, *sid, *outcome, *text;
	size_t cookien, csrfn, bearern, proxy_usern, proxy_secretn, tokenn, sidn, outcomen, textn;
	uint64_t n, offset; /* 0 when absent */
	int approved;
	int on_proxy;  /* the connection came in on the proxy's socket */
	char peer[64]; /* its address, for the failed-login limiter */
	/* who asks, as web_identify found: a reviewer (via "session", "proxy" or "token")
	 * or an admin token's name; the session the request carries, if any */
	const char *reviewer, *admin, *via;
	struct ws_session *ss;
	/* a passkey ceremony's fields (pk_*, as the page sent them) and F_WEB_PASSKEY's op */
	struct pk_assertion pk;
	const char *op;
	size_t opn;
};

/* Read the frame's common fields and find who asks (a session, a token, the proxy's word). */
int web_begin(struct signer *s, const struct ipc_frame *f, struct web_req *q, char *err);
/* A registered reviewer asks (changes: for a change, which a session must also prove with
 * its CSRF token); else the answer (401 or 403) is sent and 0 returned. */
int web_reviewer_ok(struct signer *s, struct web_req *q, int changes);
void web_error(struct signer *s, uint64_t hreq, enum proto_status status, const char *fmt, ...) AS_PRINTF(4, 5);

#endif
