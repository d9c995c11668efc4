/* kernels.h - CPU kernels of the forward pass (library-internal).
 * Chosen at run time by the CPU (util/cpu.h): AVX-512, AVX2+FMA or
 * portable C copies of the same formulas (kern_impl.h). */
#ifndef SS_KERNELS_H
#define SS_KERNELS_H

#include <stdint.h>

/* the copy in use: "c", "avx2", "avx512" */
const char *k_kernels_name(void);
/* sum x[i]^2 and sum a[i]*b[i], accumulated in double */
double k_sumsq(const float *x, long n);
double k_dot(const float *a, const float *b, long n);
/* y[i] += x[i] */
void k_add(float *y, const float *x, long n);
/* g[i] = silu(g[i]) * u[i],  silu(z) = z / (1 + exp(-z)) */
void k_silu_mul(float *g, const float *u, long n);
/* g[i] = gelu(g[i]) * u[i] (u NULL: gelu(g[i])); tanh_form: GELU's tanh
 * approximation (gelu_new, gelu_pytorch_tanh), else the exact erf form */
void k_gelu_mul(float *g, const float *u, long n, int tanh_form);
/* x[i] = cap * tanh(x[i] / cap)  (Gemma 2's soft-capping) */
void k_softcap(float *x, long n, float cap);
/* x[i] = exp(x[i] - max) for i < n; returns the sum (double) */
double k_exp_shift(float *x, long n, float max);
float k_max(const float *x, long n);
/* y[i] = exp(x[i] - max) for i < n where every x[i] <= max (a softmax row
 * and its max; a cheaper exp than k_exp_shift's for arguments <= 0, as
 * accurate); returns the sum (double) */
double k_exp_shift_to(float *y, const float *x, long n, float max);
/* k_exp_shift_to of the row x[i] * scale (each product rounded to float;
 * every one <= max), each y[i] also rounded to bf16 into yb[i] (nearest
 * even): the bf16 attention's probabilities in one pass; the same y and
 * sum as k_exp_shift_to on the scaled row */
double k_exp_shift_to16(float *y, uint16_t *yb, const float *x, long n, float max, float scale);
/* y[i] += a * x[i] */
void k_axpy(float *y, const float *x, long n, float a);
/* x[i] *= s */
void k_scale(float *x, long n, float s);
/* Rotate one head: x[i], x[i+h] for i < h = rotary_dim/2 with cos/sin[h]. */
void k_rope(float *x, long half, const float *cs, const float *sn);

/* Row kernels of the forward pass (unit-tested).  o and x may alias. */
void ss_rmsnorm(float *o, const float *x, const float *w, long n, double eps);
/* LayerNorm with weight and bias (biased variance, in double) */
void ss_layernorm(float *o, const float *x, const float *w, const float *b, long n, double eps);
/* Rotate one head vector x[hd] at position pos (rotate_half on the first
 * rotary_dim entries); the angle is (float)(pos * inv_freq[i]) as in HF;
 * inv_freq from ss_rope_inv_freq (engine/config.h). */
void ss_rope(float *x, long rotary_dim, long pos, const float *inv_freq);
/* In-place softmax of x[n] (max subtracted); returns the sum of exps. */
double ss_softmax(float *x, long n);

#endif
