/* matmul.h - the projections' matrix products through oneDNN:
 *
 *   C [M, N] = A [M, K] W^T (+ bias [N])      W [N, K] in Hugging Face's layout
 *
 * in one of two compute modes (ss_compute):
 *   SS_COMPUTE_F32   f32 inputs and arithmetic (the exact mode; the torch
 *                    reference tests' float32 tolerances)
 *   SS_COMPUTE_BF16  W and A rounded to bf16 (round to nearest even; bf16
 *                    weights are exact), products accumulated in f32, C in
 *                    f32: how these models are normally run.  oneDNN's
 *                    matmul primitive (brgemm on AVX512_BF16 or AMX, an
 *                    emulation elsewhere).
 * Weights are packed once (mm_pack: the layout oneDNN chooses for the
 * shape, "any") and used for every product with them; the primitives are
 * cached per shape (M, N, K, strides, bias) in the ss_mm.
 *
 * Threads: oneDNN (Debian's libdnnl is built with OpenMP) runs each product
 * on the ss_mm's thread count (set on the calling thread before every
 * call), so call mm_run from one thread at a time per ss_mm, never from
 * inside a pool task.  Results are deterministic for a fixed thread count
 * and machine.
 *
 * Ownership: an ss_mm_w owns its packed copy (the source may be freed or
 * overwritten after mm_pack); mm_w_free and mm_free release them. */
#ifndef SS_MATMUL_H
#define SS_MATMUL_H

#include <stddef.h>
#include <stdint.h>
#include "util/err.h"

typedef enum ss_compute {
	SS_COMPUTE_F32 = 0,
	SS_COMPUTE_BF16 = 1,
} ss_compute;
#define SS_COMPUTE_DEFAULT SS_COMPUTE_F32

/* "f32" / "bf16" */
const char *mm_compute_name(ss_compute c);
/* --compute s: "f32" or "bf16" sets *out; anything else is the usage error
 * "--compute: expected f32 or bf16, not 's'" */
int mm_compute_parse(const char *s, ss_compute *out, ss_err *e);

/* The option row every program running the forward pass shares (util/opt.h):
 *   static const char *compute_opt = "f32";   ... SS_COMPUTE_OPT(compute_opt),
 * then mm_compute_parse(compute_opt, &mode) among the option checks. */
#define SS_COMPUTE_OPT(var) \
	{"compute", 0, SS_OPT_STRING, &(var), "f32|bf16", \
	 "precision of the matrix products (default f32; see actdump(1))", NULL}

typedef struct ss_mm ss_mm;       /* oneDNN engine, stream, primitive cache */
typedef struct ss_mm_w ss_mm_w;   /* one weight matrix, packed for a mode */

int mm_create(ss_mm **out, ss_compute mode, int threads, ss_err *e);
void mm_free(ss_mm *m);
ss_compute mm_mode(const ss_mm *m);

/* Pack W [N, K] (rows ldw floats apart; f32, or bf16 bits for
 * mm_pack_bf16) for m's mode; M_hint: the usual number of rows of A (the
 * layout is chosen for it; any M runs).  *w, when not NULL, is a packing to
 * overwrite (a layer buffer reused layer after layer; its storage is
 * replaced when the layout differs); else one is allocated. */
int mm_pack(ss_mm *m, ss_mm_w **w, const float *W, long N, long K, long ldw, long M_hint,
            ss_err *e);
int mm_pack_bf16(ss_mm *m, ss_mm_w **w, const uint16_t *W, long N, long K, long ldw,
                 long M_hint, ss_err *e);
/* The same packing made from pieces of W as they are stored (weights read
 * from the mapping without an f32 copy): piece i gives rows n0..n0+rows of
 * W, f32 or bf16 (bf16 set); tr 0: stored [rows, K], rows ld apart; tr 1:
 * stored transposed, [K, rows] with rows ld apart (GPT-2's Conv1D
 * weights).  The pieces cover W's rows once.  The packed values are those
 * mm_pack would make from W converted to f32 (bf16 -> f32 is exact). */
typedef struct ss_mm_piece {
	const void *src;
	int bf16, tr;
	long n0, rows, ld;
} ss_mm_piece;
int mm_pack_pieces(ss_mm *m, ss_mm_w **w, long N, long K, long M_hint, const ss_mm_piece *pc,
                   int np, ss_err *e);
/* 1 when a packing made now for M_hint rows would have w's layout (a
 * packing kept from a pass over another number of tokens then serves as
 * it is, the same bytes a new one would hold) */
int mm_w_suits(ss_mm *m, const ss_mm_w *w, long M_hint);
void mm_w_free(ss_mm_w *w);
long mm_w_rows(const ss_mm_w *w);      /* N */
long mm_w_cols(const ss_mm_w *w);      /* K */
size_t mm_w_bytes(const ss_mm_w *w);   /* of the packed copy */
/* 1 when oneDNN runs this mode's products on a blocked (brgemm) kernel on
 * this CPU (AVX-512 and up), judged on a 256 x 1024 x 1024 product; 0 where
 * it has only gemm:jit on a plain layout (an AVX2-only CPU) or no kernel */
int mm_blocked(ss_mm *m);
int mm_w_plain(const ss_mm_w *w);      /* 1: a plain K x N layout, copied, not reordered */

/* C [M, N] (rows ldc apart) = A [M, K] (rows lda apart) W^T + bias (NULL:
 * none); f32 in and out in both modes.  mm_run_w also takes W [N, K] (rows
 * ldw apart): the f32 matrix w was packed from, or NULL (as mm_run).
 * A shape oneDNN can only run on its reference implementation ("ref:...",
 * about 1 GFLOP/s: queried when the shape's primitive is created) is never
 * run there: it is declined, with one warning line on stderr naming the
 * shape (once per shape and ss_mm), and runs as OpenBLAS sgemm on W (f32
 * arithmetic in both modes; OpenBLAS's own threads).  With W NULL a declined
 * product returns 1 and leaves C to the caller.  Else 0, or -1 with e set. */
int mm_run(ss_mm *m, const ss_mm_w *w, long M, const float *A, long lda, float *C, long ldc,
           const float *bias, ss_err *e);
int mm_run_w(ss_mm *m, const ss_mm_w *w, long M, const float *A, long lda, const float *W, long ldw,
             float *C, long ldc, const float *bias, ss_err *e);
/* the number of shapes declined so far */
int mm_declined(const ss_mm *m);
/* Tests only: no_dense_copy passes a strided f32 A to oneDNN as it is
 * (which oneDNN 2.6 gives to ref:any); as_ref (NULL: none) also declines
 * implementations whose name begins with it, e.g. "brg:". */
void mm_test_set(ss_mm *m, int no_dense_copy, const char *as_ref);
/* Tests only: with on 1, weights are packed by oneDNN's reorder alone (not
 * by matmul.c's own transposes of bf16 pieces, mm_pack_avx512.c);
 * mm_w_data: the packed bytes (mm_w_bytes of them) */
void mm_test_reorder_only(ss_mm *m, int on);
const void *mm_w_data(const ss_mm_w *w);

/* The implementation oneDNN chose for the last product, e.g.
 * "brg:avx512_core_bf16" (for actdump --timings and the benchmarks). */
const char *mm_impl(const ss_mm *m);

#endif
