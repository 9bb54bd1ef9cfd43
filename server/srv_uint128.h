/*
 * srv_uint128.h - the 128-bit integer helpers that the exact decimal
 * conversions (srv_json_numbers.c reading, srv_float_text.c writing) share.
 */
#ifndef SRV_UINT128_H
#define SRV_UINT128_H

#include <stdint.h>

typedef unsigned __int128 srv_u128;

/* 10^k for 0 <= k <= 38 (10^38 < 2^127). */
static inline srv_u128 srv_pow10_u128(int k)
{
    static const uint64_t P[20] = {1u,
                                   10u,
                                   100u,
                                   1000u,
                                   10000u,
                                   100000u,
                                   1000000u,
                                   10000000u,
                                   100000000u,
                                   1000000000u,
                                   10000000000u,
                                   100000000000u,
                                   1000000000000u,
                                   10000000000000u,
                                   100000000000000u,
                                   1000000000000000u,
                                   10000000000000000u,
                                   100000000000000000u,
                                   1000000000000000000u,
                                   10000000000000000000u};
    return k < 20 ? (srv_u128)P[k] : (srv_u128)P[19] * P[k - 19];
}

/* Bits needed to write n: 0 for 0. */
static inline int srv_bit_length(srv_u128 n)
{
    uint64_t hi = (uint64_t)(n >> 64);
    return hi ? 128 - __builtin_clzll(hi) : n ? 64 - __builtin_clzll((uint64_t)n) : 0;
}

#endif /* SRV_UINT128_H */
