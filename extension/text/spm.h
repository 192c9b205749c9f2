/*
 * SentencePiece models (Debian's libsentencepiece) behind a C interface: the
 * segmenter of converted Marian / OPUS-MT and Hugging Face Marian models
 * (models/CONVERT.md).  A model is loaded from the bytes of a serialized
 * ModelProto (the ".spm" / ".model" file); it encodes a sentence into its
 * pieces exactly as spm_encode does (the model's own normalizer included)
 * and decodes pieces back into text as spm_decode does.
 *
 * Pieces never contain a space (SentencePiece writes spaces as U+2581), so a
 * sentence's pieces travel as one string joined by single spaces, like the
 * output of apply_bpe (text/bpe.h): the glue splits it as whitespace tokens.
 *
 * Results live in the model object (valid until its next call), so nothing
 * is allocated through the common/mem.h hooks while C++ objects are alive.
 */
#ifndef CQ_TEXT_SPM_H
#define CQ_TEXT_SPM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C"
{
#endif

#include "common/error.h"

typedef struct cq_spm cq_spm;

/*
 * CQ_EFORMAT for bytes that are not a SentencePiece model, or one that
 * cq_spm_check (text/spm_check.h) refuses: the check runs first, so the
 * library never sees such bytes.
 */
cq_code		cq_spm_load(const void *model, size_t len, cq_spm **out, cq_error *err);
void		cq_spm_free(cq_spm *m);

/* The model's pieces. */
int			cq_spm_pieces(const cq_spm *m);

/* Piece i (0 <= i < cq_spm_pieces), NUL-terminated, owned by m. */
const char *cq_spm_piece(const cq_spm *m, int i);

/*
 * The pieces of text[0..len) joined by single spaces (*out, *out_len: owned
 * by m, valid until its next call).  CQ_EINVAL for text that is not UTF-8;
 * CQ_ECORRUPT, never the bytes, if the result is not UTF-8 without NUL.
 */
cq_code		cq_spm_encode(cq_spm *m, const char *text, size_t len, const char **out,
						  size_t *out_len, cq_error *err);

/* The text of space-separated pieces (as cq_spm_encode writes them); its
 * result is checked as cq_spm_encode's is. */
cq_code		cq_spm_decode(cq_spm *m, const char *pieces, size_t len, const char **out,
						  size_t *out_len, cq_error *err);

#ifdef __cplusplus
}
#endif

#endif
