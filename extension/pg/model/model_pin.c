/*
 * Pinning a model name to a version: corpq_model_pin(), the one way every
 * caller pins (jobs at submission, filter specs, dual_xent_scores()), and
 * the type corpq.pinned_model, "name@N", a model version.  The type is
 * stored like text; its input checks the syntax only (input functions must
 * not read tables).
 */
#include "postgres.h"

#include "fmgr.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"

#include "pg/model/model.h"

PG_FUNCTION_INFO_V1(corpq_pinned_model_in);
PG_FUNCTION_INFO_V1(corpq_pinned_model_out);
PG_FUNCTION_INFO_V1(corpq_pinned_model_recv);
PG_FUNCTION_INFO_V1(corpq_pinned_model_send);

static void
check_spec(const char *s)
{
	int			name_len;
	int32		version;

	if (!corpq_model_split_spec(s, &name_len, &version) || memchr(s, '@', name_len) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid pinned model \"%s\"", s),
				 errhint("A pinned model is written name@N with a version N >= 1; "
						 "model names contain no @.")));
}

char *
corpq_model_pin(const char *spec)
{
	CorpqModelRef ref;

	corpq_model_resolve(spec, false, &ref);
	return psprintf("%s@%d", ref.name, ref.version);
}

Datum
corpq_pinned_model_in(PG_FUNCTION_ARGS)
{
	char	   *s = PG_GETARG_CSTRING(0);

	check_spec(s);
	PG_RETURN_TEXT_P(cstring_to_text(s));
}

Datum
corpq_pinned_model_out(PG_FUNCTION_ARGS)
{
	PG_RETURN_CSTRING(text_to_cstring(PG_GETARG_TEXT_PP(0)));
}

Datum
corpq_pinned_model_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int			nbytes;
	char	   *s = pq_getmsgtext(buf, buf->len - buf->cursor, &nbytes);

	check_spec(s);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(s, nbytes));
}

Datum
corpq_pinned_model_send(PG_FUNCTION_ARGS)
{
	text	   *t = PG_GETARG_TEXT_PP(0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendtext(&buf, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}
