/* fwd_layer.c - one layer of the forward pass (forward.c's header gives
 * the steps): row tasks (norms, q/k norm and RoPE, residual adds,
 * activations), the dense and mixture-of-experts MLPs, attention under key
 * selections, hooks; see fwd_impl.h. */
#include "engine/fwd_impl.h"
#include "engine/kernels.h"
#include "util/progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- row tasks ---------------------------------------------------------- */

typedef struct rows_job {
	ss_fwd *f;
	long n, t0;          /* rows, absolute position of row 0 */
	const float *in;     /* [n, D] */
	float *out;          /* [n, D] */
	const float *w;      /* norm weight */
	const float *b;      /* norm bias (LayerNorm) */
	float *kc, *vc;      /* qkv scatter destinations (row 0 = position t0) */
	float *qdst;
	float *norm;         /* [n] */
	float *add;          /* [n, D]: add <- add + in */
	int pre;             /* resid_task: out = Norm(add) before the add (parallel residual) */
	int copy;            /* resid_task without w: out = add after the add (no norm) */
	long F;              /* act_task: the MLP width */
	float *gu;           /* act_task: [n, ld] */
	long ld;
} rows_job;

static void norm_task(void *ctx, int tid, int nth)   /* out = Norm(in) * w */
{
	rows_job *j = ctx;
	long lo, hi, D = j->f->D;
	pool_share(j->n, 1, tid, nth, &lo, &hi);
	for (long i = lo; i < hi; i++)
		fwd_norm_row(j->f, j->out + i * D, j->in + i * D, j->w, j->b, D);
}

static void rope_row(ss_fwd *f, float *x, long pos)
{
	if (pos < f->maxT) {
		k_rope(x, f->half, f->rcs + pos * f->half, f->rsn + pos * f->half);
	} else {
		ss_rope(x, f->c->rotary_dim, pos, f->rinv);
	}
}

static void qkv_task(void *ctx, int tid, int nth)     /* q/k norm, RoPE, scatter */
{
	rows_job *j = ctx;
	ss_fwd *f = j->f;
	const ss_config *c = f->c;
	long lo, hi, hd = f->hd;
	pool_share(j->n, 1, tid, nth, &lo, &hi);
	for (long i = lo; i < hi; i++) {
		float *r = f->qkv + i * f->qkvdim, *q = r, *k = r + f->qdim, *v = k + f->kvdim;
		long pos = j->t0 + i;
		if (c->qkv_per_head) {
			/* NeoX: the product's columns are the checkpoint's rows [H][q k v][hd]
			 * (one matrix to pack, not 3 H pieces); each head's q, k, v from
			 * there (no q/k norms, H KV heads) */
			for (long h = 0; h < f->H; h++) {
				float *qh = r + 3 * h * hd, *kh = qh + hd, *vh = kh + hd;
				if (f->half) {
					rope_row(f, qh, pos);
					rope_row(f, kh, pos);
				}
				if (j->qdst)
					memcpy(j->qdst + i * f->qdim + h * hd, qh, (size_t)hd * 4);
				if (j->kc)
					memcpy(j->kc + i * f->kvdim + h * hd, kh, (size_t)hd * 4);
				if (j->vc)
					memcpy(j->vc + i * f->kvdim + h * hd, vh, (size_t)hd * 4);
			}
			continue;
		}
		if (c->qk_norm_full) {   /* OLMo 2: over the whole projection, before the heads */
			ss_rmsnorm(q, q, f->qnf, f->qdim, c->eps);
			ss_rmsnorm(k, k, f->knf, f->kvdim, c->eps);
		}
		for (long h = 0; h < f->H; h++) {
			if (c->qk_norm)
				ss_rmsnorm(q + h * hd, q + h * hd, f->qn, hd, c->eps);
			if (f->half)
				rope_row(f, q + h * hd, pos);
		}
		for (long h = 0; h < f->Hkv; h++) {
			if (c->qk_norm)
				ss_rmsnorm(k + h * hd, k + h * hd, f->kn, hd, c->eps);
			if (f->half)
				rope_row(f, k + h * hd, pos);
		}
		if (j->qdst)
			memcpy(j->qdst + i * f->qdim, q, (size_t)f->qdim * 4);
		if (j->kc)
			memcpy(j->kc + i * f->kvdim, k, (size_t)f->kvdim * 4);
		if (j->vc)
			memcpy(j->vc + i * f->kvdim, v, (size_t)f->kvdim * 4);
	}
}

/* norm[i] = ||in[i]||; then add[i] += in[i]; then (w) out[i] = Norm(add[i]).
 * pre: out[i] = Norm(add[i]) before the add; copy (no w): out[i] = add[i]. */
static void resid_task(void *ctx, int tid, int nth)
{
	rows_job *j = ctx;
	long lo, hi, D = j->f->D;
	pool_share(j->n, 1, tid, nth, &lo, &hi);
	for (long i = lo; i < hi; i++) {
		if (j->norm)
			j->norm[i] = (float)sqrt(k_sumsq(j->in + i * D, D));
		if (j->w && j->pre)
			fwd_norm_row(j->f, j->out + i * D, j->add + i * D, j->w, j->b, D);
		if (j->add)
			k_add(j->add + i * D, j->in + i * D, D);
		if (j->w && !j->pre)
			fwd_norm_row(j->f, j->out + i * D, j->add + i * D, j->w, j->b, D);
		else if (j->copy)
			memcpy(j->out + i * D, j->add + i * D, sizeof(float) * (size_t)D);
	}
}

/* the activation of rows gu [n, ld]: gated act(gate) * up (gate in columns
 * 0..F-1, up in F..2F-1), or ungated act(gu) in columns 0..F-1 */
static void act_task(void *ctx, int tid, int nth)
{
	rows_job *j = ctx;
	const ss_config *c = j->f->c;
	long lo, hi, F = j->F;
	pool_share(j->n, 1, tid, nth, &lo, &hi);
	for (long i = lo; i < hi; i++) {
		float *g = j->gu + i * j->ld;
		const float *u = c->ungated ? NULL : g + F;
		if (c->act == SS_ACT_SILU && !u)
			for (long k = 0; k < F; k++)
				g[k] = g[k] / (1.0f + expf(-g[k]));
		else if (c->act == SS_ACT_SILU)
			k_silu_mul(g, u, F);
		else
			k_gelu_mul(g, u, F, c->act == SS_ACT_GELU_TANH);
	}
}

double fwd_attention_pairs(long w, long t0, long n)
{
	long cut = t0 + n;   /* queries i < cut see i + 1 keys, the rest w */
	if (w > 0 && w - 1 < cut)
		cut = w - 1 > t0 ? w - 1 : t0;
	return (double)(cut - t0) * (double)(t0 + 1 + cut) / 2 + (double)(t0 + n - cut) * (double)w;
}

/* ---- the MLP -------------------------------------------------------------- */

/* out [n, D] = down(act(x W_gu^T + b_gu)) + b_d for a gated (gate rows,
 * then up rows: W_gu [2F, D]) or an ungated (W_gu [F, D]) MLP of width F */
static void mlp_dense(ss_fwd *f, long n, const float *x, const float *wgu, const float *bgu,
                      const float *wd, const float *bd, long F, float *out)
{
	long D = f->D, ld = f->c->ungated ? F : 2 * F;
	fwd_gemm(f, n, ld, D, x, D, wgu, D, f->gu, ld, bgu);
	rows_job s = {.f = f, .n = n, .F = F, .gu = f->gu, .ld = ld};
	fwd_timed_run(f, &f->tm.rows, act_task, &s);
	fwd_gemm(f, n, D, F, f->gu, ld, wd, F, out, D, bd);
}

/* Routing of n tokens (rows of x): router probabilities softmax(x Wr^T) (in
 * double), the top_k experts (ties to the lower index), their weights
 * renormalised to sum 1 where the config says so (HF's Mixtral, and
 * Qwen-MoE's norm_topk_prob) */
static void route(ss_fwd *f, long n, const float *x, long t0)
{
	long E = f->E, K = f->K;
	fwd_gemm(f, n, E, f->D, x, f->D, f->router, f->D, f->rl, E, NULL);
	double p[4096];
	for (long i = 0; i < n; i++) {
		const float *r = f->rl + i * E;
		float mx = k_max(r, E);
		double z = 0;
		for (long x2 = 0; x2 < E; x2++)
			z += p[x2] = exp((double)r[x2] - mx);
		int32_t *sel = f->sel + i * K;
		float *sw = f->selw + i * K;
		double sum = 0;
		for (long k = 0; k < K; k++) {
			long best = -1;
			for (long x2 = 0; x2 < E; x2++)
				if (p[x2] >= 0 && (best < 0 || p[x2] > p[best]))
					best = x2;
			sel[k] = (int32_t)best;
			sum += p[best] / z;
			sw[k] = (float)(p[best] / z);
			p[best] = -1;   /* taken */
		}
		if (f->c->norm_topk)
			for (long k = 0; k < K; k++)
				sw[k] = (float)((double)sw[k] / sum);
		if (f->rec_e) {
			memcpy(f->rec_e + (t0 + i) * K, sel, sizeof *sel * (size_t)K);
			memcpy(f->rec_w + (t0 + i) * K, sw, sizeof *sw * (size_t)K);
		}
	}
}

/* out [n, D] = sum over each token's experts of weight * expert(x), plus
 * Qwen2-MoE's sigmoid(x . w_gate) * shared(x): the mixture's whole output */
static void mlp_moe(ss_fwd *f, long n, const float *x, long t0, float *out)
{
	long D = f->D, K = f->K, Fe = f->Fe;
	route(f, n, x, t0);
	memset(out, 0, sizeof(float) * (size_t)(n * D));
	for (long ex = 0; ex < f->E; ex++) {   /* each expert on the tokens routed to it */
		long m = 0;
		for (long i = 0; i < n; i++)
			for (long k = 0; k < K; k++)
				if (f->sel[i * K + k] == ex) {
					f->idx[m] = i * K + k;
					memcpy(f->xe + m * D, x + i * D, sizeof(float) * (size_t)D);
					m++;
				}
		if (!m)
			continue;
		const float *w = f->ew + ex * 3 * Fe * D;
		mlp_dense(f, m, f->xe, w, NULL, w + 2 * Fe * D, NULL, Fe, f->ye);
		for (long r = 0; r < m; r++)
			k_axpy(out + (f->idx[r] / K) * D, f->ye + r * D, D, f->selw[f->idx[r]]);
	}
	if (f->sgu) {
		mlp_dense(f, n, x, f->sgu, NULL, f->sd, NULL, f->Fs, f->ye);
		for (long i = 0; i < n; i++) {
			double g = 1.0 / (1.0 + exp(-k_dot(x + i * D, f->sgate, D)));
			k_axpy(out + i * D, f->ye + i * D, D, (float)g);
		}
	}
}

/* in place: x[i] = RMSNorm(x[i]) * w for n rows (the branch output norms) */
static void postnorm(ss_fwd *f, float *x, long n, const float *w)
{
	rows_job j = {.f = f, .n = n, .in = x, .out = x, .w = w};
	fwd_timed_run(f, &f->tm.rows, norm_task, &j);
}

/* ---- the layer ------------------------------------------------------------ */

/* attention of queries t0..t0+n-1 in the pieces and under the key
 * selections the select callback chooses */
static int attend_sel(ss_fwd *f, int l, long t0, long n, const float *kc, const float *vc,
                      double *recv_sum, long ld, ss_err *e)
{
	long T = t0 + n;
	ss_sel_view v = {.layer = l, .T = T, .H = f->H, .recv = recv_sum, .ld = ld};
	if (f->st && f->st->resid_norm)
		v.norm = f->st->resid_norm + (l - 1) * T;
	if (f->st && f->st->resid_cos0)
		v.cos0 = f->st->resid_cos0 + (l - 1) * T;
	for (long t = t0; t < T;) {
		long m = T - t;
		const ss_attn_sel *sel = NULL;
		const ss_attn_meas *meas = NULL;
		if (f->o.select(f->o.select_ctx, &v, t, &m, &sel, &meas) || m < 1 || m > T - t)
			return ss_err_set(e, "layer %d: stopped by the key selection at position %ld", l, t);
		if (attn_run_sel(f->attn, f->pool, f->q + (t - t0) * f->qdim, t, m, kc, vc, sel, meas, recv_sum,
		                 ld, e) < 0)
			return -1;
		t += m;
	}
	return 0;
}

/* the layer's window and RoPE tables (Gemma's alternating layers) */
static void layer_setup(ss_fwd *f, int l)
{
	fwd_load_layer(f, l);
	attn_set_layer(f->attn, config_layer_window(f->c, l));
	int loc = config_layer_local_rope(f->c, l);
	f->rcs = loc ? f->cs_loc : f->cs;
	f->rsn = loc ? f->sn_loc : f->sn;
	f->rinv = loc ? f->inv_loc : f->inv_freq;
}

/* queries, keys and values of rows x [n, D] (h[l-1] of positions t0..),
 * into q (when not NULL) and kc, vc (rows from position t0, when not NULL) */
static void project_qkv(ss_fwd *f, const float *x, long t0, long n, float *q, float *kc, float *vc)
{
	long D = f->D, B = f->B;
	for (long b = 0; b < n; b += B) {
		long nb = n - b < B ? n - b : B;
		const float *xin = x + b * D;
		if (f->c->attn_in_norm) {
			rows_job j = {.f = f, .n = nb, .in = xin, .out = f->xn, .w = f->in_norm, .b = f->in_norm_b};
			fwd_timed_run(f, &f->tm.rows, norm_task, &j);
			xin = f->xn;
		}
		fwd_gemm(f, nb, f->qkvdim, D, xin, D, f->wqkv, D, f->qkv, f->qkvdim, f->bqkv);
		rows_job qj = {.f = f, .n = nb, .t0 = t0 + b, .qdst = q ? q + b * f->qdim : NULL,
		               .kc = kc ? kc + b * f->kvdim : NULL, .vc = vc ? vc + b * f->kvdim : NULL};
		fwd_timed_run(f, &f->tm.rows, qkv_task, &qj);
	}
}

int fwd_layer_run(ss_fwd *f, int l, float *x, long t0, long n, float *kc, float *vc,
                  double *recv_sum, long ld, float *attn_norm, float *mlp_norm, float *resid_norm,
                  ss_err *e)
{
	if (l < 1 || l > f->c->n_layers)
		return ss_err_set(e, "layer %d out of range 1-%ld", l, f->c->n_layers);
	if (n < 1 || n > f->maxT || t0 < 0 || t0 + n > f->maxT)
		return ss_err_set(e, "positions %ld-%ld beyond the %ld prepared", t0, t0 + n - 1, f->maxT);
	layer_setup(f, l);
	const ss_config *c = f->c;
	long D = f->D, B = f->B;
	/* queries, keys, values */
	project_qkv(f, x, t0, n, f->q, kc + t0 * f->kvdim, vc + t0 * f->kvdim);
	if (f->o.kv && f->o.kv(f->o.kv_ctx, l, t0, n, kc + t0 * f->kvdim, vc + t0 * f->kvdim, f->kvdim))
		return ss_err_set(e, "layer %d: stopped by the key/value callback", l);
	/* attention: f->q becomes the attention output o [n, qdim] */
	double ta = ss_now();
	if (f->o.select ? attend_sel(f, l, t0, n, kc, vc, recv_sum, ld, e) < 0
	                : attn_run(f->attn, f->pool, f->q, t0, n, kc, vc, recv_sum, ld, e) < 0)
		return -1;
	f->tm.attention += ss_now() - ta;
	f->tm.attention_flop += 4.0 * (double)(f->hd * f->H) * fwd_attention_pairs(config_layer_window(c, l), t0, n);
	/* output projection, MLP */
	float *an = f->bnorm;
	for (long b = 0; b < n; b += B) {
		long nb = n - b < B ? n - b : B;
		float *xb = x + b * D;
		fwd_gemm(f, nb, D, f->qdim, f->q + b * f->qdim, f->qdim, f->wo, f->qdim, f->a, D, f->bo);
		if (c->attn_out_norm)
			postnorm(f, f->a, nb, f->ao_norm);
		if (f->o.hook && fwd_hook(f, l, SS_HOOK_ATTN_OUT, t0 + b, nb, f->a, e) < 0)
			return -1;
		/* mid = h + a; the MLP reads Norm_2(mid), or Norm_2(h) with the
		 * parallel residual, or mid itself (OLMo 2) */
		float *na = attn_norm ? attn_norm + b : an;
		rows_job r = {.f = f, .n = nb, .in = f->a, .add = xb, .norm = na,
		              .w = c->mlp_in_norm ? f->post_norm : NULL, .b = f->post_norm_b,
		              .pre = c->parallel_resid, .copy = !c->mlp_in_norm, .out = f->xn};
		fwd_timed_run(f, &f->tm.rows, resid_task, &r);
		if (fwd_check_finite(na, nb, l, "attn_out", t0 + b, e) < 0)
			return -1;
		if (f->o.hook && fwd_hook(f, l, SS_HOOK_MLP_IN, t0 + b, nb, f->xn, e) < 0)
			return -1;
		if (c->n_experts)
			mlp_moe(f, nb, f->xn, t0 + b, f->mo);
		else
			mlp_dense(f, nb, f->xn, f->wgu, f->bgu, f->wd, f->bd, f->F, f->mo);
		if (c->mlp_out_norm)
			postnorm(f, f->mo, nb, f->mo_norm);
		if (f->o.hook && fwd_hook(f, l, SS_HOOK_MLP_OUT, t0 + b, nb, f->mo, e) < 0)
			return -1;
		float *nm = mlp_norm ? mlp_norm + b : an;
		rows_job mj = {.f = f, .n = nb, .in = f->mo, .add = xb, .norm = nm};
		fwd_timed_run(f, &f->tm.rows, resid_task, &mj);
		if (fwd_check_finite(nm, nb, l, "mlp_out", t0 + b, e) < 0)
			return -1;
		if (f->o.hook && fwd_hook(f, l, SS_HOOK_RESID, t0 + b, nb, xb, e) < 0)
			return -1;
		if (resid_norm) {
			rows_job rn = {.f = f, .n = nb, .in = xb, .norm = resid_norm + b};
			fwd_timed_run(f, &f->tm.rows, resid_task, &rn);
			if (fwd_check_finite(resid_norm + b, nb, l, "resid", t0 + b, e) < 0)
				return -1;
		}
	}
	return 0;
}

int fwd_layer(ss_fwd *f, int l, float *x, long t0, long n, float *kc, float *vc,
              double *recv_sum, long ld, float *attn_norm, float *mlp_norm, ss_err *e)
{
	f->st = NULL;   /* statistics belong to a prefill */
	f->rec_e = NULL;   /* expert choices are recorded by prefills */
	f->rec_w = NULL;
	return fwd_layer_run(f, l, x, t0, n, kc, vc, recv_sum, ld, attn_norm, mlp_norm, NULL, e);
}

int fwd_queries(ss_fwd *f, int l, const float *h_prev, long t0, long n, float *q, ss_err *e)
{
	if (l < 1 || l > f->c->n_layers)
		return ss_err_set(e, "layer %d out of range 1-%ld", l, f->c->n_layers);
	layer_setup(f, l);
	project_qkv(f, h_prev, t0, n, q, NULL, NULL);
	return 0;
}
