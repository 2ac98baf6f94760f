/* A witness's answer to add-checkpoint (C2SP tlog-witness), read in the jailed notify worker:
 * the fields of its Ed25519 cosignature lines (a 200) or the tree size it has (a 409). The
 * signer never reads these bytes: it gets the fields (F_WITNESS_DONE), checks each signature
 * against the witness key it was configured with, and rebuilds the lines. Pure: bytes in,
 * fields out (fuzz/witness_resp.c). */
#ifndef ASSENT_WRESP_H
#define ASSENT_WRESP_H

#include <stddef.h>
#include <stdint.h>

#include "common/attr.h"
#include "gateway/proto/limits.h"

struct wresp_cosig {
	char name[PROTO_WITNESS_NAME_MAX + 1]; /* printable ASCII, no space or '+' */
	uint8_t keyid[4];
	uint64_t time; /* at most 2^63 - 1 */
	uint8_t sig[64];
};

struct wresp {
	int has_size;  /* a 409 said its size */
	uint64_t size; /* at most 2^63 - 1 */
	size_t n;      /* cosignature lines */
	struct wresp_cosig c[PROTO_WITNESS_COSIGS_MAX];
};

/* Reads body (n bytes, at most PROTO_WITNESS_RESP_MAX) of an answer with HTTP status:
 * 200: one or more note signature lines ("\xe2\x80\x94 NAME BASE64\n"); those whose base64 is
 *      76 bytes (key ID, timestamp, Ed25519 signature) are taken, at most
 *      PROTO_WITNESS_COSIGS_MAX; lines of other signature types are skipped;
 * 409: a decimal size (no leading zero) and "\n" (text/x.tlog.size);
 * any other status: nothing is read.
 * 0 with *out filled, or AS_EINVAL with err saying what was wrong (the whole answer is then
 * refused: a witness that sends a malformed line sends nothing). */
int wresp_parse(int status, const uint8_t *body, size_t n, struct wresp *out, char *err) AS_MUST_USE;

#endif
