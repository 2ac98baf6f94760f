/* The query strings of the page's history and proof requests (GET /review/api/history,
 * GET /review/api/proof) and of witnesses' consistency proofs (GET /checkpoint/consistency),
 * checked in the jailed review worker: each parameter is turned into a typed, bounded
 * field of F_WEB_HISTORY, F_WEB_PROOF or F_WEB_CONSISTENCY, and anything else is a
 * 400 naming the parameter. Pure functions; unit-tested (tests/unit/histq_test.c) and
 * fuzzed (fuzz/histq.c). The signer checks the bounds again (frames.c). */
#ifndef ASSENT_HISTQ_H
#define ASSENT_HISTQ_H

#include <stddef.h>
#include <stdint.h>

#include "gateway/proto/proto.h"

#define HISTQ_WHY_MAX 160 /* the error text, NUL included */
#define HISTQ_LIMIT_DEFAULT 100

/* Which fields a query set (an empty value, as a form sends for an empty input, sets none). */
enum {
	HQ_WHO = 1,
	HQ_OUTCOME = 2,
	HQ_AUDIENCE = 4,
	HQ_RULE = 8,
	HQ_SINCE = 16,
	HQ_UNTIL = 32,
	HQ_LIMIT = 64,
	HQ_SEQ = 128,
	HQ_OLD = 256,
	HQ_NEW = 512,
};

/* Which query: histq_arg's and histq_done's `proof` argument. */
enum { HISTQ_HISTORY = 0, HISTQ_PROOF = 1, HISTQ_CONSISTENCY = 2 };

struct histq {
	unsigned has;			       /* HQ_* */
	unsigned seen;			       /* HQ_* named at all (empty included): a parameter twice is an error */
	char who[PROTO_HIST_WHO_MAX + 1];      /* a reviewer's name, "policy" or "deadline": [A-Za-z0-9._-] */
	char outcome[PROTO_OUTCOME_MAX + 1];   /* approved rejected answered selected denied timeout cancelled */
	char audience[PROTO_HIST_AUD_MAX + 1]; /* [A-Za-z0-9._:/-] */
	uint64_t rule;			       /* a policy line, 1..PROTO_HIST_RULE_MAX */
	uint64_t since, until;		       /* unix seconds, decided at since <= t <= until */
	uint64_t limit;			       /* 1..PROTO_HIST_LIMIT_MAX; HISTQ_LIMIT_DEFAULT when not given */
	uint64_t seq;			       /* the proof's entry, 0..PROTO_SEQ_MAX */
	uint64_t old, new; /* the consistency proof's tree sizes, 1..PROTO_SEQ_MAX + 1, old <= new */
};

void histq_init(struct histq *q);

/* One parameter as libmicrohttpd decoded it (value NULL: "?key" without "="). proof: which
 * query (HISTQ_*): the proof's (seq only), the consistency proof's (old and new), the history's. 0, or -1 with why
 * (HISTQ_WHY_MAX bytes) naming the parameter and what it must be. */
int histq_arg(struct histq *q, int proof, const char *key, const char *value, char *why);

/* After the last parameter: what the parameters say together (since after until, a
 * proof without seq, a consistency proof without old or new, or old after new). 0, or -1 with why. */
int histq_done(struct histq *q, int proof, char *why);

#endif
