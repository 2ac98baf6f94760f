/* `assentd --stdio`: the command MCP client configurations run. A thin relay
 * between stdin/stdout and the daemon's agent socket STATE/agent.sock, which starts
 * the daemon (detached) when none runs, so every agent on the machine shares one
 * queue, one policy and one ledger, and closing an editor never takes the queue. */
#ifndef ASSENT_BRIDGE_H
#define ASSENT_BRIDGE_H

#include "gateway/proto/statedir.h"

struct bridge_opts {
	const char *state;	 /* resolved state directory */
	const char *policy;	 /* --policy given to this bridge, or NULL */
	const char *upstreams;	 /* --upstreams given to this bridge, or NULL */
	const char *daemon_path; /* the assentd binary to start, normally /proc/self/exe */
	int connect_timeout_ms;	 /* how long to wait for a daemon it started (default 5000) */
	int single_user;	 /* --single-user or ASSENT_SINGLE_USER: the daemon it starts is too */
};

/* Relay until stdin ends or the daemon closes the connection. Returns the exit status. */
int bridge_run(const struct bridge_opts *o);

#endif
