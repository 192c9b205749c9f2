/*
 * Merging two serialized CAVs directly into the canonical layout.
 *
 * cav_state_merge() needs a live state on both sides; combining partial
 * aggregates (or stored CAVs) that way means rebuilding hash tables from
 * bytes.  Here the inputs are validated views and the result is written in
 * one linear pass: the union dictionaries are sorted merges, each input's
 * ids map monotonically into them (byte order is kept, sources stay before
 * targets), so every matrix's remapped entries are still sorted and two
 * matrices merge like sorted lists.  Time and extra memory O(|a| + |b|).
 */
#ifndef CQ_CAV_MERGE_FLAT_H
#define CQ_CAV_MERGE_FLAT_H

#include "cav/cav_view.h"

/*
 * The CAV of both inputs (same bytes cav_serialize would write for the
 * merged state), cq_alloc'd with `room` unused bytes in front; *len counts
 * the CAV bytes.  CQ_EMISMATCH if l_max or the restricted sets differ.
 * Both views must come from cav_view_open() (validated).
 */
cq_code		cav_merge_serialized(const cav_view *a, const cav_view *b, size_t room,
								 uint8_t **out, size_t *len, cq_error *err);

#endif
