/*
 * The catalog kinds (BPE models, vocabularies, models, lexicons, ANTAP
 * models) described once: their table, what messages call them, how a
 * refusal reads.  One set of functions serves every kind: the check of a
 * new name, the error for an unknown one, the owner check before a drop or
 * a replacement, the drop itself.  Each runs inside the caller's SPI
 * connection.
 */
#ifndef CORPQ_BASE_CATALOG_H
#define CORPQ_BASE_CATALOG_H

#include "postgres.h"

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
} CorpqCatalogKind;

extern const CorpqCatalogKind corpq_kind_bpe,
			corpq_kind_vocabulary,
			corpq_kind_model,
			corpq_kind_lexicon,
			corpq_kind_antap;

/* ERROR unless name is free in table (duplicate_object, hint: drop_fn). */
void		corpq_check_new_name(const char *kind, const char *table,
								 const char *drop_fn, const char *name);

/* ERROR undefined_object for name, listing up to 10 existing names. */
void		corpq_undefined_name(const char *kind, const char *table,
								 const char *name) pg_attribute_noreturn();

/*
 * ERROR unless name exists (undefined_object) and the caller is a member of
 * its owner role (insufficient_privilege: "permission denied to <action>
 * <kind> "name"").
 */
void		corpq_catalog_require_owner(const CorpqCatalogKind *k, const char *name,
										const char *action);

/* Deletes name's row as the extension's owner (after the owner check). */
void		corpq_catalog_delete(const CorpqCatalogKind *k, const char *name);

/*
 * The drop of every kind: the owner check, then (dependent_objects_still_
 * exist) the rows that use it, named, then the delete.
 */
void		corpq_catalog_drop(const CorpqCatalogKind *k, const char *name);

#endif
