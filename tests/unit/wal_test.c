/* The write-ahead log (ledger/wal.c) under kill -9 at every step of a commit's record, of a
 * reset and of a recovery, on a real LMDB environment: a child appends, reporting each append
 * that returned (answered) through a pipe, and is killed at the Nth time it reaches the step.
 * Reopened, the ledger must hold every answered entry, byte for byte, verify with
 * av_verify_ledger, and take more. "Another boot" (a power cut) is simulated too: the boot id
 * changes and both of LMDB's meta pages are destroyed, so the ledger opens only if the log's
 * base is put back; and a torn log record, a damaged one with more after it, and a log whose
 * records were written by someone without the key. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "include/assent/verify.h"
#include "ledger/ledger.h"
#include "tests/unit/crashhook.h"
#include "tests/unit/scratch.h"

/* A request entry, canonical CBOR; n makes each one different. */
static void entry(uint64_t n, struct buf *b)
{
	char sid[32];
	snprintf(sid, sizeof sid, "req-%llu", (unsigned long long)n);
	buf_reset(b);
	static const uint8_t head[] = {
	    0xa8, 0x64, 'k',  'i', 'n',	 'd',  0x67, 'r',  'e',	 'q',  'u',  'e',  's', 't',  0x64, 't',  'y',
	    'p',  'e',	0x68, 'a', 'p',	 'p',  'r',  'o',  'v',	 'a',  'l',  0x67, 'c', 'o',  'n',  't',  'e',
	    'x',  't',	0x62, '{', '}',	 0x67, 'm',  'e',  's',	 's',  'a',  'g',  'e', 0x61, 'm',  0x68, 'a',
	    'u',  'd',	'i',  'e', 'n',	 'c',  'e',  0x62, 't',	 'f',  0x68, 'd',  'e', 'a',  'd',  'l',  'i',
	    'n',  'e',	0x1b, 0,   0,	 1,    0xa2, 0x29, 0xf1, 0x28, 0,    0x69, 'r', 'e',  'q',  'u',  'e',
	    's',  't',	'e',  'r', 0x61, 'u',  0x6a, 's',  'e',	 's',  's',  'i',  'o', 'n',  '_',  'i',  'd'};
	assert_int_equal(buf_put(b, head, sizeof head), 0);
	uint8_t tl = (uint8_t)(0x60 + strlen(sid));
	assert_int_equal(buf_put(b, &tl, 1), 0);
	assert_int_equal(buf_put(b, sid, strlen(sid)), 0);
}

struct seen {
	uint64_t seq[1024];
	uint64_t n[1024];
	size_t count;
};

/* The child: open, append one entry at a time and report each, until killed (or `max`). */
static void child(const char *dir, int fd, const char *step, int nth, uint64_t first, int max)
{
	crash_at(step, nth);
	char err[AS_ERRLEN];
	struct ledger *l;
	struct ledger_opts o = {.checkpoint_secs = 3600};
	if (ledger_open(dir, &o, &l, err) != 0)
		_exit(3);
	struct buf b;
	buf_init(&b, 4096);
	for (int i = 0; i < max; i++) {
		entry(first + (uint64_t)i, &b);
		struct ledger_rec r = {b.p, b.len};
		struct ledger_pos p;
		if (ledger_append(l, &r, 1, &p, err) != 0)
			_exit(4);
		uint64_t rep[2] = {p.seq, first + (uint64_t)i};
		if (write(fd, rep, sizeof rep) != sizeof rep)
			_exit(5);
	}
	ledger_close(l);
	_exit(0);
}

/* The ledger stores an entry with its seq, time and prev added (entry_build): the answered
 * entry at its seq must carry the session id that made it. */
static int check_entry(uint64_t seq, const uint8_t *cbor, size_t len, void *arg)
{
	struct seen *s = arg;
	for (size_t i = 0; i < s->count; i++)
		if (s->seq[i] == seq) {
			char sid[40];
			int n = snprintf(sid, sizeof sid, "%creq-%llu",
					 (char)(0x60 + 4 +
						(s->n[i] < 10	 ? 1
						 : s->n[i] < 100 ? 2
								 : 3)),
					 (unsigned long long)s->n[i]);
			if (!memmem(cbor, len, sid, (size_t)n))
				fail_msg("entry %llu is not the one answered (%s)", (unsigned long long)seq, sid + 1);
			s->seq[i] = UINT64_MAX; /* found */
		}
	return 0;
}

static void verify_dir(const char *state, const char *dir, uint64_t at_least)
{
	char pub[256];
	snprintf(pub, sizeof pub, "%s/keys/checkpoint.pub", state);
	const char *keys[] = {pub};
	struct av_ledger_opts vo = {.key_paths = keys, .nkeys = 1};
	struct av_ledger_report rep;
	assert_int_equal(av_verify_ledger(dir, &vo, &rep), 0);
	if (!rep.ok)
		fail_msg("ledger not intact: %s", rep.reason);
	assert_true(rep.entries >= at_least);
	assert_int_equal(rep.unsigned_tail, 0);
}

/* LMDB's two meta pages destroyed: what a power cut can leave of them (see wal.c). */
static void wreck_meta(const char *dir)
{
	char path[256];
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	static uint8_t junk[8192];
	memset(junk, 0x5a, sizeof junk);
	assert_int_equal(pwrite(fd, junk, sizeof junk, 0), (ssize_t)sizeof junk);
	close(fd);
}

static void one(const char *step, int nth, int other_boot)
{
	char state[] = "/tmp/assent-wal-test.XXXXXX", dir[128], err[AS_ERRLEN];
	assert_non_null(mkdtemp(state));
	snprintf(dir, sizeof dir, "%s/ledger", state);
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		child(dir, pfd[1], step, nth, 0, 300);
	}
	close(pfd[1]);
	struct seen s = {0};
	uint64_t rep[2];
	while (s.count < 1024 && read(pfd[0], rep, sizeof rep) == sizeof rep) {
		s.seq[s.count] = rep[0];
		s.n[s.count++] = rep[1];
	}
	close(pfd[0]);
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
		fail_msg("step %s #%d: the child was not killed there (status %d, %zu answered)", step, nth, st,
			 s.count);
	ledger_wal_hook = NULL;
	ledger_wal_boot = NULL;
	if (other_boot) {
		char wal[160];
		snprintf(wal, sizeof wal, "%s/wal", dir);
		ledger_wal_boot = "another-boot";
		if (access(wal, F_OK) == 0) /* a log, so a base to put back */
			wreck_meta(dir);
	}
	struct ledger *l;
	struct ledger_opts o = {0};
	if (ledger_open(dir, &o, &l, err) != 0)
		fail_msg("step %s #%d%s: reopen: %s", step, nth, other_boot ? " (another boot)" : "", err);
	uint64_t size = ledger_size(l);
	assert_int_equal(ledger_scan(l, check_entry, &s, err), 0);
	for (size_t i = 0; i < s.count; i++)
		if (s.seq[i] != UINT64_MAX)
			fail_msg("step %s #%d: answered entry %zu is lost (ledger has %llu)", step, nth, i,
				 (unsigned long long)size);
	/* more appends, a close and a reopen */
	struct buf b;
	buf_init(&b, 4096);
	entry(5000, &b);
	struct ledger_rec r = {b.p, b.len};
	struct ledger_pos p;
	assert_int_equal(ledger_append(l, &r, 1, &p, err), 0);
	assert_int_equal(p.seq, size);
	ledger_close(l);
	ledger_wal_boot = NULL;
	verify_dir(state, dir, size + 1);
	buf_free(&b);
	assert_int_equal(scratch_rm(state), 0);
}

/* Each step of a commit's record, at the first record and at one after a reset. */
static void test_kill_in_commit(void **unused)
{
	(void)unused;
	static const char *steps[] = {"log", "log-half", "log-written", "log-synced"};
	for (int boot = 0; boot < 2; boot++)
		for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
			one(steps[i], 2, boot);
			one(steps[i], 140, boot); /* after the reset at 128 records */
		}
}

/* Each step of a reset: the one at open, and one after 128 records. */
static void test_kill_in_reset(void **unused)
{
	(void)unused;
	static const char *steps[] = {"reset", "synced", "new-log", "renamed"};
	for (int boot = 0; boot < 2; boot++)
		for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
			one(steps[i], 1, boot);
			one(steps[i], 2, boot);
		}
}

/* A recovery killed after putting the base back, then recovered again. */
static void test_kill_in_recovery(void **unused)
{
	(void)unused;
	char state[] = "/tmp/assent-wal-test.XXXXXX", dir[128], err[AS_ERRLEN];
	assert_non_null(mkdtemp(state));
	snprintf(dir, sizeof dir, "%s/ledger", state);
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		child(dir, pfd[1], "log-synced", 50, 0, 300);
	}
	close(pfd[1]);
	uint64_t rep[2], answered = 0;
	while (read(pfd[0], rep, sizeof rep) == sizeof rep)
		answered++;
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	wreck_meta(dir);
	pid = fork();
	if (pid == 0) { /* recovering on another boot, killed once the base is back */
		ledger_wal_boot = "another-boot";
		crash_at("restored", 1);
		struct ledger *l;
		struct ledger_opts o = {0};
		_exit(ledger_open(dir, &o, &l, err) == 0 ? 0 : 3);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	assert_true(WIFSIGNALED(st));
	ledger_wal_hook = NULL;
	ledger_wal_boot = "another-boot";
	struct ledger *l;
	struct ledger_opts o = {0};
	if (ledger_open(dir, &o, &l, err) != 0)
		fail_msg("reopen after a killed recovery: %s", err);
	assert_true(ledger_size(l) >= answered + 1); /* + the key entry */
	ledger_close(l);
	ledger_wal_boot = NULL;
	verify_dir(state, dir, answered + 1);
	assert_int_equal(scratch_rm(state), 0);
}

/* A record damaged in the middle of the log (more records after it) is refused, naming it. */
static void test_damaged_log(void **unused)
{
	(void)unused;
	char state[] = "/tmp/assent-wal-test.XXXXXX", dir[128], path[160], err[AS_ERRLEN];
	assert_non_null(mkdtemp(state));
	snprintf(dir, sizeof dir, "%s/ledger", state);
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		child(dir, pfd[1], "log-synced", 6, 0, 300);
	}
	close(pfd[1]);
	uint64_t rep[2];
	while (read(pfd[0], rep, sizeof rep) == sizeof rep)
		;
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	/* the header is 93 bytes and two meta pages; flip a byte inside the first record */
	snprintf(path, sizeof path, "%s/wal", dir);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	long ps = sysconf(_SC_PAGESIZE);
	off_t at = 93 + 2 * ps + 60;
	uint8_t c;
	assert_int_equal(pread(fd, &c, 1, at), 1);
	c ^= 0xff;
	assert_int_equal(pwrite(fd, &c, 1, at), 1);
	close(fd);
	struct ledger *l;
	struct ledger_opts o = {0};
	assert_int_equal(ledger_open(dir, &o, &l, err), AS_ECORRUPT);
	assert_non_null(strstr(err, "write-ahead log is damaged"));
	assert_int_equal(scratch_rm(state), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kill_in_commit),
	    cmocka_unit_test(test_kill_in_reset),
	    cmocka_unit_test(test_kill_in_recovery),
	    cmocka_unit_test(test_damaged_log),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
