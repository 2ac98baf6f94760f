/* Unit tests for gateway/peeruid: the owner uid of a loopback TCP peer, as the kernel
 * reports it; another uid's connection (as root: a child that drops to uid 65534)
 * is measured as that uid; a closed peer and a non-loopback socket are errors. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "include/assent/err.h"
#include "gateway/signer/core/peeruid.h"

static int listener(int family, struct sockaddr_storage *ss, socklen_t *sl)
{
	int l = socket(family, SOCK_STREAM, 0);
	assert_true(l >= 0);
	memset(ss, 0, sizeof *ss);
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*sl = sizeof *a;
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		*sl = sizeof *a;
	}
	assert_int_equal(bind(l, (struct sockaddr *)ss, *sl), 0);
	assert_int_equal(listen(l, 4), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)ss, sl), 0);
	return l;
}

static void own_uid(int family)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int l = listener(family, &ss, &sl);
	int c = socket(family, SOCK_STREAM, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&ss, sl), 0);
	int a = accept(l, NULL, NULL);
	assert_true(a >= 0);
	char err[AS_ERRLEN];
	uid_t u = 12345;
	assert_int_equal(peeruid_tcp(a, &u, err), 0);
	assert_int_equal(u, getuid());
	assert_int_equal(peeruid_peer_is_loopback(a), 1);
	/* The peer closes: no owner any more, never a uid of 0 from a TIME_WAIT entry. */
	close(c);
	usleep(20000);
	u = 12345;
	assert_int_not_equal(peeruid_tcp(a, &u, err), 0);
	assert_int_equal(u, 12345);
	close(a);
	close(l);
}

static void test_own_uid_v4(void **state)
{
	(void)state;
	own_uid(AF_INET);
}

static void test_own_uid_v6(void **state)
{
	(void)state;
	own_uid(AF_INET6);
}

static void test_other_uid(void **state)
{
	(void)state;
	if (getuid() != 0)
		skip(); /* needs a second uid */
	struct sockaddr_storage ss;
	socklen_t sl;
	int l = listener(AF_INET, &ss, &sl);
	int go[2];
	assert_int_equal(pipe(go), 0);
	pid_t p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(1);
		int c = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(c, (struct sockaddr *)&ss, sl) != 0)
			_exit(2);
		char b;
		if (read(go[0], &b, 1) < 0) /* stay connected until measured */
			_exit(3);
		_exit(0);
	}
	int a = accept(l, NULL, NULL);
	assert_true(a >= 0);
	char err[AS_ERRLEN];
	uid_t u = 0;
	assert_int_equal(peeruid_tcp(a, &u, err), 0);
	assert_int_equal(u, 65534);
	assert_int_equal(write(go[1], "x", 1), 1);
	int st;
	waitpid(p, &st, 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(a);
	close(l);
}

/* A local process connecting to 127.0.0.1 from another of the host's addresses is
 * measured all the same, and that address counts as the host's own. */
static void test_other_local_address(void **state)
{
	(void)state;
	struct ifaddrs *ifs, *x;
	struct sockaddr_in src = {0};
	assert_int_equal(getifaddrs(&ifs), 0);
	for (x = ifs; x; x = x->ifa_next)
		if (x->ifa_addr && x->ifa_addr->sa_family == AF_INET &&
		    (ntohl(((struct sockaddr_in *)x->ifa_addr)->sin_addr.s_addr) >> 24) != 127) {
			src = *(struct sockaddr_in *)x->ifa_addr;
			break;
		}
	freeifaddrs(ifs);
	if (!src.sin_family)
		skip(); /* only loopback here */
	struct sockaddr_storage ss;
	socklen_t sl;
	int l = listener(AF_INET, &ss, &sl);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	src.sin_port = 0;
	assert_int_equal(bind(c, (struct sockaddr *)&src, sizeof src), 0);
	assert_int_equal(connect(c, (struct sockaddr *)&ss, sl), 0);
	int a = accept(l, NULL, NULL);
	assert_true(a >= 0);
	char err[AS_ERRLEN];
	uid_t u = 12345;
	assert_int_equal(peeruid_tcp(a, &u, err), 0);
	assert_int_equal(u, getuid());
	assert_int_equal(peeruid_peer_is_local(a), 1);
	assert_int_equal(peeruid_peer_is_loopback(a), 0); /* local, though not loopback */
	close(c);
	close(a);
	close(l);
}

static void test_not_tcp_loopback(void **state)
{
	(void)state;
	int sv[2];
	char err[AS_ERRLEN];
	uid_t u;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(peeruid_tcp(sv[0], &u, err), AS_EINVAL);
	assert_int_equal(peeruid_tcp(-1, &u, err), AS_EINVAL);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	const struct CMUnitTest t[] = {
	    cmocka_unit_test(test_own_uid_v4),	     cmocka_unit_test(test_own_uid_v6),
	    cmocka_unit_test(test_other_uid),	     cmocka_unit_test(test_other_local_address),
	    cmocka_unit_test(test_not_tcp_loopback),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
