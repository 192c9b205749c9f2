/*
 * corpq weight files (models/FORMAT.md): magic, version, config JSON, tensor
 * table, aligned little-endian data, CRC-32 over everything.  A float32
 * model's file (version 1) holds float32 tensors; an int8 model's (version
 * 2, "int8 tensors") holds its weights as int8 codes and float32 per-row
 * scales, which the loader packs as they are (no float32 copy of them).  A
 * version-1 file of an int8 model (written before version 2) holds float32
 * weights, quantized when the model is packed (cq_model_pack).
 *
 * The loader checks every field and returns a status with a message for
 * each way a file can be wrong (bad magic or version, truncation, checksum,
 * config, a missing, unknown, duplicated or misshapen tensor, a wrong dtype,
 * an offset out of range, overlapping tensors, a non-finite value, a code
 * out of range, a negative scale); it never reads outside buf[0..len).
 */
#ifndef CQ_NN_MODELFILE_H
#define CQ_NN_MODELFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn/model/model.h"
#include "common/error.h"

#define CQ_MODELFILE_MAGIC "CORPQNN\0"
#define CQ_MODELFILE_VERSION 1			/* every tensor float32 */
#define CQ_MODELFILE_VERSION_TYPED 2	/* records carry a dtype: int8 images */
#define CQ_MODELFILE_HEADER 40		/* bytes before the config JSON */

/* A new model from a file image. */
cq_code cq_modelfile_load(const void *buf, size_t len, cq_model **out,
							   cq_error *err);

/* The most bytes of an image's header and configuration JSON. */
#define CQ_MODELFILE_HEAD_MAX (CQ_MODELFILE_HEADER + 65536)

/*
 * The memory of loading an image of image_len bytes as the model cache does
 * (load, pack, compact; model.h, cq_model_load_memory, the image counted in
 * the peak), from its first head_len bytes, which must hold its header and
 * configuration (CQ_MODELFILE_HEAD_MAX bytes, or the whole image, always
 * do): so a caller can refuse a load before it reads the rest.  Checks the
 * header's magic, version and configuration as cq_modelfile_load does
 * (CQ_EFORMAT, CQ_EINVAL); the checksum and tensors only the load checks.
 */
cq_code		cq_modelfile_memory(const void *head, size_t head_len, size_t image_len,
								cq_model_memory *mem, cq_error *err);

/*
 * The configuration of an image of image_len bytes from its first head_len
 * bytes (as cq_modelfile_memory), for a reader that streams the image: the
 * checks of cq_modelfile_memory, plus the header's framing (data offset and
 * size) against image_len and the data section against the configuration's
 * tensors.  The tensor table, the tensors' values and the CRC only
 * cq_modelfile_load checks.
 */
cq_code		cq_modelfile_head(const void *head, size_t head_len, size_t image_len,
							  cq_model_config *cfg, cq_error *err);

/*
 * Quantizing a float32 weight file (version 1) into its int8 image as a
 * stream: the image corpq.model_quantize stores, byte for byte what
 * cq_modelfile_write writes of the loaded model with precision int8,
 * weight_bits and embedding_precision set, without the float32 image, the
 * model or the int8 image in memory.  The int8 image comes out in blocks of
 * `block` bytes (the last shorter), each handed over as soon as its last
 * byte is written: the memory is the blocks being filled plus one row.  A
 * float32 image in parameter order (what corpq-convert and cq_modelfile_write
 * write) fills the int8 image nearly in order: a few blocks are open at once
 * (the codes, their scales, a tied projection's own codes); an input in
 * another order opens more (cq_modelquant_peak_blocks says how many, before
 * the stream).
 *
 *   cq_modelquant_begin: from the input's first head_len bytes (which must
 *     hold its header, configuration and tensor table: CQ_ELIMIT otherwise)
 *     and its length, the checks of cq_modelfile_head plus the table's
 *     (every tensor of the configuration once, with its shape, a 64-byte
 *     aligned offset inside the data section, no overlap, zero bytes up to
 *     the data); CQ_EINVAL for an int8 input, weight_bits not 7 or 8 or a
 *     zero block; *out_size: the int8 image's length;
 *   cq_modelquant_peak_blocks: the most blocks the stream holds open at
 *     once (counted by begin from the two images' layouts), not counting
 *     the ready ones the caller has not yet taken;
 *   cq_modelquant_put: the input's bytes in order, from byte 0, in pieces
 *     of any size; a non-finite value is CQ_EFORMAT naming the tensor;
 *   cq_modelquant_next: after begin, each put and end, the blocks that are
 *     complete, one per call (true: block *index, bytes data[0..*len), valid
 *     until the next call on q; false: none is); every block comes once, in
 *     the order they complete (not their order in the image);
 *   cq_modelquant_end: CQ_EFORMAT unless exactly the input's length came
 *     and its CRC-32 matches its trailer; then writes the output's CRC-32
 *     (joined from the blocks' own, cq_crc32_combine), which completes the
 *     last blocks (take them with cq_modelquant_next).
 * cq_modelquant_free always, after begin succeeded.
 */
typedef struct cq_modelquant cq_modelquant;

cq_code		cq_modelquant_begin(const void *head, size_t head_len, size_t image_len,
								int weight_bits, cq_precision embedding_precision, size_t block,
								cq_modelquant **out, size_t *out_size, cq_error *err);
size_t		cq_modelquant_peak_blocks(const cq_modelquant *q);
cq_code		cq_modelquant_put(cq_modelquant *q, const void *data, size_t len, cq_error *err);
bool		cq_modelquant_next(cq_modelquant *q, size_t *index, const void **data, size_t *len);
cq_code		cq_modelquant_end(cq_modelquant *q, cq_error *err);
void		cq_modelquant_free(cq_modelquant *q);

/*
 * Size of m's file image (0 when out of memory), and the image itself into
 * buf[0..size).  An int8 model's image holds the codes and scales of its
 * float32 weights (m must not be compact).
 */
size_t		cq_modelfile_size(const cq_model *m);
cq_code cq_modelfile_write(const cq_model *m, void *buf, size_t size,
								cq_error *err);

/* The same through a file path (stdio). */
cq_code cq_modelfile_load_path(const char *path, cq_model **out, cq_error *err);
cq_code cq_modelfile_save_path(const cq_model *m, const char *path, cq_error *err);

#endif
