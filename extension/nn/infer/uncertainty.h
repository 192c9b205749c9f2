/*
 * Sentence-level model-uncertainty measures of MultiUAT (Wu et al.,
 * Sec. 3.3, Eqs. 10-12) from teacher-forced Monte Carlo dropout passes.
 *
 * Per pass k, over the T scored positions (EOS included) with p_t the
 * maximum probability at position t (Eq. 10) and H_t the entropy in nats:
 *   pretp      1 - prod_t p_t
 *   exptp      1 - mean_t p_t
 *   vartp      population variance of p_t
 *   comev      vartp / mean_t p_t
 *   entsent    mean_t H_t                 (Eq. 11)
 *   enteos     H at the EOS (last) position
 * and the variants of the authors' public code, with lp_t = ln p_t:
 *   exptp_geo  1 - exp(mean_t lp_t)       (1 - geometric mean)
 *   vartp_log  population variance of lp_t
 *   comev_log  exp(var lp / mean lp), 1 when every p_t = 1
 *
 * K passes combine as Eq. 12 says: the measure of each pass, averaged over
 * passes, R = (1/K) sum_k R(theta_k) -- not the measure of averaged
 * probabilities.  The reference code pools a batch's positions; pass the
 * concatenated positions for that.
 */
#ifndef CQ_NN_UNCERTAINTY_H
#define CQ_NN_UNCERTAINTY_H

#include "common/error.h"

typedef enum cq_uncertainty
{
	CQ_UNC_PRETP,
	CQ_UNC_EXPTP,
	CQ_UNC_VARTP,
	CQ_UNC_COMEV,
	CQ_UNC_ENTSENT,
	CQ_UNC_ENTEOS,
	CQ_UNC_EXPTP_GEO,
	CQ_UNC_VARTP_LOG,
	CQ_UNC_COMEV_LOG,
	CQ_UNC_COUNT
} cq_uncertainty;

/* "pretp" -> CQ_UNC_PRETP; an unknown name is an error listing the valid ones. */
cq_code cq_uncertainty_from_name(const char *name, cq_uncertainty *out,
									  cq_error *err);
const char *cq_uncertainty_name(cq_uncertainty u);

/* One pass: p_max[T], entropy[T] (entropy may be NULL for p-based measures). */
double		cq_uncertainty_pass(cq_uncertainty u, const float *p_max,
								const float *entropy, int t);

/*
 * K passes: p_max and entropy are [K, T] row-major (pass k at k * T).
 * Needs K >= 1, T >= 1, p in (0, 1]; the entropy for entsent / enteos.
 */
cq_code cq_uncertainty_measure(cq_uncertainty u, const float *p_max,
									const float *entropy, int k, int t,
									double *out, cq_error *err);

/*
 * The same with pass k's positions at p_max + k * stride (and entropy alike):
 * with K forward passes stored as [K, Nt] (Nt = the batch's target
 * positions), pair b's table starts at its offset in pass 0, stride Nt.
 */
cq_code cq_uncertainty_measure_strided(cq_uncertainty u, const float *p_max,
											const float *entropy, int k, int t,
											long stride, double *out,
											cq_error *err);

#endif
