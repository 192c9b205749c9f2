/*
 * What a model computes on a few fixed pairs, for tests that compare two
 * models bit for bit: teacher-forced log-probabilities and entropies (eval,
 * and two Monte Carlo dropout passes) and beam-3 translations.
 */
#ifndef CQ_TEST_NN_OUTPUTS_H
#define CQ_TEST_NN_OUTPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "nn/model/model.h"
#include "nn/layers/packed.h"

#define NN_PAIRS 5

typedef struct nn_outputs
{
	float		logp[3][256],
				entropy[3][256];
	unsigned char trans[8192];
	size_t		trans_len;
} nn_outputs;

/*
 * A small configuration over 34 (36) token ids, dropout 0.1, of variant 0:
 * tied output, sinusoids; 1: untied, learned positions; 2: one embedding
 * shared by source, target and output, learned positions.
 */
void		nn_test_config(int variant, cq_model_config *c);

/* NN_PAIRS pairs over token ids 4..33 (ids holds their tokens). */
void		nn_test_pairs(int32_t ids[NN_PAIRS][24], cq_pair *p);

/* The outputs of m on the pairs p (checked with the unit harness). */
void		nn_run(const cq_model *m, const cq_pair *p, nn_outputs *o);

#endif
