/* srv_conn_limits.c - open connections, in all and per address (see srv_conn_limits.h).
 * One slot per distinct address with connections open; libmicrohttpd never
 * holds more than max_total + SRV_CONN_RESERVE, so that many slots always
 * suffice, and a linear scan on open and close (rare beside requests on
 * kept-alive connections) keeps it simple. */
#include "srv_conn_limits.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct slot {
    unsigned char key[17];   /* family, then 4 or 16 address bytes */
    int count;               /* 0: free */
};

struct srv_conn_limits {
    pthread_mutex_t mu;
    int max_total, max_per_address, open, n_slots;
    struct slot *slots;
};

static void key_of(const struct sockaddr *addr, unsigned char key[17])
{
    memset(key, 0, 17);
    if (!addr)
        return;
    key[0] = (unsigned char)addr->sa_family;
    if (addr->sa_family == AF_INET)
        memcpy(key + 1, &((const struct sockaddr_in *)(const void *)addr)->sin_addr, 4);
    else if (addr->sa_family == AF_INET6)
        memcpy(key + 1, &((const struct sockaddr_in6 *)(const void *)addr)->sin6_addr, 16);
}

struct srv_conn_limits *srv_conn_limits_new(int max_total, int max_per_address)
{
    struct srv_conn_limits *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->max_total = max_total;
    l->max_per_address = max_per_address;
    /* slots only for a per-address limit: otherwise a count is all it takes */
    l->n_slots = max_per_address > 0 ? max_total + SRV_CONN_RESERVE + 1 : 0;
    l->slots = l->n_slots ? calloc((size_t)l->n_slots, sizeof(*l->slots)) : NULL;
    if (l->n_slots && !l->slots) {
        free(l);
        return NULL;
    }
    pthread_mutex_init(&l->mu, NULL);
    return l;
}

void srv_conn_limits_free(struct srv_conn_limits *l)
{
    if (!l)
        return;
    pthread_mutex_destroy(&l->mu);
    free(l->slots);
    free(l);
}

/* Caller holds mu: the slot of key, or a free one (create), or NULL. */
static struct slot *find(struct srv_conn_limits *l, const unsigned char key[17], bool create)
{
    struct slot *free_slot = NULL;
    for (int i = 0; i < l->n_slots; i++) {
        struct slot *s = &l->slots[i];
        if (s->count > 0 && memcmp(s->key, key, 17) == 0)
            return s;
        if (!free_slot && s->count == 0)
            free_slot = s;
    }
    if (create && free_slot)
        memcpy(free_slot->key, key, 17);
    return create ? free_slot : NULL;
}

enum srv_conn_over srv_conn_opened(struct srv_conn_limits *l, const struct sockaddr *addr)
{
    unsigned char key[17];
    key_of(addr, key);
    pthread_mutex_lock(&l->mu);
    l->open++;
    struct slot *s = l->max_per_address > 0 ? find(l, key, true) : NULL;
    int from_here = s ? ++s->count : 0;   /* (no slot: no per-address limit, or past the hard cap) */
    enum srv_conn_over over = l->open > l->max_total ? SRV_CONN_OVER_GLOBAL
                              : l->max_per_address > 0 && from_here > l->max_per_address ? SRV_CONN_OVER_PER_ADDRESS
                                                                                          : SRV_CONN_WITHIN;
    pthread_mutex_unlock(&l->mu);
    return over;
}

void srv_conn_closed(struct srv_conn_limits *l, const struct sockaddr *addr)
{
    unsigned char key[17];
    key_of(addr, key);
    pthread_mutex_lock(&l->mu);
    l->open--;
    struct slot *s = l->max_per_address > 0 ? find(l, key, false) : NULL;
    if (s)
        s->count--;
    pthread_mutex_unlock(&l->mu);
}
