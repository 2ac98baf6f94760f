/* assent verify library: the checks behind `assent-verify`, for C programs that
 * want them in-process. Needs no daemon and never writes the ledger. */
#ifndef ASSENT_VERIFY_H
#define ASSENT_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* A verification pins its checkpoint key: key_paths (copies the auditor trusts), or
 * else the key in DIR/../keys/checkpoint.pub accepted only when pinned by key_sha256
 * (its SubjectPublicKeyInfo digest) or by the trusted checkpoints (it must have signed
 * each), or with key_from_state (consistency only: a forged ledger with a forged key
 * passes). Without any of these av_verify_ledger refuses to run (AS_EINVAL). */
struct av_ledger_opts {
	const char *const *key_paths; /* PEM P-256 public keys trusted for checkpoints */
	size_t nkeys;
	const char *const *trusted_paths; /* checkpoints an auditor saved earlier */
	size_t ntrusted;
	const char *key_sha256;	      /* 64 lowercase hex digits: SHA-256 of the key's DER SubjectPublicKeyInfo */
	int key_from_state;	      /* use the state directory's key unpinned (consistency only) */
	uint64_t allow_unsigned_tail; /* entries after the newest signed checkpoint that still pass */
	/* Witnesses (C2SP tlog-cosignature, cosignature/v1): with nwitnesses > 0, a stored
	 * checkpoint must carry valid cosignatures of at least witness_threshold (0: 1) distinct
	 * witnesses; the newest that does is the witnessed one. A line naming a witness that does
	 * not verify is a forgery: the ledger is not intact. */
	const char *const *witness_vkeys; /* C2SP signed-note vkeys: NAME+KEYIDHEX+BASE64(0x04 || key) */
	size_t nwitnesses;		  /* at most AV_WITNESS_MAX */
	size_t witness_threshold;
	const char *passkeys_path; /* reviewers' passkeys confirmed out of band (verify/passkeys.h); NULL: none */
};

#define AV_WITNESS_MAX 32

/* A witness given, and whether it cosigned the witnessed checkpoint. */
struct av_witness_seen {
	char name[256];
	int cosigned;  /* its cosignature on the witnessed checkpoint verified */
	uint64_t time; /* that cosignature's timestamp (unix seconds) */
};

struct av_ledger_report {
	int ok;		   /* 1: intact */
	uint64_t entries;  /* entries checked */
	uint64_t head_seq; /* valid when entries > 0 */
	uint8_t head_leaf[32];
	uint8_t root[32];	/* RFC 9162 root over all entries checked */
	uint64_t checkpoints;	/* signed checkpoints verified (stored, file and trusted) */
	uint64_t trusted;	/* trusted checkpoints found consistent */
	int nolock;		/* read without LMDB's lock (no write access to the directory) */
	int key_from_state;	/* key_from_state: DIR/../keys/checkpoint.pub unpinned (consistency only) */
	uint64_t signed_size;	/* the largest tree a checkpoint signed by a pinned key covers */
	uint64_t unsigned_tail; /* entries after it (valid when ok, or when reason is the tail) */
	int tail_known;		/* unsigned_tail was computed */
	int demo;		/* the covering checkpoint's origin is a demo ledger's (assent-demo/) */
	char origin[256];	/* origin of the covering checkpoint ("" when none) */
	char key_sha256[65];	/* SHA-256 of the first pinned key's SubjectPublicKeyInfo */
	int has_bad_seq;	/* on failure: whether one entry is to blame */
	uint64_t bad_seq;
	char reason[AS_ERRLEN]; /* on failure: what is wrong */
	/* With witnesses (opts->nwitnesses > 0): */
	size_t witnesses;	  /* witnesses given */
	size_t witness_threshold; /* distinct cosignatures required */
	int witnessed;		  /* a stored checkpoint carries them */
	uint64_t witnessed_size;  /* the newest such checkpoint's tree size */
	size_t witnessed_by;	  /* how many of the witnesses cosigned it */
	uint64_t after_witnessed; /* entries after it (when ok) */
	size_t best_cosigned;	  /* when none is witnessed: the most cosignatures any checkpoint has */
	struct av_witness_seen witness[AV_WITNESS_MAX];
};

/* Check every entry of the ledger in dir: canonical CBOR, contiguous seq from 0,
 * entry times that never go backwards, every prev link, every stored checkpoint's
 * root and signature, each trusted checkpoint's consistency, and that a checkpoint
 * signed by a pinned key covers the head (up to allow_unsigned_tail entries after it). Returns 0 when the check ran
 * (rep->ok says whether the ledger is intact), AS_EIO/AS_ENOTFOUND/AS_EINVAL when it could not run (reason in
 * rep->reason). A damaged LMDB file can crash LMDB itself: run this in a child process when the file may be hostile
 * (assent-verify does). */
int av_verify_ledger(const char *dir, const struct av_ledger_opts *opts, struct av_ledger_report *rep);

/* ---- approval tokens ---- */

#define AV_TOKEN_MAX 16384  /* larger tokens are refused unread */
#define AV_SUBJECTS_MAX 128 /* subject files and digests one verification checks */

struct av_token_opts {
	const char *aud;	      /* required */
	const char *iss;	      /* checked when not NULL */
	const char *const *key_paths; /* PEM P-256 public keys: each allows ES256 only */
	size_t nkeys;
	const char *jwks_path; /* RFC 7517 JWKS of P-256 keys (ES256 only); may be NULL */
	const uint8_t *secret; /* HS256 shared secret (allows HS256 only); may be NULL */
	size_t secret_len;
	const char *const *subject_paths; /* each file's SHA-256 must be a subject digest */
	size_t nsubject_paths;
	const char *const *subject_sha256; /* each hex digest must be a subject digest */
	size_t nsubject_sha256;
	const char *action_sha256; /* must equal the action digest when not NULL */
	const char *ledger_dir;	   /* when not NULL: the decision entry must be on this ledger */
	long leeway;		   /* seconds of clock skew allowed; < 0: 60 */
	long long now;		   /* unix seconds; 0: the clock */
	int require_computed;	   /* the subjects checked (or all, when none is) were computed, not asserted */
	/* With ledger_dir: the ledger verified as av_verify_ledger does, with this checkpoint key
	 * pin (either set), and the decision entry covered by a checkpoint signed by it. */
	const char *ledger_key_sha256;
	int ledger_key_from_state;
	int require_passkey;	   /* the decision carries a reviewer's passkey assertion (needs a pin) */
	const char *passkeys_path; /* with ledger_dir: the passkeys that count, as av_ledger_opts's */
};

struct av_token_result {
	char reason[AS_ERRLEN]; /* which check failed, or the usage/I/O error */
	char *claims_json;	/* on success: the verified claims; the caller frees it */
};

/* Verify an approval token offline. Returns 0 when every check holds,
 * AS_EBADSIG when one fails (reason says which), or AS_EINVAL / AS_EIO /
 * AS_ENOTFOUND when the options or files are unusable. The key is chosen by the
 * token's kid among the keys given (an unknown kid is refused), and each key
 * allows exactly one algorithm: none and every other algorithm are refused.
 * Also refused: a high-s ES256 signature, a JWKS key not for verifying
 * signatures (use, key_ops, alg), times outside 0..year 9999, no assurance.
 * With ledger_dir the LMDB file is read in-process: run it in a child process
 * if the file may be hostile (assent-verify does). */
int av_verify_token(const char *token, size_t len, const struct av_token_opts *o, struct av_token_result *r);

#endif
