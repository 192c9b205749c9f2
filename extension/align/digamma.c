#include "align/digamma.h"

#include <math.h>

/*
 * Shift x to 10 or more with psi(x) = psi(x + 1) - 1/x, then the asymptotic
 * series psi(x) ~ ln x - 1/(2x) - sum_k B_2k / (2k x^2k), six terms (the
 * first omitted one, 1/(12 x^14), is below 1e-15 there).
 */
double
cq_digamma(double x)
{
	double		acc = 0.0;
	double		inv,
				inv2;

	while (x < 10.0)
	{
		acc -= 1.0 / x;
		x += 1.0;
	}
	inv = 1.0 / x;
	inv2 = inv * inv;
	return acc + log(x) - 0.5 * inv -
		inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 -
													 inv2 * (1.0 / 240 - inv2 * (1.0 / 132 -
																   inv2 * (691.0 / 32760))))));
}
