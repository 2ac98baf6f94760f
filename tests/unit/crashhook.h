/* kill -9 at a named step of the ledger's write-ahead log (ledger_wal_hook), for the crash
 * tests (wal_test.c, gate_crash_test.c). Header-only. */
#ifndef ASSENT_TESTS_CRASHHOOK_H
#define ASSENT_TESTS_CRASHHOOK_H

#include <signal.h>
#include <string.h>

#include "ledger/ledger.h"

static const char *crash_step;
static int crash_left;

static inline void crash_hook(const char *step, const char *dir)
{
	(void)dir;
	if (crash_step && !strcmp(step, crash_step) && --crash_left == 0)
		raise(SIGKILL);
}

/* This process dies the nth time it reaches step. */
static inline void crash_at(const char *step, int nth)
{
	crash_step = step;
	crash_left = nth;
	ledger_wal_hook = crash_hook;
}

#endif
