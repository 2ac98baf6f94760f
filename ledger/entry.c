/* Entry kinds, building and checking entries (the JSON mapping is common/cvjson.c). */
#include "ledger/entry.h"

#include "common/eckey.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum ft { F_TEXT, F_UINT, F_ANY };
struct field {
	const char *name;
	enum ft type;
};
struct kind {
	const char *name;
	struct field req[5];
};

/* Required fields per kind (DESIGN.md lists the full set; the rest are optional here
 * so that the gateway can grow them without a format break). */
static const struct kind kinds[] = {
    {"request", {{"session_id", F_TEXT}, {"type", F_TEXT}, {"message", F_TEXT}, {NULL, F_ANY}}},
    {"decision", {{"session_id", F_TEXT}, {"outcome", F_TEXT}, {NULL, F_ANY}}},
    {"timeout", {{"session_id", F_TEXT}, {"reason", F_TEXT}, {NULL, F_ANY}}},
    {"cancelled", {{"session_id", F_TEXT}, {"reason", F_TEXT}, {NULL, F_ANY}}},
    {"abandoned", {{"session_id", F_TEXT}, {"reason", F_TEXT}, {NULL, F_ANY}}},
    {"policy_load", {{"digest", F_TEXT}, {"source", F_TEXT}, {NULL, F_ANY}}},
    {"key", {{"purpose", F_TEXT}, {"kid", F_TEXT}, {"event", F_TEXT}, {NULL, F_ANY}}},
    {"identity", {{"event", F_TEXT}, {"name", F_TEXT}, {NULL, F_ANY}}},
    /* a webhook added or removed (assent notify): its name and host, never its secret or path */
    {"webhook", {{"event", F_TEXT}, {"name", F_TEXT}, {"host", F_TEXT}, {NULL, F_ANY}}},
    /* one approval of a quorum short of it, so that a restart keeps it */
    {"approval", {{"session_id", F_TEXT}, {"reviewer", F_ANY}, {"n", F_UINT}, {"quorum", F_UINT}, {NULL, F_ANY}}},
    /* the gate: a call is forwarded only after its dispatch entry is on disk; its outcome follows */
    {"dispatch", {{"session_id", F_TEXT}, {"upstream", F_TEXT}, {"tool", F_TEXT}, {"call", F_TEXT}, {NULL, F_ANY}}},
    {"outcome", {{"session_id", F_TEXT}, {"status", F_TEXT}, {NULL, F_ANY}}},
    /* a reviewer saw what a call's view masked (assent show --full): who, and of which request */
    {"reveal", {{"session_id", F_TEXT}, {"reviewer", F_ANY}, {NULL, F_ANY}}},
    /* a reviewer's passkey enrolled or removed (issue 31); verify/passkeys.c checks the rest */
    {"passkey", {{"event", F_TEXT}, {"reviewer", F_TEXT}, {"credential_id", F_TEXT}, {NULL, F_ANY}}},
};

static const char *reserved[] = {"v", "seq", "time", "prev"};

static int check_kind_fields(const struct cv *m, const char *where, char *err)
{
	const struct cv *kind = cv_get(m, "kind");
	if (!kind || kind->t != CV_TEXT)
		return as_fail(err, AS_ECORRUPT, "%s: missing text field 'kind'", where);
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		if (!cv_text_eq(kind, kinds[i].name))
			continue;
		for (const struct field *f = kinds[i].req; f->name; f++) {
			const struct cv *v = cv_get(m, f->name);
			if (!v)
				return as_fail(err, AS_ECORRUPT, "%s: kind '%s' requires field '%s'", where,
					       kinds[i].name, f->name);
			if ((f->type == F_TEXT && v->t != CV_TEXT) || (f->type == F_UINT && v->t != CV_UINT))
				return as_fail(err, AS_ECORRUPT, "%s: field '%s' must be %s", where, f->name,
					       f->type == F_TEXT ? "text" : "an unsigned integer");
		}
		return 0;
	}
	return as_fail(err, AS_ECORRUPT, "%s: unknown kind '%.*s'", where, (int)(kind->n > 40 ? 40 : kind->n),
		       (const char *)kind->s);
}

int entry_check(const struct cv *e, uint64_t expect_seq, const uint8_t *expect_prev, char *err)
{
	if (e->t != CV_MAP)
		return as_fail(err, AS_ECORRUPT, "entry is not a CBOR map");
	/* One pass over the keys picks out the ledger's own fields; keys are text,
	 * since anything else would not survive the JSON export. */
	const struct cv *v = NULL, *seq = NULL, *t = NULL, *prev = NULL;
	for (size_t i = 0; i < e->n; i++) {
		const struct cv *k = &e->items[2 * i], *val = &e->items[2 * i + 1];
		if (k->t != CV_TEXT)
			return as_fail(err, AS_ECORRUPT, "entry has a key that is not text");
		if (k->n == 1 && k->s[0] == 'v')
			v = val;
		else if (k->n == 3 && !memcmp(k->s, "seq", 3))
			seq = val;
		else if (k->n == 4 && !memcmp(k->s, "time", 4))
			t = val;
		else if (k->n == 4 && !memcmp(k->s, "prev", 4))
			prev = val;
	}
	if (!v || v->t != CV_UINT || v->u != ENTRY_VERSION)
		return as_fail(err, AS_ECORRUPT, "entry: field 'v' must be %d", ENTRY_VERSION);
	if (!seq || seq->t != CV_UINT)
		return as_fail(err, AS_ECORRUPT, "entry: missing unsigned field 'seq'");
	if (seq->u != expect_seq)
		return as_fail(err, AS_ECORRUPT, "entry stored under seq %llu says seq %llu",
			       (unsigned long long)expect_seq, (unsigned long long)seq->u);
	if (!t || t->t != CV_UINT)
		return as_fail(err, AS_ECORRUPT, "entry: missing unsigned field 'time'");
	if (!prev || prev->t != CV_BYTES || prev->n != 32)
		return as_fail(err, AS_ECORRUPT, "entry: field 'prev' must be 32 bytes");
	GUARD(check_kind_fields(e, "entry", err));
	if (expect_prev && memcmp(prev->s, expect_prev, 32) != 0)
		return as_fail(err, AS_ECORRUPT, "prev does not match the leaf hash of entry %llu",
			       (unsigned long long)(expect_seq - 1));
	return 0;
}

int entry_build(const struct cv *fields, uint64_t seq, uint64_t time_ms, const uint8_t prev[32], struct buf *out,
		char *err)
{
	if (fields->t != CV_MAP)
		return as_fail(err, AS_EINVAL, "an entry must be an object of fields");
	for (size_t i = 0; i < fields->n; i++) {
		const struct cv *k = &fields->items[2 * i];
		if (k->t != CV_TEXT)
			return as_fail(err, AS_EINVAL, "entry field names must be text");
		for (size_t r = 0; r < sizeof reserved / sizeof reserved[0]; r++)
			if (cv_text_eq(k, reserved[r]))
				return as_fail(err, AS_EINVAL, "field '%s' is set by the ledger, not by the caller",
					       reserved[r]);
	}
	int rc = check_kind_fields(fields, "entry", err);
	if (rc != 0)
		return AS_EINVAL;
	/* A shallow copy of the caller's map with the four ledger fields added. */
	struct cv items[2 * 64 + 8];
	if (fields->n > 64)
		return as_fail(err, AS_ETOOBIG, "an entry may have at most 64 fields");
	memcpy(items, fields->items, 2 * fields->n * sizeof items[0]);
	size_t n = fields->n;
	struct cv *kv = &items[2 * n];
	memset(kv, 0, 8 * sizeof *kv);
	kv[0] = (struct cv){.t = CV_TEXT, .s = (const uint8_t *)"v", .n = 1};
	kv[1] = (struct cv){.t = CV_UINT, .u = ENTRY_VERSION};
	kv[2] = (struct cv){.t = CV_TEXT, .s = (const uint8_t *)"seq", .n = 3};
	kv[3] = (struct cv){.t = CV_UINT, .u = seq};
	kv[4] = (struct cv){.t = CV_TEXT, .s = (const uint8_t *)"time", .n = 4};
	kv[5] = (struct cv){.t = CV_UINT, .u = time_ms};
	kv[6] = (struct cv){.t = CV_TEXT, .s = (const uint8_t *)"prev", .n = 4};
	kv[7] = (struct cv){.t = CV_BYTES, .s = prev, .n = 32};
	struct cv m = {.t = CV_MAP, .n = n + 4, .items = items};
	size_t start = out->len;
	rc = cbor_encode(&m, out, err);
	if (rc == 0 && out->len - start > ENTRY_MAX)
		rc =
		    as_fail(err, AS_ETOOBIG, "entry is %zu bytes, over the maximum of %u", out->len - start, ENTRY_MAX);
	return rc;
}

int entry_key_fields(const char *purpose, const char *kid, const char *event, const struct eckey *k, struct buf *out,
		     char *err)
{
	struct cv_arena a;
	cv_arena_init(&a, 64);
	struct buf pem;
	buf_init(&pem, 4096);
	int rc = k ? eckey_public_pem(k, &pem) : 0;
	struct cv *m = cv_map(&a, k ? 5 : 4);
	const char *kv[5][2] = {
	    {"kind", "key"}, {"purpose", purpose}, {"kid", kid}, {"event", event}, {"public_key", NULL}};
	if (!m)
		rc = AS_ENOMEM;
	for (size_t i = 0; rc == 0 && i < m->n; i++) {
		rc = cv_set_text(&a, &m->items[2 * i], kv[i][0], strlen(kv[i][0]));
		if (rc == 0)
			rc = kv[i][1] ? cv_set_text(&a, &m->items[2 * i + 1], kv[i][1], strlen(kv[i][1]))
				      : cv_set_text(&a, &m->items[2 * i + 1], (const char *)pem.p, pem.len);
	}
	if (rc == 0)
		rc = cbor_encode(m, out, err);
	else
		as_fail(err, rc, "cannot build a key entry: %s", as_strerror(rc));
	buf_free(&pem);
	cv_arena_free(&a);
	return rc;
}
