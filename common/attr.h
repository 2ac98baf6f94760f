/* Function attributes every layer uses. */
#ifndef ASSENT_ATTR_H
#define ASSENT_ATTR_H

/* A result that must not be ignored: every int-returning buffer, value, IPC and
 * ledger function carries it, and the build's -Werror turns an ignored one into an
 * error (make check fails). Cast to (void) only with a comment saying why. */
#define AS_MUST_USE __attribute__((warn_unused_result))

#endif
