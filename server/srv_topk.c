/* srv_topk.c - top-k by a heap (see srv_topk.h). */
#include "srv_topk.h"

#include <stdbool.h>

/* Whether index a ranks before index b. */
static bool before(const float *x, int a, int b)
{
    float va = x[a], vb = x[b];
    bool na = va != va, nb = vb != vb;   /* NaN */
    if (na || nb)
        return na && nb ? a < b : nb;
    return va > vb || (va == vb && a < b);
}

/* The heap keeps the worst kept index at the root: a parent ranks after
 * its children. */
static void sift_down(const float *x, int *h, int m, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, worst = i;
        if (l < m && before(x, h[worst], h[l]))
            worst = l;
        if (r < m && before(x, h[worst], h[r]))
            worst = r;
        if (worst == i)
            return;
        int t = h[i];
        h[i] = h[worst];
        h[worst] = t;
        i = worst;
    }
}

static void sift_up(const float *x, int *h, int i)
{
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!before(x, h[parent], h[i]))
            return;
        int t = h[i];
        h[i] = h[parent];
        h[parent] = t;
        i = parent;
    }
}

void srv_top_k(const float *x, int n, int k, int *idx)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m < k) {
            idx[m] = i;
            sift_up(x, idx, m++);
        } else if (before(x, i, idx[0])) {
            idx[0] = i;
            sift_down(x, idx, m, 0);
        }
    }
    /* the worst to the end, one at a time: best first */
    for (int end = m - 1; end > 0; end--) {
        int t = idx[0];
        idx[0] = idx[end];
        idx[end] = t;
        sift_down(x, idx, end, 0);
    }
}
