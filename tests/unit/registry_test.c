/* Unit tests for gateway/registry: reviewers by uid, agents by API key (hash only on
 * disk), names checked, and the file written 0600 and read back. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "include/assent/err.h"
#include "gateway/state/registry.h"
#include "common/util.h"

static void test_reviewers(void **state)
{
	(void)state;
	char dir[] = "/tmp/assent-reg.XXXXXX", err[AS_ERRLEN];
	assert_non_null(mkdtemp(dir));
	struct registry *r;
	assert_int_equal(registry_load(dir, &r, err), 0);
	uid_t u1[] = {1000, 1001}, u2[] = {1001};
	const char *g[] = {"ops", "sre"};
	assert_int_equal(registry_reviewer_add(r, "alice", u1, 2, g, 2, err), 0);
	assert_int_equal(registry_reviewer_add(r, "bob", u2, 1, NULL, 0, err), AS_EEXIST); /* uid taken */
	assert_non_null(strstr(err, "alice"));
	assert_int_equal(registry_reviewer_add(r, "alice", NULL, 0, NULL, 0, err), AS_EEXIST);
	assert_int_equal(registry_reviewer_add(r, "bad name", NULL, 0, NULL, 0, err), AS_EINVAL);
	assert_int_equal(registry_reviewer_add(r, "", NULL, 0, NULL, 0, err), AS_EINVAL);
	const char *badg[] = {"o ps"};
	assert_int_equal(registry_reviewer_add(r, "carol", NULL, 0, badg, 1, err), AS_EINVAL);
	assert_string_equal(registry_reviewer_by_uid(r, 1001), "alice");
	assert_null(registry_reviewer_by_uid(r, 0));
	assert_string_equal(registry_groups_json(r, "reviewer", "alice"), "[\"ops\",\"sre\"]");
	assert_int_equal(registry_save(r, dir, err), 0);
	registry_free(r);

	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, REG_FILE);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(registry_load(dir, &r, err), 0);
	assert_string_equal(registry_reviewer_by_uid(r, 1000), "alice");
	assert_int_equal(registry_remove(r, "reviewer", "alice", err), 0);
	assert_null(registry_reviewer_by_uid(r, 1000));
	assert_int_equal(registry_remove(r, "reviewer", "alice", err), AS_ENOTFOUND);
	registry_free(r);
	unlink(path);
	rmdir(dir);
}

static void test_agents(void **state)
{
	(void)state;
	char dir[] = "/tmp/assent-reg.XXXXXX", err[AS_ERRLEN], key[REG_KEY_LEN + 1], key2[REG_KEY_LEN + 1];
	assert_non_null(mkdtemp(dir));
	struct registry *r;
	assert_int_equal(registry_load(dir, &r, err), 0);
	const char *aud[] = {"tf-prod", "ci/deploy"};
	assert_int_equal(registry_agent_add(r, "ci", aud, 2, key, err), 0);
	assert_int_equal(strlen(key), REG_KEY_LEN);
	assert_memory_equal(key, "ak_", 3);
	assert_int_equal(registry_agent_add(r, "ci2", NULL, 0, key2, err), 0);
	assert_string_not_equal(key, key2);
	assert_string_equal(registry_agent_by_key(r, key, strlen(key)), "ci");
	key[10] ^= 1;
	assert_null(registry_agent_by_key(r, key, strlen(key)));
	key[10] ^= 1;
	assert_true(registry_agent_allows(r, "ci", "tf-prod"));
	assert_false(registry_agent_allows(r, "ci", "tf-staging"));
	assert_false(registry_agent_allows(r, "ci2", "tf-prod"));
	assert_int_equal(registry_save(r, dir, err), 0);
	/* The key itself is never written: only its hash. */
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, REG_FILE);
	struct buf b;
	assert_int_equal(file_read(path, 1 << 20, &b, err), 0);
	assert_null(memmem(b.p, b.len, key + 3, REG_KEY_LEN - 3));
	buf_free(&b);
	char *list = registry_list_json(r);
	assert_null(strstr(list, "key_sha256"));
	free(list);
	registry_free(r);
	assert_int_equal(registry_load(dir, &r, err), 0);
	assert_string_equal(registry_agent_by_key(r, key, strlen(key)), "ci");
	registry_free(r);
	unlink(path);
	rmdir(dir);
}

/* Stdio agents by uid (no key), owners (issue 12). */
static void test_stdio_agents_and_owners(void **state)
{
	(void)state;
	char dir[] = "/tmp/assent-reg.XXXXXX", err[AS_ERRLEN], key[REG_KEY_LEN + 1];
	assert_non_null(mkdtemp(dir));
	struct registry *r;
	assert_int_equal(registry_load(dir, &r, err), 0);
	uid_t u = 1234;
	assert_int_equal(registry_reviewer_add(r, "alice", NULL, 0, NULL, 0, err), 0);
	const char *aud[] = {"staging"};
	struct reg_agent_opts o = {.audiences = aud, .naud = 1, .uids = &u, .nuids = 1, .owner = "nobody"};
	assert_int_equal(registry_agent_add_opts(r, "local", &o, key, err), AS_ENOTFOUND); /* owner: a reviewer */
	o.owner = "alice";
	assert_int_equal(registry_agent_add_opts(r, "local", &o, key, err), 0);
	assert_int_equal(key[0], 0); /* no API key for a stdio agent */
	assert_int_equal(registry_agent_add_opts(r, "again", &o, key, err), AS_EEXIST); /* one uid, one agent */
	assert_string_equal(registry_agent_by_uid(r, 1234), "local");
	assert_null(registry_agent_by_uid(r, 1235));
	assert_string_equal(registry_agent_owner(r, "local"), "alice");
	assert_true(registry_agent_allows(r, "local", "staging"));
	assert_int_equal(registry_agent_add(r, "keyed", NULL, 0, key, err), 0);
	assert_null(registry_agent_owner(r, "keyed"));
	char *list = registry_list_json(r);
	assert_non_null(strstr(list, "\"owner\": \"alice\""));
	free(list);
	assert_int_equal(registry_save(r, dir, err), 0);
	registry_free(r);
	assert_int_equal(registry_load(dir, &r, err), 0);
	assert_string_equal(registry_agent_by_uid(r, 1234), "local");
	registry_free(r);
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, REG_FILE);
	unlink(path);
	rmdir(dir);
}

static void test_damaged_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/assent-reg.XXXXXX", err[AS_ERRLEN], path[256];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/%s", dir, REG_FILE);
	assert_int_equal(file_write_atomic(path, "{\"reviewers\": 3}", 16, 0600, err), 0);
	struct registry *r;
	assert_int_equal(registry_load(dir, &r, err), AS_ECORRUPT);
	assert_non_null(strstr(err, "identity registry"));
	unlink(path);
	rmdir(dir);
}

/* The credential a web session is bound to: one per reviewer and channel, changed by a
 * rotated token, gone with the token or the reviewer. */
static void test_credential(void **state)
{
	(void)state;
	char dir[] = "/tmp/assent-reg.XXXXXX", err[AS_ERRLEN], key[REG_KEY_LEN + 1];
	assert_non_null(mkdtemp(dir));
	struct registry *r;
	assert_int_equal(registry_load(dir, &r, err), 0);
	uint8_t a1[32], a2[32], again[32], b[32], p[32];
	assert_int_equal(registry_reviewer_add(r, "alice", NULL, 0, NULL, 0, err), 0);
	assert_int_equal(registry_reviewer_add(r, "bob", NULL, 0, NULL, 0, err), 0);
	assert_int_equal(registry_reviewer_credential(r, "alice", "token", a1), AS_ENOTFOUND); /* no web token yet */
	assert_int_equal(registry_reviewer_credential(r, "alice", "proxy", p), AS_ENOTFOUND);
	assert_int_equal(registry_reviewer_token(r, "alice", key, err), 0);
	assert_int_equal(registry_reviewer_token(r, "bob", key, err), 0);
	assert_int_equal(registry_reviewer_credential(r, "alice", "token", a1), 0);
	assert_int_equal(registry_reviewer_credential(r, "alice", "token", again), 0);
	assert_memory_equal(a1, again, 32);
	assert_int_equal(registry_reviewer_credential(r, "bob", "token", b), 0);
	assert_memory_not_equal(a1, b, 32);
	/* Rotation: another credential. */
	assert_int_equal(registry_reviewer_token(r, "alice", key, err), 0);
	assert_int_equal(registry_reviewer_credential(r, "alice", "token", a2), 0);
	assert_memory_not_equal(a1, a2, 32);
	/* A proxy identity is a credential of its own. */
	assert_int_equal(registry_reviewer_proxy_id(r, "alice", "alice@example.com", err), 0);
	assert_int_equal(registry_reviewer_credential(r, "alice", "proxy", p), 0);
	assert_memory_not_equal(p, a2, 32);
	/* Removed, then added again with a new token: not the old credential. */
	assert_int_equal(registry_remove(r, "reviewer", "alice", err), 0);
	assert_int_equal(registry_reviewer_credential(r, "alice", "token", again), AS_ENOTFOUND);
	assert_int_equal(registry_reviewer_credential(r, "nobody", "token", again), AS_ENOTFOUND);
	assert_int_equal(registry_reviewer_add(r, "alice", NULL, 0, NULL, 0, err), 0);
	assert_int_equal(registry_reviewer_token(r, "alice", key, err), 0);
	assert_int_equal(registry_reviewer_credential(r, "alice", "token", again), 0);
	assert_memory_not_equal(again, a2, 32);
	assert_memory_not_equal(again, a1, 32);
	registry_free(r);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reviewers),
	    cmocka_unit_test(test_agents),
	    cmocka_unit_test(test_stdio_agents_and_owners),
	    cmocka_unit_test(test_credential),
	    cmocka_unit_test(test_damaged_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
