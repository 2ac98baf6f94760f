/* A ledger copied into a new directory in the LMDB layout (ledger/store.h), in one
 * transaction: `assent ledger export` of a cluster's shared ledger (gateway/signer/cluster.c
 * reads it). A copy, not a judgement: assent-verify judges it. */
#ifndef ASSENT_LEDGER_EXPORT_H
#define ASSENT_LEDGER_EXPORT_H

#include <stdint.h>

#include "ledger/ledger.h"

/* pull hands every entry, in order from 0, and the checkpoints to take. The directory is made
 * (0700) and must hold no ledger yet. entries and ckpts: how many were written. */
typedef int (*export_pull)(void *ctx, const struct ledger_sync_take *take, void *arg, char *err);
int ledger_export_dir(const char *dir, export_pull pull, void *ctx, uint64_t *entries, uint64_t *ckpts, char *err);

#endif
