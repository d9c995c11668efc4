/* stwrite.h - a small safetensors writer (the container only).
 *
 * Tensors are added from f32 buffers and stored as F32, F16 or BF16 (round
 * to nearest even), in the order added; the file is
 *     u64 little-endian header length N | N bytes of JSON header, padded
 *     with spaces to a multiple of 8 | the tensor bytes
 * with "__metadata__": {"format": "pt"} in the header, as Hugging Face's
 * safetensors writes it.  The output is atomic (ofile.h).
 */
#ifndef SS_STWRITE_H
#define SS_STWRITE_H

#include "util/err.h"
#include "io/st.h"

typedef struct stw stw;

stw *stw_new(ss_err *e);
void stw_free(stw *w);
/* Copy n = prod(shape) floats of data, converted to dtype.  Names must be
 * unique and rank in 1..ST_MAX_RANK. */
int stw_add(stw *w, const char *name, st_dtype dtype, int rank, const long *shape,
            const float *data, ss_err *e);
/* x rounded to dtype and back (what a reader of the file gets). */
float stw_round(st_dtype dtype, float x);
/* Write everything to path (temporary name, then rename). */
int stw_write(const stw *w, const char *path, ss_err *e);

#endif
