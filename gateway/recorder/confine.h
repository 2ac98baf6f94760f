/* The recorder's confinement, entered once its configuration is read and before it reads a
 * record: core dumps off and at most 64 descriptors; as root, the recorder's own uid
 * (ASSENT_WORKER_UID + 16) without groups; then no new processes (RLIMIT_NPROC 0),
 * non-dumpable, no_new_privs; Landlock: read and write beneath its own directory
 * (STATE/records) and nowhere else, read only for /etc, the time zones, OpenSSL's files and
 * /dev/urandom, TCP connections only to the database port it was given (ABI 4+), no
 * signals or abstract sockets outside itself (ABI 6+); and a seccomp allowlist (default:
 * kill) of file, memory and time calls, and with PostgreSQL or MySQL socket calls, with sockets of
 * AF_UNIX, AF_INET and AF_INET6 only (with SQLite, no socket can be made at all). No exec, fork, ptrace, mount or kill.
 * Refused without Landlock when not root. A database server reached over a unix socket is not held by Landlock (the
 * kernel does not check a pathname socket's connect): say so to operators, as assentd(8) does. */
#ifndef ASSENT_CONFINE_H
#define ASSENT_CONFINE_H

#include <sys/types.h>

struct confine_opts {
	const char *dir;   /* its directory; NULL: none (PostgreSQL, MySQL and JSON lines only) */
	unsigned tcp_port; /* the PostgreSQL or MySQL server's TCP port; 0: no TCP at all */
	int net;	   /* sockets at all (PostgreSQL, MySQL); 0: none, not even to resolve a name */
	uid_t uid;	   /* as root: the uid to drop to (never 0) */
};

int confine_enter(const struct confine_opts *o, char *err);

#endif
