/* attention.h - blocked causal attention that also accumulates the
 * attention each key receives (library-internal; see forward.h).
 *
 * Queries are taken in blocks of qblock positions; for each block and each
 * KV head, the queries of all heads of its group are stacked and scored
 * against the block's causal prefix of keys (scaled by 1/sqrt(head_dim)) in
 * tiles of keys that stay in cache, with an online softmax (attention.c);
 * each row gets the exact softmax over its visible keys (j <= i, and
 * i - j < sliding_window when set), the probabilities are summed per head
 * and key (float over the block, then double).  Memory per thread:
 * qblock x group x T scores, never T x T; K and V once more, packed.
 * The scale is the config's attn_scale (1/sqrt(head_dim), Gemma's
 * 1/sqrt(query_pre_attn_scalar)); with attn_softcap the scaled scores
 * become cap tanh(s / cap) before the mask (Gemma 2). */
#ifndef SS_ATTENTION_H
#define SS_ATTENTION_H

#include "util/err.h"
#include "engine/model.h"
#include "engine/matmul.h"
#include "util/pool.h"

typedef struct ss_attn ss_attn;

int attn_create(ss_attn **out, const ss_config *c, long maxT, int nth, long qblock, ss_err *e);
int attn_create(ss_attn **out, const ss_config *c, long maxT, int nth, long qblock, ss_err *e);
/* Test hook: the environment variable SINKSCOPE_ATTN_TILE=NB,KT (read by
 * attn_create only) replaces qblock by NB and the key tile by KT, so that
 * a reference test (tests/ref/actdump_ref.sh, bf16) tiles as the engine
 * does; a malformed value is attn_create's error. */
/* Keys per tile, a multiple of 16 (default 256; tests set small tiles to
 * reach every path). */
int attn_set_key_tile(ss_attn *a, long kt, ss_err *e);
void attn_free(ss_attn *a);
/* the tile kernels in use: "c", "avx2", "avx512" (util/cpu.h) */
const char *attn_kernels_name(void);
/* those of the bf16 mode: "bf16-amx" (AMX tiles, tdpbf16ps),
 * "bf16-avx512bf16" (vdpbf16ps), or "bf16-avx512", "bf16-avx2", "bf16-c"
 * (emulated with vdpbf16ps's rounding) */
const char *attn_kernels16_name(void);
/* The precision of the next calls' products (SS_COMPUTE_F32 at creation):
 * in SS_COMPUTE_BF16 the packed tiles (calls of PACK_MIN rows a block and
 * more, no selection) round queries, keys, values and the unnormalised
 * probabilities P~ to bf16 (nearest even) and sum their products in f32;
 * the softmax and recv stay as in f32 (recv from the f32 probabilities).
 * Calls of a few queries and selections stay f32 in both modes. */
int attn_set_compute(ss_attn *a, ss_compute mode, ss_err *e);
/* The sliding window of the next calls (0: none): the layer's (Gemma
 * alternates); attn_create starts with the config's sliding_window. */
void attn_set_layer(ss_attn *a, long window);
/* Bytes attn_create (for maxT keys, nth threads, qblock) and
 * attn_set_compute in either mode allocate: the bf16 mode's buffers are
 * counted in their largest layout (AMX's) in both modes. */
double attn_memory_estimate(const ss_config *c, long maxT, int nth, long qblock);

/* A key selection (cache policies, kvevict(1)) for the queries t0..t0+n-1
 * of one call: query i = t0 + r may see the keys lo[r]..i (lo[r] = 0:
 * every key) and the first nk[r] entries of kept, a list sorted ascending
 * whose first nk[r] entries lie below lo[r]; of those, the layer's sliding
 * window (attn_set_layer) keeps the ones it shows (attn_keys).  The
 * softmax over the keys seen is exact, and so is recv under the selection. */
typedef struct ss_attn_sel {
	const long *lo, *nk;   /* [n] */
	const long *kept;      /* [n_kept] */
	long n_kept;
} ss_attn_sel;

/* Which keys query i (row r of a call) sees: the one home of the rule.
 * Causal (j <= i), the layer's sliding window (i - j < window; window 0:
 * none) and, under a selection (sel not NULL), its kept set: the keys
 * *lo..i and the entries kept[*k0 .. *k1) of sel, all below *lo.  Without
 * a selection *lo is the window's first key and *k0 = *k1 = 0.  Keys of
 * the selection that the window hides (its lo and its kept keys below
 * i - window + 1) are dropped here, not by the caller. */
void attn_keys(long window, const ss_attn_sel *sel, long r, long i, long *lo, long *k0, long *k1);
/* the first key of query i's window (0 when there is none or it starts at 0) */
static inline long attn_window_lo(long window, long i)
{
	return window > 0 && i - window + 1 > 0 ? i - window + 1 : 0;
}

/* What selections of the same queries would hide, measured on an
 * unselected call: lost[s * 3 + c] += the sum over the call's queries and
 * heads of the probabilities A[i][j] of the keys j that sel[s] hides from
 * query i, by class c = cls[j] (0 rest, 1 primary, 2 secondary sink); the
 * keys the sliding window hides have A[i][j] = 0 and count for none. */
typedef struct ss_attn_meas {
	int n;
	const ss_attn_sel *sel;     /* [n] */
	const unsigned char *cls;   /* [t0 + n] */
	double *lost;               /* [n * 3] */
} ss_attn_meas;

/* q [n, H*hd]: queries of positions t0..t0+n-1 after RoPE; overwritten by
 * the attention output (heads concatenated).  kc, vc [t0+n, Hkv*hd].
 * recv_sum [H, ld] (or NULL) += sum over these queries of A[i][j]. */
int attn_run(ss_attn *a, ss_pool *pool, float *q, long t0, long n, const float *kc,
             const float *vc, double *recv_sum, long ld, ss_err *e);
/* The same under a selection (sel NULL: every key) and with a measurement
 * (meas may be NULL; only with sel NULL).  Both NULL: attn_run.  Cost per
 * query block: the products over the keys some of its queries see, by
 * sgemm (keys of the kept lists gathered; the windows in place). */
int attn_run_sel(ss_attn *a, ss_pool *pool, float *q, long t0, long n, const float *kc,
                 const float *vc, const ss_attn_sel *sel, const ss_attn_meas *meas,
                 double *recv_sum, long ld, ss_err *e);

#endif
