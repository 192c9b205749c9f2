/* Position embeddings. */
#ifndef CQ_NN_POSITIONS_H
#define CQ_NN_POSITIONS_H

/*
 * fairseq's sinusoids, positions counted from 0: with h = d/2 and
 * f_i = exp(-i ln(10000) / (h - 1)) (f_0 = 1 when h = 1),
 *   table[p][i] = sin(p f_i),  table[p][h + i] = cos(p f_i),  0 <= i < h.
 * table is [n_positions, d]; d even.
 */
void		cq_sinusoid_table(float *table, int n_positions, int d);

#endif
