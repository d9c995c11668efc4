/* gemv.h - one token through a weight matrix stored in bf16 (decoding):
 *
 *     y[i] = sum_k W[i][k] x[k]            i < N, k < K,  W [N, ldw] bf16
 *
 * Decoding reads every weight once per token and does two FLOPs with it,
 * so its speed is the memory's: weights kept in bf16 read half the bytes
 * of f32.  Two arithmetics:
 *   gemv_bf16       x in f32: each bf16 weight widened exactly (a shift),
 *                   products and sums in f32 (what sgemv does with the
 *                   widened matrix, in another order of summation);
 *   gemv_bf16_dot   x already rounded to bf16 (xb): products of bf16 pairs
 *                   summed in f32 (vdpbf16ps on AVX512_BF16), the bf16
 *                   compute mode's arithmetic.
 * Each runs on the process's instruction-set level (util/cpu.h: cpuid,
 * SINKSCOPE_ISA=c|avx2|avx512 forces a lower one): AVX512_BF16 (dot
 * only), AVX-512F, AVX2+FMA, plain C; gemv_path names it.
 */
#ifndef SS_GEMV_H
#define SS_GEMV_H

#include <stdint.h>

typedef enum ss_gemv_path {
	SS_GEMV_C = 0, SS_GEMV_AVX2, SS_GEMV_AVX512, SS_GEMV_AVX512BF16
} ss_gemv_path;

void gemv_bf16(long N, long K, const uint16_t *W, long ldw, const float *x, float *y);
void gemv_bf16_dot(long N, long K, const uint16_t *W, long ldw, const uint16_t *xb, float *y);

/* The paths in use: for f32 inputs (never AVX512_BF16) and for bf16 inputs. */
ss_gemv_path gemv_path(void);
ss_gemv_path gemv_dot_path(void);
/* "avx512bf16", "avx512", "avx2", "c" */
const char *gemv_path_name(ss_gemv_path p);
/* The most the CPU runs (ss_cpu_best), whatever SINKSCOPE_ISA says. */
ss_gemv_path gemv_cpu_best(void);
/* Use path p (at most the CPU's best) from now on, for gemv alone; tests. */
void gemv_set_path(ss_gemv_path p);

#endif
