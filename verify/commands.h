/* assent-verify's commands (verify/commands.c), as its argument parsing (verify/main.c)
 * calls them; the program's own, not the library's (libassent-verify.a links neither). Each
 * returns the exit status: EXIT_HOLDS, EXIT_NOT (reason on stderr), EXIT_USAGE. */
#ifndef ASSENT_VERIFY_COMMANDS_H
#define ASSENT_VERIFY_COMMANDS_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "include/assent/verify.h"
#include "verify/vkeys.h"

#define EXIT_HOLDS 0
#define EXIT_NOT 1
#define EXIT_USAGE 2

extern const char *prog;

/* One line on stderr: a usage error (EXIT_USAGE), or why a check does not hold (EXIT_NOT). */
int usage_error(const char *fmt, ...) AS_PRINTF(1, 2);
int not_holds(const char *fmt, ...) AS_PRINTF(1, 2);
/* Run fn(arg) in a child; a child killed by a signal means LMDB met a damaged file in dir. */
int isolated(int (*fn)(void *), void *arg, const char *dir);

struct keyopts {
	const char *keys[VKEYS_MAX];
	size_t nkeys;
	const char *sha256; /* --key-sha256 */
	int from_state;	    /* --key-from-state */
};

/* --witness VKEY... (or --witness-file) and --witness-threshold N: the vkeys point into
 * argv or into lines main.c read and keeps for the program's life. */
struct witopts {
	const char *vkeys[AV_WITNESS_MAX];
	size_t n;
	size_t threshold; /* 0: not given (1 when any witness is) */
};

struct ledger_args {
	const char *dir;
	struct av_ledger_opts o;
	int json;
};

struct dir_args {
	const char *dir;
	struct keyopts k;
	uint64_t from, to, seq, size;
	uint64_t old_size, new_size; /* consistency DIR OLD NEW */
	int has_to;
	struct witopts w; /* checkpoint: print the newest checkpoint these witnesses cosigned */
};

struct exact_args {
	const char *dir, *exact;
};

struct token_args {
	struct av_token_opts o;
	struct buf tok;
	int json;
};

/* The checkpoint keys k names, into v (the caller frees it with vkeys_free). */
int load_keys(struct vkeys *v, const char *dir, const struct keyopts *k);

/* The commands, each run through isolated() where it reads an LMDB file: p is its args. */
int run_ledger(void *p);      /* struct ledger_args */
int run_checkpoint(void *p);  /* struct dir_args */
int run_exact(void *p);	      /* struct exact_args */
int run_export(void *p);      /* struct dir_args */
int run_proof(void *p);	      /* struct dir_args */
int run_consistency(void *p); /* struct dir_args: print the proof from old_size to new_size */
int run_token(void *p);	      /* struct token_args */
int proof_check_cmd(const char *file, const char *ckfile, const struct keyopts *k);
/* assent-verify consistency --old FILE --new FILE --proof FILE KEYS */
int consistency_cmd(const char *oldf, const char *newf, const char *prooff, const struct keyopts *k,
		    const struct witopts *w);
/* assent-verify checkpoint --check FILE KEYS [--witness...]: the log's signature and, with
 * witnesses, their cosignatures. */
int checkpoint_check_cmd(const char *file, const struct keyopts *k, const struct witopts *w);
/* The token from arg, or from standard input when arg is NULL or "-"; into out (the caller frees). */
int read_token(const char *arg, struct buf *out);

#endif
