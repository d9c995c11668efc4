/* kern_impl.h - the row kernels of kernels.h once per instruction set
 * (library-internal).  kern_body.h holds their code; kern_c.c, kern_avx2.c
 * and kern_avx512.c compile it for portable C, AVX2+FMA+F16C and AVX-512
 * (the Makefile gives each *_avx2.c / *_avx512.c file its -m flags), each
 * defining one table; kernels.c calls the table of ss_cpu_isa()
 * (util/cpu.h).  The AVX2 copy is the code the suite ran when it was built
 * for x86-64-v3, bit for bit; the AVX-512 copy takes 16 floats a step in
 * the softmax, sum, max and axpy loops (the activations keep their AVX2
 * code) with the same exp polynomial, so only summation orders differ. */
#ifndef SS_KERN_IMPL_H
#define SS_KERN_IMPL_H

#include <stdint.h>

typedef struct k_ops {
	const char *name;   /* "c", "avx2", "avx512" */
	double (*sumsq)(const float *x, long n);
	double (*dot)(const float *a, const float *b, long n);
	void (*add)(float *y, const float *x, long n);
	void (*axpy)(float *y, const float *x, long n, float a);
	void (*scale)(float *x, long n, float s);
	void (*silu_mul)(float *g, const float *u, long n);
	void (*gelu_mul)(float *g, const float *u, long n, int tanh_form);
	void (*softcap)(float *x, long n, float cap);
	float (*max)(const float *x, long n);
	double (*exp_shift)(float *x, long n, float max);
	double (*exp_shift_to)(float *y, const float *x, long n, float max);
	double (*exp_shift_to16)(float *y, uint16_t *yb, const float *x, long n, float max, float scale);
	void (*rope)(float *x, long half, const float *cs, const float *sn);
	void (*rmsnorm)(float *o, const float *x, const float *w, long n, double eps);
	void (*layernorm)(float *o, const float *x, const float *w, const float *b, long n, double eps);
	void (*rope_pos)(float *x, long rotary_dim, long pos, const float *inv_freq);
	double (*softmax)(float *x, long n);
} k_ops;

extern const k_ops k_ops_c, k_ops_avx2, k_ops_avx512;

#endif
