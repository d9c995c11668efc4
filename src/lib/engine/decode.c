/* decode.c - KV-cache decoding, interventions and single-position re-runs
 * on the forward pass's building blocks (see decode.h). */
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include "engine/decode.h"
#include "engine/kernels.h"

void interv_apply(const ss_interv *iv, size_t n_iv, int layer, ss_hook_point what, long t0,
                  long n, float *x, long dim)
{
	for (size_t k = 0; k < n_iv; k++) {
		const ss_interv *v = &iv[k];
		if (v->layer != layer || v->what != what || v->pos < t0 || v->pos >= t0 + n)
			continue;
		float *r = x + (size_t)(v->pos - t0) * dim;
		switch (v->op) {
		case SS_IV_REPLACE:
			memcpy(r, v->vec, dim * sizeof *r);
			break;
		case SS_IV_ADD:
			for (long i = 0; i < dim; i++)
				r[i] += v->vec[i];
			break;
		case SS_IV_SCALE:
			for (long i = 0; i < dim; i++)
				r[i] *= v->alpha;
			break;
		}
	}
}

/* One hook for every pass: interventions, then dec_mlp's substitution,
 * then the caller's hook. */
static int dec_hook(void *ctx, int layer, ss_hook_point what, long t0, long n, float *x, long d)
{
	ss_dec *dc = ctx;
	if (dc->n_iv)
		interv_apply(dc->iv, dc->n_iv, layer, what, t0, n, x, d);
	if (dc->mlp_x && layer == dc->mlp_layer) {
		if (what == SS_HOOK_MLP_IN)
			memcpy(x, dc->mlp_x + (size_t)t0 * d, (size_t)n * d * sizeof *x);
		else if (what == SS_HOOK_MLP_OUT)
			memcpy(dc->mlp_y + (size_t)t0 * d, x, (size_t)n * d * sizeof *x);
	}
	if (dc->hook && dc->hook(dc->hook_ctx, layer, what, t0, n, x, d))
		return 1;
	if (dc->recording)   /* the values the pass goes on with, as a prefill's stats */
		gst_observe(dc->gs, layer, what, t0, n, x);
	return 0;
}

/* Keys and values from the prefill go straight into the cache. */
static int dec_kv(void *ctx, int layer, long t0, long n, const float *k, const float *v, long kvdim)
{
	ss_dec *dc = ctx;
	if (dc->kv_store)
		kv_put(&dc->kv, layer, t0, n, k, v);
	return 0;
}

double dec_resident_bytes(const ss_model *m)
{
	return fwd_resident_bytes(m);
}

double dec_memory_estimate(const ss_model *m, long cap, const ss_dec_opts *o, int steps)
{
	const ss_config *c = &m->c;
	double kvd = (double)c->n_kv_heads * c->head_dim, n = (double)(cap > 0 ? cap : 1);
	double b = fwd_memory_estimate(c, cap, o->threads, o->block) +
	           kv_bytes(c->n_layers, cap, (long)kvd, o->kv_dtype) + 2 * 4 * kvd +
	           8.0 * c->n_heads * n + 4.0 * c->dim;
	/* a one-token pass (a step, a re-run) converts the layer's matrices into
	 * the layer buffer (fwd_mat_ensure) beside the oneDNN packings a pass over
	 * many tokens made: fwd_memory_estimate counts one of the two */
	if (steps)
		b += (double)model_layer_f32_bytes(c);
	if (o->kv_dtype != SS_KV_F32)
		b += 2 * 4 * n * kvd;
	if (o->resident || o->resident_f32)
		b += dec_resident_bytes(m);
	return b;
}

int dec_create(ss_dec *d, const ss_model *m, long cap, const ss_dec_opts *o, ss_err *e)
{
	const ss_config *c = &m->c;
	*d = (ss_dec){.m = m, .cap = cap, .hook = o->hook, .hook_ctx = o->hook_ctx};
	long kvd = c->n_kv_heads * c->head_dim;
	ss_fwd_opts fo = {.threads = o->threads, .compute = o->compute, .block = o->block, .hook = dec_hook, .hook_ctx = d,
	                  .kv = dec_kv, .kv_ctx = d, .resident = o->resident,
	                  .resident_f32 = o->resident_f32};
	if (kv_init(&d->kv, c->n_layers, cap, c->n_kv_heads, c->head_dim, o->kv_dtype, e) < 0)
		return -1;
	if (fwd_create(&d->f, m, &fo, cap, e) < 0)
		goto fail;
	if (o->kv_dtype != SS_KV_F32) {
		d->kbuf = ss_malloc((size_t)cap * kvd, sizeof(float), "kv scratch", e);
		d->vbuf = ss_malloc((size_t)cap * kvd, sizeof(float), "kv scratch", e);
		if (!d->kbuf || !d->vbuf)
			goto fail;
	}
	d->krow = ss_malloc(kvd, sizeof(float), "kv row", e);
	d->vrow = ss_malloc(kvd, sizeof(float), "kv row", e);
	d->recv = ss_malloc((size_t)c->n_heads * cap, sizeof(double), "attention row", e);
	d->x = ss_malloc(c->dim, sizeof(float), "decode state", e);
	if (!d->krow || !d->vrow || !d->recv || !d->x)
		goto fail;
	return 0;
fail:
	dec_free(d);
	return -1;
}

void dec_free(ss_dec *d)
{
	if (d->f)
		fwd_free(d->f);
	kv_free(&d->kv);
	free(d->kbuf);
	free(d->vbuf);
	free(d->krow);
	free(d->vrow);
	free(d->recv);
	free(d->x);
	*d = (ss_dec){0};
}

void dec_set_interv(ss_dec *d, const ss_interv *iv, size_t n)
{
	d->iv = iv;
	d->n_iv = n;
}

static int check_len(ss_dec *d, long need, ss_err *e)
{
	if (need > d->cap)
		return ss_err_set(e, "%s: sequence of %ld positions exceeds the %ld reserved", d->m->dir,
		                  need, d->cap);
	return 0;
}

void dec_record(ss_dec *d, ss_genstats *g)
{
	d->gs = g;
}

/* dec_prefill while recording: layer by layer through fwd_layer, the keys'
 * recv sums straight into the recorder (in double, as a prefill's) */
static int prefill_rec(ss_dec *d, const int32_t *ids, long T, float *logits, ss_err *e)
{
	const ss_config *c = &d->m->c;
	ss_genstats *g = d->gs;
	float *x = ss_malloc((size_t)T * c->dim, sizeof *x, "residual stream", e);
	if (!x)
		return -1;
	memset(g->recv, 0, (size_t)g->L * g->H * g->cap * sizeof *g->recv);
	g->n = 0;
	d->recording = 1;
	model_embed_prefetch(d->m, ids, T);
	int rc = fwd_embed(d->f, ids, 0, T, x, e);
	d->kv_store = d->kv.dtype != SS_KV_F32;
	for (int l = 1; rc == 0 && l <= c->n_layers; l++) {
		float *kc, *vc;
		kv_layer_f32(&d->kv, l, 0, d->kbuf, d->vbuf, &kc, &vc);
		model_layer_prefetch(d->m, l + 1);
		rc = fwd_layer(d->f, l, x, 0, T, kc, vc, gst_recv_sum(g, l), g->cap, NULL, NULL, e);
		model_layer_release(d->m, l);
	}
	d->kv_store = 0;
	d->recording = 0;
	if (rc == 0 && logits)
		rc = fwd_logits(d->f, x + (size_t)(T - 1) * c->dim, 1, logits, e);
	free(x);
	return rc < 0 ? ss_err_prefix(e, "%s", d->m->dir) : 0;
}

int dec_prefill(ss_dec *d, const int32_t *ids, long T, ss_stats *st, float *logits, ss_err *e)
{
	if (check_len(d, T, e) < 0)
		return -1;
	if (d->gs) {
		int rc = prefill_rec(d, ids, T, logits, e);
		d->len = rc == 0 ? T : 0;
		return rc;
	}
	float *h = NULL;
	if (logits && !(h = ss_malloc((size_t)T * d->m->c.dim, sizeof *h, "final hidden states", e)))
		return -1;
	d->kv_store = 1;
	int rc = fwd_prefill(d->f, ids, T, st, h, e);
	d->kv_store = 0;
	if (rc == 0 && logits)
		rc = fwd_logits(d->f, h + (size_t)(T - 1) * d->m->c.dim, 1, logits, e);
	free(h);
	d->len = rc == 0 ? T : 0;
	return rc;
}

int dec_step(ss_dec *d, int32_t id, float *logits, ss_err *e)
{
	long t = d->len;
	if (check_len(d, t + 1, e) < 0)
		return -1;
	d->recording = d->gs != NULL;
	if (fwd_embed(d->f, &id, t, 1, d->x, e) < 0) {
		d->recording = 0;
		return -1;
	}
	/* f32: fwd_layer writes row t into the cache itself; bf16: the key/value
	 * callback rounds it in */
	d->kv_store = d->kv.dtype != SS_KV_F32;
	for (int l = 1; l <= d->m->c.n_layers; l++) {
		float *kc, *vc;
		kv_layer_f32(&d->kv, l, t, d->kbuf, d->vbuf, &kc, &vc);
		if (fwd_layer(d->f, l, d->x, t, 1, kc, vc, d->gs ? gst_recv_sum(d->gs, l) : NULL,
		              d->gs ? d->gs->cap : 0, NULL, NULL, e) < 0) {
			d->kv_store = d->recording = 0;
			return -1;
		}
	}
	d->kv_store = d->recording = 0;
	if (logits && fwd_logits(d->f, d->x, 1, logits, e) < 0)
		return -1;
	d->len = t + 1;
	return 0;
}

int dec_rerun(ss_dec *d, ss_rerun *r, size_t n, ss_err *e)
{
	long kvd = d->kv.kv_dim, H = d->m->c.n_heads;
	int lo = 0, hi = 0;
	for (size_t i = 0; i < n; i++) {
		if (r[i].pos < 0 || r[i].pos >= d->len || r[i].l_from < 1 ||
		    r[i].l_to > d->m->c.n_layers || r[i].l_from > r[i].l_to)
			return ss_err_set(e, "%s: re-run of position %ld, layers %d-%d: out of range "
			                  "(%ld positions, %ld layers)", d->m->dir, r[i].pos, r[i].l_from,
			                  r[i].l_to, d->len, d->m->c.n_layers);
		lo = !i || r[i].l_from < lo ? r[i].l_from : lo;
		hi = !i || r[i].l_to > hi ? r[i].l_to : hi;
	}
	const ss_interv *iv0 = d->iv;
	size_t niv0 = d->n_iv;
	int rc = 0;
	for (int l = lo; l <= hi && rc == 0; l++) {
		float *kc, *vc; /* bf16: the whole layer widened once */
		kv_layer_f32(&d->kv, l, d->len, d->kbuf, d->vbuf, &kc, &vc);
		for (size_t i = 0; i < n && rc == 0; i++) {
			if (l < r[i].l_from || l > r[i].l_to)
				continue;
			long j = r[i].pos;
			int last = l == r[i].l_to && r[i].self_attn;
			float *kj = kc + (size_t)j * kvd, *vj = vc + (size_t)j * kvd;
			memcpy(d->krow, kj, kvd * sizeof *kj); /* fwd_layer writes row j */
			memcpy(d->vrow, vj, kvd * sizeof *vj);
			if (last)
				memset(d->recv, 0, (size_t)H * (j + 1) * sizeof *d->recv);
			d->iv = r[i].iv;
			d->n_iv = r[i].n_iv;
			rc = fwd_layer(d->f, l, r[i].x, j, 1, kc, vc, last ? d->recv : NULL, j + 1, NULL,
			               NULL, e);
			if (rc == 0 && l == r[i].l_to && r[i].key_out)
				memcpy(r[i].key_out, kj, kvd * sizeof *kj);
			if (rc == 0 && last)
				for (long h = 0; h < H; h++)
					r[i].self_attn[h] = (float)d->recv[h * (j + 1) + j];
			memcpy(kj, d->krow, kvd * sizeof *kj);
			memcpy(vj, d->vrow, kvd * sizeof *vj);
		}
	}
	d->iv = iv0;
	d->n_iv = niv0;
	return rc;
}

/* The MLP alone, through fwd_layer: the hook puts x at mlp_in and takes
 * the output at mlp_out, so the MLP is the forward pass's own.  The
 * residual input and the attention of this pass are discarded. */
int dec_mlp(ss_dec *d, int layer, const float *x, long n, float *y, ss_err *e)
{
	const ss_config *c = &d->m->c;
	long kvd = d->kv.kv_dim, B = n < d->cap ? n : d->cap;
	if (layer < 1 || layer > c->n_layers)
		return ss_err_set(e, "%s: layer %d out of range 1-%ld", d->m->dir, layer, c->n_layers);
	float *h = ss_malloc((size_t)B * c->dim, sizeof *h, "MLP inputs", e);
	float *kc = ss_malloc((size_t)B * kvd, sizeof *kc, "MLP scratch", e);
	float *vc = ss_malloc((size_t)B * kvd, sizeof *vc, "MLP scratch", e);
	int rc = h && kc && vc ? 0 : -1;
	const ss_interv *iv = d->iv;
	size_t niv = d->n_iv;
	d->iv = NULL;
	d->n_iv = 0;
	d->mlp_layer = layer;
	for (long i0 = 0; rc == 0 && i0 < n; i0 += B) {
		long nb = n - i0 < B ? n - i0 : B;
		memset(h, 0, (size_t)nb * c->dim * sizeof *h);
		d->mlp_x = x + (size_t)i0 * c->dim;
		d->mlp_y = y + (size_t)i0 * c->dim;
		rc = fwd_layer(d->f, layer, h, 0, nb, kc, vc, NULL, 0, NULL, NULL, e);
	}
	d->mlp_x = NULL;
	d->mlp_y = NULL;
	d->iv = iv;
	d->n_iv = niv;
	free(h);
	free(kc);
	free(vc);
	return rc;
}

int dec_queries(ss_dec *d, int layer, const float *h_prev, long t0, long n, float *q, ss_err *e)
{
	if (fwd_queries(d->f, layer, h_prev, t0, n, q, e) < 0)
		return ss_err_prefix(e, "%s", d->m->dir);
	return 0;
}
