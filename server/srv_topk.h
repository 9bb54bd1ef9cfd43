/*
 * srv_topk.h - the k largest scores of a row, for the classification
 * extension and the classify endpoint: O(n log k) with a heap of k indices
 * (a row of many classes costs milliseconds, not seconds).
 */
#ifndef SRV_TOPK_H
#define SRV_TOPK_H

/* Writes to idx[0..k) the indices of the k largest of x[0..n), largest
 * first; equal values keep index order, NaN ranks below every number.
 * 1 <= k <= n. */
void srv_top_k(const float *x, int n, int k, int *idx);

#endif /* SRV_TOPK_H */
