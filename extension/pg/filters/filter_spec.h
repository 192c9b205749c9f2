/*
 * Filter specs: the jsonb list of {name, args, threshold, label} objects that
 * filter_report(), filter_stats(), filter_rejects() and filter_predicate()
 * take, parsed once into core filters (filters/filter_set.h).
 *
 * Each filter's args and threshold are one option table of the shared
 * parser (base/options.h): unknown keys list the valid ones, values out of
 * range say what was expected.  A spec is checked whole before any row is
 * read.
 */
#ifndef CORPQ_PG_FILTERS_FILTER_SPEC_H
#define CORPQ_PG_FILTERS_FILTER_SPEC_H

#include "postgres.h"

#include "utils/jsonb.h"

#include "filters/filter_set.h"

/* Everything a filter's args and threshold can hold (the option tables' target). */
typedef struct FilterArgs
{
	double		threshold;
	int			ithreshold;		/* repetition: an integer threshold */
	int			unit;			/* cq_length_unit */
	char	   *src;			/* script or language of each side */
	char	   *tgt;
	bool		exclude_whitespace;
	int			min_length;
	int			max_length;
} FilterArgs;

typedef struct FilterSpec
{
	const char *name;			/* the filter's name */
	char	   *label;			/* what the reports call it (default: name) */
	FilterArgs	args;			/* as given, defaults filled in */
	cq_filter	filter;			/* what the core evaluates */
} FilterSpec;

typedef struct FilterList
{
	int			n;
	FilterSpec *items;
} FilterList;

/* Examples of rejected pairs a report may ask for, per filter. */
#define FILTER_MAX_EXAMPLES 100

/* The label of the pseudo-filter "rejected by any filter" in reports. */
#define FILTER_ALL_LABEL "all"

/* Parse and check a spec; palloc'd in CurrentMemoryContext. */
FilterList *filter_list_parse(Jsonb *spec);

/*
 * The SQL condition under which filter s keeps a pair, over the column
 * expressions src and tgt (already quoted): a call of corpq.filter_keeps()
 * with s and its defaults written out, so the predicate and the reports take
 * their decision in one place, cq_filter_keep(), e.g.
 * "corpq.filter_keeps(src, tgt, '[{"name": "length_ratio", ...}]')".
 */
char	   *filter_keep_sql(const FilterSpec *s, const char *src, const char *tgt);

/* A script's UScriptCode, a language's langid.h id; ERROR if unknown. */
int			filter_script(const char *name);
int			filter_language(const char *code);

/* Decode a text datum for the core (palloc'd code points). */
void		filter_utext(text *t, cq_utext *u);

#endif
