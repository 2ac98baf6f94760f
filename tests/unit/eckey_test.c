/* Unit tests for common/eckey_priv.c's eckey_load_or_create: a key made once, whoever
 * asks first. A daemon starting and an `assent` command both found no checkpoint key,
 * made one each, and the command's ledger entry was refused as not signed by its key
 * (issue 29, 3): the private key is now created exclusively and the loser loads it. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/eckey.h"
#include "common/util.h"

#define RACERS 8

static char dir[64];

static void paths(char *priv, char *pub, size_t n)
{
	snprintf(priv, n, "%s/checkpoint.key", dir);
	snprintf(pub, n, "%s/checkpoint.pub", dir);
}

/* The public PEM of the key path holds, or of k. */
static char *pem_of(const struct eckey *k)
{
	struct buf b;
	buf_init(&b, 4096);
	if (eckey_public_pem(k, &b) != 0 || buf_put(&b, "", 1) != 0) {
		buf_free(&b);
		return NULL;
	}
	return (char *)b.p;
}

/* RACERS processes, released at once, each loading or creating the key: they all end
 * with the one key on disk. */
static void test_concurrent_create(void **state)
{
	(void)state;
	char priv[128], pub[128];
	paths(priv, pub, sizeof priv);
	for (int round = 0; round < 4; round++) {
		unlink(priv);
		unlink(pub);
		int go[2], out[2];
		assert_int_equal(pipe(go), 0);
		assert_int_equal(pipe(out), 0);
		for (int i = 0; i < RACERS; i++) {
			pid_t p = fork();
			assert_true(p >= 0);
			if (p == 0) {
				char c, err[AS_ERRLEN];
				struct eckey *k = NULL;
				close(go[1]);
				if (read(go[0], &c, 1) != 0) /* EOF: everyone goes */
					_exit(3);
				char *pem = eckey_load_or_create(priv, pub, &k, err) == 0 ? pem_of(k) : NULL;
				char line[512] = "";
				snprintf(line, sizeof line, "%-400.400s", pem ? pem : "failed");
				_exit(write(out[1], line, 400) == 400 ? 0 : 4);
			}
		}
		close(go[0]);
		close(out[1]);
		close(go[1]);
		for (int i = 0; i < RACERS; i++) {
			int st;
			assert_true(wait(&st) > 0);
			assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		}
		char got[RACERS][401];
		for (int i = 0; i < RACERS; i++) {
			assert_int_equal(read(out[0], got[i], 400), 400);
			got[i][400] = 0;
		}
		close(out[0]);
		struct eckey *disk = NULL;
		char err[AS_ERRLEN];
		assert_int_equal(eckey_load_public(pub, &disk, err), 0);
		char *want = pem_of(disk), line[512];
		snprintf(line, sizeof line, "%-400.400s", want);
		for (int i = 0; i < RACERS; i++)
			if (strcmp(got[i], line) != 0)
				fail_msg("round %d: racer %d holds another key than the one on disk", round, i);
		free(want);
		eckey_free(disk);
	}
}

/* A private key whose public half is missing (its maker stopped in between) gets it back. */
static void test_public_refilled(void **state)
{
	(void)state;
	char priv[128], pub[128], err[AS_ERRLEN];
	paths(priv, pub, sizeof priv);
	unlink(priv);
	unlink(pub);
	struct eckey *a = NULL, *b = NULL, *p = NULL;
	assert_int_equal(eckey_load_or_create(priv, pub, &a, err), 0);
	assert_int_equal(unlink(pub), 0);
	assert_int_equal(eckey_load_or_create(priv, pub, &b, err), 0);
	assert_int_equal(eckey_load_public(pub, &p, err), 0);
	char *x = pem_of(a), *y = pem_of(p);
	assert_string_equal(x, y);
	free(x);
	free(y);
	eckey_free(a);
	eckey_free(b);
	eckey_free(p);
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/eckey_test.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_concurrent_create),
	    cmocka_unit_test(test_public_refilled),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		rc = 1;
	return rc;
}
