/* Ledger entries: the kinds of DESIGN.md, how an entry is built around the
 * fields a caller gives, and how a stored entry is checked. The JSON mapping used
 * by the append tool and by `assent-verify export` is common/cvjson.h. */
#ifndef ASSENT_ENTRY_H
#define ASSENT_ENTRY_H

#include <stdint.h>

#include "common/cbor.h"
#include "common/cvjson.h" /* the JSON mapping, which the ledger tools use with entries */
#include "common/attr.h"

#define ENTRY_VERSION 1
#define ENTRY_MAX (1u << 20) /* largest encoded entry: 1 MiB */

/* Check a decoded entry: a map with v == 1, seq == expect_seq, time, a known kind
 * with its required fields, and prev == expect_prev (when expect_prev is not NULL). */
int entry_check(const struct cv *e, uint64_t expect_seq, const uint8_t *expect_prev, char *err) AS_MUST_USE;

/* Check the caller's fields (a map with `kind` and the kind's fields, and none of
 * v, seq, time, prev), then encode the full entry canonically into out. */
int entry_build(const struct cv *fields, uint64_t seq, uint64_t time_ms, const uint8_t prev[32], struct buf *out,
		char *err) AS_MUST_USE;

/* The canonical CBOR fields of a `key` entry: purpose (token | checkpoint), kid,
 * event (created | rotated | retired), and the public key PEM when k is not NULL. */
struct eckey;
int entry_key_fields(const char *purpose, const char *kid, const char *event, const struct eckey *k, struct buf *out,
		     char *err) AS_MUST_USE;

#endif
