/*
 * The check of the name a segmenter is created under (segmenter.c loads
 * segmenters, vocab_load.c vocabularies; text.h declares both).
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "pg/base/base.h"
#include "pg/text/text.h"

/* The name argument of a function that creates a segmenter. */
char *
corpq_segmenter_new_name(FunctionCallInfo fcinfo)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));

	if (strcmp(name, CORPQ_WHITESPACE) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_RESERVED_NAME),
				 errmsg("BPE name \"%s\" is reserved", CORPQ_WHITESPACE),
				 errdetail("It selects whitespace segmentation.")));
	corpq_check_new_name(&corpq_kind_bpe, name);
	return name;
}
