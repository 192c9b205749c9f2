/*
 * Character data of sacreBLEU's preprocessing, generated from the libraries
 * sacreBLEU itself calls (see gen_unicode_tables.py, which writes
 * unicode_tables.c).  Use the lookups in unicode.h, not these arrays.
 */
#ifndef CQ_METRICS_UNICODE_TABLES_H
#define CQ_METRICS_UNICODE_TABLES_H

#include <stdint.h>

typedef struct cq_uc_range
{
	uint32_t	lo,
				hi;
} cq_uc_range;

typedef struct cq_uc_class_range
{
	uint32_t	lo,
				hi;
	uint32_t	mask;			/* CQ_UC_P | CQ_UC_S | CQ_UC_N */
} cq_uc_class_range;

/* str.lower() of one code point: one or two code points (second 0 if one). */
typedef struct cq_uc_lower
{
	uint32_t	cp,
				lower[2];
} cq_uc_lower;

extern const char cq_uc_tables_source[];
extern const cq_uc_class_range cq_uc_class_ranges[];
extern const int cq_uc_class_ranges_n;
extern const cq_uc_range cq_uc_space_ranges[];
extern const int cq_uc_space_ranges_n;
extern const cq_uc_range cq_uc_cased_ranges[];
extern const int cq_uc_cased_ranges_n;
extern const cq_uc_range cq_uc_case_ignorable_ranges[];
extern const int cq_uc_case_ignorable_ranges_n;
extern const cq_uc_lower cq_uc_lower_map[];
extern const int cq_uc_lower_map_n;

#endif
