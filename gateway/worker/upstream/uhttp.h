/* The Streamable HTTP client an upstream worker uses to talk to a `url` upstream (MCP
 * 2025-06-18 "Streamable HTTP" transport): HTTP/1.1 POSTs of JSON-RPC messages over TLS
 * (mbedTLS 2.28: TLS 1.2, certificate and host name verified) or plain HTTP, answers as
 * application/json (one message or a batch) or text/event-stream, all bytes bounded.
 *
 * It runs inside the worker's seccomp jail: after uhttp_new (which reads the CA file and
 * seeds the random generator, so it is called BEFORE the jail) it opens nothing, and
 * its only system calls are send(MSG_DONTWAIT|MSG_NOSIGNAL), recv(MSG_DONTWAIT), close,
 * getrandom (the DRBG's rare reseeds) and malloc's. The worker's caller (the signer)
 * connects the TCP socket and hands it over; uhttp never calls socket or connect.
 *
 * How the worker uses it:
 *   u = uhttp_new(cfg) before the jail;          one per upstream: config, CA, session
 *   c = uhttp_conn_new(u)                        one per connection (several for concurrency)
 *   uhttp_attach(c, fd)                          a connected socket from the signer; c owns it
 *   uhttp_send(c, json, n)                       one request in flight per connection
 *   poll(fd, uhttp_want(c)); uhttp_io(c, &cb)    until the response's UHTTP_EV_DONE
 *   UHTTP_EV_CLOSED: c closed its fd; ask the signer for a new one and uhttp_attach again
 *   (the new connection resumes the last TLS session: no second full handshake).
 * A host that is an IP address is matched against the certificate's iPAddress entries
 * (mbedTLS 2.28 matches CN and dNSName only) and sent without SNI (RFC 6066).
 * The signer should set TCP_NODELAY on the sockets it connects: mbedTLS sends each
 * handshake record on its own, and Nagle holds the second back for the server's delayed
 * ACK (a handshake took about 50 ms instead of 9 here).
 * Every request sent ends in exactly one UHTTP_EV_DONE (its HTTP status; its messages
 * were delivered before) or one UHTTP_EV_LOST (no complete answer: unless LOST says not
 * a byte was written, the server may have acted on it, so a tools/call is never sent
 * again on that account).
 * The MCP session (Mcp-Session-Id, MCP-Protocol-Version) belongs to the uhttp and so is
 * shared by its connections. Header values of the configuration (the upstream's
 * credentials) are never logged nor put in an error message, and are wiped when freed.
 * SSE resumption is the caller's (uhttp_send_resume, uhttp_last_event_id, uhttp_retry_ms).
 * Not done here: x-mcp-header parameters
 * (SEP-2243), redirects (a 3xx is a DONE with its status), TLS 1.3 (mbedTLS 2.28 has
 * none). No timeouts either: the caller's deadline calls uhttp_close. */
#ifndef ASSENT_UHTTP_H
#define ASSENT_UHTTP_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

#define UHTTP_SYSTEM_CA "/etc/ssl/certs/ca-certificates.crt"
#define UHTTP_CA_FILE_MAX (4u << 20)	  /* a CA bundle (Debian's: about 215 KiB) */
#define UHTTP_BODY_MAX_DEFAULT (4u << 20) /* a response body, an SSE event, a request */
#define UHTTP_STATUS_LINE_MAX 1024
#define UHTTP_HEADER_LINE_MAX 8192 /* one response header line */
#define UHTTP_HEADERS_BYTES_MAX (64u << 10)
#define UHTTP_HEADERS_MAX 100	 /* response header lines, trailers included */
#define UHTTP_SESSION_MAX 256	 /* Mcp-Session-Id: visible ASCII, this long at most */
#define UHTTP_PROTOCOL_MAX 32	 /* MCP-Protocol-Version */
#define UHTTP_SSE_ID_MAX 256	 /* an SSE id: field */
#define UHTTP_CFG_HEADERS_MAX 64 /* extra request headers of the configuration */
#define UHTTP_ROUTING_MAX 4096	 /* Mcp-Method, Mcp-Name before their encoding */

/* ---- the response parser: pure, bytes in, events out (fuzz/uhttp.c) ---- */

enum uhttp_body { UHTTP_BODY_NONE, UHTTP_BODY_JSON, UHTTP_BODY_SSE, UHTTP_BODY_DISCARD, UHTTP_BODY_RAW };

struct uhttp_limits {
	size_t body_max;   /* a JSON body, one SSE event's data, a discarded body */
	size_t stream_max; /* all the bytes of one SSE stream (0: 16 x body_max) */
	int any_body;	   /* a 2xx with a body that is neither JSON nor SSE is read and dropped,
			    * not refused (a webhook receiver's "ok") */
	int raw;	   /* every answer's body, whatever its status and type, is kept (at most
			    * body_max) and given whole to uhttp_msg_fn as one message at its end,
			    * unread here (a witness's answer: gateway/worker/notify/wresp.h) */
};

struct uhttp_resp;
/* Called once the status line and headers are read (before any message); a negative
 * return stops the parse with an error. */
typedef int (*uhttp_head_fn)(void *arg, const struct uhttp_resp *r);
/* One JSON-RPC message of a 2xx answer (a JSON body, each element of a batch array, or
 * each SSE event of type "message"). The bytes are the server's, not validated as JSON
 * beyond the batch split; valid until the call returns. Negative stops the parse with
 * that code (err says which message was refused). */
typedef int (*uhttp_msg_fn)(void *arg, const char *json, size_t n);

struct uhttp_resp {
	/* what the headers said, valid from uhttp_head_fn on */
	int status;			     /* 200..599 (1xx answers are skipped) */
	enum uhttp_body body;		     /* JSON / SSE for a 2xx with such a Content-Type, DISCARD else */
	int close;			     /* Connection: close, or a body that ends at the connection's end */
	char session[UHTTP_SESSION_MAX + 1]; /* Mcp-Session-Id, "" when none */
	char last_event_id[UHTTP_SSE_ID_MAX + 1];
	uint32_t retry_ms; /* the last SSE retry: field (have_retry), the server's reconnection delay */
	int have_retry;
	size_t nmsgs; /* messages delivered */
	/* the parser's own state */
	struct uhttp_limits lim;
	int st, sse_cr, chunked, have_len, have_te, have_ct, head_done, nheaders;
	uint64_t len_left, clen, stream_bytes;
	size_t head_bytes;
	struct buf line, sline, data, jbody; /* an HTTP line, an SSE line, an SSE event's data, a JSON body */
	char event[16];			     /* the SSE event type of the event being read ("" = message) */
	int event_other;
};

/* Ready for a first response. Nothing allocated until bytes come. */
void uhttp_resp_init(struct uhttp_resp *r, const struct uhttp_limits *lim);
/* Ready for the next response on the same connection (buffers kept). */
void uhttp_resp_reset(struct uhttp_resp *r);
void uhttp_resp_free(struct uhttp_resp *r);
/* Feed n bytes. *used says how many were consumed. Returns 0 when all were consumed
 * and the response is not complete yet, 1 when it completed (bytes after *used are
 * not this response's), or a negative error with err naming what was wrong; the
 * connection is then unusable. */
int uhttp_resp_feed(struct uhttp_resp *r, const uint8_t *p, size_t n, size_t *used, uhttp_head_fn on_head,
		    uhttp_msg_fn on_msg, void *arg, char *err) AS_MUST_USE;
/* The server closed the connection: 1 when that completes the response (a body
 * delimited by the close), else a negative error (a response cut short). */
int uhttp_resp_eof(struct uhttp_resp *r, uhttp_msg_fn on_msg, void *arg, char *err) AS_MUST_USE;

/* ---- the client ---- */

struct uhttp_header {
	const char *name, *value; /* value: a credential, never logged */
};

struct uhttp_cfg {
	const char *scheme; /* "https" or "http" */
	const char *host;   /* SNI, Host header and the certificate's name (or address) */
	uint16_t port;
	const char *path; /* "/mcp" */
	const struct uhttp_header *headers;
	size_t nheaders;
	const char *ca;	   /* a PEM file of trusted CAs; NULL: UHTTP_SYSTEM_CA */
	size_t body_max;   /* 0: UHTTP_BODY_MAX_DEFAULT */
	size_t stream_max; /* 0: 16 x body_max */
	int any_body;	   /* uhttp_limits' */
	int raw;	   /* uhttp_limits' */
};

struct uhttp;
struct uhttp_conn;

enum uhttp_event {
	UHTTP_EV_DONE = 1,     /* the request's response is complete; status is its HTTP status */
	UHTTP_EV_SESSION_LOST, /* a 404 to a request with Mcp-Session-Id: the session is gone
				  (forgotten here), initialize again; DONE (404) follows */
	UHTTP_EV_LOST,	       /* the request ended without a complete response (see above); status
				  is 1 when not one byte of it was written (a failed handshake: it
				  may be sent again), 0 when the server may have acted on it */
	UHTTP_EV_CLOSED,       /* the connection is gone and its fd closed: attach a new one */
};

struct uhttp_cb {
	uhttp_msg_fn on_msg;
	void (*on_event)(void *arg, enum uhttp_event ev, int status);
	void *arg;
};

/* Checks and copies cfg, reads and parses the CA file, seeds the DRBG: call before the
 * jail. 0 with *out (uhttp_free), or AS_EINVAL / AS_EIO / AS_ECRYPTO / AS_ENOMEM with err
 * (which may name a header but never its value). */
int uhttp_new(const struct uhttp_cfg *cfg, struct uhttp **out, char *err) AS_MUST_USE;
/* Frees u; its connections must have been freed first. Header values are wiped. */
void uhttp_free(struct uhttp *u);
/* How many CA certificates uhttp_new loaded (for the log). */
size_t uhttp_ca_count(const struct uhttp *u);

int uhttp_conn_new(struct uhttp *u, struct uhttp_conn **out, char *err) AS_MUST_USE;
/* Closes its fd if it has one (no event). */
void uhttp_conn_free(struct uhttp_conn *c);
/* Takes a connected TCP socket (blocking or not: every call uses MSG_DONTWAIT); from
 * now on c owns it and closes it. The TLS handshake starts in the next uhttp_io. */
int uhttp_attach(struct uhttp_conn *c, int fd, char *err) AS_MUST_USE;
/* Drops the connection now (a deadline passed: uhttp keeps no time of its own), with
 * UHTTP_EV_LOST for a request in flight and UHTTP_EV_CLOSED; nothing without a fd. */
void uhttp_close(struct uhttp_conn *c, const struct uhttp_cb *cb);
/* The descriptor c holds, or -1. */
int uhttp_fd(const struct uhttp_conn *c);
/* 1 when c has a descriptor and no request in flight. */
int uhttp_idle(const struct uhttp_conn *c);
/* Queues one POST of json (at most body_max bytes). AS_EINVAL when c has no descriptor
 * or a request in flight. */
int uhttp_send(struct uhttp_conn *c, const char *json, size_t n, char *err) AS_MUST_USE;
/* The routing headers of MCP 2026-07-28 (SEP-2243), which must match the body: the
 * caller, which parsed the message, names its method and its params.name (or
 * params.uri); NULL members are left out. Values that are not plain printable ASCII
 * go as =?base64?...?=, so no value can split a header. */
struct uhttp_req {
	const char *method, *name;
	/* A request of another revision than the session's (MCP 2026-07-28, stateless): sent
	 * with this MCP-Protocol-Version and without the session id. NULL: the session's. */
	const char *protocol;
	/* Headers of this request alone (a webhook's signature and delivery id): names of
	 * letters, digits and '-', values printable ASCII, else the send is refused. */
	const struct uhttp_header *extra;
	size_t nextra;
};
int uhttp_send_req(struct uhttp_conn *c, const char *json, size_t n, const struct uhttp_req *rq, char *err) AS_MUST_USE;
/* Queues the GET that opens the session's stream of server-initiated messages (MCP
 * 2025-06-18, optional for servers: a 405 says there is none). Its answer is an SSE
 * stream that ends only when the server ends it: give it a connection of its own. Each
 * event is bounded by body_max; the stream's length is not. AS_EINVAL without a session. */
int uhttp_send_get(struct uhttp_conn *c, char *err) AS_MUST_USE;
/* Queues the GET that resumes an SSE answer the server ended before its end (SEP-1699):
 * Last-Event-ID last_id, the id of the last event it sent on that stream (printable ASCII,
 * at most UHTTP_SSE_ID_MAX bytes, else AS_EINVAL). Its answer is an SSE stream like the
 * GET's. AS_EINVAL without a session. */
int uhttp_send_resume(struct uhttp_conn *c, const char *last_id, char *err) AS_MUST_USE;
/* The id of the last SSE event of the answer just completed ("" when it had none): valid
 * in the UHTTP_EV_DONE callback. */
const char *uhttp_last_event_id(const struct uhttp_conn *c);
/* The SSE retry: of the answer just completed, in ms; -1 when it had none. As above. */
long uhttp_retry_ms(const struct uhttp_conn *c);
/* Queues a DELETE that ends the session (MCP 2025-06-18: a client that no longer needs
 * it should); the session is forgotten here at once. AS_EINVAL without a session. */
int uhttp_send_delete(struct uhttp_conn *c, char *err) AS_MUST_USE;
/* The poll events c waits for: POLLIN, plus POLLOUT while the handshake or the
 * request needs to write; 0 without a descriptor. */
short uhttp_want(const struct uhttp_conn *c);
/* Call when poll says the fd is ready (or any time: nothing blocks). Advances the
 * handshake, writes, reads, parses, and calls cb. Returns 0, or a negative error with err
 * saying what failed (TLS: "certificate not trusted", "certificate name does not match",
 * a handshake alert; HTTP: what in the response was wrong); the connection is then
 * closed, and UHTTP_EV_LOST (if a request was in flight) and UHTTP_EV_CLOSED were
 * reported before it returns. */
int uhttp_io(struct uhttp_conn *c, const struct uhttp_cb *cb, char *err) AS_MUST_USE;

/* Whether the DER certificate's subjectAltName lists the IP address ip (4 or 16 bytes):
 * 1 or 0, AS_EINVAL when the DER is no certificate. The check uhttp makes of a server
 * whose host is an address, for tests and fuzz/uhttp_cert.c. */
int uhttp_der_has_ip(const uint8_t *der, size_t n, const uint8_t *ip, size_t iplen);

/* The session the server gave (Mcp-Session-Id of a 2xx answer), "" before one. */
const char *uhttp_session_id(const struct uhttp *u);
/* The negotiated protocol version, sent as MCP-Protocol-Version from now on. */
int uhttp_set_protocol(struct uhttp *u, const char *version, char *err) AS_MUST_USE;

#endif
