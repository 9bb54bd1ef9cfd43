/* test_srv_conn_limits.c - counting connections for the limits
 * (server/srv_conn_limits.h): past the global limit, past the per-address
 * limit (IPv4 and IPv6 apart), closing frees the count, no per-address
 * limit when it is 0. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "server/srv_conn_limits.h"
#include "runtime/rt_status.h"
#include "test.h"

static struct sockaddr_in v4(const char *ip)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    RT_ASSERT(inet_pton(AF_INET, ip, &a.sin_addr) == 1);
    return a;
}

static struct sockaddr_in6 v6(const char *ip)
{
    struct sockaddr_in6 a = {.sin6_family = AF_INET6};
    RT_ASSERT(inet_pton(AF_INET6, ip, &a.sin6_addr) == 1);
    return a;
}

#define SA(x) ((const struct sockaddr *)(const void *)&(x))

TEST(srv_conn_limits_count)
{
    struct srv_conn_limits *l = srv_conn_limits_new(4, 2);
    ASSERT_TRUE(l != NULL);
    struct sockaddr_in a = v4("10.0.0.1"), b = v4("10.0.0.2");
    struct sockaddr_in6 c = v6("::1");
    ASSERT_EQ_INT(srv_conn_opened(l, SA(a)), SRV_CONN_WITHIN);
    ASSERT_EQ_INT(srv_conn_opened(l, SA(a)), SRV_CONN_WITHIN);
    ASSERT_EQ_INT(srv_conn_opened(l, SA(a)), SRV_CONN_OVER_PER_ADDRESS);   /* a's third */
    ASSERT_EQ_INT(srv_conn_opened(l, SA(c)), SRV_CONN_WITHIN);             /* 4 open */
    ASSERT_EQ_INT(srv_conn_opened(l, SA(b)), SRV_CONN_OVER_GLOBAL);        /* the fifth */
    srv_conn_closed(l, SA(b));
    srv_conn_closed(l, SA(a));
    ASSERT_EQ_INT(srv_conn_opened(l, SA(b)), SRV_CONN_WITHIN);             /* 4 again, b's first */
    srv_conn_closed(l, SA(a));
    ASSERT_EQ_INT(srv_conn_opened(l, SA(a)), SRV_CONN_WITHIN);             /* a back to 2 */
    srv_conn_limits_free(l);

    l = srv_conn_limits_new(3, 0);   /* no per-address limit */
    ASSERT_TRUE(l != NULL);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ_INT(srv_conn_opened(l, SA(a)), SRV_CONN_WITHIN);
    ASSERT_EQ_INT(srv_conn_opened(l, SA(a)), SRV_CONN_OVER_GLOBAL);
    srv_conn_limits_free(l);
    return TEST_PASS;
}
