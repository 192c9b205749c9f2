/*
 * Language identification: the C interface of the CLD2 shim
 * (langid_cld2.cc, the one C++ file of corpq).
 *
 * CLD2 (Compact Language Detector 2, as Debian's libcld2 ships it, with its
 * built-in tables) scores character n-grams of the letters in the text and
 * returns up to three languages with the percentage of the text in each,
 * and a reliability flag.  corpq reports the first of them, as OpusFilter's
 * Cld2Filter (through pycld2) does: its code, its percentage / 100 as prob,
 * and the flag.  The text is treated as plain text (not HTML).
 *
 * A caller that expects a language may pass it as CLD2's language hint
 * (pycld2's hintLanguage), which raises that language's prior: it settles
 * close calls (Spanish against Galician or Portuguese, a short string CLD2
 * would call unknown) without hiding text in another language.
 */
#ifndef CQ_FILTERS_LANGID_H
#define CQ_FILTERS_LANGID_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C"
{
#endif

typedef struct cq_langid_result
{
	int			lang;			/* a language id (below); "un" when unknown */
	double		prob;			/* share of the text in that language, 0..1 */
	bool		reliable;		/* CLD2's is_reliable */
	int			text_bytes;		/* bytes of letters CLD2 scored */
} cq_langid_result;

/*
 * Identify s[0..len) (valid UTF-8; longer texts are cut at a character
 * boundary below 2 GB), with hint a language id to favour or -1 for none.
 * Returns false only if CLD2 failed (out of memory).
 */
bool		cq_langid(const char *s, size_t len, int hint, cq_langid_result *r);

/*
 * Languages: ids 0 .. cq_langid_count() - 1 with an ISO 639 code (CLD2's
 * own codes: "en", "es", "zh-Hant", "un" for unknown) and an English name.
 */
int			cq_langid_count(void);
const char *cq_langid_code(int lang);
const char *cq_langid_name(int lang);

/* The id of a code or an English name ("en", "ENGLISH"), or -1. */
int			cq_langid_lookup(const char *code_or_name);

/* The id of "un", the unknown language. */
int			cq_langid_unknown(void);

/* CLD2's version string. */
const char *cq_langid_version(void);

#ifdef __cplusplus
}
#endif

#endif
