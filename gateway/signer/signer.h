/* The privileged signer of assentd: owns the ledger, the keys, the pending queue,
 * the identity registry and the decision hook, and reads nothing but typed frames
 * from its jailed workers (gateway/proto/proto.h). */
#ifndef ASSENT_SIGNER_H
#define ASSENT_SIGNER_H

struct signer_opts {
	const char *state;	/* resolved state directory */
	const char *policy;	/* --policy FILE, or NULL: every request waits for a person */
	const char *upstreams;	/* --upstreams FILE (the gate, assent.upstreams(5)), or NULL */
	const char *worker_exe; /* assent-worker, executed as the workers (gateway/proto/workers.h) */
	int single_user;	/* a decision from the requester's own uid is accepted, as same-user */
};

/* Run the daemon until SIGTERM or SIGINT. Returns the exit status. */
int signer_main(const struct signer_opts *o);

#endif
