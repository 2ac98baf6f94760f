/* Unit tests for gateway/proto/myurl.c: MySQL / MariaDB URLs taken part by part (TCP with and
 * without a port, IPv6, a socket, percent-encoding), and each malformed form refused with a
 * message naming the fault, never the password. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"
#include "gateway/proto/myurl.h"
#include "include/assent/err.h"

static void test_taken(void **st)
{
	(void)st;
	struct myurl u;
	char err[AS_ERRLEN] = "";
	assert_int_equal(myurl_parse("mysql://app:s3cret@db.example/records", &u, err), 0);
	assert_string_equal(u.user, "app");
	assert_string_equal(u.pass, "s3cret");
	assert_true(u.has_pass);
	assert_string_equal(u.host, "db.example");
	assert_int_equal(u.port, 3306);
	assert_string_equal(u.db, "records");
	assert_string_equal(u.socket, "");

	assert_int_equal(myurl_parse("MariaDB://app@10.0.0.5:3307/r", &u, err), 0);
	assert_false(u.has_pass);
	assert_string_equal(u.pass, "");
	assert_string_equal(u.host, "10.0.0.5");
	assert_int_equal(u.port, 3307);

	assert_int_equal(myurl_parse("mysql://app:pw@[::1]:3310/r", &u, err), 0);
	assert_string_equal(u.host, "::1");
	assert_int_equal(u.port, 3310);

	/* percent-encoded parts; a password holding '@' and ':' */
	assert_int_equal(myurl_parse("mysql://a%40b:p%40ss%3Aw%2Fd@/my%20db?socket=/run/my%2Csql.sock", &u, err), 0);
	assert_string_equal(u.user, "a@b");
	assert_string_equal(u.pass, "p@ss:w/d");
	assert_string_equal(u.db, "my db");
	assert_string_equal(u.socket, "/run/my,sql.sock");
	assert_string_equal(u.host, "");
	assert_int_equal(u.port, 0);

	assert_int_equal(myurl_parse("mysql://app:pw@localhost/r?socket=/tmp/s", &u, err), 0);
	assert_string_equal(u.host, ""); /* a socket: the host was only a name for it */
	assert_string_equal(u.socket, "/tmp/s");

	/* the seed's SQLAlchemy forms: a driver, unix_socket=, charset=utf8mb4 */
	assert_int_equal(myurl_parse("mysql+pymysql://app:pw@db/r?charset=utf8mb4", &u, err), 0);
	assert_string_equal(u.host, "db");
	assert_string_equal(u.db, "r");
	assert_int_equal(
	    myurl_parse("mariadb+mariadbconnector://app:pw@/r?unix_socket=/run/m.sock&charset=UTF8MB4", &u, err), 0);
	assert_string_equal(u.socket, "/run/m.sock");

	assert_true(myurl_is("MYSQL://x") && myurl_is("mariadb:") && myurl_is("mysql+aiomysql://") &&
		    !myurl_is("mysql+://") && !myurl_is("mysqlx://") && !myurl_is("postgresql://") && !myurl_is(NULL));
}

static void refused(const char *url, const char *why)
{
	struct myurl u;
	char err[AS_ERRLEN] = "";
	assert_int_equal(myurl_parse(url, &u, err), AS_EINVAL);
	if (!strstr(err, why))
		fail_msg("%s: \"%s\", wanted \"%s\"", url, err, why);
	if (strstr(err, "Hunter22"))
		fail_msg("%s: the password is in \"%s\"", url, err);
}

static void test_refused(void **st)
{
	(void)st;
	refused("postgresql://u@h/d", "expected mysql:// or mariadb://");
	refused("mysql:u:Hunter22@h/d", "no \"//\"");
	refused("mysql://h/d", "names no user");
	refused("mysql://:Hunter22@h/d", "the user is empty");
	refused("mysql://u:Hunter22@h", "names no database");
	refused("mysql://u:Hunter22@h/", "names no database");
	refused("mysql://u:Hunter22@h/a/b", "holds '/'");
	refused("mysql://u:Hunter22@/d", "names no host");
	refused("mysql://u:Hunter22@h:0/d", "port 0 is not from 1 to 65535");
	refused("mysql://u:Hunter22@h:65536/d", "port 65536");
	refused("mysql://u:Hunter22@h:33a/d", "the port is not a number");
	refused("mysql://u:Hunter22@h:/d", "the port is not a number");
	refused("mysql://u:Hunter22@[::1/d", "has no ']'");
	refused("mysql://u:Hunter22@[::1]x/d", "']' must end the host");
	refused("mysql://u:Hunter22@h;x/d", "the host holds ';'");
	refused("mysql://u:Hunter22%4@h/d", "the password has a '%'");
	refused("mysql://u:Hunter22%00@h/d", "the password holds a control character");
	refused("mysql://u:Hunter22@h/d?socket=rel.sock", "not an absolute path");
	refused("mysql://u:Hunter22@h/d?ssl=1", "unknown parameter \"ssl\"");
	refused("mysql://u:Hunter22@h/d?charset=latin1", "charset=latin1: the records are always utf8mb4");
	refused("mysql+pymysql:u:Hunter22@h/d", "no \"//\"");
	refused("mysql://u:Hunter22@db/d?socket=/s", "a socket is local");
	refused("mysql://u:Hunter22@localhost:3306/d?socket=/s", "socket= with a port");
	char big[700];
	memset(big, 'p', sizeof big);
	memcpy(big, "mysql://u:", 10);
	memcpy(big + sizeof big - 10, "@h/d", 5);
	refused(big, "the password is longer than 512 bytes");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_taken),
	    cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
