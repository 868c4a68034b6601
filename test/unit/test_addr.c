/*-------------------------------------------------------------------------
 *
 * test_addr.c
 *	  Unit tests of the link-local address classifier (src/model/addr.c).
 *
 * The classifier is what refuses an endpoint whose host name resolves to
 * a link-local address (the tests may send traffic only to loopback, so
 * that case is tested here, on the addresses libcurl would hand over).
 *
 * IDENTIFICATION
 *	  test/unit/test_addr.c
 *
 *-------------------------------------------------------------------------
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/un.h>

#include "unit.h"
#include "addr.h"

static int	link_local(const char *text);

/* 1: link-local, 0: not, -1: text is not an address */
static int
link_local(const char *text)
{
	struct sockaddr_in in;
	struct sockaddr_in6 in6;

	memset(&in, 0, sizeof(in));
	memset(&in6, 0, sizeof(in6));
	if (inet_pton(AF_INET, text, &in.sin_addr) == 1)
	{
		in.sin_family = AF_INET;
		return adk_addr_is_link_local((struct sockaddr *) &in);
	}
	if (inet_pton(AF_INET6, text, &in6.sin6_addr) == 1)
	{
		in6.sin6_family = AF_INET6;
		return adk_addr_is_link_local((struct sockaddr *) &in6);
	}
	return -1;
}

static void
test_ipv4(void)
{
	CHECK_INT(link_local("169.254.169.254"), 1);
	CHECK_INT(link_local("169.254.0.0"), 1);
	CHECK_INT(link_local("169.254.255.255"), 1);
	CHECK_INT(link_local("169.253.255.255"), 0);
	CHECK_INT(link_local("169.255.0.0"), 0);
	CHECK_INT(link_local("127.0.0.1"), 0);
	CHECK_INT(link_local("10.0.0.1"), 0);
	CHECK_INT(link_local("0.0.0.0"), 0);
	CHECK_INT(link_local("254.169.0.1"), 0);
}

static void
test_ipv6(void)
{
	CHECK_INT(link_local("fe80::1"), 1);
	CHECK_INT(link_local("fe80::a9fe:a9fe"), 1);
	CHECK_INT(link_local("febf:ffff::1"), 1);
	CHECK_INT(link_local("fec0::1"), 0);
	CHECK_INT(link_local("fe7f::1"), 0);
	CHECK_INT(link_local("::1"), 0);
	CHECK_INT(link_local("::"), 0);
	CHECK_INT(link_local("2001:db8::1"), 0);
	CHECK_INT(link_local("fd00:ec2::254"), 0);
}

/* the IPv4 range written as IPv6 */
static void
test_ipv4_in_ipv6(void)
{
	CHECK_INT(link_local("::ffff:169.254.169.254"), 1);
	CHECK_INT(link_local("::ffff:a9fe:1"), 1);
	CHECK_INT(link_local("::169.254.1.1"), 1);
	CHECK_INT(link_local("::ffff:127.0.0.1"), 0);
	CHECK_INT(link_local("64:ff9b::169.254.169.254"), 0);
}

static void
test_other_families(void)
{
	struct sockaddr_un un;

	memset(&un, 0, sizeof(un));
	un.sun_family = AF_UNIX;
	CHECK(!adk_addr_is_link_local((struct sockaddr *) &un));
	CHECK(!adk_addr_is_link_local(NULL));
}

const UnitTest addr_tests[] = {
	{"ipv4", test_ipv4},
	{"ipv6", test_ipv6},
	{"ipv4_in_ipv6", test_ipv4_in_ipv6},
	{"other_families", test_other_families},
	{NULL, NULL}
};
