/* The cluster client's parts (gateway/recorder/cluster.c: the shared ledger's steps and the
 * loop; cluster_lease.c: leases, takeovers and the webhook deliveries kept for them). */
#ifndef ASSENT_RECORDER_CLUSTER_INT_H
#define ASSENT_RECORDER_CLUSTER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "gateway/proto/ipc.h"
#include "gateway/proto/limits.h"
#include "gateway/recorder/db.h"

#define FD 3 /* the signer's socket */
#define LISTENS "LISTEN assent_ledger; LISTEN assent_registry; LISTEN assent_websessions; LISTEN assent_webhooks"

struct cl {
	struct ipc_conn ipc;
	struct cv_arena a; /* frames received */
	struct cv_arena o; /* frames sent */
	struct db *db;
	char url[PROTO_CL_URL_MAX + 1];
	char replica[PROTO_CL_REPLICA_MAX + 1];
	char policy[65];
	int advisory;	/* the append lock: pg_advisory_xact_lock, else the head row FOR UPDATE */
	int adopt;	/* HELLO adopt: this replica's policy becomes the cluster's */
	int locked;	/* a pull ended ok: the transaction and its lock are open */
	int reading;	/* ... a catch-up\'s read, without the lock: no push may follow */
	uint64_t size;	/* the shared ledger's size as the lock saw it */
	uint8_t **ents; /* PUT since the pull */
	char **claims;	/* and what each takes once (NULL: nothing) */
	size_t *lens, nents, cap;
	int broken;	    /* the connection failed: reconnect before the next step */
	uint64_t lease_ms;  /* HELLO lease: heartbeats every quarter of it; 0: none (a reader) */
	uint64_t next_beat; /* mono_ms of the next heartbeat */
	int own_dlvs;	    /* this replica's own deliveries of a previous run were handed back */
	unsigned
	    reg_due; /* bit 0: the cluster's registry is to be sent to the signer, bit 1: its webhooks (reg_send) */
	int ws_due;  /* web sessions changed since ws_seq are to be sent to the signer (ws_send) */
	uint64_t ws_seq;
	int ws_all;		 /* the first fetch is done: ended sessions are sent too from now on */
	char put_err[AS_ERRLEN]; /* a PUT refused since the pull: the PUSH fails with it */
};

/* A frame to the signer, whole (blocking); resets c->o. */
int send_frame(struct cl *c, struct cv *f, char *err);
/* Between steps: renew this replica's lease, take over the replicas whose lease expired (their
 * names and their webhooks' deliveries to the signer), and once, this replica's own deliveries of
 * a previous run. Sets c->next_beat. */
void heartbeat(struct cl *c);
/* F_CL_DLV_ADD and F_CL_DLV_DONE: never answered. */
void dlv_frame(struct cl *c, const struct ipc_frame *f);
/* F_CL_REG_PUT (never answered): this replica's registry, stored when it is newer than the
 * cluster's, and the others told (NOTIFY assent_registry). reg_send: the cluster's registry to
 * the signer (F_CL_REG), which checks its mac. */
void reg_put(struct cl *c, const struct ipc_frame *f);
void reg_send(struct cl *c);
/* F_CL_WS_PUT (never answered): a web session made, used or ended on this replica, kept for the
 * others (an ended one stays ended) and the others told (NOTIFY assent_websessions). ws_send:
 * the sessions changed since the last one sent (at start, the live ones) to the signer
 * (F_CL_WS), which checks each mac. */
void ws_put(struct cl *c, const struct ipc_frame *f);
void ws_send(struct cl *c);
/* After a reconnect: what changed meanwhile is fetched again (its NOTIFYs went with the link). */
#define CL_REFETCH(c) ((c)->reg_due = 3, (c)->ws_due = 1)

#endif
