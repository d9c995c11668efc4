/* swap.c - token swapping on the KV cache (see swap.h). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "interv/swap.h"
#include "sinks/tokclass.h"
#include "io/episodes.h"
#include "io/tsv.h"
#include "engine/kernels.h"

const char *const swap_comp_names[SS_SWAP_NCOMP] = {"resid", "attn_out", "mlp_out"};
static const ss_hook_point comp_hook[SS_SWAP_NCOMP] = {SS_HOOK_RESID, SS_HOOK_ATTN_OUT,
                                                       SS_HOOK_MLP_OUT};

int swap_comps_parse(const char *s, unsigned *mask, ss_err *e)
{
	*mask = 0;
	if (!strcmp(s, "all")) {
		*mask = (1u << SS_SWAP_NCOMP) - 1;
		return 0;
	}
	const char *p = s;
	while (*p) {
		size_t n = strcspn(p, ",");
		int c;
		for (c = 0; c < SS_SWAP_NCOMP; c++)
			if (strlen(swap_comp_names[c]) == n && !strncmp(p, swap_comp_names[c], n))
				break;
		if (c == SS_SWAP_NCOMP)
			return ss_err_status(e, SS_EXIT_USAGE, "components '%s': unknown '%.*s' (expected "
			                     "resid, attn_out, mlp_out or all)", s, (int)n, p);
		*mask |= 1u << c;
		p += n + (p[n] == ',');
	}
	if (!*mask)
		return ss_err_status(e, SS_EXIT_USAGE, "components '%s': none given", s);
	return 0;
}

int swap_targets_read(const char *path, const char *trace_name, long T, long L,
                      ss_swap_target **tg, size_t *n, ss_err *e)
{
	ss_eptab t = {0};
	*tg = NULL;
	*n = 0;
	if (eptab_read(&t, path, EP_BIT(EP_POS) | EP_BIT(EP_L_START), e) < 0)
		return -1;
	int rc = -1;
	if (!(*tg = ss_malloc(t.n ? t.n : 1, sizeof **tg, "targets", e)))
		goto done;
	for (size_t i = 0; i < t.n; i++) {
		const ss_episode *p = &t.ep[i];
		if (((t.cols & EP_BIT(EP_TRACE)) && strcmp(t.trace[i], trace_name)) || p->primary)
			continue;
		if (p->pos < 1 || p->pos >= T) {
			ss_err_set(e, "%s:%ld: pos %ld out of range 1-%ld of trace %s", path, t.line[i],
			           p->pos, T - 1, trace_name);
			goto done;
		}
		if (p->l_start > L) {
			ss_err_set(e, "%s:%ld: l_start %ld out of range 1-%ld", path, t.line[i], p->l_start,
			           L);
			goto done;
		}
		(*tg)[(*n)++] = (ss_swap_target){p->pos, p->l_start, p->lifetime, p->level};
	}
	rc = 0;
done:
	if (rc) {
		free(*tg);
		*tg = NULL;
		*n = 0;
	}
	eptab_free(&t);
	return rc;
}

int swap_check_model(const ss_trace *tr, const ss_model *m, ss_err *e)
{
	const ss_meta *t = &tr->meta;
	const ss_config *c = &m->c;
	if (strcmp(t->architecture, c->arch))
		return ss_err_set(e, "%s:/:architecture: '%s', model %s is '%s'", tr->name,
		                  t->architecture, m->dir, c->arch);
	struct { const char *name; long tv, mv; } f[] = {
		{"n_layers", t->n_layers, c->n_layers}, {"d_model", t->d_model, c->dim},
		{"n_heads", t->n_heads, c->n_heads}, {"n_kv_heads", t->n_kv_heads, c->n_kv_heads},
		{"head_dim", t->head_dim, c->head_dim},
	};
	for (size_t i = 0; i < sizeof f / sizeof *f; i++)
		if (f[i].tv != f[i].mv)
			return ss_err_set(e, "%s:/:%s: %ld, model %s has %ld", tr->name, f[i].name, f[i].tv,
			                  m->dir, f[i].mv);
	for (long j = 0; j < tr->T; j++)
		if (tr->ids[j] < 0 || tr->ids[j] >= c->vocab)
			return ss_err_set(e, "%s:/tokens/ids: id %d at position %ld outside model %s's "
			                  "vocabulary of %ld", tr->name, tr->ids[j], j, m->dir, c->vocab);
	return 0;
}

/* What the baseline pass records (through the dec's hook). */
typedef struct base_cap {
	int on;
	long L, T, dim;
	const ss_swap_target *tg;
	size_t n_tg;
	long window;
	const unsigned char *is_control;
	const unsigned char *need_mean;   /* [L+1]: layers whose control means are used */
	double *sum;                      /* [(L+1) * NCOMP * dim] */
	float *hprev;                     /* [n_tg * window * dim]: h[l-1][j], l = lo..ls */
	float **hq;                       /* [L+1]: h[ls-1] of every position, ls in use */
	float *h0;                        /* [(L+1) * dim]: h[l][0] */
	void (*progress)(void *, double, double);
	void *progress_ctx;
	int counting;                     /* in a full pass: count its layers */
	double done, total;               /* layer passes, for progress */
} base_cap;

/* The layer where j's sink-score is measured: the first whose attention
 * reads h[ls] (its keys come from the layer's input), where the sink made
 * at ls is first visible; ls itself when ls is the last layer. */
static long score_layer(long ls, long L) { return ls < L ? ls + 1 : ls; }

static long lo_layer(const ss_swap_target *t, long window)
{
	return t->l_start - window + 1 > 1 ? t->l_start - window + 1 : 1;
}

static int base_hook(void *ctx, int layer, ss_hook_point what, long t0, long n, float *x, long d)
{
	base_cap *b = ctx;
	if (b->progress && b->counting && what == SS_HOOK_RESID && layer >= 1) {
		b->done += (double)n / (double)b->T;
		b->progress(b->progress_ctx, b->done, b->total);
	}
	if (!b->on)
		return 0;
	int comp = what == SS_HOOK_RESID ? SS_SWAP_RESID : what == SS_HOOK_ATTN_OUT ? SS_SWAP_ATTN_OUT
	         : what == SS_HOOK_MLP_OUT ? SS_SWAP_MLP_OUT : -1;
	if (comp < 0)
		return 0;
	if (b->need_mean[layer]) {
		double *s = b->sum + ((size_t)layer * SS_SWAP_NCOMP + comp) * d;
		for (long i = 0; i < n; i++)
			if (b->is_control[t0 + i])
				for (long k = 0; k < d; k++)
					s[k] += x[i * d + k];
	}
	if (what != SS_HOOK_RESID)
		return 0;
	if (t0 == 0)
		memcpy(b->h0 + (size_t)layer * d, x, d * sizeof *x);
	if (layer + 1 <= b->L && b->hq[layer + 1])
		memcpy(b->hq[layer + 1] + (size_t)t0 * d, x, (size_t)n * d * sizeof *x);
	for (size_t k = 0; k < b->n_tg; k++) {
		const ss_swap_target *t = &b->tg[k];
		long lo = lo_layer(t, b->window);
		if (t->pos < t0 || t->pos >= t0 + n || layer + 1 < lo || layer + 1 > t->l_start)
			continue;
		memcpy(b->hprev + ((size_t)k * b->window + (layer + 1 - lo)) * d,
		       x + (size_t)(t->pos - t0) * d, d * sizeof *x);
	}
	return 0;
}

/* lse[i * H + h] = log sum_{t <= i} exp(scale q_i.k_t) at one layer, from
 * the cache: blocks of queries against their causal prefix by sgemm. */
static int layer_lse(ss_dec *d, int layer, const float *q, long T, double *lse, ss_err *e)
{
	const ss_config *c = &d->m->c;
	long H = c->n_heads, hd = c->head_dim, kvd = d->kv.kv_dim, group = H / c->n_kv_heads;
	long B = 128;
	float *kb = NULL, *vb = NULL, *K, *V;
	if (d->kv.dtype != SS_KV_F32) {
		kb = ss_malloc((size_t)T * kvd, sizeof *kb, "keys", e);
		vb = ss_malloc((size_t)T * kvd, sizeof *vb, "values", e);
	}
	float *S = ss_malloc((size_t)B * T, sizeof *S, "attention scores", e);
	if (!S || (d->kv.dtype != SS_KV_F32 && (!kb || !vb))) {
		free(kb);
		free(vb);
		free(S);
		return -1;
	}
	kv_layer_f32(&d->kv, layer, T, kb, vb, &K, &V);
	/* the layer's score scale, soft-cap and window (Gemma), as attention.c */
	float scale = c->attn_scale != 1.0 / sqrt((double)hd) ? (float)c->attn_scale : 1.0f / sqrtf((float)hd);
	float cap = (float)c->attn_softcap;
	long win = config_layer_window(c, layer);
	for (long h = 0; h < H; h++)
		for (long i0 = 0; i0 < T; i0 += B) {
			long nb = T - i0 < B ? T - i0 : B, nk = i0 + nb;
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nb, nk, hd, scale,
			            q + (size_t)i0 * H * hd + h * hd, H * hd, K + (h / group) * hd, kvd, 0.0f,
			            S, nk);
			for (long r = 0; r < nb; r++) {
				float *s = S + (size_t)r * nk;
				long n = i0 + r + 1, t0 = win > 0 && n > win ? n - win : 0;
				for (long t = t0; cap > 0 && t < n; t++)
					s[t] = cap * tanhf(s[t] / cap);
				float mx = -INFINITY;
				for (long t = t0; t < n; t++)
					mx = s[t] > mx ? s[t] : mx;
				double z = 0;
				for (long t = t0; t < n; t++)
					z += exp((double)s[t] - mx);
				lse[(i0 + r) * H + h] = mx + log(z);
			}
		}
	free(kb);
	free(vb);
	free(S);
	return 0;
}

/* The cheap sink-score of j at the score layer (swap.h). */
static double approx_score(const ss_config *c, int layer, long T, long j, const float *q,
                           const double *lse, const float *k_old, const float *k_new, const float *self)
{
	long H = c->n_heads, hd = c->head_dim, group = H / c->n_kv_heads;
	double scale = c->attn_scale > 0 ? c->attn_scale : 1.0 / sqrt((double)hd), tot = 0;
	double cap = c->attn_softcap;
	long win = config_layer_window(c, layer), iend = win > 0 && j + win < T ? j + win : T;
	for (long h = 0; h < H; h++) {
		const float *ko = k_old + (h / group) * hd, *kn = k_new + (h / group) * hd;
		double s = self[h];
		for (long i = j + 1; i < iend; i++) {   /* the queries that see key j */
			const float *qi = q + (size_t)i * H * hd + h * hd;
			double l = lse[i * H + h];
			double so = scale * k_dot(qi, ko, hd), sn = scale * k_dot(qi, kn, hd);
			if (cap > 0) {
				so = cap * tanh(so / cap);
				sn = cap * tanh(sn / cap);
			}
			double eo = exp(so - l), en = exp(sn - l);
			s += en / (1.0 - eo + en);
		}
		tot += s / (double)(T - j);
	}
	return tot / H;
}

static double score_of(const ss_stats *st, long H, long T, long l, long j)
{
	double s = 0;
	for (long h = 0; h < H; h++)
		s += st->recv[((size_t)(l - 1) * H + h) * T + j];
	return s / H;
}

static void stats_free(ss_stats *s)
{
	free(s->resid_norm);
	free(s->resid_cos0);
	free(s->recv);
}

static int stats_alloc(ss_stats *s, long L, long H, long T, ss_err *e)
{
	*s = (ss_stats){0};
	s->resid_norm = ss_malloc((size_t)(L + 1) * T, sizeof(float), "norms", e);
	s->resid_cos0 = ss_malloc((size_t)(L + 1) * T, sizeof(float), "cosines", e);
	s->recv = ss_malloc((size_t)L * H * T, sizeof(float), "attention received", e);
	if (!s->resid_norm || !s->resid_cos0 || !s->recv) {
		stats_free(s);
		return -1;
	}
	return 0;
}

/* The model's baseline must reproduce the trace's norms: a different model
 * with the same shapes is caught here. */
static int check_stats(const ss_trace *tr, const ss_model *m, const ss_stats *st, ss_err *e)
{
	size_t n = (size_t)(tr->L + 1) * tr->T;
	for (size_t i = 0; i < n; i++) {
		double a = tr->resid_norm[i], b = st->resid_norm[i];
		if (fabs(a - b) > 1e-3 * fmax(fabs(b), 1e-6))
			return ss_err_set(e, "%s:/stats/resid_norm: layer %zu position %zu: %g, but model "
			                  "%s gives %g: trace made with another model?", tr->name,
			                  i / tr->T, i % tr->T, a, m->dir, b);
	}
	return 0;
}

double swap_memory(const ss_model *m, const ss_trace *tr, const ss_swap_target *tg, size_t n_tg,
                   const ss_swap_opts *o)
{
	const ss_config *c = &m->c;
	long Li = c->n_layers;
	double L = (double)Li, T = (double)tr->T, D = (double)c->dim, H = (double)c->n_heads;
	double kvd = (double)c->n_kv_heads * c->head_dim, qd = H * c->head_dim;
	double ncomp = (o->comps & 1) + (o->comps >> 1 & 1) + (o->comps >> 2 & 1), ns = 0, nsl = 0;
	for (size_t k = 0; k < n_tg; k++)   /* the swaps, as swap_run counts them */
		ns += (double)(tg[k].l_start - lo_layer(&tg[k], o->window) + 1) * ncomp;
	for (long l = 1; l <= Li && !o->exact; l++)   /* the score layers in use */
		for (size_t k = 0; k < n_tg; k++)
			if (score_layer(tg[k].l_start, Li) == l) {
				nsl++;
				break;
			}
	double per_swap = sizeof(ss_swap_row) + sizeof(ss_interv) + 2 * sizeof(ss_rerun) +
	                  4 * (2 * D + kvd + H);
	double b = dec_memory_estimate(m, tr->T, &o->dec, !o->exact) +
	           trace_stats_bytes(Li, tr->T, c->n_heads) + 48 * T +      /* the trace as read */
	           (o->exact ? 2 : 1) * 4 * (2 * (L + 1) * T + L * H * T) +  /* the passes' statistics */
	           T + 8 * (L + 1) * SS_SWAP_NCOMP * D + 4 * (double)n_tg * o->window * D +
	           4 * (L + 1) * D + 4 * (L + 1) * SS_SWAP_NCOMP * D + 4 * T + ns * per_swap;
	if (!o->exact)   /* each score layer's inputs, then queries, normalisers; layer_lse's scores */
		b += 4 * nsl * T * (D > qd ? D : qd) + 4 * T * (D < qd ? D : qd) + 8 * nsl * T * H +
		     4 * 128 * T + (o->dec.kv_dtype != SS_KV_F32 ? 8 * T * kvd : 0);
	return b;
}

int swap_run(const ss_model *m, const ss_trace *tr, const ss_swap_target *tg, size_t n_tg,
             const ss_swap_opts *o, ss_swap_row **rows_out, size_t *n_rows, long *n_control,
             ss_err *e)
{
	const ss_config *c = &m->c;
	long L = c->n_layers, T = tr->T, D = c->dim, H = c->n_heads, W = o->window;
	long kvd = c->n_kv_heads * c->head_dim, qd = H * c->head_dim;
	int rc = -1;
	ss_dec dec = {0};
	ss_stats st = {0}, st2 = {0};
	base_cap b = {.L = L, .T = T, .dim = D, .tg = tg, .n_tg = n_tg, .window = W,
	              .progress = o->progress, .progress_ctx = o->progress_ctx, .total = (double)L};
	unsigned char *is_control = NULL, *need_mean = NULL;
	double **lse = NULL;
	float *mean = NULL, *xs = NULL, *xs2 = NULL, *keys = NULL, *selfs = NULL, *kold = NULL, *vtmp = NULL,
	      *tmp = NULL;
	ss_swap_row *rows = NULL;
	ss_interv *ivs = NULL;
	ss_rerun *rr = NULL, *rr2 = NULL;
	size_t nr = 0;
	*rows_out = NULL;
	*n_rows = 0;

	if (swap_check_model(tr, m, e) < 0)
		return -1;
	for (size_t k = 0; k < n_tg; k++)
		if (tg[k].pos < 1 || tg[k].pos >= T || tg[k].l_start < 1 || tg[k].l_start > L)
			return ss_err_set(e, "%s: target position %ld, l_start %ld: out of range "
			                  "(positions 1-%ld, layers 1-%ld)", tr->name, tg[k].pos,
			                  tg[k].l_start, T - 1, L);
	/* the control set, by the one definition */
	if (!(is_control = ss_malloc(T, 1, "control set", e)))
		goto done;
	if (tokclass_controls(tr, &o->sp, o->classes, is_control, e) < 0)
		goto done;
	long nc = 0;
	for (long j = 0; j < T; j++)
		nc += is_control[j];
	if (n_control)
		*n_control = nc;
	if (!nc) {
		ss_err_set(e, "%s: empty control set: no token of the chosen classes is free of sinks",
		           tr->name);
		goto done;
	}
	need_mean = ss_calloc(L + 1, 1, "layers", e);
	b.hq = ss_calloc(L + 1, sizeof *b.hq, "queries", e);
	lse = ss_calloc(L + 1, sizeof *lse, "normalisers", e);
	b.sum = ss_calloc((size_t)(L + 1) * SS_SWAP_NCOMP * D, sizeof *b.sum, "control sums", e);
	b.hprev = ss_malloc(n_tg ? n_tg * W * D : 1, sizeof *b.hprev, "swap inputs", e);
	b.h0 = ss_malloc((size_t)(L + 1) * D, sizeof *b.h0, "position 0", e);
	if (!need_mean || !b.hq || !lse || !b.sum || !b.hprev || !b.h0)
		goto done;
	for (size_t k = 0; k < n_tg; k++) {
		for (long l = lo_layer(&tg[k], W); l <= tg[k].l_start; l++)
			need_mean[l] = 1;
		long sl = score_layer(tg[k].l_start, L);
		if (!o->exact && !b.hq[sl] && !(b.hq[sl] = ss_malloc((size_t)T * D, sizeof(float),
		                                                     "inputs of the score layer", e)))
			goto done;
	}
	b.is_control = is_control;
	b.need_mean = need_mean;

	size_t ns = 0; /* swaps */
	for (size_t k = 0; k < n_tg; k++)
		for (long l = lo_layer(&tg[k], W); l <= tg[k].l_start; l++)
			for (int comp = 0; comp < SS_SWAP_NCOMP; comp++)
				ns += (o->comps >> comp) & 1;
	b.total = (double)L * (double)(1 + (o->exact ? ns : 0)) + (o->exact ? 0 : 1);
	/* the baseline pass: cache, stats, captures */
	ss_dec_opts dopt = o->dec;
	dopt.hook = base_hook;
	dopt.hook_ctx = &b;
	if (dec_create(&dec, m, T, &dopt, e) < 0 || stats_alloc(&st, L, H, T, e) < 0)
		goto done;
	b.on = b.counting = 1;
	if (dec_prefill(&dec, tr->ids, T, &st, NULL, e) < 0)
		goto done;
	b.on = b.counting = 0;
	if (check_stats(tr, m, &st, e) < 0)
		goto done;
	if (!(mean = ss_malloc((size_t)(L + 1) * SS_SWAP_NCOMP * D, sizeof *mean, "means", e)))
		goto done;
	for (size_t i = 0; i < (size_t)(L + 1) * SS_SWAP_NCOMP * D; i++)
		mean[i] = (float)(b.sum[i] / nc);
	/* baseline queries and normalisers at each score layer in use */
	for (long l = 1; l <= L; l++) {
		if (!b.hq[l])
			continue;
		float *q = ss_malloc((size_t)T * qd, sizeof *q, "queries", e);
		if (!q || dec_queries(&dec, (int)l, b.hq[l], 0, T, q, e) < 0) {
			free(q);
			goto done;
		}
		free(b.hq[l]);
		b.hq[l] = q; /* from here on, hq[l] holds the queries */
		if (!(lse[l] = ss_malloc((size_t)T * H, sizeof **lse, "normalisers", e)) ||
		    layer_lse(&dec, (int)l, q, T, lse[l], e) < 0)
			goto done;
	}

	/* every swap: one intervention, one re-run row (or a full pass) */
	rows = ss_calloc(ns ? ns : 1, sizeof *rows, "swap results", e);
	ivs = ss_calloc(ns ? ns : 1, sizeof *ivs, "interventions", e);
	rr = ss_calloc(ns ? ns : 1, sizeof *rr, "re-runs", e);
	rr2 = ss_calloc(ns ? ns : 1, sizeof *rr2, "re-runs", e);
	xs = ss_malloc(ns ? ns * D : 1, sizeof *xs, "swap states", e);
	xs2 = ss_malloc(ns ? ns * D : 1, sizeof *xs2, "swap states", e);
	keys = ss_malloc(ns ? ns * kvd : 1, sizeof *keys, "swap keys", e);
	selfs = ss_malloc(ns ? ns * H : 1, sizeof *selfs, "self attention", e);
	kold = ss_malloc(kvd, sizeof *kold, "key", e);
	vtmp = ss_malloc(kvd, sizeof *vtmp, "value", e);
	tmp = ss_malloc(T, sizeof *tmp, "norms", e);
	if (!rows || !ivs || !rr || !rr2 || !xs || !xs2 || !keys || !selfs || !kold || !vtmp || !tmp)
		goto done;
	size_t i = 0;
	for (size_t k = 0; k < n_tg; k++) {
		long j = tg[k].pos, ls = tg[k].l_start, lo = lo_layer(&tg[k], W);
		for (long l = lo; l <= ls; l++)
			for (int comp = 0; comp < SS_SWAP_NCOMP; comp++) {
				if (!(o->comps & (1u << comp)))
					continue;
				ivs[i] = (ss_interv){.layer = (int)l, .what = comp_hook[comp], .pos = j,
				                     .op = SS_IV_REPLACE,
				                     .vec = mean + ((size_t)l * SS_SWAP_NCOMP + comp) * D};
				rows[i] = (ss_swap_row){.target = (long)k, .layer = l, .comp = comp};
				float *x = xs + i * D;
				memcpy(x, b.hprev + ((size_t)k * W + (l - lo)) * D, D * sizeof *x);
				rr[i] = (ss_rerun){.pos = j, .l_from = (int)l, .l_to = (int)ls, .x = x,
				                   .iv = &ivs[i], .n_iv = 1, .key_out = keys + i * kvd,
				                   .self_attn = selfs + i * H};
				i++;
			}
	}
	if (!o->exact && dec_rerun(&dec, rr, ns, e) < 0)
		goto done;
	/* then h[ls][j] through the score layer alone, for its key and the
	 * attention its query pays it there */
	size_t n2 = 0;
	for (i = 0; !o->exact && i < ns; i++) {
		long ls = tg[rows[i].target].l_start, sl = score_layer(ls, L);
		if (sl == ls)
			continue;
		float *x = xs2 + n2 * D;
		memcpy(x, xs + i * D, D * sizeof *x);
		rr2[n2++] = (ss_rerun){.pos = tg[rows[i].target].pos, .l_from = (int)sl,
		                       .l_to = (int)sl, .x = x, .key_out = keys + i * kvd,
		                       .self_attn = selfs + i * H};
	}
	if (n2 && dec_rerun(&dec, rr2, n2, e) < 0)
		goto done;
	if (!o->exact && b.progress) {
		b.done = b.total;
		b.progress(b.progress_ctx, b.done, b.total);
	}
	if (o->exact && stats_alloc(&st2, L, H, T, e) < 0)
		goto done;
	for (i = 0; i < ns; i++) {
		ss_swap_row *r = &rows[i];
		const ss_swap_target *t = &tg[r->target];
		long j = t->pos, ls = t->l_start, sl = score_layer(ls, L);
		const float *nrm = st.resid_norm + (size_t)ls * T;
		r->base_norm = nrm[j];
		double med0;
		if (ss_median_f32(nrm, T, &med0, e) < 0)
			goto done;
		r->base_sink = ss_is_sink(&o->sp, st.resid_cos0[(size_t)ls * T + j], nrm[j], med0);
		r->base_score = score_of(&st, H, T, sl, j);
		if (o->exact) {
			dec_set_interv(&dec, &ivs[i], 1);
			b.counting = 1;
			int q = dec_prefill(&dec, tr->ids, T, &st2, NULL, e);
			b.counting = 0;
			dec_set_interv(&dec, NULL, 0);
			if (q < 0)
				goto done;
			r->norm = st2.resid_norm[(size_t)ls * T + j];
			r->cos0 = st2.resid_cos0[(size_t)ls * T + j];
			if (ss_median_f32(st2.resid_norm + (size_t)ls * T, T, &r->median, e) < 0)
				goto done;
			r->score = score_of(&st2, H, T, sl, j);
		} else {
			const float *x = xs + i * D, *h0 = b.h0 + (size_t)ls * D;
			double nx = sqrt(k_sumsq(x, D)), n0 = sqrt(k_sumsq(h0, D));
			r->norm = nx;
			r->cos0 = nx > 0 && n0 > 0 ? k_dot(x, h0, D) / (nx * n0) : 0;
			memcpy(tmp, nrm, T * sizeof *tmp);
			tmp[j] = (float)nx;
			if (ss_median_f32(tmp, T, &r->median, e) < 0)
				goto done;
			kv_get(&dec.kv, (int)sl, j, kold, vtmp);
			r->score = approx_score(c, (int)sl, T, j, b.hq[sl], lse[sl], kold, keys + i * kvd,
			                        selfs + i * H);
		}
		r->sink = ss_is_sink(&o->sp, r->cos0, r->norm, r->median);
	}
	nr = ns;
	*rows_out = rows;
	*n_rows = nr;
	rows = NULL;
	rc = 0;
done:
	dec_free(&dec);
	stats_free(&st);
	stats_free(&st2);
	if (b.hq)
		for (long l = 0; l <= L; l++)
			free(b.hq[l]);
	if (lse)
		for (long l = 0; l <= L; l++)
			free(lse[l]);
	free(b.hq);
	free(lse);
	free(b.sum);
	free(b.hprev);
	free(b.h0);
	free(is_control);
	free(need_mean);
	free(mean);
	free(xs);
	free(xs2);
	free(keys);
	free(selfs);
	free(ivs);
	free(rr);
	free(rr2);
	free(kold);
	free(vtmp);
	free(tmp);
	free(rows);
	return rc;
}

void swap_write_rows(FILE *f, int header, const ss_trace *tr, const ss_swap_target *tg,
                     const ss_swap_row *r, size_t n)
{
	if (header)
		fputs("trace\tpos\ttoken\tlevel\tl_start\tlifetime\tlayer\trel_layer\tcomponent\t"
		      "base_sink\tsink\tsuppressed\tbase_norm\tnorm\tmedian\tnorm_ratio\tcos0\t"
		      "base_score\tscore\n", f);
	for (size_t i = 0; i < n; i++) {
		const ss_swap_target *t = &tg[r[i].target];
		tsv_put_escaped(f, tr->name, strlen(tr->name));
		fprintf(f, "\t%ld\t", t->pos);
		tsv_put_escaped(f, tr->text[t->pos], strlen(tr->text[t->pos]));
		fprintf(f, "\t%ld\t%ld\t%ld\t%ld\t%ld\t%s\t%d\t%d\t%d", t->level, t->l_start,
		        t->lifetime, r[i].layer, r[i].layer - t->l_start, swap_comp_names[r[i].comp],
		        r[i].base_sink, r[i].sink, r[i].base_sink && !r[i].sink);
		double v[] = {r[i].base_norm, r[i].norm, r[i].median,
		              r[i].median > 0 ? r[i].norm / r[i].median : 0, r[i].cos0, r[i].base_score,
		              r[i].score};
		tsv_put_row_end(f, v, sizeof v / sizeof *v);
	}
}

typedef struct cell { long n, sup; } cell;

/* Rows of one group: cells indexed [comp][layer offset]. */
static void put_group(FILE *f, const char *level, long ls, long life, const cell *cells,
                      long nl, long l0, int rel, double dfrac)
{
	for (int c = 0; c < SS_SWAP_NCOMP; c++) {
		int decided = 0;
		for (long k = 0; k < nl; k++) {
			const cell *x = &cells[c * nl + k];
			if (!x->n)
				continue;
			double frac = (double)x->sup / x->n;
			int dec = !decided && frac >= dfrac;
			decided |= dec;
			fprintf(f, "%s\t", level);
			if (rel)
				fprintf(f, "-\t-\t%s\t%ld\t-\t", swap_comp_names[c], l0 + k);
			else
				fprintf(f, "%ld\t%ld\t%s\t%ld\t%ld\t", ls, life, swap_comp_names[c],
				        l0 + k - ls, l0 + k);
			fprintf(f, "%ld\t%ld\t", x->n, x->sup);
			tsv_put_double(f, frac);
			fprintf(f, "\t%d\n", dec);
		}
	}
}

void swap_write_summary(FILE *f, int header, const ss_swap_target *tg, size_t n_tg,
                        const ss_swap_row *r, size_t n, long window, double dfrac)
{
	if (header)
		fputs("level\tl_start\tlifetime\tcomponent\trel_layer\tlayer\tn\tsuppressed\tfrac\t"
		      "decision\n", f);
	/* levels: the table's, else (l_start, lifetime) pairs numbered by l_start */
	long *lev = calloc(n_tg ? n_tg : 1, sizeof *lev);
	cell *cells = calloc((size_t)SS_SWAP_NCOMP * window, sizeof *cells);
	if (!lev || !cells) {
		free(lev);
		free(cells);
		return;
	}
	int have_levels = 0;
	for (size_t k = 0; k < n_tg; k++)
		have_levels |= tg[k].level != 0;
	/* without a level column: rank of the (l_start, lifetime) pair among
	 * the distinct pairs, ordered by l_start then lifetime */
	for (size_t k = 0; k < n_tg; k++) {
		if (have_levels) {
			lev[k] = tg[k].level;
			continue;
		}
		lev[k] = 1;
		for (size_t i = 0; i < n_tg; i++) {
			int smaller = tg[i].l_start < tg[k].l_start ||
			              (tg[i].l_start == tg[k].l_start && tg[i].lifetime < tg[k].lifetime);
			int first = 1; /* count each distinct pair once */
			for (size_t q = 0; q < i && first; q++)
				first = !(tg[q].l_start == tg[i].l_start && tg[q].lifetime == tg[i].lifetime);
			lev[k] += smaller && first;
		}
	}
	/* per level, in order of level number */
	long maxlev = 0;
	for (size_t k = 0; k < n_tg; k++)
		maxlev = lev[k] > maxlev ? lev[k] : maxlev;
	for (long L = 1; L <= maxlev; L++) {
		long ls = -1, life = 0;
		memset(cells, 0, (size_t)SS_SWAP_NCOMP * window * sizeof *cells);
		for (size_t i = 0; i < n; i++) {
			const ss_swap_target *t = &tg[r[i].target];
			if (lev[r[i].target] != L || !r[i].base_sink)
				continue;
			if (ls < 0) {
				ls = t->l_start;
				life = t->lifetime;
			}
			if (t->l_start != ls) /* a level with several l_start: by relative layer */
				continue;
			long k = r[i].layer - (ls - window + 1);
			if (k < 0)
				continue;
			cells[r[i].comp * window + k].n++;
			cells[r[i].comp * window + k].sup += !r[i].sink;
		}
		if (ls < 0)
			continue;
		char name[32];
		snprintf(name, sizeof name, "%ld", L);
		put_group(f, name, ls, life, cells, window, ls - window + 1, 0, dfrac);
	}
	memset(cells, 0, (size_t)SS_SWAP_NCOMP * window * sizeof *cells);
	for (size_t i = 0; i < n; i++) {
		if (!r[i].base_sink)
			continue;
		long k = r[i].layer - tg[r[i].target].l_start + window - 1;
		cells[r[i].comp * window + k].n++;
		cells[r[i].comp * window + k].sup += !r[i].sink;
	}
	put_group(f, "all", 0, 0, cells, window, -(window - 1), 1, dfrac);
	free(lev);
	free(cells);
}
