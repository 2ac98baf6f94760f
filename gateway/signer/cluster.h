/* Cluster mode, the signer's end (gateway/signer/cluster.c, docs/cluster.md). */
#ifndef ASSENT_SIGNER_CLUSTER_H
#define ASSENT_SIGNER_CLUSTER_H

#include <jansson.h>

#include "gateway/proto/limits.h"
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
/* A replica's state directory holds CLUSTER_MARK ({"replica", "lock"}, written at start). The
 * assent CLI then appends to the shared ledger: the sync for its ledger_open, with the URL from
 * ASSENT_CLUSTER (exe: assent-cluster), in *sync; NULL when it is not a replica's. Not 0: why
 * it cannot (no URL: the entry would fork this mirror from the cluster). */
#define CLUSTER_MARK "cluster.json"
int cluster_cli_sync(const char *state, const char *exe, const struct ledger_sync **sync, char *err);
/* For an agent whose request could not be ledgered: "" on one machine or while the cluster's
 * database answers, else why (no detail of the connection). */
const char *cluster_hint(const struct signer *s);
/* The entries other replicas appended that the mirror imported since the last call: 1 and
 * [*from, *to), or 0. After a refused push, what the others appended is imported first. */
int cluster_imported(struct signer *s, uint64_t *from, uint64_t *to);
/* cluster_apply.c: those entries applied to this replica's state (their requests shown to its
 * reviewers, their approvals counted, their ends answered); the loop calls it every turn. */
void cluster_apply(struct signer *s);
/* A replica whose lease expired and which this one took over (the cluster's conditional update
 * gave it to this one only): 1 and its name, or 0. cluster_apply ends what it left. */
int cluster_taken_over(struct signer *s, char name[PROTO_CL_REPLICA_MAX + 1]);
/* Webhook deliveries, kept in PostgreSQL while they wait (notify.c), so that the replica that
 * takes this one over sends them (best effort, never waited for): mac is the HMAC notify_mac
 * makes. done: delivered or given up (origin "" or NULL: this replica's own). */
void cluster_dlv_add(struct signer *s, uint64_t id, const char *hook, const char *event, const char *body,
		     const char *mac);
void cluster_dlv_done(struct signer *s, const char *origin, uint64_t id, const char *hook);
/* One identity registry for every replica (cluster_reg.c: its file, MAC'd with the cluster's
 * secret STATE/keys/cluster.secret). cluster_reg_loaded: the file here was (re)read, so a change
 * goes to the cluster (reload_registry calls it). Below, cluster_reg.c's own part, which calls
 * nothing of cluster.c: setup loads or makes the secret; creg_local says what to send when the
 * file here changed; creg_in checks the cluster's and writes it when it is newer than the file
 * here, or says to send the file here when that is newer. 1: send *p (the caller frees p->body). */
void cluster_reg_loaded(struct signer *s);
struct creg;
#define CREG_FILES 2	/* the files the cluster shares: */
#define CREG_REGISTRY 0 /* STATE/identities.json */
#define CREG_WEBHOOKS 1 /* STATE/notify.json, sealed */
struct creg_push {
	int which;		/* CREG_REGISTRY or CREG_WEBHOOKS */
	uint64_t version, base; /* base: the cluster's version it was made on (0: none known) */
	struct buf body;
	char mac[65];
};
struct creg *cluster_reg_setup(const char *state, char *err);
int creg_local(struct creg *g, const char *state, int which, struct creg_push *p);
int creg_in(struct creg *g, const char *state, int which, uint64_t version, const char *body, size_t len,
	    const char *mac, struct creg_push *p);
/* Web sessions (cluster_reg.c): what the cluster keeps of one made, used or ended here (its body
 * and mac; the caller frees p->body), and one from the cluster, its mac checked, made known here
 * (ws_adopt) or ended (ws_drop). */
struct ws_session;
struct web_sessions;
int creg_ws_out(struct creg *g, const struct ws_session *ss, struct creg_push *p);
void creg_ws_in(struct creg *g, struct web_sessions *w, const char *body, size_t len, const char *mac, int ended,
		uint64_t now);
/* This replica's name in cluster mode; NULL on one machine. */
const char *cluster_replica(const struct signer *s);
/* /health's "cluster" member; NULL when not in cluster mode. */
json_t *cluster_health(const struct signer *s);

#endif
