/* Inside the jail: the seccomp filter jail_enter loads last (step 8) and the check of the
 * extra syscalls a caller asks for (step 1). For jail.c only; jail.h is the contract. */
#ifndef ASSENT_JAIL_SECCOMP_H
#define ASSENT_JAIL_SECCOMP_H

#include "gateway/worker/jail.h"

/* Refuses more than JAIL_MAX_EXTRA extra syscalls, an unknown number, and any that would
 * break the jail (jail_never). Changes nothing. 0 or a negative enum as_err with err set. */
int jail_check_extra(const struct jail_opts *o, char *err);

/* Builds the allowlist (base, argument-checked, and o's extras) and loads it for every
 * thread; the default kills the process. 0 or a negative enum as_err with err set. */
int jail_seccomp(const struct jail_opts *o, char *err);

#endif
