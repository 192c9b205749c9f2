#include "nn/infer/uncertainty.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static const char *const names[CQ_UNC_COUNT] = {
	"pretp", "exptp", "vartp", "comev", "entsent", "enteos",
	"exptp_geo", "vartp_log", "comev_log",
};

cq_code
cq_uncertainty_from_name(const char *name, cq_uncertainty *out, cq_error *err)
{
	for (int i = 0; i < CQ_UNC_COUNT; i++)
		if (name && strcmp(name, names[i]) == 0)
		{
			*out = (cq_uncertainty) i;
			return CQ_OK;
		}
	return cq_fail(err, CQ_EINVAL,
					  "unknown uncertainty measure \"%s\" (valid: pretp, exptp, vartp, comev, "
					  "entsent, enteos, exptp_geo, vartp_log, comev_log)", name ? name : "");
}

const char *
cq_uncertainty_name(cq_uncertainty u)
{
	return (unsigned) u < CQ_UNC_COUNT ? names[u] : NULL;
}

/* Mean and population variance of x_t (or of ln x_t), in double. */
static void
moments(const float *x, int t, bool logs, double *mean, double *var)
{
	double		m = 0.0,
				v = 0.0;

	for (int i = 0; i < t; i++)
		m += logs ? log(x[i]) : x[i];
	m /= t;
	for (int i = 0; i < t; i++)
	{
		double		d = (logs ? log(x[i]) : x[i]) - m;

		v += d * d;
	}
	*mean = m;
	*var = v / t;
}

double
cq_uncertainty_pass(cq_uncertainty u, const float *p, const float *h, int t)
{
	double		mean,
				var;

	switch (u)
	{
		case CQ_UNC_PRETP:
			moments(p, t, true, &mean, &var);
			return 1.0 - exp(mean * t);		/* 1 - prod p, via logs */
		case CQ_UNC_EXPTP:
			moments(p, t, false, &mean, &var);
			return 1.0 - mean;
		case CQ_UNC_VARTP:
			moments(p, t, false, &mean, &var);
			return var;
		case CQ_UNC_COMEV:
			moments(p, t, false, &mean, &var);
			return var / mean;
		case CQ_UNC_ENTSENT:
			moments(h, t, false, &mean, &var);
			return mean;
		case CQ_UNC_ENTEOS:
			return h[t - 1];
		case CQ_UNC_EXPTP_GEO:
			moments(p, t, true, &mean, &var);
			return 1.0 - exp(mean);
		case CQ_UNC_VARTP_LOG:
			moments(p, t, true, &mean, &var);
			return var;
		case CQ_UNC_COMEV_LOG:
			moments(p, t, true, &mean, &var);
			return mean == 0.0 ? 1.0 : exp(var / mean);
		default:
			return NAN;
	}
}

cq_code
cq_uncertainty_measure(cq_uncertainty u, const float *p_max, const float *entropy,
					   int k, int t, double *out, cq_error *err)
{
	return cq_uncertainty_measure_strided(u, p_max, entropy, k, t, t, out, err);
}

cq_code
cq_uncertainty_measure_strided(cq_uncertainty u, const float *p_max,
							   const float *entropy, int k, int t, long stride,
							   double *out, cq_error *err)
{
	bool		needs_h = (u == CQ_UNC_ENTSENT || u == CQ_UNC_ENTEOS);
	double		sum = 0.0;

	if ((unsigned) u >= CQ_UNC_COUNT)
		return cq_fail(err, CQ_EINVAL, "bad uncertainty measure %d", (int) u);
	if (k < 1 || t < 1 || stride < t)
		return cq_fail(err, CQ_EINVAL, "uncertainty needs at least one pass and one position");
	if (needs_h ? !entropy : !p_max)
		return cq_fail(err, CQ_EINVAL, "measure %s needs the %s", names[u],
						  needs_h ? "entropies" : "maximum probabilities");
	if (!needs_h)
		for (int j = 0; j < k; j++)
			for (int i = 0; i < t; i++)
				if (!(p_max[j * stride + i] > 0.0f && p_max[j * stride + i] <= 1.0f))
					return cq_fail(err, CQ_EINVAL, "maximum probability %g is outside (0, 1]",
									  p_max[j * stride + i]);
	for (int j = 0; j < k; j++)
		sum += cq_uncertainty_pass(u, p_max ? p_max + j * stride : NULL,
								   entropy ? entropy + j * stride : NULL, t);
	*out = sum / k;
	return CQ_OK;
}
