/* matmul.c - projections through oneDNN's matmul primitive; see matmul.h.
 *
 * oneDNN's view: src A {M, K}, weights {K, N}, dst C {M, N}.  Our W [N, K]
 * row-major is weights {K, N} with strides {1, ldw} (tag "ba").  Packing
 * asks a primitive built for (M_hint, N, K) with weights format "any" for
 * the layout it wants and reorders W into it (f32 -> bf16 rounds to nearest
 * even in the bf16 mode).  Every product then builds (once per shape, cached)
 * a primitive whose weights descriptor is exactly the packed one.  In the
 * bf16 mode A is first reordered into a bf16 scratch (also a cached
 * primitive, parallel as the product is). */
#include "engine/matmul.h"
#include "engine/mm_impl.h"
#include "util/cpu.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE 64   /* cached primitives per ss_mm (shapes of a run: a few) */

typedef struct mm_prim {
	int used;
	unsigned long last;           /* for eviction: the least recently used goes */
	int kind;                     /* 0 matmul, 1 reorder of A */
	long M, N, K, lda, ldc;
	int bias;
	dnnl_memory_desc_t wmd;       /* matmul: the packed weights' descriptor */
	dnnl_primitive_t p;
	dnnl_memory_desc_t scratch_md;
	int declined;                 /* only a ref: implementation: sgemm instead */
	char impl[48];
} mm_prim;

struct ss_mm {
	ss_compute mode;
	int threads;
	dnnl_engine_t eng;
	dnnl_stream_t strm;
	mm_prim cache[CACHE];
	unsigned long tick;
	uint16_t *abuf;               /* bf16 copy of A */
	size_t abufn;
	float *fbuf;                  /* dense f32 copy of a strided A (f32 mode) */
	size_t fbufn;
	void *scratch;                /* the primitives' scratchpad (user mode) */
	size_t scratchn;
	char impl[48];
	int declined;                 /* shapes declined so far */
	int test_no_dense;            /* tests: strided f32 A passed to oneDNN as it is */
	int test_reorder_only;        /* tests: weights packed by oneDNN's reorder alone */
	char test_ref[32];            /* tests: implementations named so count as ref */
};

struct ss_mm_w {
	long N, K;
	dnnl_memory_desc_t md;        /* packed layout */
	void *data;
	size_t bytes;
};

const char *mm_compute_name(ss_compute c)
{
	return c == SS_COMPUTE_BF16 ? "bf16" : "f32";
}

int mm_compute_parse(const char *s, ss_compute *out, ss_err *e)
{
	if (!strcmp(s, "f32"))
		*out = SS_COMPUTE_F32;
	else if (!strcmp(s, "bf16"))
		*out = SS_COMPUTE_BF16;
	else
		return ss_err_status(e, SS_EXIT_USAGE, "--compute: expected f32 or bf16, not '%s'", s);
	return 0;
}

static int dnnl_err(ss_err *e, dnnl_status_t s, const char *what)
{
	return ss_err_set(e, "oneDNN: %s failed (status %d)", what, (int)s);
}
#define TRY(call, what) do { dnnl_status_t s_ = (call); if (s_ != dnnl_success) return dnnl_err(e, s_, what); } while (0)

int mm_create(ss_mm **out, ss_compute mode, int threads, ss_err *e)
{
	ss_mm *m = ss_calloc(1, sizeof *m, "matmul state", e);
	if (!m)
		return -1;
	m->mode = mode;
	m->threads = threads > 0 ? threads : 1;
	dnnl_status_t s = dnnl_engine_create(&m->eng, dnnl_cpu, 0);
	if (s == dnnl_success)
		s = dnnl_stream_create(&m->strm, m->eng, dnnl_stream_default_flags);
	if (s != dnnl_success) {
		mm_free(m);
		return dnnl_err(e, s, "engine creation");
	}
	snprintf(m->impl, sizeof m->impl, "none");
	*out = m;
	return 0;
}

void mm_free(ss_mm *m)
{
	if (!m)
		return;
	for (int i = 0; i < CACHE; i++)
		if (m->cache[i].used && m->cache[i].p)
			dnnl_primitive_destroy(m->cache[i].p);
	if (m->strm)
		dnnl_stream_destroy(m->strm);
	if (m->eng)
		dnnl_engine_destroy(m->eng);
	free(m->abuf);
	free(m->fbuf);
	free(m->scratch);
	free(m);
}

ss_compute mm_mode(const ss_mm *m)
{
	return m->mode;
}

const char *mm_impl(const ss_mm *m)
{
	return m->impl;
}

static dnnl_data_type_t wtype(const ss_mm *m)
{
	return m->mode == SS_COMPUTE_BF16 ? dnnl_bf16 : dnnl_f32;
}

static void md2(dnnl_memory_desc_t *md, long r, long c, long ld, dnnl_data_type_t t)
{
	dnnl_dims_t d = {r, c}, st = {ld, 1};
	dnnl_memory_desc_init_by_strides(md, 2, d, t, st);
}

/* a matmul primitive descriptor for (M, N, K) with weights descriptor wmd */
static dnnl_status_t matmul_pd(ss_mm *m, dnnl_primitive_desc_t *pd, long M, long N, long K,
                               long lda, long ldc, int bias, const dnnl_memory_desc_t *wmd)
{
	dnnl_memory_desc_t a, c, b;
	md2(&a, M, K, m->mode == SS_COMPUTE_BF16 ? K : lda, wtype(m));
	md2(&c, M, N, ldc, dnnl_f32);
	if (bias) {
		dnnl_dims_t bd = {1, N};
		dnnl_memory_desc_init_by_tag(&b, 2, bd, dnnl_f32, dnnl_ab);
	}
	dnnl_matmul_desc_t d;
	dnnl_status_t s = dnnl_matmul_desc_init(&d, &a, wmd, bias ? &b : NULL, &c);
	if (s != dnnl_success)
		return s;
	dnnl_primitive_attr_t attr;
	if ((s = dnnl_primitive_attr_create(&attr)) != dnnl_success)
		return s;
	dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
	s = dnnl_primitive_desc_create(pd, &d, attr, m->eng, NULL);
	dnnl_primitive_attr_destroy(attr);
	return s;
}

static void impl_name(const_dnnl_primitive_desc_t pd, char *buf, size_t n)
{
	const char *s = NULL;
	if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s) != dnnl_success || !s)
		s = "?";
	snprintf(buf, n, "%s", s);
}

/* the cached primitive of a shape, created when missing */
static mm_prim *prim(ss_mm *m, int kind, long M, long N, long K, long lda, long ldc, int bias,
                     const dnnl_memory_desc_t *wmd, ss_err *e)
{
	mm_prim *free_slot = NULL, *old = NULL;
	for (int i = 0; i < CACHE; i++) {
		mm_prim *c = &m->cache[i];
		if (!c->used) {
			if (!free_slot)
				free_slot = c;
			continue;
		}
		if (c->kind == kind && c->M == M && c->N == N && c->K == K && c->lda == lda &&
		    c->ldc == ldc && c->bias == bias && (kind || dnnl_memory_desc_equal(&c->wmd, wmd))) {
			c->last = ++m->tick;
			return c;
		}
		if (!old || c->last < old->last)
			old = c;
	}
	mm_prim *c = free_slot ? free_slot : old;
	if (c->used) {
		if (c->p)
			dnnl_primitive_destroy(c->p);
		c->p = NULL;
		c->used = 0;
	}
	dnnl_primitive_desc_t pd;
	dnnl_status_t s;
	if (kind == 0) {
		s = matmul_pd(m, &pd, M, N, K, lda, ldc, bias, wmd);
	} else {   /* A f32 [M, K] (lda) -> bf16 [M, K] dense */
		dnnl_memory_desc_t a, b;
		md2(&a, M, K, lda, dnnl_f32);
		md2(&b, M, K, K, dnnl_bf16);
		dnnl_primitive_attr_t attr;
		if ((s = dnnl_primitive_attr_create(&attr)) == dnnl_success) {
			dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
			s = dnnl_reorder_primitive_desc_create(&pd, &a, m->eng, &b, m->eng, attr);
			dnnl_primitive_attr_destroy(attr);
		}
	}
	if (s != dnnl_success) {
		ss_err_set(e, "oneDNN: no %s for %ld x %ld x %ld in %s (status %d)",
		           kind ? "reorder" : "matmul", M, N, K, mm_compute_name(m->mode), (int)s);
		return NULL;
	}
	impl_name(pd, c->impl, sizeof c->impl);
	c->declined = 0;
	if (kind == 0 && (!strncmp(c->impl, "ref:", 4) ||
	                  (m->test_ref[0] && !strncmp(c->impl, m->test_ref, strlen(m->test_ref))))) {
		/* oneDNN's reference matmul runs at about 1 GFLOP/s (a strided A went
		 * there silently: 41 s instead of under 1): never run it */
		dnnl_primitive_desc_destroy(pd);
		fprintf(stderr, "warning: oneDNN has only %s for the %s product %ld x %ld x %ld "
		        "(M x N x K, lda %ld, ldc %ld%s): OpenBLAS sgemm (f32) for this shape\n", c->impl,
		        mm_compute_name(m->mode), M, N, K, lda, ldc, bias ? ", bias" : "");
		m->declined++;
		c->declined = 1;
		c->p = NULL;
		c->scratch_md = (dnnl_memory_desc_t){0};
		goto keep;
	}
	c->scratch_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
	s = dnnl_primitive_create(&c->p, pd);
	dnnl_primitive_desc_destroy(pd);
	if (s != dnnl_success) {
		dnnl_err(e, s, "primitive creation");
		return NULL;
	}
	size_t need = dnnl_memory_desc_get_size(&c->scratch_md);
	if (need > m->scratchn) {
		void *p = NULL;
		if (posix_memalign(&p, 64, need)) {
			dnnl_primitive_destroy(c->p);
			ss_err_set(e, "out of memory for the matmul scratchpad (%zu bytes)", need);
			return NULL;
		}
		free(m->scratch);
		m->scratch = p;
		m->scratchn = need;
	}
keep:
	c->used = 1;
	c->kind = kind;
	c->M = M, c->N = N, c->K = K, c->lda = lda, c->ldc = ldc, c->bias = bias;
	if (!kind)
		c->wmd = *wmd;
	c->last = ++m->tick;
	return c;
}

/* run p with the given (arg, descriptor, pointer) triples plus the scratchpad */
static int exec(ss_mm *m, mm_prim *p, int n, const int *arg, const dnnl_memory_desc_t *const *md,
                void *const *ptr, ss_err *e)
{
	dnnl_memory_t mem[5] = {0};
	dnnl_exec_arg_t args[5];
	int k = 0, rc = 0;
	for (int i = 0; i <= n; i++) {
		const dnnl_memory_desc_t *d = i < n ? md[i] : &p->scratch_md;
		void *h = i < n ? ptr[i] : m->scratch;
		if (i == n && !dnnl_memory_desc_get_size(d))
			break;
		dnnl_status_t s = dnnl_memory_create(&mem[k], d, m->eng, h);
		if (s != dnnl_success) {
			rc = dnnl_err(e, s, "memory creation");
			goto done;
		}
		args[k].arg = i < n ? arg[i] : DNNL_ARG_SCRATCHPAD;
		args[k].memory = mem[k];
		k++;
	}
	omp_set_num_threads(m->threads);
	dnnl_status_t s = dnnl_primitive_execute(p->p, m->strm, k, args);
	if (s == dnnl_success)
		s = dnnl_stream_wait(m->strm);
	if (s != dnnl_success)
		rc = dnnl_err(e, s, "execution");
done:
	for (int i = 0; i < k; i++)
		dnnl_memory_destroy(mem[i]);
	return rc;
}

/* reorder src (descriptor sd) into dst (dd) on w's data */
static dnnl_status_t reorder(ss_mm *m, const dnnl_memory_desc_t *sd, const void *src,
                             const dnnl_memory_desc_t *dd, void *dst)
{
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t r;
	dnnl_memory_t ms = NULL, md = NULL;
	dnnl_status_t s = dnnl_reorder_primitive_desc_create(&pd, sd, m->eng, dd, m->eng, NULL);
	if (s != dnnl_success)
		return s;
	s = dnnl_primitive_create(&r, pd);
	dnnl_primitive_desc_destroy(pd);
	if (s != dnnl_success)
		return s;
	if ((s = dnnl_memory_create(&ms, sd, m->eng, (void *)src)) == dnnl_success &&
	    (s = dnnl_memory_create(&md, dd, m->eng, dst)) == dnnl_success) {
		dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, ms}, {DNNL_ARG_TO, md}};
		omp_set_num_threads(m->threads);
		if ((s = dnnl_primitive_execute(r, m->strm, 2, a)) == dnnl_success)
			s = dnnl_stream_wait(m->strm);
	}
	dnnl_memory_destroy(ms);
	dnnl_memory_destroy(md);
	dnnl_primitive_destroy(r);
	return s;
}

/* md's strides (element (k, n) at k s[0] + n s[1]) when it is a plain dense
 * K x N layout, 0 otherwise */
static int plain_strides(const dnnl_memory_desc_t *md, long K, long N, long s[2])
{
	const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
	if (md->format_kind != dnnl_blocked || md->ndims != 2 || b->inner_nblks || md->offset0 ||
	    md->dims[0] != K || md->dims[1] != N || md->padded_dims[0] != K || md->padded_dims[1] != N)
		return 0;
	s[0] = (long)b->strides[0], s[1] = (long)b->strides[1];
	return (s[0] == N && s[1] == 1) || (s[0] == 1 && s[1] == K);
}

/* piece p into a plain f32 layout with strides s, or bf16 into plain bf16:
 * a copy (bf16 -> f32 is exact), in 32 x 32 tiles so that both sides touch
 * whole cache lines. oneDNN 2.6 chooses a plain layout where its f32 matmul
 * is gemm:jit (an AVX2-only CPU) and reorders into it with simple:any at
 * about 7 M elements/s from a transposed bf16 source: 2.4 of the 3.5 s of a
 * 4-layer Qwen2.5-0.5B-shaped prefill of 512 tokens */
static void plain_copy(void *dst, int dst_bf16, const long s[2], long K, const ss_mm_piece *p)
{
	long ks = p->tr ? p->ld : 1, rs = p->tr ? 1 : p->ld;   /* source (k, r) at k ks + r rs */
	/* the tile's inner loop runs along the destination's contiguous side */
	int along_k = s[0] == 1;
	for (long r0 = 0; r0 < p->rows; r0 += 32)
		for (long k0 = 0; k0 < K; k0 += 32) {
			long r1 = r0 + 32 < p->rows ? r0 + 32 : p->rows, k1 = k0 + 32 < K ? k0 + 32 : K;
			long na = along_k ? r1 - r0 : k1 - k0, nb = along_k ? k1 - k0 : r1 - r0;
			/* element (a, b) of the tile: source at a sa + b sb, destination at a da + b */
			long sa = along_k ? rs : ks, sb = along_k ? ks : rs, da = along_k ? s[1] : s[0];
			size_t so = (size_t)(k0 * ks + r0 * rs), doff = (size_t)(k0 * s[0] + (p->n0 + r0) * s[1]);
			for (long a = 0; a < na; a++) {
				size_t sr = so + (size_t)(a * sa), dr = doff + (size_t)(a * da);
				if (dst_bf16) {
					const uint16_t *src = (const uint16_t *)p->src + sr;
					uint16_t *d = (uint16_t *)dst + dr;
					for (long b = 0; b < nb; b++)
						d[b] = src[b * sb];
				} else if (p->bf16) {   /* bf16 -> f32: the bits shifted up, exact */
					const uint16_t *src = (const uint16_t *)p->src + sr;
					uint32_t *d = (uint32_t *)dst + dr;
					for (long b = 0; b < nb; b++)
						d[b] = (uint32_t)src[b * sb] << 16;
				} else {
					const float *src = (const float *)p->src + sr;
					float *d = (float *)dst + dr;
					for (long b = 0; b < nb; b++)
						d[b] = src[b * sb];
				}
			}
		}
}

/* 1 when md is one of the blocked layouts mm_pack_avx512.c writes for W
 * [N, K] (K, N as oneDNN's {K, N}), *wide set for the f32 one */
static int own_blocked(const dnnl_memory_desc_t *md, long K, long N, int *wide)
{
	const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
	if (md->format_kind != dnnl_blocked || md->ndims != 2 || md->offset0 || md->dims[0] != K ||
	    md->dims[1] != N || (md->data_type != dnnl_f32 && md->data_type != dnnl_bf16))
		return 0;
	int f32 = md->data_type == dnnl_f32;
	long kb = f32 ? 16 : 32, pk = (K + kb - 1) / kb * kb, pn = (N + 63) / 64 * 64, blk = kb * 64;
	if (md->padded_dims[0] != pk || md->padded_dims[1] != pn || md->padded_offsets[0] ||
	    md->padded_offsets[1] || b->inner_nblks != (f32 ? 2 : 3) || b->inner_blks[0] != 16 ||
	    b->inner_idxs[0] != 0 || b->inner_blks[1] != 64 || b->inner_idxs[1] != 1 ||
	    (!f32 && (b->inner_blks[2] != 2 || b->inner_idxs[2] != 0)) || b->strides[0] != blk ||
	    b->strides[1] != pk / kb * blk)
		return 0;
	*wide = f32;
	return 1;
}

/* pieces, all bf16 as stored ([rows, K]), into such a layout on the ss_mm's
 * threads: 0, or -1 where the row table cannot be had (oneDNN's reorder
 * then) */
static int pack_own(ss_mm *m, ss_mm_w *w, int wide, long N, long K, const ss_mm_piece *pc, int np)
{
	const uint16_t **rows = calloc((size_t)N, sizeof *rows);
	if (!rows)
		return -1;
	for (int i = 0; i < np; i++)
		for (long r = 0; r < pc[i].rows; r++)
			rows[pc[i].n0 + r] = (const uint16_t *)pc[i].src + r * pc[i].ld;
	long nb = (N + 63) / 64;
	int nt = m->threads < 1 ? 1 : m->threads;
#pragma omp parallel num_threads(nt)
	{
		int t = omp_get_thread_num(), n = omp_get_num_threads();
		mm_pack_blocked_avx512(w->data, wide, rows, N, K, nb * t / n, nb * (t + 1) / n);
	}
	free(rows);
	return 0;
}

/* the weights' layout oneDNN wants for a product of M_hint rows */
static dnnl_status_t layout_for(ss_mm *m, long N, long K, long M_hint, dnnl_memory_desc_t *md)
{
	dnnl_memory_desc_t any;
	dnnl_dims_t wd = {K, N};
	dnnl_memory_desc_init_by_tag(&any, 2, wd, wtype(m), dnnl_format_tag_any);
	dnnl_primitive_desc_t pd;
	dnnl_status_t s = matmul_pd(m, &pd, M_hint < 1 ? 1 : M_hint, N, K, K, N, 0, &any);
	if (s != dnnl_success)
		return s;
	*md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	dnnl_primitive_desc_destroy(pd);
	return dnnl_success;
}

int mm_w_suits(ss_mm *m, const ss_mm_w *w, long M_hint)
{
	dnnl_memory_desc_t md;
	return layout_for(m, w->N, w->K, M_hint, &md) == dnnl_success && dnnl_memory_desc_equal(&w->md, &md);
}

static int pack(ss_mm *m, ss_mm_w **wp, long N, long K, long M_hint, const ss_mm_piece *pc, int np,
                ss_err *e)
{
	if (M_hint < 1)
		M_hint = 1;
	dnnl_memory_desc_t md;
	dnnl_status_t s = layout_for(m, N, K, M_hint, &md);
	if (s != dnnl_success)
		return ss_err_set(e, "oneDNN: no %s matmul for %ld x %ld x %ld (status %d)",
		                  mm_compute_name(m->mode), M_hint, N, K, (int)s);
	ss_mm_w *w = *wp;
	size_t bytes = dnnl_memory_desc_get_size(&md);
	int fresh = !w;
	if (fresh && !(w = ss_calloc(1, sizeof *w, "packed weights", e)))
		return -1;
	if (fresh || w->bytes != bytes || !dnnl_memory_desc_equal(&w->md, &md)) {
		/* new, or an old packing laid out for another shape (M_hint): its
		 * storage replaced */
		void *d = NULL;
		if (posix_memalign(&d, 64, bytes ? bytes : 64)) {
			if (fresh)
				free(w);
			return ss_err_set(e, "out of memory for packed weights (%zu bytes)", bytes);
		}
		free(w->data);
		w->data = d;
		w->N = N, w->K = K, w->md = md, w->bytes = bytes;
	}
	/* a plain layout: each piece copied (f32, or bf16 into bf16); otherwise
	 * each piece reordered into its rows of the packing (a sub-memory of
	 * it: oneDNN refuses one that splits its blocks), parallel as the
	 * products are */
	long ps[2];
	int own = plain_strides(&md, K, N, ps);
	for (int i = 0; own && i < np; i++)
		own = md.data_type == dnnl_f32 || (md.data_type == dnnl_bf16 && pc[i].bf16);
	for (int i = 0; own && i < np; i++)
		plain_copy(w->data, md.data_type == dnnl_bf16, ps, K, &pc[i]);
	/* bf16 pieces as stored into brgemm's blocked layouts: our transposes
	 * (mm_pack_avx512.c), the same bytes as oneDNN 2.6's reorder and as
	 * fast alone, but with stores that bypass the caches: a mixture of
	 * experts' f32 conversion (2.2 GB of bf16 experts into 4.4 GB of
	 * packings a pass) went from 0.82 to 0.65 s */
	int wide = 0, mine = !own && !m->test_reorder_only && ss_cpu_isa() >= SS_ISA_AVX512 &&
	                     own_blocked(&md, K, N, &wide);
	for (int i = 0; mine && i < np; i++)
		mine = pc[i].bf16 && !pc[i].tr;
	if (mine && pack_own(m, w, wide, N, K, pc, np) == 0)
		own = 1;
	for (int i = 0; !own && i < np && s == dnnl_success; i++) {
		const ss_mm_piece *p = &pc[i];
		dnnl_memory_desc_t src, sub = md;
		dnnl_dims_t pd_ = {K, p->rows}, off = {0, p->n0};
		dnnl_dims_t st = {p->tr ? p->ld : 1, p->tr ? 1 : p->ld};
		s = dnnl_memory_desc_init_by_strides(&src, 2, pd_, p->bf16 ? dnnl_bf16 : dnnl_f32, st);
		if (s == dnnl_success && (p->n0 || p->rows != N))
			s = dnnl_memory_desc_init_submemory(&sub, &md, pd_, off);
		if (s == dnnl_success)
			s = reorder(m, &src, p->src, &sub, w->data);
	}
	if (s != dnnl_success) {
		if (fresh)
			mm_w_free(w);
		return dnnl_err(e, s, "weight packing");
	}
	*wp = w;
	return 0;
}

int mm_pack(ss_mm *m, ss_mm_w **w, const float *W, long N, long K, long ldw, long M_hint, ss_err *e)
{
	ss_mm_piece p = {.src = W, .bf16 = 0, .n0 = 0, .rows = N, .ld = ldw};
	return pack(m, w, N, K, M_hint, &p, 1, e);
}

int mm_pack_bf16(ss_mm *m, ss_mm_w **w, const uint16_t *W, long N, long K, long ldw, long M_hint,
                 ss_err *e)
{
	ss_mm_piece p = {.src = W, .bf16 = 1, .n0 = 0, .rows = N, .ld = ldw};
	return pack(m, w, N, K, M_hint, &p, 1, e);   /* f32 mode: widened exactly */
}

int mm_pack_pieces(ss_mm *m, ss_mm_w **w, long N, long K, long M_hint, const ss_mm_piece *pc,
                   int np, ss_err *e)
{
	return pack(m, w, N, K, M_hint, pc, np, e);
}

void mm_w_free(ss_mm_w *w)
{
	if (!w)
		return;
	free(w->data);
	free(w);
}

long mm_w_rows(const ss_mm_w *w)
{
	return w->N;
}

long mm_w_cols(const ss_mm_w *w)
{
	return w->K;
}

size_t mm_w_bytes(const ss_mm_w *w)
{
	return w->bytes;
}

int mm_blocked(ss_mm *m)
{
	dnnl_memory_desc_t any;
	dnnl_dims_t wd = {1024, 1024};
	dnnl_memory_desc_init_by_tag(&any, 2, wd, wtype(m), dnnl_format_tag_any);
	dnnl_primitive_desc_t pd;
	if (matmul_pd(m, &pd, 256, 1024, 1024, 1024, 1024, 0, &any) != dnnl_success)
		return 0;
	char impl[64];
	impl_name(pd, impl, sizeof impl);
	dnnl_primitive_desc_destroy(pd);
	return !strncmp(impl, "brg", 3);
}

int mm_w_plain(const ss_mm_w *w)
{
	long s[2];
	return plain_strides(&w->md, w->K, w->N, s);
}

void mm_test_reorder_only(ss_mm *m, int on)
{
	m->test_reorder_only = on;
}

const void *mm_w_data(const ss_mm_w *w)
{
	return w->data;
}

void mm_test_set(ss_mm *m, int no_dense_copy, const char *as_ref)
{
	m->test_no_dense = no_dense_copy;
	snprintf(m->test_ref, sizeof m->test_ref, "%s", as_ref ? as_ref : "");
}

int mm_declined(const ss_mm *m)
{
	return m->declined;
}

/* the product of a declined shape: OpenBLAS sgemm with its own threads */
static int sgemm_run(ss_mm *m, long M, long N, long K, const float *A, long lda, const float *W,
                     long ldw, float *C, long ldc, const float *bias)
{
	if (!W)
		return 1;
	int was = openblas_get_num_threads();   /* the engine's pool keeps it at 1 */
	openblas_set_num_threads(m->threads);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)N, (int)K, 1.0f, A,
	            (int)lda, W, (int)ldw, 0.0f, C, (int)ldc);
	openblas_set_num_threads(was);
	if (bias)
		for (long i = 0; i < M; i++)
			for (long j = 0; j < N; j++)
				C[i * ldc + j] += bias[j];
	snprintf(m->impl, sizeof m->impl, "sgemm (declined ref)");
	return 0;
}

int mm_run(ss_mm *m, const ss_mm_w *w, long M, const float *A, long lda, float *C, long ldc,
           const float *bias, ss_err *e)
{
	return mm_run_w(m, w, M, A, lda, NULL, 0, C, ldc, bias, e);
}

int mm_run_w(ss_mm *m, const ss_mm_w *w, long M, const float *A, long lda, const float *W, long ldw,
             float *C, long ldc, const float *bias, ss_err *e)
{
	long N = w->N, K = w->K;
	if (M < 1 || N < 1)
		return 0;
	if (K < 1) {   /* an empty sum: C = bias */
		for (long i = 0; i < M; i++)
			for (long j = 0; j < N; j++)
				C[i * ldc + j] = bias ? bias[j] : 0.0f;
		return 0;
	}
	const float *A0 = A;
	long lda0 = lda;
	const void *src = A;
	if (m->mode == SS_COMPUTE_BF16) {   /* A -> bf16 (round to nearest even) */
		size_t need = (size_t)M * (size_t)K;
		if (need > m->abufn) {
			void *p = NULL;
			if (posix_memalign(&p, 64, need * 2))
				return ss_err_set(e, "out of memory for a bf16 block (%zu bytes)", need * 2);
			free(m->abuf);
			m->abuf = p;
			m->abufn = need;
		}
		mm_prim *r = prim(m, 1, M, 0, K, lda, 0, 0, NULL, e);
		if (!r)
			return -1;
		dnnl_memory_desc_t a, b;
		md2(&a, M, K, lda, dnnl_f32);
		md2(&b, M, K, K, dnnl_bf16);
		const int arg[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
		const dnnl_memory_desc_t *mds[2] = {&a, &b};
		void *const ptr[2] = {(void *)A, m->abuf};
		if (exec(m, r, 2, arg, mds, ptr, e) < 0)
			return -1;
		src = m->abuf;
	} else if (lda != K && !m->test_no_dense) {
		/* oneDNN 2.6 has no brgemm for a strided f32 A and falls back to its
		 * reference matmul (about 1 GFLOP/s): copy the rows dense first */
		size_t need = (size_t)M * (size_t)K;
		if (need > m->fbufn) {
			void *p = NULL;
			if (posix_memalign(&p, 64, need * sizeof(float)))
				return ss_err_set(e, "out of memory for a dense block (%zu bytes)", need * 4);
			free(m->fbuf);
			m->fbuf = p;
			m->fbufn = need;
		}
		for (long i = 0; i < M; i++)
			memcpy(m->fbuf + i * K, A + i * lda, sizeof(float) * (size_t)K);
		src = m->fbuf;
		lda = K;
	}
	mm_prim *p = prim(m, 0, M, N, K, lda, ldc, bias != NULL, &w->md, e);
	if (!p)
		return -1;
	if (p->declined)
		return sgemm_run(m, M, N, K, A0, lda0, W, ldw, C, ldc, bias);
	snprintf(m->impl, sizeof m->impl, "%s", p->impl);
	dnnl_memory_desc_t a, c, b;
	md2(&a, M, K, m->mode == SS_COMPUTE_BF16 ? K : lda, wtype(m));
	md2(&c, M, N, ldc, dnnl_f32);
	dnnl_dims_t bd = {1, N};
	dnnl_memory_desc_init_by_tag(&b, 2, bd, dnnl_f32, dnnl_ab);
	const int arg[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
	const dnnl_memory_desc_t *mds[4] = {&a, &w->md, &c, &b};
	void *const ptr[4] = {(void *)src, w->data, C, (void *)bias};
	return exec(m, p, bias ? 4 : 3, arg, mds, ptr, e);
}
