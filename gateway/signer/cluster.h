/* Cluster mode, the signer's end (gateway/signer/cluster.c, docs/cluster.md). */
#ifndef ASSENT_SIGNER_CLUSTER_H
#define ASSENT_SIGNER_CLUSTER_H

#include <jansson.h>

#include "ledger/ledger.h"

struct signer;
/* With ASSENT_CLUSTER: start the cluster client, check the policy against the cluster's and
 * set lo->sync (before ledger_open). 0 without it. */
int cluster_setup(struct signer *s, struct ledger_opts *lo, char *err);
/* The client's descriptor for the loop's poll (-1: none), and what to do when it is readable:
 * the other replicas' commits are imported into the mirror. */
int cluster_fd(const struct signer *s);
void cluster_input(struct signer *s);
/* `assent ledger export --cluster URL DIR`: the shared ledger's entries and checkpoints copied
 * into a new directory DIR in the LMDB layout, for assent-verify; exe is assent-cluster. */
int cluster_export(const char *url, const char *exe, const char *dir, uint64_t *entries, uint64_t *ckpts, char *err);
/* For an agent whose request could not be ledgered: "" on one machine or while the cluster's
 * database answers, else why (no detail of the connection). */
const char *cluster_hint(const struct signer *s);
/* This replica's name in cluster mode; NULL on one machine. */
const char *cluster_replica(const struct signer *s);
/* /health's "cluster" member; NULL when not in cluster mode. */
json_t *cluster_health(const struct signer *s);

#endif
