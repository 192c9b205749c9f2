/*
 * corpq weight files (models/FORMAT.md): magic, version, config JSON, tensor
 * table, aligned little-endian float32 data, CRC-32 over everything.
 *
 * The loader checks every field and returns a status with a message for
 * each way a file can be wrong (bad magic or version, truncation, checksum,
 * config, a missing, unknown, duplicated or misshapen tensor, an offset out
 * of range); it never reads outside buf[0..len).
 */
#ifndef CQ_NN_MODELFILE_H
#define CQ_NN_MODELFILE_H

#include <stddef.h>
#include <stdint.h>

#include "nn/model/model.h"
#include "common/error.h"

#define CQ_MODELFILE_MAGIC "CORPQNN\0"
#define CQ_MODELFILE_VERSION 1
#define CQ_MODELFILE_HEADER 40		/* bytes before the config JSON */

/* A new model from a file image. */
cq_code cq_modelfile_load(const void *buf, size_t len, cq_model **out,
							   cq_error *err);

/* Size of m's file image, and the image itself into buf[0..size). */
size_t		cq_modelfile_size(const cq_model *m);
cq_code cq_modelfile_write(const cq_model *m, void *buf, size_t size,
								cq_error *err);

/* The same through a file path (stdio). */
cq_code cq_modelfile_load_path(const char *path, cq_model **out, cq_error *err);
cq_code cq_modelfile_save_path(const cq_model *m, const char *path, cq_error *err);

#endif
