/*
 * Constants of the CAV binary layout, version 1 (described in FORMAT.md).
 * All integers are little-endian; sections follow each other unpadded.
 */
#ifndef CQ_CAV_FORMAT_H
#define CQ_CAV_FORMAT_H

#define CAV_MAGIC "CQAV"
#define CAV_VERSION 1

/* header field offsets */
#define CAV_H_MAGIC 0			/* 4 bytes */
#define CAV_H_VERSION 4			/* u16 */
#define CAV_H_RESERVED16 6		/* u16, 0 */
#define CAV_H_LMAX 8			/* u32 */
#define CAV_H_NSRC 12			/* u32 */
#define CAV_H_NTGT 16			/* u32 */
#define CAV_H_NRES 20			/* u32 */
#define CAV_H_NMAT 24			/* u32 */
#define CAV_H_RESERVED32 28		/* u32, 0 */
#define CAV_H_NPAIRS 32			/* u64 */
#define CAV_HEADER_SIZE 40

/* matrix table record: u32 target id, u32 nnz, u64 occurrences, u64 start */
#define CAV_REC_TGT 0
#define CAV_REC_NNZ 4
#define CAV_REC_OCC 8
#define CAV_REC_START 16
#define CAV_REC_SIZE 24

#endif
