/* fwd_weights.c - a layer's weights converted to f32 into the layer
 * buffer (fused q/k/v and gate/up blocks, NeoX's per-head rows reordered,
 * Gemma's 1 + w norms; the runs of each tensor listed for fwd_ops.c, which
 * converts them, GPT-2's Conv1D weights transposed); see fwd_impl.h. */
#include "engine/fwd_impl.h"
#include "io/stconv.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- layer weights ----------------------------------------------------- */

/* The layer buffer's layout: with p, point the layer weight pointers into
 * it; returns its floats.  The five architectures of the paper come first,
 * in their order; the other families' tensors follow. */
size_t fwd_layout(ss_fwd *f, float *p)
{
	const ss_config *c = f->c;
	size_t o = 0;
	long Fd = c->n_experts ? 0 : f->F;   /* the dense MLP */
#define TAKE(ptr, n) do { if (p) ptr = p + o; o += (size_t)(n); } while (0)
	TAKE(f->wqkv, f->qkvdim * f->D);
	TAKE(f->wo, f->D * f->qdim);
	TAKE(f->wgu, 2 * Fd * f->D);
	TAKE(f->wd, f->D * Fd);
	TAKE(f->in_norm, f->D);
	TAKE(f->post_norm, f->D);
	TAKE(f->qn, f->hd);
	TAKE(f->kn, f->hd);
	TAKE(f->bqkv, f->qkvdim);
	TAKE(f->bgu, 2 * Fd);
	TAKE(f->bo, f->D);
	TAKE(f->bd, f->D);
	TAKE(f->in_norm_b, f->D);
	TAKE(f->post_norm_b, f->D);
	TAKE(f->ao_norm, f->D);
	TAKE(f->mo_norm, f->D);
	TAKE(f->qnf, f->qkvdim);
	f->knf = f->qnf ? f->qnf + f->qdim : NULL;
	if (c->n_experts) {
		TAKE(f->router, f->E * f->D);
		TAKE(f->ew, f->E * 3 * f->Fe * f->D);
		TAKE(f->sgu, 2 * f->Fs * f->D);
		TAKE(f->sd, f->D * f->Fs);
		TAKE(f->sgate, f->D);
	}
#undef TAKE
	if (!p)
		return o;
	if (!c->qkv_bias)
		f->bqkv = NULL;
	if (!c->o_bias)
		f->bo = NULL;
	if (!c->mlp_bias)
		f->bgu = f->bd = NULL;
	if (!c->layer_norm)
		f->in_norm_b = f->post_norm_b = NULL;
	if (!f->Fs)   /* no shared expert (Mixtral): no products with N or K = 0 */
		f->sgu = f->sd = f->sgate = NULL;
	return o;
}

/* x[i] += 1 (Gemma's RMSNorm weights are 1 + w) */
void fwd_plus1(float *x, long n)
{
	for (long i = 0; i < n; i++)
		x[i] += 1.0f;
}

/* layer l's weights from the mapping into the bound f32 buffer: all of
 * them, or with f->lazy all but the matrices, which stay pending */
static void convert_layer(ss_fwd *f, int l)
{
	const ss_layer_w *w = &f->m->layers[l - 1];
	const ss_config *c = f->c;
	long D = f->D;
	f->nitems = 0;
#define ADDR(D_, T_, OFF, N) do { if (f->nitems < f->cap_items) f->items[f->nitems++] = (fwd_item){ 	.dst = (D_), .t = (T_), .off = (OFF), .n = (N), 	.tr = c->conv1d && (T_)->rank == 2 }; } while (0)
#define ADD(D_, T_) do { if (T_) ADDR(D_, T_, 0, (T_)->n); } while (0)
	ADD(f->in_norm, w->in_norm);
	ADD(f->post_norm, w->post_norm);
	if (c->fused_qkv || c->qkv_per_head) {   /* NeoX's rows [H][q k v][hd] as stored: qkv_task sorts them */
		ADD(f->wqkv, w->wqkv);
		ADD(f->bqkv, w->bqkv);
	} else {
		ADD(f->wqkv, w->wq);
		ADD(f->wqkv + f->qdim * f->D, w->wk);
		ADD(f->wqkv + (f->qdim + f->kvdim) * f->D, w->wv);
	}
	if (c->qkv_bias && !c->fused_qkv) {
		ADD(f->bqkv, w->bq);
		ADD(f->bqkv + f->qdim, w->bk);
		ADD(f->bqkv + f->qdim + f->kvdim, w->bv);
	}
	ADD(f->wo, w->wo);
	ADD(f->bo, w->bo);
	if (c->qk_norm_full) {
		ADD(f->qnf, w->q_norm);
		ADD(f->knf, w->k_norm);
	} else {
		ADD(f->qn, w->q_norm);
		ADD(f->kn, w->k_norm);
	}
	if (c->fused_gate_up) {
		ADD(f->wgu, w->w_gate_up);
	} else if (c->ungated) {
		ADD(f->wgu, w->w_up);
	} else {
		ADD(f->wgu, w->w_gate);
		ADD(f->wgu + f->F * f->D, w->w_up);
	}
	if (c->mlp_bias) {
		ADD(f->bgu, w->b_gate);
		ADD(c->ungated ? f->bgu : f->bgu + f->F, w->b_up);
		ADD(f->bd, w->b_down);
	}
	ADD(f->wd, w->w_down);
	ADD(f->in_norm_b, w->in_norm_b);
	ADD(f->post_norm_b, w->post_norm_b);
	ADD(f->ao_norm, w->attn_out_norm);
	ADD(f->mo_norm, w->mlp_out_norm);
	ADD(f->router, w->router);
	for (long x = 0; x < f->E; x++) {
		float *ex = f->ew + x * 3 * f->Fe * D;
		ADD(ex, w->e_gate[x]);
		ADD(ex + f->Fe * D, w->e_up[x]);
		ADD(ex + 2 * f->Fe * D, w->e_down[x]);
	}
	if (f->sgu) {
		ADD(f->sgu, w->s_gate);
		ADD(f->sgu + f->Fs * D, w->s_up);
		ADD(f->sd, w->s_down);
		ADD(f->sgate, w->s_router);
	}
#undef ADD
#undef ADDR
	int k = 0;
	for (int i = 0; i < f->nitems; i++)
		if (!f->lazy || f->items[i].t->rank != 2 || f->items[i].dst == f->sgate)   /* read as a row */
			f->iptr[k++] = &f->items[i];
	fwd_convert_items(f, f->iptr, k);
	if (c->norm_plus1) {
		float *nw[] = {f->in_norm, f->post_norm, f->ao_norm, f->mo_norm};
		for (int i = 0; i < 4; i++)
			fwd_plus1(nw[i], D);
		if (c->qk_norm) {
			fwd_plus1(f->qn, f->hd);
			fwd_plus1(f->kn, f->hd);
		}
	}
}

/* f32 -> bf16 of layer l's matrices in lw into its resident copy */
typedef struct round_job { ss_fwd *f; int l; } round_job;

static void round_task(void *ctx, int tid, int nth)
{
	const round_job *j = ctx;
	long lo, hi;
	pool_share((long)j->f->nmat, 4096, tid, nth, &lo, &hi);
	uint16_t *d = j->f->rb + (size_t)(j->l - 1) * j->f->nmat;
	for (long i = lo; i < hi; i++)
		d[i] = st_f32_to_bf16(j->f->lw[i]);
}

void fwd_load_layer(ss_fwd *f, int l)
{
	if (f->cur == l)
		return;
	if (f->rb) {   /* matrices in bf16 (fwd_gemm widens them on demand), the rest in f32 */
		size_t ns = f->lwn - f->nmat;
		float *small = f->rsm + (size_t)(l - 1) * ns;
		if (f->loaded[l - 1]) {
			memcpy(f->lw + f->nmat, small, ns * sizeof *small);
		} else {   /* the source is bf16, so rounding back is exact */
			convert_layer(f, l);
			round_job j = {f, l};
			fwd_timed_run(f, &f->tm.convert, round_task, &j);
			memcpy(small, f->lw + f->nmat, ns * sizeof *small);
			f->mats = l;
			f->loaded[l - 1] = 1;
		}
		f->cur = l;
		f->wgen++;
		return;
	}
	if (f->o.resident) { /* every layer has its own buffer, converted once */
		fwd_layout(f, f->lw + (size_t)(l - 1) * f->lwn);
		if (f->loaded[l - 1]) {
			f->cur = l;
			f->wgen++;
			return;
		}
		f->loaded[l - 1] = 1;
	}
	convert_layer(f, l);
	f->cur = l;
	f->wgen++;
}
