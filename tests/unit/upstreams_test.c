/* The upstreams file (gateway/state/upstreams.c, assent.upstreams(5)): a client's
 * mcpServers configuration read as it is, and every bad entry refused naming the file,
 * the server and what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "include/assent/err.h"
#include "gateway/state/upstreams.h"

static struct upstreams *parse_ok(const char *s)
{
	struct upstreams *u = NULL;
	char err[AS_ERRLEN] = "";
	if (upstreams_parse(s, strlen(s), "f.json", &u, err) != 0)
		fail_msg("refused: %s", err);
	return u;
}

static void test_client_config_as_is(void **state)
{
	(void)state;
	struct upstreams *u =
	    parse_ok("{\"globalShortcut\":\"Ctrl+Space\",\"mcpServers\":{"
		     "\"fs\":{\"command\":\"npx\",\"args\":[\"-y\",\"@modelcontextprotocol/server-filesystem\",\"/d\"],"
		     "\"env\":{\"TOKEN\":\"s3cret\",\"EMPTY\":\"\"},\"autoApprove\":[\"read\"]},"
		     "\"db\":{\"type\":\"streamable-http\",\"url\":\"https://db.example.com:8443/mcp?x=1\","
		     "\"headers\":{\"Authorization\":\"Bearer abc\"},\"ca\":\"/etc/ca.pem\"},"
		     "\"v6\":{\"url\":\"http://[::1]:9000\"},"
		     "\"off\":{\"command\":\"x\",\"disabled\":true},"
		     "\"root\":{\"type\":\"stdio\",\"command\":\"/usr/bin/srv\",\"cwd\":\"/srv\",\"uid\":1500}}}");
	assert_int_equal(u->n, 4);
	const struct upstream *fs = &u->u[0], *db = &u->u[1], *v6 = &u->u[2], *root = &u->u[3];
	assert_string_equal(fs->name, "fs");
	assert_int_equal(fs->kind, UP_STDIO);
	assert_string_equal(fs->command, "npx");
	assert_int_equal(fs->nargs, 3);
	assert_string_equal(fs->args[2], "/d");
	assert_int_equal(fs->nenv, 2);
	assert_string_equal(fs->env[0].key, "TOKEN");
	assert_string_equal(fs->env[0].value, "s3cret");
	assert_int_equal(db->kind, UP_HTTP);
	assert_string_equal(db->scheme, "https");
	assert_string_equal(db->host, "db.example.com");
	assert_int_equal(db->port, 8443);
	assert_string_equal(db->path, "/mcp?x=1");
	assert_string_equal(db->headers[0].key, "Authorization");
	assert_string_equal(db->ca, "/etc/ca.pem");
	assert_string_equal(v6->host, "::1");
	assert_int_equal(v6->port, 9000);
	assert_string_equal(v6->path, "/");
	assert_int_equal(root->has_uid, 1);
	assert_int_equal(root->uid, 1500);
	assert_string_equal(root->cwd, "/srv");
	upstreams_free(u);
}

static const struct {
	const char *text, *says;
} bad[] = {
    {"", "not JSON"},
    {"[]", "must be a JSON object"},
    {"{}", "needs an \"mcpServers\" object"},
    {"{\"mcpServers\":[]}", "needs an \"mcpServers\" object"},
    {"{\"mcpServers\":{}}", "lists no server"},
    {"{\"mcpServers\":{\"a\":{\"command\":\"x\"},\"a\":{\"command\":\"y\"}}}", "not JSON"},
    {"{\"mcpServers\":{\"a__b\":{\"command\":\"x\"}}}", "server \"a__b\": a server's name"},
    {"{\"mcpServers\":{\"_a\":{\"command\":\"x\"}}}", "a server's name"},
    {"{\"mcpServers\":{\"a b\":{\"command\":\"x\"}}}", "a server's name"},
    {"{\"mcpServers\":{\"a\\u0007\":{\"command\":\"x\"}}}", "server \"a?\""},
    {"{\"mcpServers\":{\"abcdefghijabcdefghijabcdefghijabc\":{\"command\":\"x\"}}}", "a server's name"},
    {"{\"mcpServers\":{\"a\":1}}", "server \"a\": must be an object"},
    {"{\"mcpServers\":{\"a\":{}}}", "exactly one of \"command\""},
    {"{\"mcpServers\":{\"a\":{\"command\":\"x\",\"url\":\"https://h\"}}}", "exactly one of"},
    {"{\"mcpServers\":{\"a\":{\"command\":\"\"}}}", "\"command\" must be 1 to 4096 bytes"},
    {"{\"mcpServers\":{\"a\":{\"command\":7}}}", "\"command\" must be a string, not an integer"},
    {"{\"mcpServers\":{\"a\":{\"command\":\"x\",\"args\":\"-y\"}}}", "\"args\" must be an array"},
    {"{\"mcpServers\":{\"a\":{\"command\":\"x\",\"args\":[\"a\",2]}}}", "\"args[1]\" must be a string"},
    {"{\"mcpServers\":{\"a\":{\"command\":\"x\",\"env\":[]}}}", "\"env\" must be an object"},
    {"{\"mcpServers\":{\"a\":{\"command\":\"x\",\"env\":{\"1X\":\"v\"}}}}", "not a valid environment variable"},
    {"{\"mcpServers\":{\"a\":{\"command\":\"x\",\"env\":{\"X\":1}}}}", "\"env.X\" must be a string"},
    {"{\"mcpServers\":{\"a\":{\"command\":\"x\",\"cwd\":\"srv\"}}}", "\"cwd\" must be an absolute path"},
    {"{\"mcpServers\":{\"a\":{\"command\":\"x\",\"uid\":-1}}}", "\"uid\" must be a user id"},
    {"{\"mcpServers\":{\"a\":{\"command\":\"x\",\"uid\":\"root\"}}}", "\"uid\" must be a user id"},
    {"{\"mcpServers\":{\"a\":{\"command\":\"x\",\"headers\":{}}}}", "\"headers\" belongs to an HTTP server"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"https://h\",\"env\":{}}}}", "\"env\" belongs to a stdio server"},
    {"{\"mcpServers\":{\"a\":{\"type\":\"sse\",\"url\":\"https://h/sse\"}}}", "\"sse\""},
    {"{\"mcpServers\":{\"a\":{\"type\":\"http\",\"command\":\"x\"}}}", "\"type\" is \"http\""},
    {"{\"mcpServers\":{\"a\":{\"url\":\"ftp://h\"}}}", "must start with https://"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"http://example.com/mcp\"}}}", "plain http:// only to a loopback"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"http://127.0.0.1.example.com/mcp\"}}}", "plain http:// only to a loopback"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"http://[::2]/mcp\"}}}", "plain http:// only to a loopback"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"https://u:p@h/mcp\"}}}", "must not carry credentials"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"https://h/mcp#x\"}}}", "must not have a fragment"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"https://h:0\"}}}", "the port must be"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"https://h:65536\"}}}", "the port must be"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"https://h:x\"}}}", "the port must be"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"https://\"}}}", "names no host"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"https://h_h\"}}}", "the host may hold"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"https://[::1\"}}}", "in brackets"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"https://h/a b\"}}}", "printable ASCII without spaces"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"https://h\",\"headers\":{\"X\":\"a\\r\\nEvil: 1\"}}}}", "control characters"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"https://h\",\"headers\":{\"X Y\":\"v\"}}}}", "not a valid header name"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"https://h\",\"headers\":{\"Host\":\"v\"}}}}",
     "\"Host\" is set by assent itself"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"https://h\",\"headers\":{\"mcp-session-id\":\"v\"}}}}",
     "\"mcp-session-id\" is set by assent itself"},
    {"{\"mcpServers\":{\"a\":{\"url\":\"http://127.0.0.1\",\"ca\":\"/c.pem\"}}}", "the url must be https://"},
    {"{\"mcpServers\":{\"a\":{\"command\":\"x\",\"disabled\":\"yes\"}}}", "\"disabled\" must be true or false"},
    {"{\"mcpServers\":{\"a\":{\"command\":\"x\",\"disabled\":true}}}", "every server"},
};

static void test_refusals_name_file_server_and_what(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct upstreams *u = (struct upstreams *)0x1;
		char err[AS_ERRLEN] = "";
		int rc = upstreams_parse(bad[i].text, strlen(bad[i].text), "f.json", &u, err);
		if (rc != AS_EINVAL || u != NULL || strncmp(err, "f.json: ", 8) || !strstr(err, bad[i].says))
			fail_msg("%s: rc %d, err \"%s\", wanted \"%s\"", bad[i].text, rc, err, bad[i].says);
	}
}

static void test_limits(void **state)
{
	(void)state;
	char big[8000], *p = big;
	p += snprintf(p, sizeof big, "{\"mcpServers\":{");
	for (int i = 0; i < UP_MAX + 1; i++)
		p += snprintf(p, (size_t)(big + sizeof big - p), "%s\"s%d\":{\"command\":\"x\"}", i ? "," : "", i);
	snprintf(p, (size_t)(big + sizeof big - p), "}}");
	struct upstreams *u;
	char err[AS_ERRLEN];
	assert_int_equal(upstreams_parse(big, strlen(big), "f", &u, err), AS_EINVAL);
	assert_non_null(strstr(err, "at most 64"));
	assert_int_equal(upstreams_parse(big, UP_FILE_MAX + 1, "f", &u, err), AS_ETOOBIG);
	assert_int_equal(upstreams_load("/nonexistent/upstreams.json", &u, err), AS_ENOTFOUND);
}

/* "roots": absolute directories, either kind of server; a refusal frees what it read */
static void test_roots(void **state)
{
	(void)state;
	struct upstreams *u = parse_ok("{\"mcpServers\":{\"a\":{\"command\":\"x\",\"roots\":[\"/srv/a dir\",\"/w\"]},"
				       "\"b\":{\"url\":\"http://127.0.0.1:1/mcp\",\"roots\":[]}}}");
	assert_int_equal(u->u[0].nroots, 2);
	assert_string_equal(u->u[0].roots[0], "/srv/a dir");
	assert_int_equal(u->u[1].nroots, 0);
	upstreams_free(u);
	static const char *const refused[] = {
	    "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"roots\":\"/srv\"}}}",
	    "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"roots\":[\"/srv\",\"rel\"]}}}",
	    "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"roots\":[3]}}}",
	};
	char err[AS_ERRLEN];
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		assert_int_equal(upstreams_parse(refused[i], strlen(refused[i]), "f", &u, err), AS_EINVAL);
		assert_non_null(strstr(err, "roots"));
	}
	char uri[64];
	assert_int_equal(upstreams_file_uri("/srv/a dir/%é", uri, sizeof uri), 0);
	assert_string_equal(uri, "file:///srv/a%20dir/%25%C3%A9");
	assert_int_equal(upstreams_file_uri("/srv/a dir", uri, 17), AS_ETOOBIG);
	assert_int_equal(upstreams_file_uri("/srv/a dir", uri, 20), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_client_config_as_is),
	    cmocka_unit_test(test_refusals_name_file_server_and_what),
	    cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_roots),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
