#include "unit.h"
#include "common/error.h"

TEST(error_fail_records_code_and_message)
{
	cq_error	err = {0};

	CHECK_INT_EQ(cq_fail(&err, CQ_ERANGE, "id %d outside [0, %d)", 9, 5), CQ_ERANGE);
	CHECK_INT_EQ(err.code, CQ_ERANGE);
	CHECK_STR_EQ(err.msg, "id 9 outside [0, 5)");
	/* a NULL err is allowed: the code is still returned */
	CHECK_INT_EQ(cq_fail(NULL, CQ_ENOMEM, "out of memory"), CQ_ENOMEM);
}

TEST(error_long_message_is_cut_and_terminated)
{
	cq_error	err;
	char		big[1000];

	memset(&err, 'x', sizeof(err));
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cq_fail(&err, CQ_EINVAL, "%s", big);
	CHECK_INT_EQ(strlen(err.msg), CQ_ERROR_MESSAGE_SIZE - 1);
	CHECK(err.msg[0] == 'a' && err.msg[CQ_ERROR_MESSAGE_SIZE - 2] == 'a');
}

TEST(error_every_code_has_its_own_name)
{
	for (int a = CQ_OK; a <= CQ_EINTERNAL; a++)
	{
		CHECK(strcmp(cq_code_name((cq_code) a), "unknown error") != 0);
		for (int b = a + 1; b <= CQ_EINTERNAL; b++)
			CHECK(strcmp(cq_code_name((cq_code) a), cq_code_name((cq_code) b)) != 0);
	}
	CHECK_STR_EQ(cq_code_name((cq_code) 999), "unknown error");
}
