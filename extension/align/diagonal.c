#include "align/diagonal.h"

#include <math.h>
#include <stdint.h>

double
cq_diag_row(double *u, int j1, int m, int n, double lambda)
{
	double		split = (double) j1 * n / m;
	int			fl = (int) split;	/* last i1 on or left of the diagonal */
	double		r = exp(-lambda / n);
	double		sum = 0.0;

	if (fl > n)
		fl = n;
	if (fl >= 1)
	{
		double		x = exp(lambda * cq_diag_feature(fl, j1, m, n));

		for (int i1 = fl; i1 >= 1; i1--)
		{
			u[i1 - 1] = x;
			sum += x;
			x *= r;
		}
	}
	if (fl < n)
	{
		double		x = exp(lambda * cq_diag_feature(fl + 1, j1, m, n));

		for (int i1 = fl + 1; i1 <= n; i1++)
		{
			u[i1 - 1] = x;
			sum += x;
			x *= r;
		}
	}
	return sum;
}

double
cq_diag_expected_feature(double *u, int j1, int m, int n, double lambda)
{
	double		z = cq_diag_row(u, j1, m, n, lambda);
	double		s = 0.0;

	for (int i1 = 1; i1 <= n; i1++)
		s += cq_diag_feature(i1, j1, m, n) * u[i1 - 1];
	return s / z;
}

double
cq_diag_authors_feature(double *u, int j1, int m, int n, double lambda)
{
	double		s = 0.0,
				z = 0.0;

	cq_diag_row(u, j1, m, n, lambda);
	for (int i1 = 1; i1 <= n; i1++)
		s += cq_diag_feature(i1, j1, m, n) * u[i1 - 1];
	{
		/* their ComputeZ(j1, n, m): positions 1..m, target side length n */
		double		split = (double) j1 * m / n;
		uint32_t	fl = (uint32_t) split;
		uint32_t	num_top = (uint32_t) m - fl;	/* wraps when fl > m */
		double		ratio = exp(-lambda / m);

		if (num_top)
			z += exp(lambda * -fabs((double) (fl + 1) / m - (double) j1 / n)) *
				(1.0 - pow(ratio, num_top)) / (1.0 - ratio);
		if (fl)
			z += exp(lambda * -fabs((double) fl / m - (double) j1 / n)) *
				(1.0 - pow(ratio, fl)) / (1.0 - ratio);
	}
	return s / z;
}
