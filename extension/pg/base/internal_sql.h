/*
 * corpq's own SQL: how the glue reads and writes its catalog tables.
 *
 * THE PATTERN (follow it for every catalog table you add: jobs of a new kind,
 * translation jobs, model kinds, pipeline state, ...):
 *
 *  1. Privileges.  Ordinary roles get SELECT only on a corpq table (row-level
 *     security decides which rows they see); INSERT, UPDATE and DELETE are
 *     never granted.  Rows change only through corpq's functions.
 *
 *  2. Check, then write as the catalog owner.  A function that writes first
 *     checks the caller (corpq_caller_is_member() against the row's owner,
 *     with the function's own "permission denied to ..." error), then runs
 *     each write through corpq_sql_as_owner(): the statement runs as the
 *     extension's owner (SetUserIdAndSecContext with
 *     SECURITY_LOCAL_USERID_CHANGE, so nothing inside can SET ROLE) with
 *     search_path = pg_catalog, pg_temp.  Both are undone when it returns,
 *     and by the (sub)transaction abort when it raises an ERROR.
 *
 *  3. Who, never from the user.  Columns naming roles (owner, session_role)
 *     are bound as $n parameters from GetUserId() / GetSessionUserId() taken
 *     before the write, or copied from a row corpq itself wrote (rows a job
 *     writes carry its corpq.jobs owner).  Never rely on a column DEFAULT of
 *     current_user: inside corpq_sql_as_owner() that is the extension owner.
 *
 *  4. Constant, qualified statement text.  Every statement is a string
 *     constant whose names are schema-qualified (corpq.jobs,
 *     pg_catalog.now(), OPERATOR(pg_catalog.=), ::pg_catalog.text); values
 *     travel only as $n parameters.  The fixed search_path is a second line
 *     of defence, not a licence to leave names bare.
 *
 *  5. Reads.  corpq's reads of its own catalog go through
 *     corpq_sql_as_caller(): the caller's rights and RLS, the fixed
 *     search_path.  Only when a count or a check must see every role's rows
 *     (the job limit, the reaper) does a read use corpq_sql_as_owner().
 *
 *  6. A user's query text (a corpus query) is the one exception: it runs
 *     through SPI directly, with the caller's rights and search_path (in a job
 *     worker: those recorded at submission), and is checked to be one SELECT.
 *
 * Both functions need SPI connected and return the SPI result code, exactly
 * like SPI_execute_with_args() (nulls may be NULL, count 0 = all rows).
 * Callers that catch errors must abort a (sub)transaction, as PostgreSQL
 * requires anyway; that restores the user and search_path.
 */
#ifndef CORPQ_INTERNAL_SQL_H
#define CORPQ_INTERNAL_SQL_H

#include "postgres.h"

/* The search_path corpq's own statements run with. */
#define CORPQ_SAFE_SEARCH_PATH "pg_catalog, pg_temp"

/* As the calling role (RLS applies), with the fixed search_path. */
int			corpq_sql_as_caller(const char *sql, int nargs, Oid *argtypes,
								Datum *values, const char *nulls,
								bool read_only, long count);

/* As the extension's owner (RLS bypassed), with the fixed search_path. */
int			corpq_sql_as_owner(const char *sql, int nargs, Oid *argtypes,
							   Datum *values, const char *nulls, long count);

/*
 * A read as the extension's owner with the latest snapshot, whatever the
 * transaction's isolation level: what other transactions committed up to
 * now, and this one's own earlier statements (a check that must not miss a
 * row committed while the caller waited for a lock).
 */
int			corpq_sql_as_owner_latest(const char *sql, int nargs, Oid *argtypes,
									  Datum *values, const char *nulls, long count);

/*
 * The owner of the corpq extension in this database, and its schema
 * (pg_extension.extnamespace).  Both ERROR unless that schema is the one the
 * name corpq reaches and is owned by the extension's owner: every internal
 * statement checks this first (docs/security.md).
 */
Oid			corpq_catalog_owner(void);
Oid			corpq_schema_oid(void);

/* Whether the current user is a member of role (superusers are members of all). */
bool		corpq_caller_is_member(Oid role);

#endif
