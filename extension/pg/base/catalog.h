/*
 * The catalog kinds (BPE models, vocabularies, models, lexicons, ANTAP
 * models, pair-quality classifiers) described once: their table, what messages call them, how a
 * refusal reads.  One set of functions serves every kind: the check of a
 * new name, the lookup of a row by name (or name and version) with the error
 * for an unknown one, the owner checks before a drop, a replacement or a
 * training, the drop itself.  Unless said otherwise each runs inside the
 * caller's SPI connection.
 */
#ifndef CORPQ_BASE_CATALOG_H
#define CORPQ_BASE_CATALOG_H

#include "postgres.h"

#include "access/htup.h"

/* The reserved segmenter name: whitespace-only segmentation, never a row. */
#define CORPQ_WHITESPACE "whitespace"

typedef struct CorpqCatalogKind
{
	const char *kind;			/* in messages: "BPE model" */
	const char *table;			/* its catalog table: "corpq.bpe_models" */
	const char *drop_fn;		/* its drop function: "corpq.bpe_drop" */
	bool		list_names;		/* an unknown name lists the existing ones */
	const char *owner_detail;	/* a refusal's DETAIL ("... owned by role %s."), or NULL */
	const char *owner_hint;		/* a refusal's HINT */
	/* what may use a row ($1 its name): NULL, or one text, the users */
	const char *users_sql;
	const char *users;			/* "vocabularies": "because <users> use it" */
	const char *users_hint;		/* what to drop first */
	const char *versions;		/* its versions table (model = id), or NULL;
								 * version numbers are issued once per name
								 * (corpq_catalog_issue_version) */
} CorpqCatalogKind;

extern const CorpqCatalogKind corpq_kind_bpe,
			corpq_kind_vocabulary,
			corpq_kind_model,
			corpq_kind_lexicon,
			corpq_kind_antap,
			corpq_kind_classifier;

/*
 * ERROR unless name is free in k (duplicate_object, hint: k's drop function).
 * Connects to SPI itself.
 */
void		corpq_check_new_name(const CorpqCatalogKind *k, const char *name);

/* ERROR undefined_object for name, listing up to 10 existing names. */
void		corpq_undefined_name(const CorpqCatalogKind *k,
								 const char *name) pg_attribute_noreturn();

/* Whether the caller sees a row of k named name.  Connects to SPI itself. */
bool		corpq_catalog_exists(const CorpqCatalogKind *k, const char *name);

/*
 * The one row sql returns (a SELECT run as the caller, $1 = name), or ERROR
 * undefined_object for name.  It lives in SPI_tuptable (whose tupdesc
 * describes it) until the next SPI call.
 */
HeapTuple	corpq_catalog_row(const CorpqCatalogKind *k, const char *sql,
							  const char *name);

/*
 * The value of column (an expression over c, k's row) for name, or ERROR
 * undefined_object.  A pass-by-reference value lives until the next SPI call.
 */
Datum		corpq_catalog_value(const CorpqCatalogKind *k, const char *column,
								const char *name, bool *isnull);

/*
 * For a kind with versions: the row of version N of name, or of its latest
 * version when version is 0.  Its columns are c.id, v.version, then columns
 * ("" for none; c is k's row, v the version's).  ERROR undefined_object for
 * an unknown name, for a missing version listing the existing ones, and for
 * a version the name issued that is gone ("was dropped": its number is never
 * given to other weights, see corpq_catalog_issue_version).
 */
HeapTuple	corpq_catalog_version(const CorpqCatalogKind *k, const char *columns,
								  const char *name, int32 version);

/*
 * For a kind with versions: the number of the version of row id (named
 * name) about to be written, one more than the last the name ever issued
 * (corpq.issued_versions, which outlives drops) and than any stored version
 * (rows a DBA copied in directly).  The upsert locks the name's row, so
 * concurrent writers -- and a writer racing a drop and re-creation of the
 * name -- get distinct numbers.  Called with the row of id locked.
 */
int32		corpq_catalog_issue_version(const CorpqCatalogKind *k, int64 id, const char *name);

/*
 * Before a training writes name: whether it exists, and when it does ERROR
 * insufficient_privilege ("permission denied to <action> <kind> "name"",
 * hint) unless the caller is a member of its owner role.  Connects to SPI
 * itself.
 */
bool		corpq_catalog_check_writer(const CorpqCatalogKind *k, const char *name,
									   const char *action, const char *hint);

/*
 * ERROR unless name exists (undefined_object) and the caller is a member of
 * its owner role (insufficient_privilege: "permission denied to <action>
 * <kind> "name"").
 */
void		corpq_catalog_require_owner(const CorpqCatalogKind *k, const char *name,
										const char *action);

/*
 * Stores a new row and its items as the extension's owner, in one SPI
 * connection: row_sql (an INSERT, $1 the name, with its parameters), then
 * one row of items_into ("table (name, position, a, b)") per element of the
 * arrays items[0] and items[1] (of types item_types), positions from 0.
 */
void		corpq_catalog_store(const char *row_sql, int nargs, Oid *argtypes,
								Datum *values, const char *nulls,
								const char *items_into, Oid *item_types, Datum *items);

/* Deletes name's row as the extension's owner (after the owner check). */
void		corpq_catalog_delete(const CorpqCatalogKind *k, const char *name);

/*
 * The drop of every kind: the owner check, then (dependent_objects_still_
 * exist) the rows that use it, named, then the delete.  Connects to SPI
 * itself.
 */
void		corpq_catalog_drop(const CorpqCatalogKind *k, const char *name);

#endif
