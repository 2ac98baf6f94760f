/* What the assent CLI's command groups share (one file per group: cmd_ledger.c,
 * cmd_policy.c, cmd_identity.c, cmd_review.c; main and usage in assent.c). */
#ifndef ASSENT_CLI_H
#define ASSENT_CLI_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "ledger/ledger.h"
#include "common/cbor.h"
#include "ledger/entry.h"
#include "policy/policy.h"
#include "gateway/state/registry.h"
#include "common/text.h"
#include "gateway/state/token.h"
#include "gateway/state/hsm.h"
#include "common/util.h"
#include "gateway/proto/statedir.h"

#define LINE_MAX_BYTES (ENTRY_MAX) /* one JSON line: at most 1 MiB */

#define BATCH_DEFAULT 256

struct pending {
	struct buf *recs;
	size_t n, cap;
};

/* assent.c */
int die(int code, const char *fmt, ...) AS_PRINTF(2, 3);

/* cmd_ledger.c */
int line_to_cbor(const char *line, size_t len, size_t lineno, struct buf *out);
int open_ledger(const char *state, const struct ledger_opts *o, struct ledger **l);
int cmd_export(int argc, char **argv);
/* The keys in a PKCS#11 token (ASSENT_PKCS11_MODULE; cfg.on = 0 when unset): opened once per
 * process, by the first command that needs them (keygen: made first, when made is not NULL;
 * want_token: the token key too), and closed (C_Finalize) as the process exits. NULL on error,
 * said in err. */
struct hsm *cli_keys(int want_token, int made[2], char *err);
int cmd_append(const char *state, int argc, char **argv);
int cmd_checkpoint(const char *state, int argc, char **argv);

/* table.c: rows (objects) as aligned columns, keys[k] under heads[k] (at most 8). */
void table_print(const json_t *rows, const char *const *keys, const char *const *heads, size_t ncols);

/* cmd_policy.c */
int cmd_policy(int argc, char **argv);
int cmd_upstreams(int argc, char **argv);

/* cmd_identity.c */
int cmd_keygen(const char *state, int argc, char **argv);
int cmd_identity(const char *state, const char *kind, int argc, char **argv);
/* Appends one ledger entry (e is taken); 0 or the exit status after saying why. */
int cli_ledger_entry(const char *state, json_t *e);

/* cmd_review.c */
int cmd_reviewer(const char *state, int argc, char **argv);
/* One command on STATE/control.sock (takes req): 0 with *rep when it says ok, else the
 * exit status after printing why. */
int ctl_call(const char *state, json_t *req, json_t **rep);
/* A connection to STATE/control.sock (path gets its name), or -1 with errno. */
int ctl_connect(const char *state, char *path, size_t n);

/* cmd_records.c: the call records, QA reports and events */
int cmd_records(const char *state, const char *group, int argc, char **argv);

/* cmd_request.c: assent request (answers read by reqans.h) */
int cmd_request(const char *state, int argc, char **argv);

/* cmd_notify.c: assent notify add|list|remove (webhooks, gateway/state/hooks.h) */
int cmd_notify(const char *state, int argc, char **argv);

#endif
