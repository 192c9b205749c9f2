/*
 * The one error type of the plain-C cores.
 *
 * A fallible core call returns a cq_code and fills a caller-owned cq_error
 * (which may be NULL) with the code and a message.  The code is a category,
 * not a reason: it says what kind of failure happened, so that the glue can
 * pick the SQLSTATE (extension/pg/base/errors.h has the table); the message
 * says what exactly went wrong.  Messages are lower-case clauses without a
 * trailing period ("token 7 is outside the vocabulary (size 5)"); the glue
 * shows them as the DETAIL of an ERROR whose main message says what was
 * being done.
 *
 * Nothing here prints, exits or allocates.
 */
#ifndef CQ_ERROR_H
#define CQ_ERROR_H

typedef enum cq_code
{
	CQ_OK = 0,
	CQ_STOPPED,					/* not a failure: a progress hook asked to stop */
	CQ_EINVAL,					/* a bad argument, option or input text */
	CQ_ENOTFOUND,				/* a name or token looked up is not there */
	CQ_EMISMATCH,				/* two inputs that cannot be combined (built
								 * with different options or vocabularies) */
	CQ_ERANGE,					/* a number or id outside its range */
	CQ_EFORMAT,					/* bytes that are not a valid serialized
								 * object (a weight file, a CAV, a lexicon) */
	CQ_ECORRUPT,				/* data that was valid when stored and is
								 * not now */
	CQ_ENOMEM,					/* the allocator returned NULL */
	CQ_ELIMIT,					/* a size limit (the caller's or the
								 * format's) would be exceeded */
	CQ_EIO,						/* a file could not be read or written */
	CQ_EINTERNAL				/* a broken invariant: a bug, or use after
								 * an earlier failure */
} cq_code;

#define CQ_ERROR_MESSAGE_SIZE 256

typedef struct cq_error
{
	cq_code		code;
	char		msg[CQ_ERROR_MESSAGE_SIZE];
} cq_error;

/*
 * Record code and a printf-style message in err (if not NULL); returns code,
 * so that a failing path reads "return cq_fail(err, CQ_EINVAL, ...)".  A
 * message longer than the buffer is cut.
 */
cq_code		cq_fail(cq_error *err, cq_code code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* The category's name ("invalid argument", ...), for logs and tests. */
const char *cq_code_name(cq_code code);

#endif
