/*
 * The tables corpq writes for a role: whose they are and what code a write
 * into them runs.  A job writes with its owner's rights; a trigger, rule,
 * policy, column default or cast on the table runs as that owner, so a table
 * another role owns (or may add triggers to) can run that role's code with
 * the job owner's rights.  Pipelines write only tables of their owner's with
 * no such code (pg/pipeline); row jobs write a table of their owner's unless
 * told otherwise and re-check, chunk by chunk, that no code appeared on it
 * since submission (pg/jobs/row_job.h).
 */
#ifndef CORPQ_TABLE_CHECK_H
#define CORPQ_TABLE_CHECK_H

#include "postgres.h"

/* What corpq_table_refusal checks. */
#define CORPQ_TABLE_PLAIN	0x01	/* a plain table, in no inheritance or partition tree */
#define CORPQ_TABLE_OWNED	0x02	/* owned by the given role */
#define CORPQ_TABLE_NO_CODE	0x04	/* no trigger and no rule */

/*
 * With SPI connected: why relid (an existing table) fails the checks, as a
 * clause for a message ("it is owned by role \"bob\", not by the job's
 * owner", "it has triggers"), or NULL when it passes.
 */
const char *corpq_table_refusal(Oid relid, Oid owner, int checks);

/*
 * With SPI connected: the code an INSERT of these columns (names, and the
 * types of the values written) into relid runs besides the insert itself,
 * one line per object, sorted, by name and definition so that a dump and
 * restore does not change it: its triggers (name, events, function and a
 * hash of its body, enabled), rules, row-level security policies, column
 * defaults, the written columns' types with the cast each value goes through
 * (its function and a hash of its body) and their domains' constraints.
 * Compare two with corpq_table_code_added.
 */
char	   *corpq_table_code(Oid relid, const char *const *names, const Oid *types, int n);

/* The first line of now that was not in was (a trigger added...), or NULL. */
char	   *corpq_table_code_added(const char *was, const char *now);

#endif
