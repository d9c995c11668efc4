/* forward.c - the forward pass; see forward.h.
 *
 * One layer for positions t0..t0+n-1 (prefill: t0 = 0, n = T):
 *   per block of B tokens:  xn = RMSNorm_1(x);  qkv = xn Wqkv^T (+b)
 *                           q/k norm (Qwen3), RoPE, q -> Q, k,v -> cache
 *   per block of queries:   attention (attention.c) writes o over Q
 *   per block of B tokens:  a = o Wo^T;  x += a;  xm = RMSNorm_2(x)
 *                           gu = xm Wgu^T;  g = silu(g) * u;  m = g Wd^T
 *                           x += m
 * Unfused q/k/v and gate/up weights are converted into fused f32 blocks,
 * so that every architecture runs one projection per step.
 *
 * This file: creation, embeddings, logits, the prefill over every layer;
 * fwd_weights.c converts a layer's weights, fwd_layer.c runs one layer,
 * fwd_ops.c holds what they share. */
#include "engine/fwd_impl.h"
#include "engine/kernels.h"
#include "util/progress.h"

#include <cblas.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fwd_times(const ss_fwd *f, ss_fwd_times *t)
{
	*t = f->tm;
}

double fwd_times_parts(const ss_fwd_times *t)
{
	return t->linear + t->attention + t->convert + t->rows + t->pages;
}
/* ---- create / free ----------------------------------------------------- */

int fwd_resident_bf16(const ss_model *m)
{
	return !strcmp(m->weight_dtype, "bf16") && !m->c.n_experts;
}

double fwd_resident_bytes(const ss_model *m)
{
	const ss_config *c = &m->c;
	double L = (double)c->n_layers, per = (double)model_layer_f32_bytes(c);
	if (!fwd_resident_bf16(m))
		return per * L + 4.0 * c->vocab * c->dim;
	/* matrices in bf16, lm_head read in place; one f32 layer as scratch */
	long qkv = (c->n_heads + 2 * c->n_kv_heads) * c->head_dim;
	double mats = (double)qkv * c->dim + (double)c->dim * c->n_heads * c->head_dim +
	              3.0 * c->hidden * c->dim;   /* gate/up room [2F, D] even when ungated */
	return 2.0 * mats * L + per;
}

/* ---- packings kept from pass to pass (forward.h) ------------------------ */

int fwd_keep_create(ss_fwd_keep **out, const ss_model *m, ss_compute mode, int threads, ss_err *e)
{
	ss_fwd_keep *k = ss_calloc(1, sizeof *k, "kept packings", e);
	if (!k)
		return -1;
	k->m = m, k->mode = mode, k->threads = threads > 0 ? threads : 1;
	if (!(k->layer = ss_calloc((size_t)m->c.n_layers, sizeof *k->layer, "kept packings", e)) ||
	    mm_create(&k->mm, mode, k->threads, e) < 0) {
		fwd_keep_free(k);
		return -1;
	}
	*out = k;
	return 0;
}

void fwd_keep_free(ss_fwd_keep *k)
{
	if (!k)
		return;
	for (long l = 0; k->layer && l < k->m->c.n_layers; l++) {
		for (int i = 0; i < k->layer[l].n; i++)
			mm_w_free(k->layer[l].v[i].pw);
		free(k->layer[l].v);
	}
	free(k->layer);
	mm_free(k->mm);
	free(k);
}

double fwd_keep_bytes(const ss_model *m, ss_compute mode)
{
	/* a layer's weights, all of them matrices as far as this estimate goes,
	 * in the packings' type, with 2% for their blocks' padding */
	double per = (double)model_layer_f32_bytes(&m->c) / 4 * (mode == SS_COMPUTE_BF16 ? 2 : 4);
	return 1.02 * per * (double)m->c.n_layers;
}

size_t fwd_keep_held(const ss_fwd_keep *k)
{
	return k->bytes;
}

long fwd_keep_made(const ss_fwd_keep *k)
{
	return k->made;
}

static void dims(const ss_config *c, long *qdim, long *kvdim, long *half)
{
	*qdim = c->n_heads * c->head_dim;
	*kvdim = c->n_kv_heads * c->head_dim;
	*half = c->rotary_dim / 2;
}

double fwd_memory_estimate(const ss_config *c, long T, int threads, long block)
{
	long qdim, kvdim, half;
	dims(c, &qdim, &kvdim, &half);
	if (block <= 0)
		block = 1024;
	if (threads < 1)
		threads = 1;
	double B = (double)(block < T ? block : T), t = (double)T, D = (double)c->dim;
	double floats = t * D + 2 * t * kvdim + t * qdim + B * (qdim + 2 * kvdim) + 3 * B * D +
	                B * 2 * c->hidden + 2 * t * half + t + B + D;
	double bytes = floats * 4 + 8.0 * c->n_heads * t + (double)model_layer_f32_bytes(c);
	bytes += attn_memory_estimate(c, T, threads, QBLOCK);
	/* the matmul's copy of A (matmul.c: a strided f32 A made dense, or A in
	 * bf16), B rows of the widest K: the down projection's F */
	long K = c->dim > qdim ? c->dim : qdim;
	K = c->hidden > K ? c->hidden : K;
	K = c->moe_hidden > K ? c->moe_hidden : K;
	K = c->shared_hidden > K ? c->shared_hidden : K;
	bytes += 4 * B * (double)K;
	return bytes;
}

/* RoPE tables cos, sin [maxT, half] of inv_freq per c's rope settings */
static void rope_tables(ss_fwd *f, const ss_config *c, float *inv, float *cs, float *sn)
{
	ss_rope_inv_freq(c, inv);
	for (long t = 0; t < f->maxT; t++)
		for (long i = 0; i < f->half; i++) {
			float ang = (float)t * inv[i];   /* f32, as HF */
			cs[t * f->half + i] = (float)cos((double)ang);
			sn[t * f->half + i] = (float)sin((double)ang);
		}
}

int fwd_create(ss_fwd **out, const ss_model *m, const ss_fwd_opts *o, long max_T, ss_err *e)
{
	ss_fwd *f = ss_calloc(1, sizeof *f, "forward state", e);
	if (!f)
		return -1;
	const ss_config *c = &m->c;
	f->m = m;
	f->c = c;
	if (o)
		f->o = *o;
	f->nth = f->o.threads > 0 ? f->o.threads : 1;
	f->compute = f->o.compute == SS_COMPUTE_BF16 ? SS_COMPUTE_BF16 : SS_COMPUTE_F32;
	f->B = f->o.block > 0 ? f->o.block : 1024;
	if (max_T < 1)
		max_T = 1;
	f->maxT = max_T;
	if (f->B > max_T)
		f->B = max_T;
	f->D = c->dim;
	f->F = c->hidden;
	if (c->n_experts) {   /* F: the widest MLP, for the scratch */
		f->E = c->n_experts;
		f->K = c->top_k;
		f->Fe = c->moe_hidden;
		f->Fs = c->shared_hidden;
		f->F = f->Fe > f->Fs ? f->Fe : f->Fs;
	}
	f->H = c->n_heads;
	f->Hkv = c->n_kv_heads;
	f->hd = c->head_dim;
	dims(c, &f->qdim, &f->kvdim, &f->half);
	f->qkvdim = f->qdim + 2 * f->kvdim;
	/* all parallelism is ours: OpenBLAS runs single-threaded in each worker */
	openblas_set_num_threads(1);
	if (pool_create(&f->pool, f->nth, e) < 0 || mm_create(&f->mm, f->compute, f->nth, e) < 0)
		goto fail;
	if (f->compute == SS_COMPUTE_F32 && !mm_blocked(f->mm)) {
		/* no blocked f32 kernel (an AVX2-only CPU): OpenBLAS sgemm, which
		 * is faster there than oneDNN's gemm:jit (104 against 85 GFLOP/s on
		 * a Qwen2.5-0.5B-shaped prefill of 512 tokens, oneDNN capped at AVX2) */
		mm_free(f->mm);
		f->mm = NULL;
	}
	if (f->compute == SS_COMPUTE_BF16 && !mm_blocked(f->mm)) {
		/* no bf16 matmul of oneDNN's own here: the bf16 mode's arithmetic
		 * through sgemm (fwd_gemm rounds each product's input and weights to
		 * bf16; products of bf16 values are exact in f32), said once per
		 * process instead of a refusal at the first product */
		static atomic_int said;
		if (!atomic_exchange(&said, 1))
			fprintf(stderr, "warning: --compute bf16: oneDNN has no bf16 matmul for this CPU (it needs "
			        "AVX512_BF16 or AMX); the products run as OpenBLAS sgemm on inputs rounded to bf16, "
			        "at f32 speed\n");
		mm_free(f->mm);
		f->mm = NULL;
		f->emul16 = 1;
		f->w16 = !strcmp(m->weight_dtype, "bf16");
	}
	ss_fwd_keep *k = f->o.keep;
	if (k && f->mm && !f->o.resident && !f->o.resident_f32 && k->m == m && k->mode == f->compute &&
	    k->threads == f->nth) {   /* the store's engine and primitives, its packings */
		mm_free(f->mm);
		f->mm = k->mm;
		f->keep = k;
		k->fwd++;
	}
	f->lwn = fwd_layout(f, NULL);
	int rb = f->o.resident && !f->o.resident_f32 && fwd_resident_bf16(m);
	if (!(f->lw = ss_malloc_big(f->lwn * (f->o.resident && !rb ? c->n_layers : 1), sizeof(float),
	                            "layer weights (f32)", e)))
		goto fail;
	if (f->o.resident && !(f->loaded = ss_calloc(c->n_layers, 1, "layer flags", e)))
		goto fail;
	fwd_layout(f, f->lw);
	if (rb) {
		f->nmat = (size_t)(f->wd + f->D * f->F - f->lw);
		if (!(f->rb = ss_malloc_big(f->nmat * c->n_layers, sizeof *f->rb, "layer weights (bf16)", e)) ||
		    !(f->rsm = ss_malloc((f->lwn - f->nmat) * c->n_layers, sizeof *f->rsm, "layer weights", e)))
			goto fail;
	}
	long T = max_T, B = f->B;
	if (!(f->x = ss_malloc_big((size_t)(T * f->D), 4, "residual stream", e)) ||
	    !(f->k = ss_malloc_big((size_t)(T * f->kvdim), 4, "keys", e)) ||
	    !(f->v = ss_malloc_big((size_t)(T * f->kvdim), 4, "values", e)) ||
	    !(f->q = ss_malloc_big((size_t)(T * f->qdim), 4, "queries", e)) ||
	    !(f->qkv = ss_malloc_big((size_t)(B * f->qkvdim), 4, "qkv block", e)) ||
	    !(f->xn = ss_malloc_big((size_t)(B * f->D), 4, "block", e)) ||
	    !(f->a = ss_malloc_big((size_t)(B * f->D), 4, "block", e)) ||
	    !(f->mo = ss_malloc_big((size_t)(B * f->D), 4, "block", e)) ||
	    !(f->gu = ss_malloc_big((size_t)(B * 2 * f->F), 4, "mlp block", e)) ||
	    !(f->cs = ss_malloc((size_t)(T * f->half), 4, "rope table", e)) ||
	    !(f->sn = ss_malloc((size_t)(T * f->half), 4, "rope table", e)) ||
	    !(f->inv_freq = ss_malloc((size_t)f->half, 4, "rope table", e)) ||
	    !(f->recv = ss_malloc((size_t)(f->H * T), 8, "attention received", e)) ||
	    !(f->rnorm = ss_malloc((size_t)T, 4, "norms", e)) ||
	    !(f->bnorm = ss_malloc((size_t)B, 4, "norms", e)) ||
	    !(f->final_norm = ss_malloc((size_t)f->D, 4, "final norm", e)))
		goto fail;
	rope_tables(f, c, f->inv_freq, f->cs, f->sn);
	if (c->rope_local_theta > 0) {   /* Gemma 3's sliding layers: default RoPE, their own base */
		ss_config lc = *c;
		lc.rope_theta = c->rope_local_theta;
		lc.rope_type = SS_ROPE_DEFAULT;
		if (!(f->cs_loc = ss_malloc((size_t)(T * f->half), 4, "rope table", e)) ||
		    !(f->sn_loc = ss_malloc((size_t)(T * f->half), 4, "rope table", e)) ||
		    !(f->inv_loc = ss_malloc((size_t)f->half, 4, "rope table", e)))
			goto fail;
		rope_tables(f, &lc, f->inv_loc, f->cs_loc, f->sn_loc);
	}
	f->rcs = f->cs;
	f->rsn = f->sn;
	f->rinv = f->inv_freq;
	st_to_f32(f->final_norm, m->norm, 0, f->D);
	if (c->norm_plus1)
		fwd_plus1(f->final_norm, f->D);
	if (m->norm_b && (!(f->final_norm_b = ss_malloc((size_t)f->D, 4, "final norm", e))))
		goto fail;
	if (m->norm_b)
		st_to_f32(f->final_norm_b, m->norm_b, 0, f->D);
	f->cap_items = (int)(48 + 6 * f->H + 3 * f->E);
	if (!(f->items = ss_calloc((size_t)f->cap_items, sizeof *f->items, "layer tensors", e)) ||
	    !(f->jbuf = ss_calloc((size_t)f->cap_items, sizeof *f->jbuf, "layer tensors", e)) ||
	    !(f->iptr = ss_calloc((size_t)f->cap_items, sizeof *f->iptr, "layer tensors", e)))
		goto fail;
	f->lazy = !f->o.resident && !rb;
	if (c->conv1d) {   /* the largest Conv1D weight of a layer */
		long q3 = f->qkvdim * f->D, o = f->qdim * f->D, up = f->F * f->D;
		f->tbufn = q3 > o ? q3 : o;
		f->tbufn = up > f->tbufn ? up : f->tbufn;
		if (!(f->tbuf = ss_malloc_big((size_t)f->tbufn, 4, "Conv1D weights", e)))
			goto fail;
	}
	if (f->E && (!(f->rl = ss_malloc((size_t)(B * f->E), 4, "router logits", e)) ||
	             !(f->sel = ss_malloc((size_t)(B * f->K), 4, "experts", e)) ||
	             !(f->selw = ss_malloc((size_t)(B * f->K), 4, "expert weights", e)) ||
	             !(f->idx = ss_malloc((size_t)B, sizeof(long), "expert tokens", e)) ||
	             !(f->xe = ss_malloc_big((size_t)(B * f->D), 4, "expert inputs", e)) ||
	             !(f->ye = ss_malloc_big((size_t)(B * f->D), 4, "expert outputs", e))))
		goto fail;
	if (attn_create(&f->attn, c, T, f->nth, QBLOCK, e) < 0 || attn_set_compute(f->attn, f->compute, e) < 0)
		goto fail;
	*out = f;
	return 0;
fail:
	fwd_free(f);
	return -1;
}

void fwd_free(ss_fwd *f)
{
	if (!f)
		return;
	pool_free(f->pool);
	for (int i = 0; i < f->npk; i++)
		mm_w_free(f->pk[i].pw);
	free(f->pk);
	if (!f->keep)
		mm_free(f->mm);
	attn_free(f->attn);
	free(f->lw);
	free(f->x);
	free(f->k);
	free(f->v);
	free(f->q);
	free(f->qkv);
	free(f->xn);
	free(f->a);
	free(f->mo);
	free(f->gu);
	free(f->cs);
	free(f->sn);
	free(f->inv_freq);
	free(f->recv);
	free(f->rnorm);
	free(f->bnorm);
	free(f->final_norm);
	free(f->final_norm_b);
	free(f->cs_loc);
	free(f->sn_loc);
	free(f->inv_loc);
	free(f->tbuf);
	free(f->items);
	free(f->jbuf);
	free(f->iptr);
	free(f->rl);
	free(f->sel);
	free(f->selw);
	free(f->idx);
	free(f->xe);
	free(f->ye);
	free(f->a16);
	free(f->loaded);
	free(f->head);
	free(f->rb);
	free(f->rsm);
	free(f);
}
int fwd_embed(ss_fwd *f, const int32_t *ids, long t0, long n, float *x, ss_err *e)
{
	const st_tensor *E = f->m->embed, *P = f->m->pos_embed;
	const ss_config *c = f->c;
	for (long i = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] >= c->vocab)
			return ss_err_set(e, "token id %ld at position %ld outside the vocabulary (0-%ld)",
			                  (long)ids[i], t0 + i, c->vocab - 1);
		if (P && t0 + i >= c->max_pos)
			return ss_err_set(e, "position %ld beyond the %ld learned position embeddings", t0 + i,
			                  c->max_pos);
		float *xi = x + i * f->D;
		st_to_f32(xi, E, (long)ids[i] * f->D, f->D);
		if (P) {   /* GPT-2: wte + wpe (f->a: a free row here) */
			st_to_f32(f->a, P, (t0 + i) * f->D, f->D);
			k_add(xi, f->a, f->D);
		}
		if (c->embed_scale != 1)   /* Gemma: times sqrt(hidden_size), in f32 */
			k_scale(xi, f->D, (float)c->embed_scale);
	}
	if (f->o.hook && fwd_hook(f, 0, SS_HOOK_RESID, t0, n, x, e) < 0)
		return -1;
	return 0;
}

int fwd_logits(ss_fwd *f, const float *x, long n, float *logits, ss_err *e)
{
	long D = f->D, V = f->c->vocab, chunk = 4096;
	float *xn = ss_malloc((size_t)(n * D), 4, "logits input", e);
	if (!xn)
		return -1;
	for (long i = 0; i < n; i++)
		fwd_norm_row(f, xn + i * D, x + i * D, f->final_norm, f->final_norm_b, D);
	const st_tensor *W = f->m->lm_head;
	if (f->rb && W->dtype == ST_BF16 && !((uintptr_t)W->data & 1)) {   /* in place, a row at a time */
		for (long i = 0; i < n; i++)
			fwd_gemv_bf16(f, V, D, xn + i * D, W->data, logits + i * V);
		goto cap;
	}
	float *wb = NULL;
	if (W->dtype != ST_F32 || ((uintptr_t)W->data & 3)) {
		if (!(wb = ss_malloc((size_t)((chunk < V ? chunk : V) * D), 4, "lm_head block", e))) {
			free(xn);
			return -1;
		}
	}
	for (long v0 = 0; v0 < V; v0 += chunk) {
		long nv = V - v0 < chunk ? V - v0 : chunk;
		const float *w;
		if (wb && (f->o.resident || f->o.keep_head) && !f->head &&
		    (f->head = malloc(sizeof(float) * (size_t)(V * D))))
			st_to_f32(f->head, W, 0, V * D);
		if (f->head) {
			w = f->head + v0 * D;
		} else if (wb) {
			st_to_f32(wb, W, v0 * D, nv * D);
			w = wb;
		} else {
			w = (const float *)W->data + v0 * D;
		}
		fwd_gemm(f, n, nv, D, xn, D, w, D, logits + v0, V, NULL);
	}
	free(wb);
cap:
	if (f->c->final_softcap > 0)   /* Gemma 2: cap tanh(logits / cap) */
		for (long i = 0; i < n; i++)
			k_softcap(logits + i * V, V, (float)f->c->final_softcap);
	free(xn);
	return 0;
}

/* ---- prefill ---------------------------------------------------------------- */

static void stats_resid(ss_fwd *f, const float *x, long T, float *norm, float *cos0)
{
	long D = f->D;
	double n0 = sqrt(k_sumsq(x, D));
	for (long j = 0; j < T; j++) {
		double nj = sqrt(k_sumsq(x + j * D, D));
		if (norm)
			norm[j] = (float)nj;
		if (cos0)
			cos0[j] = (float)(nj > 0 && n0 > 0 ? k_dot(x + j * D, x, D) / (nj * n0) : 0.0);
	}
}

typedef struct pages_job { const ss_model *m; int release, prefetch, populate; } pages_job;

static void pages_task(void *ctx, int tid, int nth)
{
	const pages_job *j = ctx;
	if (tid == 0)
		model_layer_release(j->m, j->release);   /* layers outside 1..L: nothing */
	if (tid == nth - 1)
		model_layer_prefetch(j->m, j->prefetch);
	/* the layer about to be converted, into the page tables in one pass
	 * per thread instead of a fault per 64 KiB as the conversion reads it */
	model_layer_populate(j->m, j->populate, tid, nth);
}

int fwd_prefill(ss_fwd *f, const int32_t *ids, long T, ss_stats *st, float *h_out, ss_err *e)
{
	const ss_config *c = f->c;
	const char *dir = f->m->dir ? f->m->dir : "model";
	if (T < 1 || T > f->maxT)
		return ss_err_set(e, "%s: %ld tokens, prepared for 1-%ld", dir, T, f->maxT);
	long L = c->n_layers, H = f->H;
	ss_stats none = {0};
	if (!st)
		st = &none;
	f->st = st;
	float *x = f->x;
	model_embed_prefetch(f->m, ids, T);
	if (fwd_embed(f, ids, 0, T, x, e) < 0)
		return ss_err_prefix(e, "%s", dir);
	/* weights stream through memory: a layer's pages are read ahead while
	 * the previous layer computes and leave once converted (model.h) */
	model_tensor_release(f->m, f->m->embed);
	/* a layer whose packings are all kept: its matrices stay unmapped */
	const ss_fwd_keep *kp = f->keep;
#define KEPT(l) (kp && (l) >= 1 && (l) <= L && kp->layer[(l) - 1].complete)
	if (!KEPT(1))
		model_layer_prefetch(f->m, 1);
	stats_resid(f, x, T, f->rnorm, NULL);
	if (fwd_check_finite(f->rnorm, T, 0, "resid", 0, e) < 0)
		return ss_err_prefix(e, "%s", dir);
	if (st->resid_norm || st->resid_cos0)
		stats_resid(f, x, T, st->resid_norm, st->resid_cos0);
	for (int l = 1; l <= L; l++) {
		double *rs = st->recv || f->o.select ? f->recv : NULL;   /* a selection may look at it */
		if (rs)
			memset(rs, 0, sizeof(double) * (size_t)(H * T));
		/* release layer l-1, prefetch layer l+1, populate layer l: page-table
		 * work of a few ms per layer, on two threads at once */
		pages_job pj = {f->m, l - 1, KEPT(l + 1) ? 0 : l + 1, KEPT(l) ? 0 : l};
		fwd_timed_run(f, &f->tm.pages, pages_task, &pj);
		f->rec_e = st->moe_experts ? st->moe_experts + (size_t)(l - 1) * T * f->K : NULL;
		f->rec_w = st->moe_experts ? st->moe_weights + (size_t)(l - 1) * T * f->K : NULL;
		if (fwd_layer_run(f, l, x, 0, T, f->k, f->v, rs, T, st->attn_out_norm ? st->attn_out_norm + (l - 1) * T : NULL,
		          st->mlp_out_norm ? st->mlp_out_norm + (l - 1) * T : NULL, f->rnorm, e) < 0)
			return ss_err_prefix(e, "%s", dir);
		if (f->keep && !f->mm_failed)
			f->keep->layer[l - 1].complete = 1;
		if (st->recv)
			for (long h = 0; h < H; h++)
				for (long j = 0; j < T; j++)
					st->recv[((l - 1) * H + h) * T + j] = (float)(rs[h * T + j] / (double)(T - j));
		if (st->resid_norm || st->resid_cos0)
			stats_resid(f, x, T, st->resid_norm ? st->resid_norm + l * T : NULL,
			            st->resid_cos0 ? st->resid_cos0 + l * T : NULL);
		if (f->o.progress)
			f->o.progress(f->o.progress_ctx, l, (int)L);
	}
#undef KEPT
	model_release_all(f->m);   /* layer L and anything else still mapped */
	if (h_out)
		memcpy(h_out, x, sizeof(float) * (size_t)(T * f->D));
	return 0;
}
