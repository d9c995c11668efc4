/* kernels.c - CPU kernels; see kernels.h.  Each call goes to the copy for
 * the instruction set in use (util/cpu.h; the copies: kern_impl.h). */
#include "engine/kernels.h"
#include "engine/kern_impl.h"
#include "util/cpu.h"

/* AVX512_BF16 adds nothing to these kernels: its rows are AVX-512's */
static const k_ops *const ops[SS_ISA_N] = {&k_ops_c, &k_ops_avx2, &k_ops_avx512, &k_ops_avx512,
                                           &k_ops_avx512};

#define K (ops[ss_cpu_isa()])

const char *k_kernels_name(void) { return K->name; }
double k_sumsq(const float *x, long n) { return K->sumsq(x, n); }
double k_dot(const float *a, const float *b, long n) { return K->dot(a, b, n); }
void k_add(float *y, const float *x, long n) { K->add(y, x, n); }
void k_silu_mul(float *g, const float *u, long n) { K->silu_mul(g, u, n); }
void k_gelu_mul(float *g, const float *u, long n, int tanh_form) { K->gelu_mul(g, u, n, tanh_form); }
void k_softcap(float *x, long n, float cap) { K->softcap(x, n, cap); }
double k_exp_shift(float *x, long n, float max) { return K->exp_shift(x, n, max); }
float k_max(const float *x, long n) { return K->max(x, n); }
double k_exp_shift_to(float *y, const float *x, long n, float max) { return K->exp_shift_to(y, x, n, max); }
double k_exp_shift_to16(float *y, uint16_t *yb, const float *x, long n, float max, float scale)
{
	return K->exp_shift_to16(y, yb, x, n, max, scale);
}
void k_axpy(float *y, const float *x, long n, float a) { K->axpy(y, x, n, a); }
void k_scale(float *x, long n, float s) { K->scale(x, n, s); }
void k_rope(float *x, long half, const float *cs, const float *sn) { K->rope(x, half, cs, sn); }

void ss_rmsnorm(float *o, const float *x, const float *w, long n, double eps)
{
	K->rmsnorm(o, x, w, n, eps);
}

void ss_layernorm(float *o, const float *x, const float *w, const float *b, long n, double eps)
{
	K->layernorm(o, x, w, b, n, eps);
}

void ss_rope(float *x, long rotary_dim, long pos, const float *inv_freq)
{
	K->rope_pos(x, rotary_dim, pos, inv_freq);
}

double ss_softmax(float *x, long n)
{
	return K->softmax(x, n);
}
