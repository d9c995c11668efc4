/* model.c - the weights of a model bound by name (the family's names and
 * the shapes its flags imply, from config.c), and the paging of a
 * layer-major pass; see model.h. */
#include "engine/model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t model_layer_f32_bytes(const ss_config *c)
{
	size_t hd = (size_t)c->head_dim, qkv = (size_t)(c->n_heads + 2 * c->n_kv_heads) * hd;
	size_t D = (size_t)c->dim, F = c->n_experts ? 0 : (size_t)c->hidden;
	size_t n = qkv * D + D * (size_t)c->n_heads * hd + 3 * F * D;
	n += qkv + 2 * D + 2 * hd + 2 * F + 2 * D;
	/* the families beyond the paper's: LayerNorm biases, post-norms,
	 * whole-projection q/k norms, experts (fwd_weights.c's layout) */
	n += 4 * D + qkv;
	if (c->n_experts) {
		size_t E = (size_t)c->n_experts, Fe = (size_t)c->moe_hidden, Fs = (size_t)c->shared_hidden;
		n += E * D + E * 3 * Fe * D + 3 * Fs * D + D;
	}
	return n * sizeof(float);
}

static int bind(ss_model *m, const st_tensor **out, int rank, long a, long b, ss_err *e,
                const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static int bind(ss_model *m, const st_tensor **out, int rank, long a, long b, ss_err *e,
                const char *fmt, ...)
{
	char name[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof name, fmt, ap);
	va_end(ap);
	long shape[2] = {a, b};
	if (st_bind(&m->st, name, rank, shape, out, e) < 0)
		return -1;
	m->weight_bytes += (double)(*out)->n * (double)st_dtype_size((*out)->dtype);
	return 0;
}

/* "<pre><role>.<suffix>", of shape [a] or [a, b] */
static int bindr(ss_model *m, const st_tensor **out, int rank, long a, long b, ss_err *e,
                 const char *pre, const char *role, const char *suf)
{
	return bind(m, out, rank, a, b, e, "%s%s.%s", pre, role, suf);
}

/* a norm's weight, and its bias for LayerNorm */
static int bind_norm(ss_model *m, const st_tensor **w, const st_tensor **b, const char *pre,
                     const char *role, ss_err *e)
{
	long D = m->c.dim;
	if (bindr(m, w, 1, D, 0, e, pre, role, "weight") < 0)
		return -1;
	return m->c.layer_norm ? bindr(m, b, 1, D, 0, e, pre, role, "bias") : 0;
}

/* a projection [out, in] and, with bias, its bias [out].  A Conv1D weight
 * (GPT-2) is stored [in, out] instead; its error says so when it comes the
 * other way round. */
static int bind_lin(ss_model *m, const st_tensor **w, const st_tensor **b, long out, long in,
                    const char *pre, const char *role, ss_err *e)
{
	int conv = m->c.conv1d;
	if (bindr(m, w, 2, conv ? in : out, conv ? out : in, e, pre, role, "weight") < 0) {
		char name[256];
		snprintf(name, sizeof name, "%s%s.weight", pre, role);
		const st_tensor *t = st_find(&m->st, name);
		if (conv && t && t->rank == 2 && t->shape[0] == out && t->shape[1] == in)
			ss_err_set(e, "%s:%s: shape %ldx%ld, expected %ldx%ld: a GPT-2 Conv1D weight is stored "
			           "[in, out], this one is transposed ([out, in])", t->file, name, out, in, in, out);
		return -1;
	}
	return b ? bindr(m, b, 1, out, 0, e, pre, role, "bias") : 0;
}

/* the gate/up/down triple of an expert or of the MLP (gate NULL: ungated) */
static int bind_mlp(ss_model *m, const st_tensor **g, const st_tensor **u, const st_tensor **d,
                    const st_tensor **bg, const st_tensor **bu, const st_tensor **bd, long F,
                    const char *pre, const char *gn, const char *un, const char *dn, ss_err *e)
{
	long D = m->c.dim;
	return (gn && bind_lin(m, g, bg, F, D, pre, gn, e) < 0) ||
	       bind_lin(m, u, bu, F, D, pre, un, e) < 0 || bind_lin(m, d, bd, D, F, pre, dn, e) < 0 ? -1 : 0;
}

/* a stored non-weight (causal-mask buffers, RoPE tables): accepted, unused */
static void skip_buffer(ss_model *m, const char *pre, const char *name)
{
	char full[256];
	snprintf(full, sizeof full, "%s%s", pre, name);
	st_tensor *t = (st_tensor *)st_find(&m->st, full);
	if (t)
		t->used = 1;
}

static int bind_layer(ss_model *m, long l, const char *root, ss_err *e)
{
	const ss_config *c = &m->c;
	const ss_names *nm = c->names;
	ss_layer_w *w = &m->layers[l];
	long D = c->dim, hd = c->head_dim, q = c->n_heads * hd, kv = c->n_kv_heads * hd, F = c->hidden;
	char p[160];
	snprintf(p, sizeof p, "%s%s%ld.", root, nm->layer, l);
	if ((c->attn_in_norm && bind_norm(m, &w->in_norm, &w->in_norm_b, p, nm->attn_in, e) < 0) ||
	    (c->mlp_in_norm && bind_norm(m, &w->post_norm, &w->post_norm_b, p, nm->mlp_in, e) < 0) ||
	    bind_lin(m, &w->wo, c->o_bias ? &w->bo : NULL, D, q, p, nm->o, e) < 0)
		return -1;
	if (c->fused_qkv) {
		if (bind_lin(m, &w->wqkv, c->qkv_bias ? &w->bqkv : NULL, q + 2 * kv, D, p,
		             nm->qkv, e) < 0)
			return -1;
	} else if (bind_lin(m, &w->wq, c->qkv_bias ? &w->bq : NULL, q, D, p, nm->q, e) < 0 ||
	           bind_lin(m, &w->wk, c->qkv_bias ? &w->bk : NULL, kv, D, p, nm->k, e) < 0 ||
	           bind_lin(m, &w->wv, c->qkv_bias ? &w->bv : NULL, kv, D, p, nm->v, e) < 0) {
		return -1;
	}
	if ((c->qk_norm || c->qk_norm_full) &&
	    (bindr(m, &w->q_norm, 1, c->qk_norm_full ? q : hd, 0, e, p, nm->q_norm, "weight") < 0 ||
	     bindr(m, &w->k_norm, 1, c->qk_norm_full ? kv : hd, 0, e, p, nm->k_norm, "weight") < 0))
		return -1;
	if ((c->attn_out_norm && bindr(m, &w->attn_out_norm, 1, D, 0, e, p, nm->attn_out, "weight") < 0) ||
	    (c->mlp_out_norm && bindr(m, &w->mlp_out_norm, 1, D, 0, e, p, nm->mlp_out, "weight") < 0))
		return -1;
	if (c->n_experts) {
		long E = c->n_experts;
		w->e_gate = m->experts + l * 3 * E;
		w->e_up = w->e_gate + E;
		w->e_down = w->e_up + E;
		if (bindr(m, &w->router, 2, E, D, e, p, nm->router, "weight") < 0)
			return -1;
		for (long x = 0; x < E; x++) {
			char ep[200];
			snprintf(ep, sizeof ep, "%s%s%ld.", p, nm->expert, x);
			if (bind_mlp(m, &w->e_gate[x], &w->e_up[x], &w->e_down[x], NULL, NULL, NULL, c->moe_hidden,
			             ep, nm->e_gate, nm->e_up, nm->e_down, e) < 0)
				return -1;
		}
		if (c->shared_hidden) {
			char sp[200];
			snprintf(sp, sizeof sp, "%s%s", p, nm->shared);
			if (bind_mlp(m, &w->s_gate, &w->s_up, &w->s_down, NULL, NULL, NULL, c->shared_hidden, sp,
			             "gate_proj", "up_proj", "down_proj", e) < 0 ||
			    bindr(m, &w->s_router, 2, 1, D, e, p, nm->shared_gate, "weight") < 0)
				return -1;
		}
	} else if (c->fused_gate_up) {
		if (bindr(m, &w->w_gate_up, 2, 2 * F, D, e, p, nm->gate_up, "weight") < 0 ||
		    bindr(m, &w->w_down, 2, D, F, e, p, nm->down, "weight") < 0)
			return -1;
	} else if (c->ungated) {
		if (bind_mlp(m, NULL, &w->w_up, &w->w_down, NULL, &w->b_up, &w->b_down, F, p, NULL, nm->up,
		             nm->down, e) < 0)
			return -1;
	} else {
		int mb = c->mlp_bias;
		if (bind_mlp(m, &w->w_gate, &w->w_up, &w->w_down, mb ? &w->b_gate : NULL, mb ? &w->b_up : NULL,
		             mb ? &w->b_down : NULL, F, p, nm->gate, nm->up, nm->down, e) < 0)
			return -1;
	}
	/* old Llama checkpoints store the RoPE table; it is recomputed */
	skip_buffer(m, p, "self_attn.rotary_emb.inv_freq");
	for (int i = 0; i < 3 && nm->buffers[i]; i++)
		skip_buffer(m, p, nm->buffers[i]);
	return 0;
}

int model_load(ss_model *m, const char *dir, ss_err *e)
{
	memset(m, 0, sizeof *m);
	m->dir = ss_strdup(dir, e);
	if (!m->dir)
		return -1;
	ss_config *c = &m->c;
	if (config_load(c, dir, e) < 0 || st_open_dir(&m->st, dir, e) < 0)
		goto fail;
	m->layers = ss_calloc((size_t)c->n_layers, sizeof *m->layers, "layers", e);
	if (!m->layers)
		goto fail;
	if (c->n_experts && !(m->experts = ss_calloc((size_t)(c->n_layers * c->n_experts * 3),
	                                             sizeof *m->experts, "experts", e)))
		goto fail;
	const ss_names *nm = c->names;
	/* GPT-2 checkpoints name the body "transformer.*" or, as OpenAI's, not at all */
	char wte[64];
	snprintf(wte, sizeof wte, "transformer.%s.weight", nm->embed);
	const char *root = c->abs_pos && st_find(&m->st, wte) ? "transformer." : "";
	long D = c->dim;
	if (bindr(m, &m->embed, 2, c->vocab, D, e, root, nm->embed, "weight") < 0 ||
	    bind_norm(m, &m->norm, &m->norm_b, root, nm->final_norm, e) < 0 ||
	    (c->abs_pos && bindr(m, &m->pos_embed, 2, c->max_pos, D, e, root, nm->pos_embed, "weight") < 0))
		goto fail;
	if (c->tied) {
		m->lm_head = m->embed;
		/* some tied checkpoints still carry a copy; HF ignores it */
		const st_tensor *x;
		char lm[64];
		snprintf(lm, sizeof lm, "%s.weight", nm->lm_head);
		if (st_find(&m->st, lm) && bindr(m, &x, 2, c->vocab, D, e, "", nm->lm_head, "weight") < 0)
			goto fail;
	} else if (bindr(m, &m->lm_head, 2, c->vocab, D, e, "", nm->lm_head, "weight") < 0) {
		goto fail;
	}
	for (long l = 0; l < c->n_layers; l++)
		if (bind_layer(m, l, root, e) < 0)
			goto fail;
	if (st_check_unused(&m->st, e) < 0)
		goto fail;
	/* weight dtype: that of every bound tensor, else "mixed" */
	int dt = -1;
	for (size_t i = 0; i < m->st.n; i++) {
		if (strstr(m->st.t[i].name, "rotary_emb.inv_freq"))
			continue;
		if (dt < 0)
			dt = (int)m->st.t[i].dtype;
		else if (dt != (int)m->st.t[i].dtype)
			dt = 99;
	}
	snprintf(m->weight_dtype, sizeof m->weight_dtype, "%s",
	         dt == 99 ? "mixed" : st_dtype_name(dt < 0 ? ST_F32 : (st_dtype)dt));
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	m->drop_cache = pages > 0 && psz > 0 && m->weight_bytes > 0.75 * (double)pages * (double)psz;
	return 0;
fail:
	model_free(m);
	return -1;
}

/* The tensors of layer l (1..L) lie in one run per shard (a shard stores
 * tensors in name order, and "model.layers.L." names sort together): the
 * span of each run is released, prefetched or populated in one call (st.h
 * says why), or a part of it (model_layer_populate's threads). */
typedef enum span_op { SPAN_RELEASE, SPAN_PREFETCH, SPAN_POPULATE } span_op;

/* part of nparts of a span: its bytes [part len / nparts, (part + 1) len / nparts) */
static void span_do(const ss_model *m, span_op op, int drop, const char *lo, const char *hi, int part,
                    int nparts)
{
	size_t len = (size_t)(hi - lo), a = len * (size_t)part / (size_t)nparts,
	       b = len * (size_t)(part + 1) / (size_t)nparts;
	if (op == SPAN_PREFETCH)
		st_prefetch_range(&m->st, lo + a, b - a);
	else if (op == SPAN_POPULATE)
		st_populate_range(&m->st, lo + a, b - a);
	else
		st_release_range(&m->st, lo + a, b - a, drop);
}

static void layer_spans(const ss_model *m, int l, int drop, span_op op, int part, int nparts)
{
	if (l < 1 || l > m->c.n_layers)
		return;
	const ss_layer_w *w = &m->layers[l - 1];
	const st_tensor *const t0[] = {w->in_norm, w->post_norm, w->wq, w->wk, w->wv, w->wqkv,
	                               w->bq, w->bk, w->bv, w->wo, w->bo, w->q_norm, w->k_norm,
	                               w->w_gate, w->w_up, w->w_gate_up, w->w_down,
	                               w->b_gate, w->b_up, w->b_down, w->bqkv, w->in_norm_b,
	                               w->post_norm_b, w->attn_out_norm, w->mlp_out_norm, w->router,
	                               w->s_gate, w->s_up, w->s_down, w->s_router};
	enum { N0 = sizeof t0 / sizeof t0[0] };
	long E = m->c.n_experts, N = N0 + 3 * E;
	/* paging is advice: without memory for the list, nothing is done */
	const st_tensor **t = malloc(sizeof *t * (size_t)N);
	unsigned char *done = calloc((size_t)N, 1);
	if (!t || !done) {
		free(t);
		free(done);
		return;
	}
	memcpy(t, t0, sizeof t0);
	for (long x = 0; x < 3 * E; x++)   /* e_gate, e_up, e_down are consecutive */
		t[N0 + x] = w->e_gate[x];
	for (long i = 0; i < N; i++) {
		if (!t[i] || done[i])
			continue;
		const char *lo = t[i]->data, *hi = lo + (size_t)t[i]->n * st_dtype_size(t[i]->dtype);
		for (long j = i; j < N; j++)   /* the others in the same file */
			if (t[j] && t[j]->file == t[i]->file) {
				const char *a = t[j]->data, *z = a + (size_t)t[j]->n * st_dtype_size(t[j]->dtype);
				lo = a < lo ? a : lo;
				hi = z > hi ? z : hi;
				done[j] = 1;
			}
		span_do(m, op, drop, lo, hi, part, nparts);
	}
	free(t);
	free(done);
}

void model_layer_release(const ss_model *m, int l) { layer_spans(m, l, m->drop_cache, SPAN_RELEASE, 0, 1); }
void model_layer_prefetch(const ss_model *m, int l) { layer_spans(m, l, 0, SPAN_PREFETCH, 0, 1); }
void model_layer_populate(const ss_model *m, int l, int part, int nparts)
{
	layer_spans(m, l, 0, SPAN_POPULATE, part, nparts < 1 ? 1 : nparts);
}
void model_tensor_release(const ss_model *m, const st_tensor *t)
{
	if (t)
		st_release(&m->st, t, m->drop_cache);
}
void model_release_all(const ss_model *m) { st_release_all(&m->st, m->drop_cache); }

void model_embed_prefetch(const ss_model *m, const int32_t *ids, long n)
{
	const st_tensor *E = m->embed;
	size_t row = (size_t)m->c.dim * st_dtype_size(E->dtype);
	for (long i = 0; i < n; i++)
		if (ids[i] >= 0 && ids[i] < m->c.vocab)
			st_prefetch_range(&m->st, (const char *)E->data + (size_t)ids[i] * row, row);
}

void model_free(ss_model *m)
{
	st_close(&m->st);
	free(m->layers);
	free(m->experts);
	free(m->dir);
	memset(m, 0, sizeof *m);
}
