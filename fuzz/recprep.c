/* Fuzz target: the recorder's preparation of a call record (gateway/recorder/prep.c), with a
 * fixed set of operator rules (keys, a prefix, expressions that match empty, by the byte and
 * across characters). Byte 0 chooses how the rest is read:
 *   even: the rest is an F_REC_CALL body as the recorder decodes it (cbor_decode of one
 *         canonical map, what ipc_next hands on_call), whatever fields it holds;
 *   odd:  the rest is the fields of a frame the harness builds: byte 1 is the outcome (mod 3)
 *         and flags (bit 2 the arguments were cut: atot, bit 3 the result: rtot, bit 4 a
 *         sample rate), byte 2 where the planted secret goes, then texts split at 0xff:
 *         tool, emsg, args, res, client, rid, session, user, etype, decision, rule, version
 *         (a text that is not UTF-8 is left out, as no peer can send it). The harness plants
 *         a GitHub token (SECRET) in the error message, and in the arguments and the result:
 *         inside a string value chosen by byte 2 when the text is JSON (spliced into the
 *         text itself when it is cut or not JSON), between spaces, so a word starts with it.
 * Properties: no crash, leak or undefined behaviour; a frame with its required fields is
 * accepted, and its outcome, ok and tool are the frame's; every text of the record is valid
 * UTF-8; error_message has at most REC_ERROR_MAX bytes and none but an error has one;
 * arguments and result are JSON; SECRET survives in no field the recorder redacts, nor in
 * the JSON line, which serialises and says "record": "tool_call". Secrets in object keys are
 * not looked for: redact.h never rewrites keys. */
#define _GNU_SOURCE /* memmem */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cbor.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/proto.h"
#include "gateway/proto/reccfg.h"
#include "gateway/recorder/prep.h"
#include "include/assent/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SECRET "ghp_Pl4nt3dByTh3Recpr3pHarn3ss0123456789" /* ghp_ + 36 */
#define SECRET_CORE "Pl4nt3dByTh3Recpr3pHarn3ss"	  /* an input holding this plants nothing */
/* ASan's regexec measures the whole text on every call: bigger inputs only run slower. */
#define INPUT_MAX 24576

static void fail(const char *why, const char *detail)
{
	fprintf(stderr, "recprep: property violated: %s: %.300s\n", why, detail ? detail : "");
	abort();
}

static struct prep *rules(void)
{
	static struct prep p;
	static int ready;
	if (ready)
		return &p;
	static const char sec[] = "{\"redact_keys\": [\"license\", \"x-fuzz-key\"], \"redact_prefixes\": [\"acme_\"],"
				  " \"redact_patterns\": [\"tok[0-9]{4}\", \"x*\", \"k=.{3}\", \"(ab)+$\", \"^\\\\[\","
				  " \"[^ -~]{2}\", \"\\\\bq\"]}";
	json_t *j = json_loads(sec, 0, NULL);
	static struct rec_cfg cfg; /* p borrows its keys and prefixes */
	char err[AS_ERRLEN];
	if (!j || rec_cfg_load(&cfg, j, "/st", err) != 0 || prep_init(&p, &cfg, 1, err) != 0)
		fail("the harness's rules are refused", err);
	json_decref(j);
	ready = 1;
	return &p;
}

static void utf8(const char *what, const char *s)
{
	if (s && !utf8_valid((const uint8_t *)s, strlen(s)))
		fail("a text of the record is not UTF-8", what);
}

static void no_secret(const char *what, const char *s)
{
	if (s && strstr(s, SECRET))
		fail("the planted secret survives", what);
}

/* What every record must satisfy; planted: SECRET was put in the redacted fields. */
static void check(const struct rec_call *c, int planted)
{
	const struct {
		const char *name, *v;
	} texts[] = {{"call_id", c->call_id},
		     {"tool", c->tool},
		     {"upstream", c->upstream},
		     {"error_type", c->error_type},
		     {"error_message", c->error_message},
		     {"session_id", c->session_id},
		     {"request_id", c->request_id},
		     {"user_sub", c->user_sub},
		     {"caller_kind", c->caller_kind},
		     {"client_id", c->client_id},
		     {"identity", c->identity},
		     {"arguments", c->arguments},
		     {"result", c->result},
		     {"decision", c->decision},
		     {"rule", c->rule},
		     {"server_version", c->server_version},
		     {"extra", c->extra}};
	for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
		utf8(texts[i].name, texts[i].v);
	if (!c->call_id || strlen(c->call_id) != 17 || c->call_id[0] != 'c' ||
	    strspn(c->call_id + 1, "0123456789abcdef") != 16)
		fail("a call id that is not c + 16 hex", c->call_id);
	if (!c->outcome || c->ok != !strcmp(c->outcome, "ok") ||
	    (!c->ok && strcmp(c->outcome, "soft_error") && strcmp(c->outcome, "error")))
		fail("outcome and ok disagree", c->outcome);
	if (c->ok && (c->error_message || c->error_type))
		fail("an ok call with an error", c->error_message);
	if (c->error_message && strlen(c->error_message) > REC_ERROR_MAX)
		fail("error_message over REC_ERROR_MAX bytes", c->error_message);
	if (c->sample_rate < 0 || c->sample_rate > 1)
		fail("a sample rate outside [0, 1]", NULL);
	const char *payloads[2] = {c->arguments, c->result};
	for (int i = 0; i < 2; i++) {
		json_t *j = payloads[i] ? json_loads(payloads[i], JSON_DECODE_ANY, NULL) : NULL;
		if (payloads[i] && !j)
			fail("a payload that is not JSON", payloads[i]);
		json_decref(j);
	}
	if (planted) {
		no_secret("error_message", c->error_message);
		no_secret("arguments", c->arguments);
		no_secret("result", c->result);
	}
	json_t *line = prep_call_json(c);
	if (!line)
		fail("the record has no JSON line", c->tool);
	char *s = json_dumps(line, JSON_COMPACT);
	if (!s)
		fail("the JSON line does not serialise", c->tool);
	if (strcmp(json_string_value(json_object_get(line, "record")) ?: "", "tool_call"))
		fail("the JSON line is not a tool_call record", s);
	if (strcmp(json_string_value(json_object_get(line, "tool")) ?: "", c->tool))
		fail("the JSON line names another tool", s);
	if (planted)
		no_secret("the JSON line", s);
	free(s);
	json_decref(line);
}

static void from_cbor(const uint8_t *p, size_t n)
{
	struct cv_arena a;
	cv_arena_init(&a, n + 16);
	struct cv *body;
	char err[AS_ERRLEN];
	if (cbor_decode(p, n, &a, &body, err) == 0 && body->t == CV_MAP) {
		struct rec_call c;
		err[0] = 0;
		if (prep_call(rules(), body, &c, err) == 0) {
			const struct cv *t = cv_get(body, "tool");
			if (!t || t->t != CV_TEXT || strncmp(c.tool, (const char *)t->s, t->n) || strlen(c.tool) > t->n)
				fail("the record's tool is not the frame's", c.tool);
			check(&c, 0);
		} else if (!err[0])
			fail("a refusal without a message", NULL);
		rec_call_free(&c);
	}
	cv_arena_free(&a);
}

/* s[0..n) with " SECRET " put in at about at/256 of it (at a character boundary), into b. */
static int plant_text(const char *s, size_t n, unsigned at, struct buf *b)
{
	size_t k = n * at / 256;
	while (k > 0 && k < n && ((unsigned char)s[k] & 0xC0) == 0x80)
		k--;
	return buf_put(b, s, k) || buf_put(b, " " SECRET " ", sizeof SECRET + 1) || buf_put(b, s + k, n - k) ||
	       buf_putc(b, 0);
}

/* The string values of v at any depth, in order, up to max. */
static size_t strings(json_t *v, json_t **out, size_t n, size_t max)
{
	if (json_is_string(v) && n < max)
		out[n++] = v;
	const char *k;
	json_t *x;
	size_t i;
	if (json_is_object(v)) {
		json_object_foreach(v, k, x)
		{
			n = strings(x, out, n, max);
		}
	}
	if (json_is_array(v)) {
		json_array_foreach(v, i, x)
		{
			n = strings(x, out, n, max);
		}
	}
	return n;
}

/* A payload with SECRET in it: in a string value of the JSON text, or in the text itself
 * when it is cut or not JSON. NULL when it cannot be made. */
static char *plant_payload(const char *s, size_t n, int cut, unsigned at)
{
	struct buf b;
	buf_init(&b, 4 * n + 256);
	json_t *j = cut ? NULL : json_loadb(s, n, JSON_DECODE_ANY, NULL);
	if (!j) {
		if (plant_text(s, n, at, &b) != 0) {
			buf_free(&b);
			return NULL;
		}
		return (char *)b.p;
	}
	json_t *found[64];
	size_t k = strings(j, found, 0, 64);
	json_t *target = k ? found[at % k] : NULL;
	if (target) {
		if (plant_text(json_string_value(target), json_string_length(target), at, &b) != 0 ||
		    json_string_set(target, (const char *)b.p) != 0) {
			buf_free(&b);
			json_decref(j);
			return NULL;
		}
	} else { /* no string in it: it goes beside the fuzzer's value */
		json_t *w = json_pack("[o,s]", j, "a " SECRET " z");
		j = w;
	}
	buf_free(&b);
	char *out = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	return out;
}

static void from_fields(const uint8_t *p, size_t n)
{
	if (n < 2)
		return;
	unsigned outcome = p[0] % 3, cut_args = p[0] >> 2 & 1, cut_res = p[0] >> 3 & 1, rate = p[0] >> 4 & 1;
	unsigned at = p[1];
	p += 2;
	n -= 2;
	if (memmem(p, n, SECRET_CORE, sizeof SECRET_CORE - 1))
		return; /* the fuzzer wrote the secret itself, in a shape of its choosing */
	static const char *const keys[] = {"tool",    "emsg", "args",  "res",	   "client", "rid",
					   "session", "user", "etype", "decision", "rule",   "version"};
	enum { NKEYS = sizeof keys / sizeof *keys };
	const char *field[NKEYS] = {0};
	size_t len[NKEYS] = {0};
	size_t nf = 0, start = 0;
	for (size_t i = 0; i <= n && nf < NKEYS; i++)
		if (i == n || p[i] == 0xff) {
			field[nf] = (const char *)p + start;
			len[nf++] = i - start;
			start = i + 1;
		}
	struct cv_arena a;
	cv_arena_init(&a, 256);
	struct cv *f = ipc_frame_new(&a, F_REC_CALL, 32);
	int rc = !f || ipc_put_uint(&a, f, "t0", 1767225600123ull) || ipc_put_uint(&a, f, "dur", at * 1000u + 7) ||
		 ipc_put_uint(&a, f, "outcome", outcome) || ipc_put_uint(&a, f, "asz", len[2]);
	int tool_ok = field[0] && utf8_valid((const uint8_t *)field[0], len[0]);
	if (!rc && !tool_ok)
		rc = ipc_put_text(&a, f, "tool", "fuzz", 4);
	char *planted[3] = {NULL, NULL, NULL}; /* emsg, args, res */
	for (size_t i = 0; !rc && i < NKEYS; i++) {
		if (!field[i] || !utf8_valid((const uint8_t *)field[i], len[i]) || (i == 0 && !tool_ok))
			continue;
		const char *v = field[i];
		size_t vn = len[i];
		if (i >= 1 && i <= 3) {
			struct buf b;
			buf_init(&b, 4 * vn + 256);
			planted[i - 1] = i == 1 ? (plant_text(v, vn, at, &b) ? NULL : (char *)b.p)
						: plant_payload(v, vn, i == 2 ? cut_args : cut_res, at);
			if (i != 1 || !planted[0])
				buf_free(&b);
			if (!planted[i - 1])
				continue;
			v = planted[i - 1];
			vn = strlen(v);
		}
		rc = ipc_put_text(&a, f, keys[i], v, vn);
	}
	if (!rc && cut_args && field[2])
		rc = ipc_put_uint(&a, f, "atot", len[2] + 100000);
	if (!rc && cut_res && field[3])
		rc = ipc_put_uint(&a, f, "rtot", len[3] + 100000);
	if (!rc && field[3])
		rc = ipc_put_uint(&a, f, "rsz", len[3]);
	if (!rc && rate)
		rc = ipc_put_uint(&a, f, "rate", 1 + at * 3921u);
	/* through the bytes, as the recorder receives it */
	struct buf w;
	buf_init(&w, IPC_FRAME_MAX);
	char err[AS_ERRLEN];
	struct cv_arena d;
	cv_arena_init(&d, 256);
	struct cv *body;
	if (!rc && (cbor_encode(f, &w, err) != 0 || cbor_decode(w.p, w.len, &d, &body, err) != 0))
		fail("the harness's frame does not encode and decode", err);
	if (!rc) {
		struct rec_call c;
		if (prep_call(rules(), body, &c, err) != 0)
			fail("a frame with its required fields is refused", err);
		static const char *const names[] = {"ok", "soft_error", "error"};
		if (strcmp(c.outcome, names[outcome]) || c.ok != (outcome == 0))
			fail("the record's outcome is not the frame's", c.outcome);
		if (tool_ok && (strlen(c.tool) > len[0] || strncmp(c.tool, field[0], len[0])))
			fail("the record's tool is not the frame's", c.tool);
		check(&c, 1);
		rec_call_free(&c);
	}
	for (int i = 0; i < 3; i++)
		free(planted[i]);
	buf_free(&w);
	cv_arena_free(&d);
	cv_arena_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > INPUT_MAX)
		return 0;
	if (data[0] & 1)
		from_fields(data + 1, size - 1);
	else
		from_cbor(data + 1, size - 1);
	return 0;
}
