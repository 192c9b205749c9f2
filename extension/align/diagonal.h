/*
 * fast_align's diagonal alignment prior (Dyer et al. 2013, Eq. 2):
 * for target position j (1-based) of m and source position i (1-based) of n,
 *   h(i, j, m, n) = -| i/n - j/m |,   delta(i | j) = exp(lambda h) / Z_j,
 * Z_j summing over the n source positions (the NULL word is handled outside,
 * with probability p0).
 */
#ifndef CQ_ALIGN_DIAGONAL_H
#define CQ_ALIGN_DIAGONAL_H

static inline double
cq_diag_feature(int i1, int j1, int m, int n)
{
	double		d = (double) i1 / n - (double) j1 / m;

	return d < 0 ? d : -d;
}

/*
 * u[i1 - 1] = exp(lambda h(i1, j1, m, n)) for i1 = 1..n; returns their sum.
 * Both sides of the diagonal are geometric in i1 (ratio exp(-lambda/n)), so
 * the row costs three exp() calls instead of n.
 */
double		cq_diag_row(double *u, int j1, int m, int n, double lambda);

/* E[h] under delta(. | j): sum_i h u_i / sum_i u_i; u is scratch of n. */
double		cq_diag_expected_feature(double *u, int j1, int m, int n,
									 double lambda);

/*
 * fast_align's (authors' code) model feature for the tension update:
 * sum_i h u_i divided by their closed-form Z called with m and n swapped,
 * i.e. two geometric series around the split j1 m / n over m positions,
 * whose upper count m - floor(split) wraps as an unsigned int when
 * j1 > n (the series then runs on to infinity).  u is scratch of n.
 */
double		cq_diag_authors_feature(double *u, int j1, int m, int n,
									double lambda);

#endif
