/* assent verify library: the checks behind `assent-verify`, for C programs that
 * want them in-process. Needs no daemon and never writes the ledger. */
#ifndef ASSENT_VERIFY_H
#define ASSENT_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "assent/err.h"

struct av_ledger_opts {
	const char *const *key_paths; /* PEM P-256 public keys trusted for checkpoints */
	size_t nkeys;
	const char *const *trusted_paths; /* checkpoints an auditor saved earlier */
	size_t ntrusted;
};

struct av_ledger_report {
	int ok;                  /* 1: intact */
	uint64_t entries;        /* entries checked */
	uint64_t head_seq;       /* valid when entries > 0 */
	uint8_t head_leaf[32];
	uint8_t root[32];        /* RFC 9162 root over all entries checked */
	uint64_t checkpoints;    /* signed checkpoints verified (stored, file and trusted) */
	uint64_t trusted;        /* trusted checkpoints found consistent */
	int nolock;              /* read without LMDB's lock (no write access to the directory) */
	int key_from_state;      /* no key given: used DIR/../keys/checkpoint.pub */
	int has_bad_seq;         /* on failure: whether one entry is to blame */
	uint64_t bad_seq;
	char reason[AS_ERRLEN];  /* on failure: what is wrong */
};

/* Check every entry of the ledger in dir: canonical CBOR, contiguous seq from 0,
 * every prev link, every stored checkpoint's root and signature, and each trusted
 * checkpoint's consistency. Returns 0 when the check ran (rep->ok says whether the
 * ledger is intact), AS_EIO/AS_ENOTFOUND/AS_EINVAL when it could not run (reason
 * in rep->reason). A damaged LMDB file can crash LMDB itself: run this in a child
 * process when the file may be hostile (assent-verify does). */
int av_verify_ledger(const char *dir, const struct av_ledger_opts *opts, struct av_ledger_report *rep);

#endif
