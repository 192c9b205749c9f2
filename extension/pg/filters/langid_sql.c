/*
 * Language identification in SQL, on the CLD2 shim (filters/langid.h).
 * IMMUTABLE: CLD2's tables are compiled into the library, so the answer
 * depends on the text and the installed libcld2 only (like collations on
 * ICU: an upgrade of the library could change it).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "filters/filter_set.h"
#include "filters/langid.h"
#include "pg/base/errors.h"
#include "pg/filters/filters.h"

PG_FUNCTION_INFO_V1(corpq_langid);
PG_FUNCTION_INFO_V1(corpq_lang_is);
PG_FUNCTION_INFO_V1(corpq_langid_languages);

Datum
corpq_langid(PG_FUNCTION_ARGS)
{
	text	   *t = PG_GETARG_TEXT_PP(0);
	cq_langid_result r;
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "corpq.langid must return a composite type");
	if (!cq_langid(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), -1, &r))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("language identification failed")));
	values[0] = CStringGetTextDatum(cq_langid_code(r.lang));
	values[1] = Float8GetDatum(r.prob);
	values[2] = BoolGetDatum(r.reliable);
	desc = BlessTupleDesc(desc);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

Datum
corpq_lang_is(PG_FUNCTION_ARGS)
{
	cq_utext	u;
	int			lang = filter_language(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	double		min_prob = PG_GETARG_FLOAT8(2);
	double		conf;
	cq_error	err;

	/* OpusFilter's Cld2Filter as it is: no hint, every answer judged */
	const cq_langid_rule cld2filter = {.hint = false, .keep_unreliable = false, .min_chars = 0};

	/* the langid filter's threshold bounds */
	if (!(min_prob >= 0 && min_prob < 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("min_prob must be in [0, 1)"),
				 errdetail("It is %g.", min_prob)));
	filter_utext(PG_GETARG_TEXT_PP(0), &u);
	if (cq_lang_confidence(&u, lang, &cld2filter, &conf, &err) != CQ_OK)
		corpq_core_error(&err, NULL, "could not identify the language");
	PG_RETURN_BOOL(conf > min_prob);
}

Datum
corpq_langid_languages(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < cq_langid_count(); i++)
	{
		const char *code = cq_langid_code(i);
		Datum		values[2];
		bool		nulls[2] = {false, false};

		/* CLD2's pseudo-languages for scripts it does not tell apart */
		if (code == NULL || strncmp(code, "xx-", 3) == 0)
			continue;
		values[0] = CStringGetTextDatum(code);
		values[1] = CStringGetTextDatum(cq_langid_name(i));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
