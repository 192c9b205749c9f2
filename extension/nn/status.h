/*
 * Status codes and the error report of the inference core.  Functions return
 * CQ_NN_OK or a code, and fill a caller-owned cq_nn_error with a message
 * (lower case, no trailing period) the glue can pass on to the user.
 */
#ifndef CQ_NN_STATUS_H
#define CQ_NN_STATUS_H

#include "common/error.h"

typedef enum cq_nn_status
{
	CQ_NN_OK = 0,
	CQ_NN_ENOMEM,				/* an allocation failed */
	CQ_NN_EINVAL,				/* a bad argument (ids, lengths, sizes) */
	CQ_NN_ECONFIG,				/* a configuration is missing a key or out of range */
	CQ_NN_EFORMAT,				/* a weight file is malformed */
	CQ_NN_EMAGIC,				/* not a corpq weight file */
	CQ_NN_EVERSION,				/* an unsupported format version */
	CQ_NN_ETRUNCATED,			/* a weight file is shorter than it says */
	CQ_NN_ECHECKSUM,			/* the checksum does not match */
	CQ_NN_ETENSOR,				/* a tensor is missing, unknown or misshapen */
	CQ_NN_EIO,					/* a file could not be read or written */
	CQ_NN_EWORKSPACE,			/* the workspace is too small for the batch */
	CQ_NN_ETOOLONG,				/* a sentence is longer than the model's positions */
	CQ_NN_ECANCELED				/* the caller asked to stop */
} cq_nn_status;

typedef struct cq_nn_error
{
	cq_nn_status code;
	char		message[256];
} cq_nn_error;

/*
 * The category of common/error.h a status belongs to (the glue picks the
 * SQLSTATE from it): the weight-file family is CQ_EFORMAT, a sentence beyond
 * the positions CQ_ELIMIT, a too small workspace CQ_EINTERNAL (a bug).
 */
cq_code		cq_nn_category(cq_nn_status status);

/* Record code and a printf-style message in err (if not NULL); returns code. */
cq_nn_status cq_nn_fail(cq_nn_error *err, cq_nn_status code, const char *fmt, ...)
			__attribute__((format(printf, 3, 4)));

#endif
