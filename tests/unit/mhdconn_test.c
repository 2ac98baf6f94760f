/* Unit tests for gateway/mhdconn's address keys: what the per-address limit of
 * unauthenticated connections counts as one address. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <netinet/in.h>
#include <sys/un.h>

#include "gateway/worker/mhdconn.h"

static void key4(const char *ip, uint8_t k[9])
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(1234)};
	assert_int_equal(inet_pton(AF_INET, ip, &a.sin_addr), 1);
	mc_addr_key((const struct sockaddr *)&a, k);
}

static void key6(const char *ip, uint8_t k[9])
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(1234)};
	assert_int_equal(inet_pton(AF_INET6, ip, &a.sin6_addr), 1);
	mc_addr_key((const struct sockaddr *)&a, k);
}

static void test_keys(void **state)
{
	(void)state;
	uint8_t a[9], b[9];
	key4("127.0.0.1", a); /* every loopback address is one: any local process may use any */
	key4("127.45.6.7", b);
	assert_memory_equal(a, b, 9);
	key6("::1", b);
	assert_memory_equal(a, b, 9);
	key6("::ffff:127.0.0.2", b);
	assert_memory_equal(a, b, 9);
	assert_true(a[0] != 0);
	key4("192.0.2.1", a); /* other addresses each their own */
	key4("192.0.2.2", b);
	assert_memory_not_equal(a, b, 9);
	key6("::ffff:192.0.2.1", b); /* the same host over a v4-mapped socket */
	assert_memory_equal(a, b, 9);
	key6("2001:db8:1:2::1", a); /* IPv6: one /64 is one host's share */
	key6("2001:db8:1:2:ffff::9", b);
	assert_memory_equal(a, b, 9);
	key6("2001:db8:1:3::1", b);
	assert_memory_not_equal(a, b, 9);
	struct sockaddr_un u = {.sun_family = AF_UNIX}; /* the proxy's socket: not limited */
	mc_addr_key((const struct sockaddr *)&u, a);
	assert_int_equal(a[0], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_keys)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
