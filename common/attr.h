/* Function attributes every layer uses. */
#ifndef ASSENT_ATTR_H
#define ASSENT_ATTR_H

/* A result that must not be ignored: every int-returning buffer, value, IPC and
 * ledger function carries it, and the build's -Werror turns an ignored one into an
 * error (make check fails). gcc is not silenced by a (void) cast: a result that may
 * be ignored is no AS_MUST_USE (rd_skip_ws returns a count instead). */
#define AS_MUST_USE __attribute__((warn_unused_result))

#endif
