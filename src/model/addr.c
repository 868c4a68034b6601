/*-------------------------------------------------------------------------
 *
 * addr.c
 *	  Which network addresses an endpoint may not reach: link-local ones.
 *
 * Link-local addresses are where the cloud providers' instance metadata
 * services answer (169.254.169.254 on AWS, GCP and Azure; fd00:ec2::254 is
 * AWS's IPv6 one, a unique-local address, and is not covered here): a
 * model, embedding or OTLP endpoint there would hand the server's cloud
 * credentials to whoever defines the endpoint.  http.c asks about every
 * address libcurl is about to connect to, after the name is resolved, so
 * a host name that resolves to such an address is refused as the literal
 * is.
 *
 * Covered: IPv4 169.254.0.0/16; IPv6 fe80::/10, and the IPv4 range written
 * as IPv6 (IPv4-mapped ::ffff:169.254.x.x and IPv4-compatible
 * ::169.254.x.x), so that a dual-stack socket cannot reach it either.
 *
 * IDENTIFICATION
 *	  src/model/addr.c
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include <netinet/in.h>

#include "addr.h"

static bool v4_is_link_local(const unsigned char *a);

/*
 * Is sa an IPv4 or IPv6 address in a link-local range?  Other families
 * (a Unix socket) are not.
 */
bool
adk_addr_is_link_local(const struct sockaddr *sa)
{
	if (sa == NULL)
		return false;
	if (sa->sa_family == AF_INET)
	{
		const struct sockaddr_in *in = (const struct sockaddr_in *) sa;

		return v4_is_link_local((const unsigned char *) &in->sin_addr);
	}
	if (sa->sa_family == AF_INET6)
	{
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) sa;
		const unsigned char *a = in6->sin6_addr.s6_addr;
		static const unsigned char zeros[12] = {0};
		static const unsigned char mapped[12] =
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

		/* fe80::/10 */
		if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
			return true;
		/* ::ffff:a.b.c.d and ::a.b.c.d */
		if (memcmp(a, mapped, 12) == 0 || memcmp(a, zeros, 12) == 0)
			return v4_is_link_local(a + 12);
		return false;
	}
	return false;
}

/* 169.254.0.0/16, the four bytes in network order */
static bool
v4_is_link_local(const unsigned char *a)
{
	return a[0] == 169 && a[1] == 254;
}
