/* The digamma function psi(x) = d/dx ln Gamma(x), for x > 0. */
#ifndef CQ_ALIGN_DIGAMMA_H
#define CQ_ALIGN_DIGAMMA_H

double		cq_digamma(double x);

#endif
