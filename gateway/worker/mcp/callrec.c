/* Timing, sizing and classifying every tools/call the mcp worker answers (callrec.h). */
#define _GNU_SOURCE
#include "gateway/worker/mcp/callrec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/text.h"
#include "common/util.h"
#include "gateway/proto/action.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/limits.h"
#include "gateway/proto/proto.h"
#include "gateway/proto/reccfg.h"
#include "gateway/worker/mcp/softerr.h"

#define CR_SLOTS 4096 /* calls open at once that can be recorded */
#define CR_PROBE 64   /* slots looked at from a call's hash */

struct crec {
	int used;
	uint64_t conn;
	char rid[PROTO_RID_MAX + 1];
	char tool[RECCFG_NAME_MAX + 1];
	char up[33];
	char client[ACTION_CLIENT_MAX + 1];
	uint64_t t0_ms, t0_us; /* wall clock, and monotonic for the duration */
	uint64_t asz;
	json_t *args; /* mode full (and not a meta-only tool): kept until the end */
};

struct callrec {
	struct rec_cfg cfg;
	const char *statuses[RECCFG_LIST_MAX];
	struct softerr_rules rules;
	int ipcfd;
	uint64_t rng;
	struct cv_arena a; /* the batch's records, until callrec_flush */
	struct cv *batch[PROTO_CALLRECS_MAX];
	size_t nbatch, bytes; /* bytes: of its texts, bounded so that a batch is one frame */
	struct crec slots[CR_SLOTS];
	size_t open;	    /* slots used */
	uint64_t untracked; /* calls begun with every probed slot taken */
};

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

struct callrec *callrec_new(const json_t *cfg, int ipcfd, char *err)
{
	if (!cfg)
		return NULL;
	struct callrec *t = calloc(1, sizeof *t);
	if (!t) {
		as_fail(err, AS_ENOMEM, "out of memory");
		return NULL;
	}
	if (rec_cfg_from_json(&t->cfg, cfg, err) != 0 || t->cfg.mode == REC_OFF) {
		free(t);
		return NULL;
	}
	for (size_t i = 0; i < t->cfg.nstatuses; i++)
		t->statuses[i] = t->cfg.statuses[i];
	t->rules = (struct softerr_rules){.statuses = t->statuses, .nstatuses = t->cfg.nstatuses};
	t->ipcfd = ipcfd;
	if (getrandom(&t->rng, sizeof t->rng, 0) != (ssize_t)sizeof t->rng || !t->rng) /* before the jail */
		t->rng = mono_us() | 1;
	cv_arena_init(&t->a, 64 * PROTO_CALLRECS_MAX);
	return t;
}

void callrec_free(struct callrec *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < CR_SLOTS; i++)
		json_decref(t->slots[i].args);
	cv_arena_free(&t->a);
	free(t);
}

static size_t slot_of(uint64_t conn, const char *rid, size_t ridn)
{
	uint64_t h = 1469598103934665603ull ^ conn;
	for (size_t i = 0; i < ridn; i++)
		h = (h ^ (uint8_t)rid[i]) * 1099511628211ull;
	return (size_t)(h % CR_SLOTS);
}

static struct crec *find(const struct callrec *t, uint64_t conn, const char *rid, size_t ridn)
{
	size_t s = slot_of(conn, rid, ridn);
	for (size_t i = 0; i < CR_PROBE; i++) {
		const struct crec *c = &t->slots[(s + i) % CR_SLOTS];
		if (c->used && c->conn == conn && strlen(c->rid) == ridn && !memcmp(c->rid, rid, ridn))
			return (struct crec *)c;
	}
	return NULL;
}

int callrec_keeps(const struct callrec *t)
{
	return t && t->cfg.mode == REC_FULL;
}

int callrec_open(const struct callrec *t, uint64_t conn, const char *rid, size_t ridn)
{
	return t && find(t, conn, rid, ridn) != NULL;
}

static size_t dumped_size(const json_t *j)
{
	return j ? json_dumpb(j, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY) : 0;
}

void callrec_begin(struct callrec *t, uint64_t conn, const char *rid, const json_t *params, const char *upstream,
		   const char *client)
{
	if (!t)
		return;
	const char *tool = json_string_value(json_object_get(params, "name"));
	if (!tool || rec_cfg_excluded(&t->cfg, tool)) /* excluded: never recorded, never linked */
		return;
	size_t ridn = strlen(rid);
	if (ridn > PROTO_RID_MAX)
		return;
	struct crec *c = find(t, conn, rid, ridn); /* a repeated id: the newer call is timed */
	size_t s = slot_of(conn, rid, ridn);
	for (size_t i = 0; !c && i < CR_PROBE; i++)
		if (!t->slots[(s + i) % CR_SLOTS].used)
			c = &t->slots[(s + i) % CR_SLOTS];
	if (!c) {
		t->untracked++;
		return;
	}
	t->open += !c->used;
	json_decref(c->args);
	memset(c, 0, sizeof *c);
	c->used = 1;
	c->conn = conn;
	memcpy(c->rid, rid, ridn + 1);
	snprintf(c->tool, sizeof c->tool, "%s", tool);
	if (upstream)
		snprintf(c->up, sizeof c->up, "%s", upstream);
	snprintf(c->client, sizeof c->client, "%s", client ? client : "");
	c->t0_ms = now_unix_ms();
	c->t0_us = mono_us();
	const json_t *args = json_object_get(params, "arguments");
	c->asz = dumped_size(args);
	if (t->cfg.mode == REC_FULL && !rec_cfg_meta_only(&t->cfg, tool))
		c->args = json_incref((json_t *)(args ? args : json_null()));
}

/* The first text item of a result's content. */
static const char *first_text(const json_t *result)
{
	size_t i;
	const json_t *item;
	json_array_foreach(json_object_get(result, "content"), i, item)
	{
		if (json_is_string(json_object_get(item, "text")))
			return json_string_value(json_object_get(item, "text"));
	}
	return NULL;
}

/* "denied" -> "Denied": the gate's status of a call it did not forward, as an error type. */
static void type_of_status(const char *st, char out[64])
{
	snprintf(out, 64, "%s", st);
	if (out[0] >= 'a' && out[0] <= 'z')
		out[0] = (char)(out[0] - 'a' + 'A');
}

/* At most max bytes of s, cut at a UTF-8 character boundary. */
static int put_payload(struct cv_arena *a, struct cv *f, const char *key, const char *totkey, const json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!s)
		return 0;
	size_t n = strlen(s), k = text_cut(s, n, RECCFG_PAYLOAD_MAX);
	int rc = ipc_put_text(a, f, key, s, k) || (k < n && ipc_put_uint(a, f, totkey, n));
	free(s);
	return rc;
}

/* The enricher (records.extra_keys): those keys of the result's structuredContent, as
 * found, into the record's extra column (redacted there like a result); NULL when none. */
static json_t *extra_of(const struct callrec *t, const json_t *sc)
{
	if (!t->cfg.nextra_keys || !json_is_object(sc))
		return NULL;
	json_t *x = json_object();
	for (size_t i = 0; x && i < t->cfg.nextra_keys; i++) {
		json_t *v = json_object_get(sc, t->cfg.extra_keys[i]);
		if (v)
			json_object_set(x, t->cfg.extra_keys[i], v);
	}
	if (x && !json_object_size(x)) {
		json_decref(x);
		x = NULL;
	}
	return x;
}

static void send_rec(struct callrec *t, struct crec *c, int outcome, const char *etype, const char *emsg, int64_t rsz,
		     const json_t *payload)
{
	double rate = outcome == 0 ? rec_cfg_rate(&t->cfg, c->tool) : 1.0;
	if (rate < 1.0) { /* a sampled tool's ok call: kept at its rate, with no redaction if not */
		t->rng ^= t->rng << 13;
		t->rng ^= t->rng >> 7;
		t->rng ^= t->rng << 17;
		if ((double)(t->rng >> 11) / 9007199254740992.0 >= rate)
			return;
	}
	uint64_t now = mono_us();
	if (t->nbatch == PROTO_CALLRECS_MAX || t->bytes > (1u << 20))
		callrec_flush(t);
	struct cv_arena *a = &t->a;
	struct cv *f = ipc_frame_new(a, F_CALLREC, 19); /* one item of the batch, in a frame's shape */
	int rc = !f || ipc_put_uint(a, f, "conn", c->conn) || ipc_put_text(a, f, "rid", c->rid, strlen(c->rid)) ||
		 ipc_put_text(a, f, "tool", c->tool, strlen(c->tool)) ||
		 (c->up[0] && ipc_put_text(a, f, "up", c->up, strlen(c->up))) || ipc_put_uint(a, f, "t0", c->t0_ms) ||
		 ipc_put_uint(a, f, "dur", now > c->t0_us ? now - c->t0_us : 0) ||
		 ipc_put_uint(a, f, "outcome", (uint64_t)outcome) || ipc_put_uint(a, f, "asz", c->asz) ||
		 (rsz >= 0 && ipc_put_uint(a, f, "rsz", (uint64_t)rsz)) ||
		 (rate < 1.0 && ipc_put_uint(a, f, "rate", (uint64_t)(rate * 1e6 + 0.5))) ||
		 (etype && ipc_put_text(a, f, "etype", etype, strlen(etype))) ||
		 (c->client[0] && ipc_put_text(a, f, "client", c->client, strlen(c->client)));
	if (!rc && emsg) {
		size_t n = strlen(emsg);
		rc = ipc_put_text(a, f, "emsg", emsg, text_cut(emsg, n, PROTO_REC_ERROR_MAX));
	}
	json_t *extra = outcome != 2 ? extra_of(t, payload) : NULL;
	if (!rc && extra)
		rc = put_payload(a, f, "extra", "xtot", extra);
	json_decref(extra);
	if (!rc && c->args) {
		rc = put_payload(a, f, "args", "atot", c->args);
		if (!rc && payload)
			rc = put_payload(a, f, "res", "rtot", payload);
	}
	if (!rc) {
		t->batch[t->nbatch++] = f;
		for (size_t i = 0; i < f->n; i++)
			t->bytes += f->items[2 * i + 1].t == CV_TEXT ? f->items[2 * i + 1].n + 16 : 16;
	}
}

void callrec_flush(struct callrec *t)
{
	if (!t || !t->nbatch)
		return;
	struct cv_arena *a = &t->a;
	struct cv *f = ipc_frame_new(a, F_CALLRECS, 1), *arr = cv_array(a, t->nbatch), *slot;
	char err[AS_ERRLEN];
	if (f && arr && (slot = ipc_put(a, f, "recs"))) {
		for (size_t i = 0; i < t->nbatch; i++)
			arr->items[i] = *t->batch[i];
		*slot = *arr;
		if (ipc_send(t->ipcfd, f, -1, err) == AS_EIO)
			_exit(3); /* the signer is gone: as send_frame does */
	}
	t->nbatch = t->bytes = 0;
	cv_arena_reset(a);
}

static void end_slot(struct callrec *t, struct crec *c)
{
	t->open -= c->used != 0;
	json_decref(c->args);
	c->args = NULL;
	c->used = 0;
}

/* Idle with no call open: the slots' pages go back to the kernel (zero pages again, which is
 * what unused slots are). Hashing spreads calls over all CR_SLOTS, so after a burst every
 * page of the 8 MB table was resident, and stayed so. */
void callrec_idle(struct callrec *t)
{
	if (!t || t->open)
		return;
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), from = ((uintptr_t)t->slots + pg - 1) & ~(pg - 1),
		  to = ((uintptr_t)(t->slots + CR_SLOTS)) & ~(pg - 1);
	if (to > from)
		madvise((void *)from, to - from, MADV_DONTNEED);
}

void callrec_end(struct callrec *t, uint64_t conn, const char *rid, size_t ridn, const json_t *result,
		 const json_t *error, size_t rsz)
{
	struct crec *c = t ? find(t, conn, rid, ridn) : NULL;
	if (!c)
		return;
	int outcome = 0;
	char etype[64] = "", msg[PROTO_REC_ERROR_MAX + 1] = "";
	const json_t *payload = result;
	if (error) {
		outcome = 2;
		snprintf(etype, sizeof etype, "ProtocolError");
		snprintf(msg, sizeof msg, "%lld: %s", (long long)json_integer_value(json_object_get(error, "code")),
			 json_string_value(json_object_get(error, "message")) ?: "");
		payload = error;
	} else {
		const json_t *sc = json_object_get(result, "structuredContent");
		if (json_is_object(sc))
			payload = sc;
		const char *gst = json_string_value(
		    json_object_get(json_object_get(json_object_get(result, "_meta"), "io.assent/gate"), "status"));
		int iserr = json_is_true(json_object_get(result, "isError"));
		if (c->up[0] && gst && strcmp(gst, "forwarded")) { /* the gate did not forward it */
			outcome = 2;
			type_of_status(gst, etype);
			snprintf(msg, sizeof msg, "%s", first_text(result) ?: gst);
		} else if (iserr && !c->up[0]) { /* assent's own tool refused the call */
			outcome = 2;
			snprintf(etype, sizeof etype, "ToolError");
			snprintf(msg, sizeof msg, "%s", first_text(result) ?: "isError");
		} else if (softerr_classify(result, &t->rules, msg, sizeof msg)) {
			outcome = 1;
			snprintf(etype, sizeof etype, "SoftError");
		}
	}
	send_rec(t, c, outcome, outcome ? etype : NULL, outcome ? msg : NULL, (int64_t)rsz, payload);
	end_slot(t, c);
}

void callrec_conn_gone(struct callrec *t, uint64_t conn)
{
	if (!t)
		return;
	for (size_t i = 0; i < CR_SLOTS; i++) {
		struct crec *c = &t->slots[i];
		if (!c->used || c->conn != conn)
			continue;
		send_rec(t, c, 2, "Disconnected", "the client's connection ended before the call was answered", -1,
			 NULL);
		end_slot(t, c);
	}
	callrec_flush(t); /* before the signer hears that the connection ended */
}
