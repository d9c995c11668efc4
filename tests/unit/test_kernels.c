/* test_kernels.c - the forward pass's kernels against hand-derived values,
 * and blocked attention (with its attention-received sums and a sliding
 * window, in f32 and in the bf16 compute mode) against a naive
 * double-precision softmax; every test once per
 * instruction set this CPU has (util/cpu.h: c, avx2, avx512, avx512bf16),
 * and the row kernels of each against double-precision references at
 * every length around the vector widths (test_paths). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/attention.h"
#include "engine/forward.h"
#include "engine/kernels.h"
#include "util/cpu.h"
#include "util/pool.h"
#include "io/st.h"

#define near(a, b, tol) assert_true(fabs((double)(a) - (double)(b)) <= (tol) * fmax(1.0, fabs((double)(b))))

static void test_rmsnorm(void **st)
{
	/* x = 1,2,3,4: mean(x^2) = 7.5; + eps 0.5 = 8; x / sqrt(8) times w */
	float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 2, 0.5f}, o[4];
	ss_rmsnorm(o, x, w, 4, 0.5);
	const double r = 1 / sqrt(8.0);
	near(o[0], 1 * r, 1e-6);
	near(o[1], 2 * r, 1e-6);
	near(o[2], 6 * r, 1e-6);
	near(o[3], 2 * r, 1e-6);
	/* in place, 19 entries (vector body and tail): all ones -> w */
	float y[19], v[19];
	for (int i = 0; i < 19; i++)
		y[i] = 3, v[i] = (float)i;
	ss_rmsnorm(y, y, v, 19, 0);
	for (int i = 0; i < 19; i++)
		near(y[i], i, 1e-6);
}

static void test_rope(void **st)
{
	/* head_dim 4, theta 10000: inv_freq = 1, 10000^-0.5 = 0.01 */
	ss_config c = {.head_dim = 4, .rotary_dim = 4, .rope_theta = 10000, .rope_type = SS_ROPE_DEFAULT};
	float inv[2];
	ss_rope_inv_freq(&c, inv);
	near(inv[0], 1.0, 1e-7);
	near(inv[1], 0.01, 1e-6);
	/* rotate_half pairs (0,2) and (1,3): x = (1,0,0,1) at position 1 */
	float x[4] = {1, 0, 0, 1};
	ss_rope(x, 4, 1, inv);
	near(x[0], cos(1.0), 1e-6);
	near(x[2], sin(1.0), 1e-6);
	near(x[1], -sin(0.01), 1e-6);
	near(x[3], cos(0.01), 1e-6);
	/* position 0 is the identity */
	float y[4] = {0.5f, -1, 2, 3};
	ss_rope(y, 4, 0, inv);
	assert_true(y[0] == 0.5f && y[1] == -1 && y[2] == 2 && y[3] == 3);
	/* partial rotary (Phi-3): only the first rotary_dim entries move */
	float z[6] = {1, 0, 0, 1, 7, 8};
	ss_rope(z, 4, 1, inv);
	assert_true(z[4] == 7 && z[5] == 8);
	/* linear scaling divides inv_freq by the factor */
	c.rope_type = SS_ROPE_LINEAR;
	c.rope_factor = 4;
	ss_rope_inv_freq(&c, inv);
	near(inv[0], 0.25, 1e-7);
	near(inv[1], 0.0025, 1e-6);
}

static void test_rope_llama3(void **st)
{
	/* Llama-3.1: theta 5e5, head_dim 128, factor 8, low 1, high 4, 8192.
	 * i = 0: wavelength 2 pi < 8192/4: unchanged.  i = 63: inv_freq
	 * 5e5^(-126/128) = 2.45514e-6, wavelength > 8192: divided by 8.
	 * i = 30: inv 5e5^(-60/128) = 0.00213112, wavelength 2948.3 in the
	 * band: s = (8192/2948.3 - 1)/3 = 0.59285, (1-s) inv/8 + s inv. */
	ss_config c = {.head_dim = 128, .rotary_dim = 128, .rope_theta = 500000, .rope_type = SS_ROPE_LLAMA3,
	               .rope_factor = 8, .rope_low_freq_factor = 1, .rope_high_freq_factor = 4,
	               .rope_orig_max_pos = 8192};
	float inv[64];
	ss_rope_inv_freq(&c, inv);
	near(inv[0], 1.0, 1e-7);
	assert_true(fabs(inv[63] - 3.068925877869333e-07) < 1e-6 * 3.07e-7 * 10);
	assert_true(fabs(inv[30] - 0.0013718936642866317) < 1e-6 * 0.00137 * 10);
}

static void test_softmax(void **st)
{
	float x[3] = {1, 2, 3};
	double s = ss_softmax(x, 3);
	near(s, exp(-2.0) + exp(-1.0) + 1, 1e-6);
	near(x[0], 0.0900305732, 1e-6);
	near(x[1], 0.2447284711, 1e-6);
	near(x[2], 0.6652409558, 1e-6);
	/* no overflow for large scores; 17 entries use the vector body and tail */
	float y[17];
	for (int i = 0; i < 17; i++)
		y[i] = 1000;
	ss_softmax(y, 17);
	for (int i = 0; i < 17; i++)
		near(y[i], 1 / 17.0, 1e-6);
	/* the vector exp against libm over [-87, 0] */
	float z[1000], ref[1000];
	for (int i = 0; i < 1000; i++) {
		z[i] = -87.0f * (float)i / 999.0f;
		ref[i] = z[i];
	}
	float w[1000];
	double sw = k_exp_shift_to(w, z, 1000, 0), sr = 0;   /* before z is overwritten */
	k_exp_shift(z, 1000, 0);
	for (int i = 0; i < 1000; i++) {
		assert_true(fabs(z[i] - exp((double)ref[i])) <= 4e-7 * exp((double)ref[i]));
		assert_true(fabs(w[i] - exp((double)ref[i])) <= 4e-7 * exp((double)ref[i]));
		sr += exp((double)ref[i]);
	}
	near(sw, sr, 1e-6);
	/* k_exp_shift_to on rows shifted by their max, its 16-wide and 8-wide
	 * bodies and the tail: 2^16 + 13 points of [-1, 0] (relative error) */
	static float u[(1 << 16) + 13], v[(1 << 16) + 13];
	long nu = (1 << 16) + 13;
	for (long i = 0; i < nu; i++)
		u[i] = 3.0f - (float)i / 65536.0f;
	k_exp_shift_to(v, u, nu, 3.0f);
	double worst = 0;
	for (long i = 0; i < nu; i++) {
		double e = exp((double)(u[i] - 3.0f));
		worst = fmax(worst, fabs(v[i] - e) / e);
	}
	assert_true(worst < 2.5e-7);   /* about 2 ulp */
}

static void test_silu(void **st)
{
	/* silu(z) = z / (1 + e^-z): silu(1) = 0.7310586, silu(-1) = -0.2689414 */
	float g[11] = {0, 1, -1, 10, 0, 1, -1, 10, 1, -1, 0}, u[11] = {1, 2, 3, 1, 1, 2, 3, 1, 1, 1, 5};
	k_silu_mul(g, u, 11);
	const double want[11] = {0, 1.4621171573, -0.8068243, 9.9995460, 0, 1.4621171573, -0.8068243,
	                         9.9995460, 0.7310585786, -0.2689414214, 0};
	for (int i = 0; i < 11; i++)
		near(g[i], want[i], 1e-6);
}

static void test_dtypes(void **st)
{
	assert_true(st_f16_to_f32(0x3c00) == 1.0f);
	assert_true(st_f16_to_f32(0xc000) == -2.0f);
	assert_true(st_f16_to_f32(0x0001) == ldexpf(1, -24));   /* smallest subnormal */
	assert_true(st_f16_to_f32(0x7bff) == 65504.0f);
	assert_true(isinf(st_f16_to_f32(0x7c00)));
	assert_true(isnan(st_f16_to_f32(0x7e00)));
	assert_true(st_bf16_to_f32(0x3f80) == 1.0f);
	assert_true(st_bf16_to_f32(0xc0a0) == -5.0f);
	assert_int_equal(st_f32_to_bf16(1.0f), 0x3f80);
	assert_int_equal(st_f32_to_bf16(1.00390625f), 0x3f80);   /* halfway: to even */
	/* the vector paths (19 = 16 + tail) give the scalar results */
	uint16_t h[19], b[19];
	for (int i = 0; i < 19; i++) {
		h[i] = (uint16_t)(0x3c00 + 37 * i);
		b[i] = (uint16_t)(0x3f80 + 91 * i);
	}
	st_tensor th = {.dtype = ST_F16, .n = 19, .data = h}, tb = {.dtype = ST_BF16, .n = 19, .data = b};
	float fh[19], fb[19];
	st_to_f32(fh, &th, 0, 19);
	st_to_f32(fb, &tb, 0, 19);
	for (int i = 0; i < 19; i++) {
		assert_true(fh[i] == st_f16_to_f32(h[i]));
		assert_true(fb[i] == st_bf16_to_f32(b[i]));
	}
}

/* naive attention for query position p (absolute), head h */
static void naive(const ss_config *c, const float *q, long p, long h, const float *K, const float *V,
                  double *out, double *probs)
{
	long hd = c->head_dim, kvd = c->n_kv_heads * hd, kvh = h / (c->n_heads / c->n_kv_heads);
	long lo = c->sliding_window && p - c->sliding_window + 1 > 0 ? p - c->sliding_window + 1 : 0;
	double mx = -INFINITY, sum = 0;
	for (long j = 0; j <= p; j++) {
		probs[j] = 0;
		if (j < lo)
			continue;
		double s = 0;
		for (long k = 0; k < hd; k++)
			s += (double)q[k] * K[j * kvd + kvh * hd + k];
		probs[j] = s / sqrt((double)hd);
		mx = fmax(mx, probs[j]);
	}
	for (long j = lo; j <= p; j++)
		sum += (probs[j] = exp(probs[j] - mx));
	for (long k = 0; k < hd; k++)
		out[k] = 0;
	for (long j = lo; j <= p; j++) {
		probs[j] /= sum;
		for (long k = 0; k < hd; k++)
			out[k] += probs[j] * V[j * kvd + kvh * hd + k];
	}
}

static void attn_case(long window, int threads, long t0, long n, long ktile, long hd)
{
	ss_config c = {.n_heads = 6, .n_kv_heads = 2, .head_dim = hd, .sliding_window = window};
	long T = t0 + n, H = 6, qd = H * hd, kvd = 2 * hd;
	float *q = malloc(sizeof(float) * (size_t)(n * qd)), *q0 = malloc(sizeof(float) * (size_t)(n * qd));
	float *K = malloc(sizeof(float) * (size_t)(T * kvd)), *V = malloc(sizeof(float) * (size_t)(T * kvd));
	double *rs = calloc((size_t)(H * T), sizeof(double)), *rn = calloc((size_t)(H * T), sizeof(double));
	unsigned s = 12345;
	for (long i = 0; i < n * qd; i++)
		q0[i] = q[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / (float)(1u << 24) * 4 - 2;
	for (long i = 0; i < T * kvd; i++) {
		K[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / (float)(1u << 24) * 4 - 2;
		V[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / (float)(1u << 24) * 2 - 1;
	}
	ss_err e = {0};
	ss_pool *pool;
	ss_attn *a;
	assert_int_equal(pool_create(&pool, threads, &e), 0);
	assert_int_equal(attn_create(&a, &c, T, threads, 16, &e), 0);   /* blocks of 16 queries */
	if (ktile)
		assert_int_equal(attn_set_key_tile(a, ktile, &e), 0);
	assert_int_equal(attn_run(a, pool, q, t0, n, K, V, rs, T, &e), 0);
	double out[64], *pr = malloc(sizeof(double) * (size_t)T);
	for (long i = 0; i < n; i++)
		for (long h = 0; h < H; h++) {
			naive(&c, q0 + i * qd + h * hd, t0 + i, h, K, V, out, pr);
			for (long k = 0; k < hd; k++)
				assert_true(fabs(q[i * qd + h * hd + k] - out[k]) < 2e-6);
			for (long j = 0; j <= t0 + i; j++)
				rn[h * T + j] += pr[j];
		}
	for (long x = 0; x < H * T; x++)
		assert_true(fabs(rs[x] - rn[x]) < 1e-6 * fmax(1, rn[x]));
	free(pr);
	attn_free(a);
	pool_free(pool);
	free(q); free(q0); free(K); free(V); free(rs); free(rn);
}

static void test_attention(void **st)
{
	attn_case(0, 1, 0, 37, 0, 8);     /* prefill, blocks of 16 with a partial one */
	attn_case(0, 2, 0, 37, 0, 8);
	attn_case(5, 2, 0, 37, 0, 8);     /* sliding window of 5 */
	attn_case(0, 2, 20, 7, 0, 8);     /* 7 new queries against 20 cached keys */
	attn_case(5, 1, 20, 1, 0, 8);     /* one decoded token, windowed */
	/* keys in tiles of 16 or 32, smaller than the prefix: rows with no
	 * visible key in a tile, a later tile raising a row's max, windows
	 * across tiles; head sizes for each kernel width (16, 8, 8 + 4, 16 + 8) */
	attn_case(0, 2, 0, 77, 16, 16);
	attn_case(0, 1, 0, 77, 32, 8);
	attn_case(5, 2, 0, 77, 16, 12);
	attn_case(21, 2, 0, 77, 16, 24);
	attn_case(40, 1, 20, 57, 32, 16);
	attn_case(0, 2, 60, 1, 16, 16);
	attn_case(0, 2, 0, 77, 0, 64);    /* one tile, Qwen2.5's head size */
}


static float bf16r(float f)   /* round to bf16, nearest even (as the engine and io/stconv) */
{
	uint32_t u;
	memcpy(&u, &f, 4);
	u += 0x7fffu + ((u >> 16) & 1);
	u &= 0xffff0000u;
	memcpy(&f, &u, 4);
	return f;
}

/* The bf16 mode (attn_set_compute): the packed tiles' products on bf16
 * queries, keys, values and P~, summed in f32, against the naive double
 * softmax of the bf16-rounded q, K, V.  Tolerances: outputs 2^-9 + 1e-5
 * absolute (P~ rounded to bf16 moves each probability by at most 2^-9 of
 * itself and |v| <= 1; the f32 sums of exact products add ~1e-6), recv
 * 2e-6 relative (from the f32 probabilities, as in f32); and the outputs
 * further than 1e-4 from the f32 inputs' reference somewhere (the rounding
 * happens).  vdpbf16ps (avx512bf16) gives the bits of its AVX-512F
 * emulation (avx512, the same row kernels): the emulation's order and
 * rounding are vdpbf16ps's, and no subnormal arises here.  (The C and
 * AVX2 levels' row kernels round exp differently, so their outputs are
 * held to the tolerance only.) */
static void attn_case16h(int id, long window, int threads, long t0, long n, long ktile, long hd, long H,
                         long Hkv, long qblock)
{
	static float *first[32];
	ss_config c = {.n_heads = H, .n_kv_heads = Hkv, .head_dim = hd, .sliding_window = window};
	long T = t0 + n, qd = H * hd, kvd = Hkv * hd;
	float *q = malloc(sizeof(float) * (size_t)(n * qd)), *q0 = malloc(sizeof(float) * (size_t)(n * qd));
	float *qr = malloc(sizeof(float) * (size_t)(n * qd));
	float *K = malloc(sizeof(float) * (size_t)(T * kvd)), *V = malloc(sizeof(float) * (size_t)(T * kvd));
	float *Kr = malloc(sizeof(float) * (size_t)(T * kvd)), *Vr = malloc(sizeof(float) * (size_t)(T * kvd));
	double *rs = calloc((size_t)(H * T), sizeof(double)), *rn = calloc((size_t)(H * T), sizeof(double));
	unsigned s = 777 + (unsigned)id;
	for (long i = 0; i < n * qd; i++) {
		q0[i] = q[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / (float)(1u << 24) * 4 - 2;
		qr[i] = bf16r(q0[i]);
	}
	for (long i = 0; i < T * kvd; i++) {
		K[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / (float)(1u << 24) * 4 - 2;
		V[i] = (float)((s = s * 1103515245u + 12345u) >> 8) / (float)(1u << 24) * 2 - 1;
		Kr[i] = bf16r(K[i]);
		Vr[i] = bf16r(V[i]);
	}
	ss_err e = {0};
	ss_pool *pool;
	ss_attn *a;
	assert_int_equal(pool_create(&pool, threads, &e), 0);
	assert_int_equal(attn_create(&a, &c, T, threads, qblock, &e), 0);
	if (ktile)
		assert_int_equal(attn_set_key_tile(a, ktile, &e), 0);
	assert_int_equal(attn_set_compute(a, SS_COMPUTE_BF16, &e), 0);
	assert_int_equal(attn_run(a, pool, q, t0, n, K, V, rs, T, &e), 0);
	double out[160], out0[160], *pr = malloc(sizeof(double) * (size_t)T), far = 0;
	for (long i = 0; i < n; i++)
		for (long h = 0; h < H; h++) {
			naive(&c, q0 + i * qd + h * hd, t0 + i, h, K, V, out0, pr);
			naive(&c, qr + i * qd + h * hd, t0 + i, h, Kr, Vr, out, pr);
			for (long k = 0; k < hd; k++) {
				double d = fabs(q[i * qd + h * hd + k] - out[k]);
				if (d > 0x1p-9 + 1e-5)
					fail_msg("bf16 case %d: query %ld head %ld output %ld: %.9g, want %.9g", id, t0 + i, h, k,
					         (double)q[i * qd + h * hd + k], out[k]);
				far = fmax(far, fabs(q[i * qd + h * hd + k] - out0[k]));
			}
			for (long j = 0; j <= t0 + i; j++)
				rn[h * T + j] += pr[j];
		}
	for (long x = 0; x < H * T; x++)
		if (fabs(rs[x] - rn[x]) > 2e-6 * fmax(1, rn[x]))
			fail_msg("bf16 case %d: recv head %ld key %ld: %.9g, want %.9g", id, x / T, x % T, rs[x], rn[x]);
	assert_true(far > 1e-4);
	if (ss_cpu_isa() == SS_ISA_AVX512) {
		free(first[id]);
		first[id] = malloc(sizeof(float) * (size_t)(n * qd));
		memcpy(first[id], q, sizeof(float) * (size_t)(n * qd));
	} else if (ss_cpu_isa() == SS_ISA_AVX512BF16 && first[id] &&
	           memcmp(first[id], q, sizeof(float) * (size_t)(n * qd))) {
		long x = 0;
		while (first[id][x] == q[x])
			x++;
		fail_msg("bf16 case %d on %s: output %ld is %.9g, %.9g emulated", id, attn_kernels16_name(), x,
		         (double)q[x], (double)first[id][x]);
	}
	free(pr);
	attn_free(a);
	pool_free(pool);
	free(q); free(q0); free(qr); free(K); free(V); free(Kr); free(Vr); free(rs); free(rn);
}

static void attn_case16(int id, long window, int threads, long t0, long n, long ktile, long hd)
{
	attn_case16h(id, window, threads, t0, n, ktile, hd, 6, 2, 16);
}

static void test_attention_bf16(void **st)
{
	attn_case16(0, 0, 1, 0, 37, 0, 8);
	attn_case16(1, 0, 2, 0, 77, 16, 16);   /* tiles of 16 keys: odd tile widths, rows with none */
	attn_case16(2, 5, 2, 0, 77, 16, 12);   /* a window across tiles */
	attn_case16(3, 21, 2, 0, 77, 16, 24);
	attn_case16(4, 40, 1, 20, 57, 32, 16);
	attn_case16(5, 0, 2, 0, 77, 0, 64);    /* Qwen2.5's head size */
	attn_case16(6, 0, 1, 0, 45, 32, 7);    /* an odd head size: the pair padded */
	attn_case16(7, 0, 2, 13, 50, 0, 128);  /* cached keys before the call */
	/* AMX's edges (attn_kern_amx.c: 16 rows, 32 dimensions, 32 keys a
	 * step): Qwen2.5's 7-head groups in blocks of 32 (224 rows) with a
	 * last block of 13 (91 rows); 96 and 80 dimensions (three steps, two
	 * and a half: the pad); 48-key tiles (pb rows padded past them); one
	 * head a group (32 rows a block: none left over), 2 groups of 4; a
	 * window; T just past a 32-key step and just short of one.  (Blocks
	 * of fewer than PACK_MIN rows take the f32 sgemm path, so one head a
	 * group needs blocks of 32.) */
	attn_case16h(8, 0, 2, 0, 109, 0, 64, 14, 2, 32);
	attn_case16h(9, 0, 1, 0, 95, 48, 96, 4, 4, 32);
	attn_case16h(10, 0, 2, 7, 90, 0, 80, 8, 2, 16);
	attn_case16h(11, 33, 2, 0, 129, 48, 64, 8, 2, 32);
	attn_case16h(12, 0, 1, 0, 63, 32, 128, 7, 1, 24);
	attn_case16h(13, 0, 2, 0, 300, 0, 160, 2, 1, 32);   /* tiles of 256 and a remainder of 44 */
}

/* attn_memory_estimate against the heap that attn_create and
 * attn_set_compute(bf16) take (glibc's mallinfo2: bytes in use, mmapped
 * blocks included), at the level in use (AMX's padded layout at amx): at
 * least that, and within 2% + 64 KiB of it (malloc's headers and
 * alignment are the slack).  Shapes whose buffers stay under 2 MiB:
 * ss_malloc_big aligns larger ones to 2 MiB in address space, which
 * mallinfo2 counts and memory does not hold. */
static void test_attention_memory(void **st)
{
	static const long shape[][6] = {{14, 2, 64, 1000, 2, 32}, {4, 4, 128, 500, 1, 32}, {6, 2, 80, 300, 2, 16}};
	if (getenv("SS_SANITIZE") && !strcmp(getenv("SS_SANITIZE"), "1")) {
		/* ASan's allocator replaces glibc's: mallinfo2 counts nothing of it */
		skip();
	}
	for (int k = 0; k < 3; k++) {
		ss_config c = {.n_heads = shape[k][0], .n_kv_heads = shape[k][1], .head_dim = shape[k][2]};
		long T = shape[k][3], qb = shape[k][5];
		int nth = (int)shape[k][4];
		ss_err e = {0};
		ss_attn *a;
		struct mallinfo2 m0 = mallinfo2();
		assert_int_equal(attn_create(&a, &c, T, nth, qb, &e), 0);
		assert_int_equal(attn_set_compute(a, SS_COMPUTE_BF16, &e), 0);
		struct mallinfo2 m1 = mallinfo2();
		double used = (double)(m1.uordblks + m1.hblkhd) - (double)(m0.uordblks + m0.hblkhd);
		double est = attn_memory_estimate(&c, T, nth, qb);
		if (est < used || est > used * 1.02 + 65536)
			fail_msg("attention memory, shape %d (%s): estimate %.0f bytes, allocated %.0f", k,
			         attn_kernels16_name(), est, used);
		attn_free(a);
	}
}

/* Every row kernel of the level in use against references computed here
 * in double (or, for the elementwise float operations, the same float
 * operation: exact), for lengths 0..70 and 1000 (vector bodies of 8, 16
 * and 32 and every tail).  Tolerances: sums in double 1e-12 relative (only
 * the order of the float-to-double terms differs); exp 2.5e-7 relative
 * (about 2 ulp) each, the sum 1e-6; max, add, axpy, scale exact; RMSNorm,
 * SiLU and GELU 1e-6. */
static void test_paths(void **st)
{
	static float x[1000], y[1000], z[1000], w[1000];
	unsigned r = 777;
	for (int i = 0; i < 1000; i++) {
		x[i] = (float)((r = r * 1103515245u + 12345u) >> 8) / (float)(1u << 24) * 8 - 4;
		y[i] = (float)((r = r * 1103515245u + 12345u) >> 8) / (float)(1u << 24) * 2 - 1;
	}
	for (long n = 0; n <= 1000; n = n < 70 ? n + 1 : 1001) {
		double ss = 0, sd = 0;
		float mx = -INFINITY;
		for (long i = 0; i < n; i++) {
			ss += (double)x[i] * x[i];
			sd += (double)x[i] * y[i];
			mx = x[i] > mx ? x[i] : mx;
		}
		near(k_sumsq(x, n), ss, 1e-12);
		assert_true(fabs(k_dot(x, y, n) - sd) <= 1e-12 * fmax(1.0, ss));
		assert_true(k_max(x, n) == mx);
		memcpy(z, y, sizeof(float) * (size_t)n);
		k_add(z, x, n);
		for (long i = 0; i < n; i++)
			assert_true(z[i] == y[i] + x[i]);
		memcpy(z, y, sizeof(float) * (size_t)n);
		k_axpy(z, x, n, 0.37f);
		for (long i = 0; i < n; i++) {
			float want = 0.37f * x[i];
			want = y[i] + want;
			assert_true(z[i] == want);
		}
		memcpy(z, x, sizeof(float) * (size_t)n);
		k_scale(z, n, -1.7f);
		for (long i = 0; i < n; i++)
			assert_true(z[i] == x[i] * -1.7f);
		if (n) {
			double se = 0;
			float s = k_exp_shift_to(z, x, n, mx) > 0 ? 1.0f : 0.0f;
			for (long i = 0; i < n; i++) {
				double e = exp((double)(x[i] - mx));
				se += e;
				assert_true(fabs(z[i] - e) <= 2.5e-7 * e);
			}
			near(k_exp_shift_to(z, x, n, mx), se, 1e-6);
			assert_true(s == 1.0f);
			/* the fused bf16 form: the same floats and sum as k_exp_shift_to
			 * on the row scaled first, and each rounded as st_f32_to_bf16
			 * (scale 1, and 0.125 and 0.0883883 as attention's) */
			const float scs[3] = {1.0f, 0.125f, 0.0883883476f};
			for (int c = 0; c < 3; c++) {
				float xs[1000], y1[1000], y2[1000];
				uint16_t hb[1001];
				for (long i = 0; i < n; i++)
					xs[i] = x[i] * scs[c];
				float ms = mx * scs[c];
				hb[n] = 0x5a5a;
				double s1 = k_exp_shift_to(y1, xs, n, ms), s2 = k_exp_shift_to16(y2, hb, x, n, ms, scs[c]);
				assert_true(s1 == s2);
				assert_memory_equal(y1, y2, sizeof(float) * (size_t)n);
				for (long i = 0; i < n; i++)
					assert_int_equal(hb[i], st_f32_to_bf16(y1[i]));
				assert_int_equal(hb[n], 0x5a5a);   /* nothing past n */
			}
			memcpy(w, x, sizeof(float) * (size_t)n);
			near(k_exp_shift(w, n, mx), se, 1e-6);
			for (long i = 0; i < n; i++)
				assert_true(fabs(w[i] - z[i]) <= 2.5e-7 * z[i] + 1e-30);
			ss_rmsnorm(z, x, y, n, 1e-6);
			double rr = 1.0 / sqrt(ss / (double)n + 1e-6);
			for (long i = 0; i < n; i++)
				near(z[i], y[i] * x[i] * rr, 1e-6);
			/* LayerNorm (weights y, biases x) against float64 */
			double lm = 0, lv = 0;
			for (long i = 0; i < n; i++)
				lm += x[i];
			lm /= (double)n;
			for (long i = 0; i < n; i++)
				lv += (x[i] - lm) * (x[i] - lm);
			double lr = 1.0 / sqrt(lv / (double)n + 1e-5);
			ss_layernorm(z, x, y, x, n, 1e-5);
			for (long i = 0; i < n; i++)
				near(z[i], y[i] * (x[i] - lm) * lr + x[i], 2e-6);
			/* RoPE over half = n / 2 pairs: the scalar formula's floats exactly */
			long hf = n / 2;
			memcpy(z, x, sizeof(float) * (size_t)n);
			k_rope(z, hf, y, y + hf);
			for (long i = 0; i < hf; i++) {
				float p = x[i] * y[i], q = x[i + hf] * y[hf + i], u = x[i + hf] * y[i], v = x[i] * y[hf + i];
				assert_true(z[i] == p - q && z[i + hf] == u + v);
			}
			memcpy(z, x, sizeof(float) * (size_t)n);
			k_silu_mul(z, y, n);
			for (long i = 0; i < n; i++)
				near(z[i], x[i] / (1 + exp(-(double)x[i])) * y[i], 1e-6);
			for (int tf = 0; tf < 2; tf++) {
				memcpy(z, x, sizeof(float) * (size_t)n);
				k_gelu_mul(z, NULL, n, tf);
				for (long i = 0; i < n; i++) {
					double v = x[i], g = tf ? 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)))
					                        : 0.5 * v * (1 + erf(v / sqrt(2.0)));
					near(z[i], g, 1e-6);
				}
			}
		}
	}
}

/* silu and both GELU forms: the AVX-512 sections do the AVX2 sections'
 * operations on 16 lanes, so on a level above AVX2 every value equals the
 * AVX2 path's bit for bit (inputs over the exp clamps, tiny, signed zeros) */
static void test_act_paths(void **st)
{
	ss_isa lv = ss_cpu_isa();
	if (lv <= SS_ISA_AVX2) {
		skip();
		return;
	}
	enum { N = 1037 };
	static float x[N], y[N], a[4][N], b[4][N];
	unsigned r = 4242;
	for (int i = 0; i < N; i++) {
		float v = (float)((r = r * 1103515245u + 12345u) >> 8) / (float)(1u << 24);
		x[i] = i % 7 == 0 ? (v - 0.5f) * 400 : i % 7 == 1 ? (v - 0.5f) * 1e-6f : (v - 0.5f) * 24;
		y[i] = (float)((r = r * 1103515245u + 12345u) >> 8) / (float)(1u << 24) * 2 - 1;
	}
	x[3] = -0.0f, x[5] = 0.0f, x[8] = 88.5f, x[9] = -88.5f;
	ss_err e = {0};
	for (int pass = 0; pass < 2; pass++) {
		float (*o)[N] = pass ? b : a;
		assert_int_equal(ss_cpu_force(pass ? SS_ISA_AVX2 : lv, &e), 0);
		for (int k = 0; k < 4; k++)
			memcpy(o[k], x, sizeof x);
		k_silu_mul(o[0], y, N);
		k_gelu_mul(o[1], y, N, 1);
		k_gelu_mul(o[2], NULL, N, 0);
		k_gelu_mul(o[3], y, N, 0);
	}
	assert_int_equal(ss_cpu_force(lv, &e), 0);
	assert_memory_equal(a, b, sizeof a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_rmsnorm),   cmocka_unit_test(test_rope),
		cmocka_unit_test(test_rope_llama3), cmocka_unit_test(test_softmax),
		cmocka_unit_test(test_silu),      cmocka_unit_test(test_dtypes),
		cmocka_unit_test(test_act_paths),
		cmocka_unit_test(test_attention), cmocka_unit_test(test_attention_bf16),
		cmocka_unit_test(test_attention_memory),
	};
	/* the whole group once per level this CPU has, lowest first */
	int rc = 0;
	ss_err e = {0};
	for (int l = 0; l <= (int)ss_cpu_best(); l++) {
		if (ss_cpu_force((ss_isa)l, &e) < 0)
			return 1;
		char name[96];
		snprintf(name, sizeof name, "kernels (%s: rows %s, attention %s, %s)", ss_isa_name((ss_isa)l),
		         k_kernels_name(), attn_kernels_name(), attn_kernels16_name());
		rc |= _cmocka_run_group_tests(name, tests, sizeof tests / sizeof tests[0], NULL, NULL);
	}
	return rc;
}
