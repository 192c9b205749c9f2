/*
 * The tables corpq writes for a role (table_check.h).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "pg/base/internal_sql.h"
#include "pg/base/table_check.h"

const char *
corpq_table_refusal(Oid relid, Oid owner, int checks)
{
	Oid			argtypes[3] = {OIDOID, OIDOID, INT4OID};
	Datum		values[3] = {ObjectIdGetDatum(relid), ObjectIdGetDatum(owner), Int32GetDatum(checks)};
	char	   *why;

	if (corpq_sql_as_caller("SELECT CASE "
							"WHEN ($3 OPERATOR(pg_catalog.&) 1) OPERATOR(pg_catalog.<>) 0 "
							"AND c.relkind OPERATOR(pg_catalog.<>) 'r' THEN 'it is not a plain table' "
							"WHEN ($3 OPERATOR(pg_catalog.&) 2) OPERATOR(pg_catalog.<>) 0 "
							"AND c.relowner OPERATOR(pg_catalog.<>) $2 THEN "
							"'it is owned by role ' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(o.rolname) "
							"OPERATOR(pg_catalog.||) ', not by the job''s owner' "
							"WHEN ($3 OPERATOR(pg_catalog.&) 4) OPERATOR(pg_catalog.<>) 0 "
							"AND c.relhasrules THEN 'it has rules' "
							"WHEN ($3 OPERATOR(pg_catalog.&) 4) OPERATOR(pg_catalog.<>) 0 "
							"AND EXISTS (SELECT FROM pg_catalog.pg_trigger t "
							"WHERE t.tgrelid OPERATOR(pg_catalog.=) c.oid) THEN 'it has triggers' "
							"WHEN ($3 OPERATOR(pg_catalog.&) 1) OPERATOR(pg_catalog.<>) 0 "
							"AND (c.relhassubclass OR c.relispartition OR EXISTS (SELECT FROM pg_catalog.pg_inherits i "
							"WHERE i.inhrelid OPERATOR(pg_catalog.=) c.oid)) THEN 'it takes part in inheritance' "
							"ELSE '' END "
							"FROM pg_catalog.pg_class c JOIN pg_catalog.pg_roles o ON o.oid OPERATOR(pg_catalog.=) c.relowner "
							"WHERE c.oid OPERATOR(pg_catalog.=) $1",
							3, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up table %u", relid);
	if (SPI_processed == 0)
		elog(ERROR, "table %u does not exist", relid);
	why = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	return why[0] ? why : NULL;
}

/* A text[] of n C strings. */
static Datum
text_array(const char *const *s, int n)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		d[i] = CStringGetTextDatum(s[i]);
	return PointerGetDatum(construct_array(d, n, TEXTOID, -1, false, TYPALIGN_INT));
}

static Datum
oid_array(const Oid *o, int n)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		d[i] = ObjectIdGetDatum(o[i]);
	return PointerGetDatum(construct_array(d, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
}

char *
corpq_table_code(Oid relid, const char *const *names, const Oid *types, int n)
{
	Oid			argtypes[3] = {OIDOID, TEXTARRAYOID, OIDARRAYOID};
	Datum		values[3] = {ObjectIdGetDatum(relid), text_array(names, n), oid_array(types, n)};
	char	   *code;

	/* every name and function by its text: stable across a dump and restore */
	if (corpq_sql_as_caller("SELECT pg_catalog.string_agg(pg_catalog.translate(l, E'\\n', ' '), E'\\n' ORDER BY l) FROM ("
							"SELECT 'trigger ' OPERATOR(pg_catalog.||) pg_catalog.pg_get_triggerdef(t.oid) "
							"OPERATOR(pg_catalog.||) ' enabled ' OPERATOR(pg_catalog.||) t.tgenabled::pg_catalog.text "
							"OPERATOR(pg_catalog.||) ' body ' OPERATOR(pg_catalog.||) pg_catalog.md5(p.prosrc) AS l "
							"FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) t.tgfoid "
							"WHERE t.tgrelid OPERATOR(pg_catalog.=) $1 "
							"UNION ALL SELECT 'rule ' OPERATOR(pg_catalog.||) pg_catalog.pg_get_ruledef(r.oid) "
							"FROM pg_catalog.pg_rewrite r WHERE r.ev_class OPERATOR(pg_catalog.=) $1 "
							"UNION ALL SELECT 'policy ' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(pol.polname) "
							"OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) pol.polcmd::pg_catalog.text "
							"OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) pol.polpermissive::pg_catalog.text "
							"OPERATOR(pg_catalog.||) COALESCE(' using ' OPERATOR(pg_catalog.||) pg_catalog.pg_get_expr(pol.polqual, pol.polrelid), '') "
							"OPERATOR(pg_catalog.||) COALESCE(' check ' OPERATOR(pg_catalog.||) pg_catalog.pg_get_expr(pol.polwithcheck, pol.polrelid), '') "
							"FROM pg_catalog.pg_policy pol WHERE pol.polrelid OPERATOR(pg_catalog.=) $1 "
							"UNION ALL SELECT 'default ' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(a.attname) "
							"OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) pg_catalog.pg_get_expr(d.adbin, d.adrelid) "
							"FROM pg_catalog.pg_attrdef d JOIN pg_catalog.pg_attribute a "
							"ON a.attrelid OPERATOR(pg_catalog.=) d.adrelid AND a.attnum OPERATOR(pg_catalog.=) d.adnum "
							"WHERE d.adrelid OPERATOR(pg_catalog.=) $1 "
							"UNION ALL SELECT 'column ' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(a.attname) "
							"OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) pg_catalog.format_type(a.atttypid, a.atttypmod) "
							"OPERATOR(pg_catalog.||) COALESCE(' cast ' OPERATOR(pg_catalog.||) cf.oid::pg_catalog.regprocedure::pg_catalog.text "
							"OPERATOR(pg_catalog.||) ' body ' OPERATOR(pg_catalog.||) pg_catalog.md5(cf.prosrc), '') "
							"OPERATOR(pg_catalog.||) COALESCE(' domain ' OPERATOR(pg_catalog.||) ("
							"SELECT pg_catalog.string_agg(pg_catalog.quote_ident(dc.conname) OPERATOR(pg_catalog.||) ' ' "
							"OPERATOR(pg_catalog.||) pg_catalog.pg_get_constraintdef(dc.oid), ', ' ORDER BY dc.conname) "
							"FROM pg_catalog.pg_constraint dc WHERE dc.contypid OPERATOR(pg_catalog.=) a.atttypid), '') "
							"FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3)) w(name, type) "
							"JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) $1 "
							"AND a.attname OPERATOR(pg_catalog.=) w.name AND NOT a.attisdropped "
							"LEFT JOIN pg_catalog.pg_cast c ON c.castsource OPERATOR(pg_catalog.=) w.type "
							"AND c.casttarget OPERATOR(pg_catalog.=) a.atttypid "
							"AND w.type OPERATOR(pg_catalog.<>) a.atttypid "
							"LEFT JOIN pg_catalog.pg_proc cf ON cf.oid OPERATOR(pg_catalog.=) c.castfunc"
							") x",
							3, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the definition of table %u", relid);
	code = SPI_processed ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1) : NULL;
	return code ? code : pstrdup("");
}

char *
corpq_table_code_added(const char *was, const char *now)
{
	const char *line = now;

	while (*line)
	{
		const char *end = strchr(line, '\n');
		size_t		len = end ? (size_t) (end - line) : strlen(line);
		const char *w = was;
		bool		found = false;

		while (*w && !found)
		{
			const char *wend = strchr(w, '\n');
			size_t		wlen = wend ? (size_t) (wend - w) : strlen(w);

			found = wlen == len && strncmp(w, line, len) == 0;
			w = wend ? wend + 1 : w + wlen;
		}
		if (!found)
			return pnstrdup(line, len);
		line = end ? end + 1 : line + len;
	}
	return NULL;
}
