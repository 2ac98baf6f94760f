/* The witness answer reader (wresp.h). Everything goes through struct rd. */
#include "gateway/worker/notify/wresp.h"

#include <string.h>

#include "common/util.h"

#define COSIG_BLOB 76		   /* key ID 4, timestamp 8, Ed25519 signature 64 */
#define SIG_PREFIX "\xe2\x80\x94 " /* an em dash and a space (ledger/note.h's NOTE_SIG_PREFIX) */

/* A key name as signed notes have them: 1 to 255 printable ASCII bytes, no space or '+'. */
static int wname_ok(const struct rd *n)
{
	if (n->len == 0 || n->len > PROTO_WITNESS_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n->len; i++)
		if (n->p[i] < 0x21 || n->p[i] > 0x7e || n->p[i] == '+')
			return 0;
	return 1;
}

static int size_line(const uint8_t *body, size_t n, struct wresp *out, char *err)
{
	struct rd r, line;
	uint64_t v = 0;
	rd_init(&r, body, n);
	if (rd_line(&r, &line) != 0 || rd_left(&r) != 0 || line.len == 0 || line.len > 19 ||
	    (line.len > 1 && line.p[0] == '0'))
		return as_fail(err, AS_EINVAL, "a 409 whose body is not one tree size line");
	for (size_t i = 0; i < line.len; i++) {
		if (line.p[i] < '0' || line.p[i] > '9')
			return as_fail(err, AS_EINVAL, "a 409 whose size has a byte that is not a digit");
		v = v * 10 + (uint64_t)(line.p[i] - '0');
	}
	if (v > PROTO_WITNESS_SIZE_MAX)
		return as_fail(err, AS_EINVAL, "a 409 whose size is over 2^63 - 1");
	out->has_size = 1;
	out->size = v;
	return 0;
}

static int cosig_line(struct rd line, size_t no, struct wresp *out, char *err)
{
	struct rd name;
	static uint8_t blob[PROTO_WITNESS_RESP_MAX];
	size_t bl = 0;
	if (rd_expect(&line, SIG_PREFIX) != 0 || rd_token(&line, " ", &name) != 0 || !wname_ok(&name) ||
	    rd_expect(&line, " ") != 0 ||
	    b64_decode((const char *)line.p + line.off, rd_left(&line), blob, sizeof blob, &bl) != 0 || bl < 5)
		return as_fail(err, AS_EINVAL, "line %zu of the answer is not a note signature line", no);
	if (bl != COSIG_BLOB)
		return 0; /* another signature type: not ours to read */
	if (out->n == PROTO_WITNESS_COSIGS_MAX)
		return as_fail(err, AS_EINVAL, "more than %d Ed25519 cosignature lines", PROTO_WITNESS_COSIGS_MAX);
	struct wresp_cosig *c = &out->c[out->n];
	struct rd b;
	rd_init(&b, blob, bl);
	const uint8_t *p;
	if (rd_take(&b, 4, &p) != 0)
		return as_fail(err, AS_EINVAL, "line %zu: no key ID", no);
	memcpy(c->keyid, p, 4);
	if (rd_be(&b, 8, &c->time) != 0 || c->time > PROTO_WITNESS_SIZE_MAX)
		return as_fail(err, AS_EINVAL, "line %zu: a timestamp over 2^63 - 1", no);
	if (rd_take(&b, 64, &p) != 0)
		return as_fail(err, AS_EINVAL, "line %zu: no signature", no);
	memcpy(c->sig, p, 64);
	memcpy(c->name, name.p, name.len);
	c->name[name.len] = 0;
	out->n++;
	return 0;
}

int wresp_parse(int status, const uint8_t *body, size_t n, struct wresp *out, char *err)
{
	memset(out, 0, sizeof *out);
	if (n > PROTO_WITNESS_RESP_MAX)
		return as_fail(err, AS_EINVAL, "an answer of %zu bytes (at most %d)", n, PROTO_WITNESS_RESP_MAX);
	if (status == 409)
		return size_line(body, n, out, err);
	if (status != 200)
		return 0;
	struct rd r, line;
	rd_init(&r, body, n);
	for (size_t no = 1; rd_left(&r) > 0; no++) {
		if (rd_line(&r, &line) != 0)
			return as_fail(err, AS_EINVAL, "line %zu of the answer has no newline", no);
		GUARD(cosig_line(line, no, out, err));
	}
	return 0;
}
