/* The response half of the upstream HTTP client (uhttp.h): an HTTP/1.1 response parser
 * over bytes as they come (any split), with the MCP Streamable HTTP bodies decoded: a
 * JSON body or batch, or an SSE stream (WHATWG "event stream" rules). Pure: no I/O, so
 * fuzz/uhttp.c runs it on arbitrary bytes. Every line, header, body and event is bounded
 * before it is stored; anything HTTP/1.1 does not allow is an error naming it. */
#include <string.h>
#include <strings.h>

#include "gateway/worker/upstream/uhttp.h"

enum {
	ST_STATUS,
	ST_HEADERS,
	ST_BODY_LEN,   /* Content-Length bytes */
	ST_BODY_CLOSE, /* until the connection closes */
	ST_CHUNK_SIZE,
	ST_CHUNK_DATA,
	ST_CHUNK_CRLF,
	ST_TRAILERS,
	ST_DONE,
};

void uhttp_resp_init(struct uhttp_resp *r, const struct uhttp_limits *lim)
{
	memset(r, 0, sizeof *r);
	r->lim = *lim;
	if (r->lim.body_max == 0)
		r->lim.body_max = UHTTP_BODY_MAX_DEFAULT;
	if (r->lim.stream_max == 0)
		r->lim.stream_max = 16 * (uint64_t)r->lim.body_max;
	/* A body line (SSE) may be as long as an event plus its field name. */
	buf_init(&r->line, UHTTP_HEADER_LINE_MAX);
	buf_init(&r->sline, r->lim.body_max + 64);
	buf_init(&r->data, r->lim.body_max);
	buf_init(&r->jbody, r->lim.body_max);
}

void uhttp_resp_reset(struct uhttp_resp *r)
{
	struct buf line = r->line, sline = r->sline, data = r->data, jbody = r->jbody;
	struct uhttp_limits lim = r->lim;
	memset(r, 0, sizeof *r);
	r->lim = lim;
	r->line = line;
	r->sline = sline;
	r->data = data;
	r->jbody = jbody;
	buf_reset(&r->line);
	buf_reset(&r->sline);
	buf_reset(&r->data);
	buf_reset(&r->jbody);
}

void uhttp_resp_free(struct uhttp_resp *r)
{
	buf_free(&r->line);
	buf_free(&r->sline);
	buf_free(&r->data);
	buf_free(&r->jbody);
}

/* A bounded, printable copy of untrusted bytes for an error message. */
static void shown(const uint8_t *p, size_t n, char *out, size_t cap)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k + 1 < cap; i++)
		out[k++] = p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\'' ? (char)p[i] : '?';
	out[k] = 0;
}

static int is_tchar(uint8_t c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Collects one line into r->line, at most max bytes. Returns 1 with the line (CR LF or
 * LF cut off) complete, 0 when every byte was taken and the line goes on. */
static int take_line(struct uhttp_resp *r, struct rd *in, size_t max, const char *what, char *err)
{
	const uint8_t *p = in->p + in->off;
	size_t left = rd_left(in);
	const uint8_t *lf = memchr(p, '\n', left);
	size_t n = lf ? (size_t)(lf - p) : left;
	if (r->line.len + n > max)
		return as_fail(err, AS_ETOOBIG, "HTTP: %s longer than %zu bytes", what, max);
	if (buf_put(&r->line, p, n) != 0)
		return as_fail(err, AS_ENOMEM, "HTTP: out of memory for a %s", what);
	in->off += n + (lf != NULL);
	if (!lf)
		return 0;
	if (r->line.len && r->line.p[r->line.len - 1] == '\r')
		r->line.len--;
	for (size_t i = 0; i < r->line.len; i++)
		if (r->line.p[i] == '\r' || r->line.p[i] == 0)
			return as_fail(err, AS_EINVAL, "HTTP: a %s has a bare CR or a NUL byte", what);
	return 1;
}

static int parse_status(struct uhttp_resp *r, char *err)
{
	struct rd l;
	char show[64];
	rd_init(&l, r->line.p, r->line.len);
	shown(r->line.p, r->line.len, show, sizeof show);
	/* An HTTP/1.0 server (Python's http.server by default) answers as well: its
	 * connection is not kept (keep-alive is not asked for), and its status counts. */
	if (rd_expect(&l, "HTTP/1.0 ") == 0)
		r->close = 1;
	else if (rd_expect(&l, "HTTP/1.1 ") != 0)
		return as_fail(err, AS_EINVAL, "HTTP: not an HTTP/1.1 (or 1.0) status line: '%s'", show);
	int status = 0;
	for (int i = 0; i < 3; i++) {
		uint8_t c;
		if (rd_u8(&l, &c) != 0 || c < '0' || c > '9')
			return as_fail(err, AS_EINVAL, "HTTP: the status is not three digits: '%s'", show);
		status = status * 10 + (c - '0');
	}
	uint8_t sp;
	if (rd_left(&l) && (rd_u8(&l, &sp) != 0 || sp != ' '))
		return as_fail(err, AS_EINVAL, "HTTP: no space after the status: '%s'", show);
	for (size_t i = l.off; i < l.len; i++)
		if (l.p[i] < 0x20 && l.p[i] != '\t')
			return as_fail(err, AS_EINVAL, "HTTP: a control byte in the reason phrase: '%s'", show);
	if (status < 100 || status > 599)
		return as_fail(err, AS_EINVAL, "HTTP: status %d is out of range", status);
	if (status == 101)
		return as_fail(err, AS_EINVAL, "HTTP: the server switched protocols (101), which was not asked");
	r->status = status;
	return 0;
}

/* The media type of a Content-Type value (before any parameter), lowercase compared. */
static int media_is(struct rd v, const char *type)
{
	struct rd t;
	if (rd_token(&v, ";", &t) != 0)
		return 0;
	rd_trim_end(&t, RD_OWS);
	return rd_casecmp(&t, type) == 0;
}

/* Connection: a comma list of options; "close" anywhere in it closes. */
static int has_close(struct rd v)
{
	while (rd_left(&v)) {
		struct rd t;
		rd_skip_ws(&v, RD_OWS ",");
		if (rd_token(&v, ",", &t) != 0)
			break;
		rd_trim_end(&t, RD_OWS);
		if (rd_casecmp(&t, "close") == 0)
			return 1;
	}
	return 0;
}

static int parse_u64_rd(struct rd v, uint64_t *out)
{
	char s[24];
	if (rd_left(&v) == 0 || rd_left(&v) >= sizeof s)
		return AS_EINVAL;
	memcpy(s, v.p + v.off, rd_left(&v));
	s[rd_left(&v)] = 0;
	return parse_u64(s, out);
}

static int parse_header(struct uhttp_resp *r, char *err)
{
	struct rd l, name;
	char show[64];
	rd_init(&l, r->line.p, r->line.len);
	if (++r->nheaders > UHTTP_HEADERS_MAX)
		return as_fail(err, AS_ETOOBIG, "HTTP: more than %d header lines", UHTTP_HEADERS_MAX);
	if (r->line.len && (r->line.p[0] == ' ' || r->line.p[0] == '\t'))
		return as_fail(err, AS_EINVAL, "HTTP: a folded header line (obsolete, refused)");
	if (rd_token(&l, ":", &name) != 0 || rd_expect(&l, ":") != 0) {
		shown(r->line.p, r->line.len, show, sizeof show);
		return as_fail(err, AS_EINVAL, "HTTP: a header line without a name and ':': '%s'", show);
	}
	for (size_t i = 0; i < name.len; i++)
		if (!is_tchar(name.p[i])) {
			shown(name.p, name.len, show, sizeof show);
			return as_fail(err, AS_EINVAL, "HTTP: a header name with a byte not allowed in it: '%s'", show);
		}
	rd_skip_ws(&l, RD_OWS);
	rd_trim_end(&l, RD_OWS);
	for (size_t i = l.off; i < l.len; i++)
		if (l.p[i] < 0x20 && l.p[i] != '\t') {
			shown(name.p, name.len, show, sizeof show);
			return as_fail(err, AS_EINVAL, "HTTP: a control byte in the value of header '%s'", show);
		}
	if (r->st == ST_TRAILERS) /* trailers are read, bounded and ignored */
		return 0;
	if (rd_casecmp(&name, "content-length") == 0) {
		uint64_t v;
		shown(l.p + l.off, rd_left(&l), show, sizeof show);
		if (parse_u64_rd(l, &v) != 0)
			return as_fail(err, AS_EINVAL, "HTTP: Content-Length is not a number: '%s'", show);
		if (r->have_len && v != r->clen)
			return as_fail(err, AS_EINVAL, "HTTP: two Content-Length headers that differ");
		r->have_len = 1;
		r->clen = v;
	} else if (rd_casecmp(&name, "transfer-encoding") == 0) {
		shown(l.p + l.off, rd_left(&l), show, sizeof show);
		if (r->have_te || rd_casecmp(&l, "chunked") != 0)
			return as_fail(err, AS_EINVAL, "HTTP: Transfer-Encoding '%s' (only one 'chunked' is accepted)",
				       show);
		r->have_te = 1;
	} else if (rd_casecmp(&name, "content-type") == 0) {
		if (r->have_ct)
			return as_fail(err, AS_EINVAL, "HTTP: two Content-Type headers");
		r->have_ct = media_is(l, "application/json") ? 1 : media_is(l, "text/event-stream") ? 2 : 3;
		if (r->have_ct == 3)
			shown(l.p + l.off, rd_left(&l), r->event, sizeof r->event); /* for the error, if 2xx */
	} else if (rd_casecmp(&name, "connection") == 0) {
		r->close |= has_close(l);
	} else if (rd_casecmp(&name, "mcp-session-id") == 0) {
		size_t n = rd_left(&l);
		if (r->session[0])
			return as_fail(err, AS_EINVAL, "HTTP: two Mcp-Session-Id headers");
		if (n == 0 || n > UHTTP_SESSION_MAX)
			return as_fail(err, AS_EINVAL, "HTTP: Mcp-Session-Id of %zu bytes (1 to %d)", n,
				       UHTTP_SESSION_MAX);
		for (size_t i = l.off; i < l.len; i++)
			if (l.p[i] < 0x21 || l.p[i] > 0x7e)
				return as_fail(err, AS_EINVAL,
					       "HTTP: Mcp-Session-Id has a byte that is not visible ASCII");
		memcpy(r->session, l.p + l.off, n);
		r->session[n] = 0;
	}
	return 0;
}

/* The headers are complete: decide the framing and what the body is. */
static int head_end(struct uhttp_resp *r, char *err)
{
	int s = r->status;
	if (r->have_te && r->have_len)
		return as_fail(err, AS_EINVAL, "HTTP: both Transfer-Encoding and Content-Length");
	int two = s >= 200 && s < 300;
	r->body = two && s != 202 && r->have_ct == 1   ? UHTTP_BODY_JSON
		  : two && s != 202 && r->have_ct == 2 ? UHTTP_BODY_SSE
						       : UHTTP_BODY_DISCARD;
	int empty = r->have_len && r->clen == 0 && !r->have_ct; /* a DELETE's 200, say */
	if (two && s != 202 && s != 204 && !empty && r->body == UHTTP_BODY_DISCARD && !r->lim.any_body)
		return as_fail(err, AS_EINVAL,
			       "HTTP: a %d answer with Content-Type '%s' (not application/json "
			       "nor text/event-stream)",
			       s, r->have_ct == 3 ? r->event : "");
	if (r->lim.raw)
		r->body = UHTTP_BODY_RAW;
	r->event[0] = 0;
	if (s == 204 || s == 304) {
		r->st = ST_DONE;
		r->body = UHTTP_BODY_NONE;
		return 0;
	}
	if (r->have_te) {
		r->chunked = 1;
		r->st = ST_CHUNK_SIZE;
	} else if (r->have_len) {
		if (r->body != UHTTP_BODY_SSE && r->clen > r->lim.body_max)
			return as_fail(err, AS_ETOOBIG, "HTTP: a body of %llu bytes (at most %zu)",
				       (unsigned long long)r->clen, r->lim.body_max);
		r->len_left = r->clen;
		r->st = r->clen ? ST_BODY_LEN : ST_DONE;
	} else {
		r->close = 1;
		r->st = ST_BODY_CLOSE;
	}
	if (r->st == ST_DONE && r->body == UHTTP_BODY_JSON)
		return as_fail(err, AS_EINVAL, "HTTP: a %d answer with an empty JSON body", s);
	return 0;
}

/* ---- bodies ---- */

static int deliver(struct uhttp_resp *r, const uint8_t *p, size_t n, uhttp_msg_fn on_msg, void *arg, char *err)
{
	r->nmsgs++;
	int rc = on_msg ? on_msg(arg, (const char *)p, n) : 0;
	return rc < 0 ? as_fail(err, rc, "HTTP: message %zu of the answer was refused by its reader", r->nmsgs) : 0;
}

#define JSON_DEPTH_MAX 1000

/* One JSON value from v's cursor: strings and nesting followed (each closer must match
 * its opener); stops before a ',' or ']' at depth 0, or at the end. Not a validator:
 * each message is parsed by the caller. */
static int json_value_end(struct rd *v)
{
	uint8_t opener[JSON_DEPTH_MAX / 8 + 1] = {0}; /* a bit per level: 1 for '[', 0 for '{' */
	int depth = 0, in_str = 0;
	for (; v->off < v->len; v->off++) {
		uint8_t c = v->p[v->off];
		if (in_str) {
			if (c == '\\' && v->off + 1 < v->len)
				v->off++;
			else if (c == '"')
				in_str = 0;
			continue;
		}
		if (c == '"') {
			in_str = 1;
		} else if (c == '[' || c == '{') {
			if (depth == JSON_DEPTH_MAX)
				return AS_EINVAL;
			if (c == '[')
				opener[depth / 8] |= (uint8_t)(1u << (depth % 8));
			else
				opener[depth / 8] &= (uint8_t) ~(1u << (depth % 8));
			depth++;
		} else if ((c == ',' || c == ']') && depth == 0) {
			return 0;
		} else if (c == ']' || c == '}') {
			if (depth == 0 || ((opener[(depth - 1) / 8] >> ((depth - 1) % 8)) & 1) != (c == ']'))
				return AS_EINVAL;
			depth--;
		}
	}
	return in_str || depth ? AS_EINVAL : 0;
}

/* A complete JSON body: one message, or a batch array whose elements are delivered. */
static int json_body(struct uhttp_resp *r, uhttp_msg_fn on_msg, void *arg, char *err)
{
	struct rd v;
	rd_init(&v, r->jbody.p, r->jbody.len);
	rd_skip_ws(&v, RD_JSON_WS);
	rd_trim_end(&v, RD_JSON_WS);
	if (rd_left(&v) == 0)
		return as_fail(err, AS_EINVAL, "HTTP: an empty JSON body");
	if (rd_expect(&v, "[") != 0)
		return deliver(r, v.p + v.off, rd_left(&v), on_msg, arg, err);
	if (rd_expect_end(&v, "]") != 0)
		return as_fail(err, AS_EINVAL, "HTTP: a JSON batch without its closing ']'");
	rd_skip_ws(&v, RD_JSON_WS);
	if (rd_left(&v) == 0)
		return as_fail(err, AS_EINVAL, "HTTP: an empty JSON batch");
	for (;;) {
		size_t start = v.off;
		if (json_value_end(&v) != 0)
			return as_fail(err, AS_EINVAL, "HTTP: a malformed JSON batch");
		struct rd el;
		rd_init(&el, v.p + start, v.off - start);
		rd_trim_end(&el, RD_JSON_WS);
		if (rd_left(&el) == 0)
			return as_fail(err, AS_EINVAL, "HTTP: an empty element in a JSON batch");
		GUARD(deliver(r, el.p, el.len, on_msg, arg, err));
		if (v.off >= v.len)
			return 0;
		uint8_t c;
		if (rd_u8(&v, &c) != 0 || c != ',')
			return as_fail(err, AS_EINVAL, "HTTP: a malformed JSON batch");
		rd_skip_ws(&v, RD_JSON_WS);
	}
}

/* One complete SSE line in r->sline (its end of line cut off). */
static int sse_line(struct uhttp_resp *r, uhttp_msg_fn on_msg, void *arg, char *err)
{
	struct rd l, name;
	rd_init(&l, r->sline.p, r->sline.len);
	if (r->sline.len == 0) { /* dispatch */
		int rc = 0;
		/* An empty data field is no message: servers send one with an id to prime a
		 * reconnection (MCP 2025-11-25). */
		if (r->data.len > 1 && !r->event_other && (r->event[0] == 0 || strcmp(r->event, "message") == 0))
			rc = deliver(r, r->data.p, r->data.len - 1 /* the last LF */, on_msg, arg, err);
		buf_reset(&r->data);
		r->event[0] = 0;
		r->event_other = 0;
		return rc;
	}
	if (r->sline.p[0] == ':') /* a comment (keep-alive) */
		goto out;
	if (rd_token(&l, ":", &name) != 0)
		goto out;
	if (rd_expect(&l, ":") == 0) {
		int space = rd_expect(&l, " "); /* one space after the colon is not the value's */
		(void)space;
	}
	const uint8_t *v = l.p + l.off;
	size_t n = rd_left(&l);
	if (rd_cmp(&name, "data") == 0) {
		if (r->data.len + n + 1 > r->lim.body_max)
			return as_fail(err, AS_ETOOBIG, "SSE: an event of more than %zu bytes", r->lim.body_max);
		if (buf_put(&r->data, v, n) != 0 || buf_putc(&r->data, '\n') != 0)
			return as_fail(err, AS_ENOMEM, "SSE: out of memory for an event");
	} else if (rd_cmp(&name, "event") == 0) {
		r->event_other = n >= sizeof r->event;
		if (!r->event_other) {
			memcpy(r->event, v, n);
			r->event[n] = 0;
		}
	} else if (rd_cmp(&name, "id") == 0) {
		if (n > UHTTP_SSE_ID_MAX)
			return as_fail(err, AS_ETOOBIG, "SSE: an id of more than %d bytes", UHTTP_SSE_ID_MAX);
		if (!memchr(v, 0, n)) { /* an id with a NUL is ignored (WHATWG) */
			memcpy(r->last_event_id, v, n);
			r->last_event_id[n] = 0;
		}
	} else if (rd_cmp(&name, "retry") == 0) {
		/* the reconnection time in ms: ASCII digits only, else ignored (WHATWG) */
		uint32_t ms = 0;
		size_t i = 0;
		while (i < n && i < 9 && v[i] >= '0' && v[i] <= '9')
			ms = ms * 10 + (uint32_t)(v[i++] - '0');
		if (n && i == n) {
			r->retry_ms = ms;
			r->have_retry = 1;
		}
	} /* unknown fields: ignored */
out:
	buf_reset(&r->sline);
	return 0;
}

/* Body bytes of an SSE stream: lines end at CR LF, LF or CR (any split across reads). */
static int sse_feed(struct uhttp_resp *r, const uint8_t *p, size_t n, uhttp_msg_fn on_msg, void *arg, char *err)
{
	/* The bytes up to the stream's bound are read first, so that an error in them is
	 * reported whatever the reads were. */
	uint64_t room = r->lim.stream_max - r->stream_bytes;
	int over = n > room;
	if (over)
		n = (size_t)room;
	r->stream_bytes += n;
	size_t i = 0;
	while (i < n) {
		if (r->sse_cr && p[i] == '\n') { /* the LF of a CR LF */
			r->sse_cr = 0;
			i++;
			continue;
		}
		r->sse_cr = 0;
		size_t j = i;
		while (j < n && p[j] != '\n' && p[j] != '\r')
			j++;
		if (r->sline.len + (j - i) > r->sline.max)
			return as_fail(err, AS_ETOOBIG, "SSE: a line of more than %zu bytes", r->sline.max);
		if (buf_put(&r->sline, p + i, j - i) != 0)
			return as_fail(err, AS_ENOMEM, "SSE: out of memory for a line");
		if (j == n)
			break;
		r->sse_cr = p[j] == '\r';
		i = j + 1;
		GUARD(sse_line(r, on_msg, arg, err));
	}
	if (over)
		return as_fail(err, AS_ETOOBIG, "SSE: a stream of more than %llu bytes",
			       (unsigned long long)r->lim.stream_max);
	return 0;
}

static int body_bytes(struct uhttp_resp *r, const uint8_t *p, size_t n, uhttp_msg_fn on_msg, void *arg, char *err)
{
	switch (r->body) {
	case UHTTP_BODY_SSE:
		return sse_feed(r, p, n, on_msg, arg, err);
	case UHTTP_BODY_JSON:
	case UHTTP_BODY_RAW:
		if (r->jbody.len + n > r->lim.body_max)
			return as_fail(err, AS_ETOOBIG, "HTTP: a body of more than %zu bytes", r->lim.body_max);
		if (buf_put(&r->jbody, p, n) != 0)
			return as_fail(err, AS_ENOMEM, "HTTP: out of memory for a body");
		return 0;
	default:
		r->stream_bytes += n;
		if (r->stream_bytes > r->lim.body_max)
			return as_fail(err, AS_ETOOBIG, "HTTP: a %d answer's body of more than %zu bytes", r->status,
				       r->lim.body_max);
		return 0;
	}
}

static int body_end(struct uhttp_resp *r, uhttp_msg_fn on_msg, void *arg, char *err)
{
	r->st = ST_DONE;
	if (r->body == UHTTP_BODY_JSON)
		return json_body(r, on_msg, arg, err);
	if (r->body == UHTTP_BODY_RAW && r->jbody.len)
		return deliver(r, r->jbody.p, r->jbody.len, on_msg, arg, err);
	return 0; /* an SSE event not ended by a blank line is dropped (WHATWG) */
}

static int chunk_size(struct uhttp_resp *r, char *err)
{
	struct rd l;
	char show[32];
	rd_init(&l, r->line.p, r->line.len);
	uint64_t v = 0;
	size_t digits = 0;
	uint8_t c;
	while (rd_peek(&l, &c) == 0 && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
		l.off++;
		if (++digits > 15)
			return as_fail(err, AS_ETOOBIG, "HTTP: a chunk size of more than 15 hex digits");
		v = v * 16 + (uint64_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
	}
	rd_skip_ws(&l, RD_OWS);
	if (digits == 0 || (rd_left(&l) && (rd_peek(&l, &c) != 0 || c != ';'))) {
		shown(r->line.p, r->line.len, show, sizeof show);
		return as_fail(err, AS_EINVAL, "HTTP: a malformed chunk size line: '%s'", show);
	}
	r->len_left = v;
	r->st = v ? ST_CHUNK_DATA : ST_TRAILERS;
	return 0;
}

int uhttp_resp_feed(struct uhttp_resp *r, const uint8_t *p, size_t n, size_t *used, uhttp_head_fn on_head,
		    uhttp_msg_fn on_msg, void *arg, char *err)
{
	struct rd in;
	rd_init(&in, p, n);
	int rc = 0;
	*used = 0;
	while (r->st != ST_DONE && rd_left(&in)) {
		switch (r->st) {
		case ST_STATUS:
		case ST_HEADERS:
		case ST_CHUNK_SIZE:
		case ST_CHUNK_CRLF:
		case ST_TRAILERS: {
			int head = r->st == ST_HEADERS || r->st == ST_TRAILERS;
			size_t max = r->st == ST_STATUS ? UHTTP_STATUS_LINE_MAX : head ? UHTTP_HEADER_LINE_MAX : 1024;
			const char *what = r->st == ST_STATUS ? "status line"
					   : head	      ? "header line"
							      : "chunk size line";
			size_t before = in.off;
			rc = take_line(r, &in, max, what, err);
			if (rc < 0)
				goto fail;
			r->head_bytes += in.off - before;
			if (rc == 0)
				break;
			/* Checked once a line is whole (a partial one is bounded by max), so that
			 * the error is the same however the bytes were cut into reads. */
			if (head && r->head_bytes > UHTTP_HEADERS_BYTES_MAX) {
				rc = as_fail(err, AS_ETOOBIG, "HTTP: headers of more than %u bytes",
					     UHTTP_HEADERS_BYTES_MAX);
				goto fail;
			}
			if (r->st == ST_STATUS) {
				rc = parse_status(r, err);
				r->st = ST_HEADERS;
			} else if (r->st == ST_CHUNK_CRLF) {
				rc = r->line.len ? as_fail(err, AS_EINVAL, "HTTP: bytes after a chunk's data") : 0;
				r->st = ST_CHUNK_SIZE;
			} else if (r->st == ST_CHUNK_SIZE) {
				rc = chunk_size(r, err);
			} else if (r->line.len) {
				rc = parse_header(r, err);
			} else if (r->st == ST_TRAILERS) {
				rc = body_end(r, on_msg, arg, err);
			} else if (r->status < 200) { /* 100 Continue and the like: the answer follows */
				r->st = ST_STATUS;
				r->have_len = r->have_te = r->have_ct = r->close = 0;
				r->session[0] = 0;
				r->status = 0;
			} else {
				rc = head_end(r, err);
				r->head_done = 1;
				if (rc == 0 && on_head)
					rc = on_head(arg, r) < 0
						 ? as_fail(err, AS_EINVAL,
							   "HTTP: the answer's head was refused by its reader")
						 : 0;
				if (rc == 0 && r->st == ST_DONE)
					rc = body_end(r, on_msg, arg, err);
			}
			buf_reset(&r->line);
			if (rc < 0)
				goto fail;
			break;
		}
		case ST_BODY_LEN:
		case ST_CHUNK_DATA:
		case ST_BODY_CLOSE: {
			size_t k = rd_left(&in);
			if (r->st != ST_BODY_CLOSE && k > r->len_left)
				k = (size_t)r->len_left;
			rc = body_bytes(r, in.p + in.off, k, on_msg, arg, err);
			if (rc < 0)
				goto fail;
			in.off += k;
			if (r->st == ST_BODY_CLOSE)
				break;
			r->len_left -= k;
			if (r->len_left == 0 && r->st == ST_CHUNK_DATA)
				r->st = ST_CHUNK_CRLF;
			else if (r->len_left == 0 && (rc = body_end(r, on_msg, arg, err)) < 0)
				goto fail;
			break;
		}
		}
	}
	*used = in.off;
	return r->st == ST_DONE;
fail:
	*used = in.off;
	r->close = 1;
	return rc;
}

int uhttp_resp_eof(struct uhttp_resp *r, uhttp_msg_fn on_msg, void *arg, char *err)
{
	if (r->st == ST_DONE)
		return 1;
	if (r->st == ST_BODY_CLOSE) {
		GUARD(body_end(r, on_msg, arg, err));
		return 1;
	}
	if (r->st == ST_STATUS && r->line.len == 0)
		return as_fail(err, AS_EIO, "HTTP: the server closed the connection without an answer");
	return as_fail(err, AS_EIO, "HTTP: the server closed the connection in the middle of its answer");
}
