/*
 * The dev metric of an encoder model's training: retrieval precision at 1
 * over n pairs of sentence vectors, each source's nearest target among all
 * the targets (by dot product: cosine for unit vectors).
 */
#ifndef CQ_NN_RETRIEVAL_H
#define CQ_NN_RETRIEVAL_H

#include <stdbool.h>

/* Rows of products per block, and the scratch floats for n pairs. */
#define CQ_RETRIEVAL_BLOCK 256
long		cq_retrieval_scratch_floats(int n);

/*
 * hit[i] = whether x_i . y_i exceeds x_i . y_j for every j != i (a tie is a
 * miss, so vectors that have collapsed to one point score 0), for x, y
 * [n, d]; returns the hits.  scratch: cq_retrieval_scratch_floats(n).
 */
long		cq_retrieval_hits(const float *x, const float *y, int n, int d, float *scratch,
							  bool *hit);

/*
 * The same, and per pair the similarities an engineer reads beside P@1:
 * pos[i] = x_i . y_i, neg[i] = the mean of x_i . y_j over j != i (0 when
 * n = 1), each summed in double in j order.
 */
long		cq_retrieval_figures(const float *x, const float *y, int n, int d, float *scratch,
								 bool *hit, double *pos, double *neg);

#endif
