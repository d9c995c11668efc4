/* kvevict.c - KV-cache eviction policies; see kvevict.h.
 *
 * Each policy is one small function (the table `policies`) that, for a
 * block of queries t0.., lists the keys it keeps besides the window (sorted)
 * and how many of them may count: `cap`.  One solver then gives each query
 * i > B its window: the largest lo with min(cap, #kept below lo) + (i - lo)
 * = B, so that every query sees exactly B cached keys; a query i <= B sees
 * them all.  The engine runs the selection (forward.h, ss_select_fn); its
 * statistics of the layer's input (norms, cosines to position 0) and the
 * attention received so far are all a policy looks at. */
#include "interv/kvevict.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention.h"
#include "engine/forward.h"
#include "engine/kernels.h"
#include "io/episodes.h"
#include "io/tsv.h"
#include "util/rng.h"

#define KV_CHUNK 8     /* queries per choice of the policies that look at attention */
#define LOGIT_ROWS 64  /* positions per block of logits when comparing */

const char *const kv_policy_names[KV_NPOL] = {"full", "window", "streaming", "sinks", "heavy", "random"};

int kv_policy_parse(const char *name, kv_policy *p, ss_err *e)
{
	for (int i = 0; i < KV_NPOL; i++)
		if (!strcmp(name, kv_policy_names[i])) {
			*p = (kv_policy)i;
			return 0;
		}
	return ss_err_status(e, SS_EXIT_USAGE,
	                     "--policies: unknown policy '%s' (full, window, streaming, sinks, heavy, random)", name);
}

/* ---- the episode table ------------------------------------------------- */

int kv_episodes_read(const char *path, const char *trace, const int32_t *ids, long T, long L,
                     kv_episode **eps, size_t *n, ss_err *e)
{
	ss_eptab t = {0};
	*eps = NULL;
	*n = 0;
	if (eptab_read(&t, path, EP_BIT(EP_POS) | EP_BIT(EP_L_START), e) < 0)
		return -1;
	int rc = -1, has_end = !!(t.cols & EP_BIT(EP_L_END));
	if (!has_end && !(t.cols & EP_BIT(EP_LIFETIME))) {
		ss_err_set(e, "%s: missing column 'l_end' (or 'lifetime')", path);
		goto done;
	}
	if (!(*eps = ss_malloc(t.n + 1, sizeof **eps, "episodes", e)))
		goto done;
	for (size_t x = 0; x < t.n; x++) {
		const ss_episode *p = &t.ep[x];
		if ((t.cols & EP_BIT(EP_TRACE)) && strcmp(t.trace[x], t.trace[0])) {
			ss_err_set(e, "%s:%ld: episodes of traces %s and %s: give the table of this trace only", path,
			           t.line[x], t.trace[0], t.trace[x]);
			goto done;
		}
		kv_episode k = {p->pos, p->l_start, has_end ? p->l_end : p->l_start + p->lifetime - 1,
		                p->pos == 0 || p->primary};
		if (k.pos >= T) {
			ss_err_set(e, "%s:%ld: pos %ld beyond the %ld tokens of trace %s (an episode table of another trace?)",
			           path, t.line[x], k.pos, T, trace);
			goto done;
		}
		if ((t.cols & EP_BIT(EP_TOKEN)) && p->token != ids[k.pos]) {
			ss_err_set(e, "%s:%ld: token %d at pos %ld, trace %s has %d there (an episode table of another trace)",
			           path, t.line[x], p->token, k.pos, trace, ids[k.pos]);
			goto done;
		}
		if (k.l_end < k.l_start || k.l_end > L) {
			ss_err_set(e, "%s:%ld: layers %ld-%ld outside 1-%ld", path, t.line[x], k.l_start, k.l_end, L);
			goto done;
		}
		(*eps)[(*n)++] = k;
	}
	rc = 0;
done:
	if (rc) {
		free(*eps);
		*eps = NULL;
		*n = 0;
	}
	eptab_free(&t);
	return rc;
}

/* ---- results ----------------------------------------------------------- */

/* one pair's choices at one layer, kept for the measurement pass and --masks */
typedef struct kv_rec {
	long *lo, *nk;        /* [T] */
	long *kept;           /* the lists of the blocks, one after another */
	size_t n, cap;
	long *off;            /* block c's list is kept[off[c] .. off[c+1]) */
	long chunk;           /* queries per list */
} kv_rec;

struct kv_result {
	long T, L;
	size_t np;
	kv_pair *pairs;
	kv_total *tot;        /* [np] */
	kv_layer *lay;        /* [np * L] or NULL */
	kv_rec *rec;          /* [np * L] or NULL */
};

void kv_result_free(kv_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; r->rec && i < r->np * (size_t)r->L; i++) {
		free(r->rec[i].lo);
		free(r->rec[i].nk);
		free(r->rec[i].kept);
		free(r->rec[i].off);
	}
	free(r->rec);
	free(r->pairs);
	free(r->tot);
	free(r->lay);
	free(r);
}

const kv_total *kv_result_total(const kv_result *r, size_t pair)
{
	return &r->tot[pair];
}

const kv_layer *kv_result_layer(const kv_result *r, size_t pair, long l)
{
	return r->lay ? &r->lay[pair * (size_t)r->L + (size_t)(l - 1)] : NULL;
}

/* ---- the run ----------------------------------------------------------- */

enum { M_PLAIN, M_POLICY, M_MEASURE };

typedef struct kv_score { double s; long j; } kv_score;

typedef struct kv_ctx {
	const kv_opts *o;
	kv_result *res;
	long T, L;
	int mode;
	size_t pair;             /* M_POLICY: the pair running */
	long *lo, *nk;           /* [T] the choice when not recorded */
	long *K;                 /* [T + first] the block's kept list */
	size_t nK;
	ss_attn_sel sel;
	/* the policy's state in this layer */
	long *keep;              /* [T] heavy, random: the kept keys, ascending */
	size_t nkeep;
	long edge;               /* keys below edge have left every window */
	uint64_t rng;
	long *sinks;             /* [T + first] sinks: first keys, then sinks alive */
	size_t nsinks;
	float *sorted;           /* [T] online rule: norms of 0..j, ascending */
	kv_score *score;         /* [T] heavy */
	/* measurement */
	ss_attn_sel *msel;       /* [np] */
	ss_attn_meas meas;
	unsigned char *cls;      /* [T] */
	double *lost;            /* [L * np * 3] */
	int pass, n_pass;
} kv_ctx;

/* Sinks at row l-1 (the input of layer l) by the online rule: j > 0 with
 * cos0 > tau_cos and norm >= tau_norm * (median norm of positions 0..j).
 * Positions >= from into out; returns how many. */
static size_t sinks_online(kv_ctx *c, const ss_sel_view *v, long from, long *out)
{
	size_t n = 0;
	if (v->layer < 2)   /* row 0 is the embeddings: no sinks (sinkdetect's range 1..L) */
		return 0;
	float *s = c->sorted;
	for (long j = 0; j < v->T; j++) {
		float x = v->norm[j];
		long a = 0, b = j;   /* insert among s[0..j) */
		while (a < b) {
			long mid = (a + b) / 2;
			if (s[mid] <= x)
				a = mid + 1;
			else
				b = mid;
		}
		memmove(s + a + 1, s + a, sizeof *s * (size_t)(j - a));
		s[a] = x;
		long cnt = j + 1;
		double med = cnt % 2 ? (double)s[cnt / 2] : 0.5 * ((double)s[cnt / 2 - 1] + (double)s[cnt / 2]);
		if (j >= from && j > 0 && ss_is_sink(&c->o->sp, v->cos0[j], v->norm[j], med))
			out[n++] = j;
	}
	return n;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* Sinks from the episode table alive at row l-1, positions >= from. */
static size_t sinks_table(const kv_ctx *c, int l, long from, long *out)
{
	size_t n = 0;
	for (size_t x = 0; x < c->o->n_eps; x++) {
		const kv_episode *p = &c->o->eps[x];
		if (p->pos >= from && p->l_start <= l - 1 && l - 1 <= p->l_end)
			out[n++] = p->pos;
	}
	qsort(out, n, sizeof *out, cmp_long);
	size_t k = 0;
	for (size_t x = 0; x < n; x++)
		if (!k || out[x] != out[k - 1])
			out[k++] = out[x];
	return k;
}

static long first_kept(const kv_ctx *c, long B)
{
	return c->o->first < B ? c->o->first : B;
}

/* ---- the policies: the kept list of queries t0.., and its cap ---------- */

typedef struct kv_def {
	long chunk;   /* queries per choice (0: one choice for the pass) */
	/* once per layer, at t0 = 0 */
	int (*layer)(kv_ctx *c, const ss_sel_view *v, long B);
	void (*choose)(kv_ctx *c, const ss_sel_view *v, long t0, long m, long B, long *cap);
} kv_def;

static void choose_window(kv_ctx *c, const ss_sel_view *v, long t0, long m, long B, long *cap)
{
	c->nK = 0;
	*cap = 0;
}

static void choose_streaming(kv_ctx *c, const ss_sel_view *v, long t0, long m, long B, long *cap)
{
	long k = first_kept(c, B);
	for (long j = 0; j < k; j++)
		c->K[j] = j;
	c->nK = (size_t)k;
	*cap = k;
}

static int layer_sinks(kv_ctx *c, const ss_sel_view *v, long B)
{
	long k = first_kept(c, B);
	for (long j = 0; j < k; j++)
		c->sinks[j] = j;
	if (c->o->eps)
		c->nsinks = (size_t)k + sinks_table(c, v->layer, k, c->sinks + k);
	else if (v->norm && v->cos0)
		c->nsinks = (size_t)k + sinks_online(c, v, k, c->sinks + k);
	else
		return -1;
	return 0;
}

static void choose_sinks(kv_ctx *c, const ss_sel_view *v, long t0, long m, long B, long *cap)
{
	memcpy(c->K, c->sinks, sizeof *c->K * c->nsinks);
	c->nK = c->nsinks;
	*cap = B;   /* the sinks first; the window has the rest */
}

static int layer_reset(kv_ctx *c, const ss_sel_view *v, long B)
{
	c->nkeep = 0;
	c->edge = 0;
	c->rng = c->o->seed + ((uint64_t)v->layer << 32);
	return 0;
}

/* heavy and random keep B/2 keys besides a window of B - B/2: the keys
 * that leave the window by the block's last query `last` join the kept
 * ones (their scores are those of the queries before the block) */
static long admit(kv_ctx *c, long last, long B)
{
	long hh = B / 2, w = B - hh, e = last - w > 0 ? last - w : 0;
	for (long j = c->edge; j < e; j++)
		c->keep[c->nkeep++] = j;
	if (e > c->edge)
		c->edge = e;
	return hh;
}

static int cmp_score(const void *a, const void *b)
{
	const kv_score *x = a, *y = b;
	if (x->s != y->s)
		return x->s < y->s ? 1 : -1;   /* highest first */
	return (x->j > y->j) - (x->j < y->j);   /* then the older */
}

static void choose_heavy(kv_ctx *c, const ss_sel_view *v, long t0, long m, long B, long *cap)
{
	long hh = admit(c, t0 + m - 1, B);
	if ((long)c->nkeep > hh) {
		for (size_t x = 0; x < c->nkeep; x++) {
			long j = c->keep[x];
			double s = 0;
			for (long h = 0; h < v->H; h++)
				s += v->recv[h * v->ld + j];
			c->score[x].s = s;
			c->score[x].j = j;
		}
		qsort(c->score, c->nkeep, sizeof *c->score, cmp_score);
		for (long x = 0; x < hh; x++)
			c->keep[x] = c->score[x].j;
		c->nkeep = (size_t)hh;
		qsort(c->keep, c->nkeep, sizeof *c->keep, cmp_long);
	}
	memcpy(c->K, c->keep, sizeof *c->K * c->nkeep);
	c->nK = c->nkeep;
	*cap = hh;
}

static void choose_random(kv_ctx *c, const ss_sel_view *v, long t0, long m, long B, long *cap)
{
	long hh = admit(c, t0 + m - 1, B);
	while ((long)c->nkeep > hh) {
		size_t x = (size_t)(ss_rng_next(&c->rng) % c->nkeep);
		memmove(c->keep + x, c->keep + x + 1, sizeof *c->keep * (c->nkeep - x - 1));
		c->nkeep--;
	}
	memcpy(c->K, c->keep, sizeof *c->K * c->nkeep);
	c->nK = c->nkeep;
	*cap = hh;
}

static const kv_def policies[KV_NPOL] = {
	[KV_FULL] = {0, NULL, choose_window},   /* never run: the reference */
	[KV_WINDOW] = {0, NULL, choose_window},
	[KV_STREAMING] = {0, NULL, choose_streaming},
	[KV_SINKS] = {0, layer_sinks, choose_sinks},
	[KV_HEAVY] = {KV_CHUNK, layer_reset, choose_heavy},
	[KV_RANDOM] = {KV_CHUNK, layer_reset, choose_random},
};

/* min(cap, number of entries of K below x) */
static long below(const long *K, size_t nK, long x, long cap)
{
	long a = 0, b = (long)nK;
	while (a < b) {
		long m = (a + b) / 2;
		if (K[m] < x)
			a = m + 1;
		else
			b = m;
	}
	return a < cap ? a : cap;
}

/* the window of query i > B: the largest lo in [i - B, i] with
 * min(cap, #K below lo) + i - lo >= B (then = B; cap <= B) */
static void solve(long i, long B, const long *K, size_t nK, long cap, long *lo, long *nk)
{
	if (i <= B) {
		*lo = 0;
		*nk = 0;
		return;
	}
	long a = i - B, b = i;
	while (a < b) {
		long mid = (a + b + 1) / 2;
		if (below(K, nK, mid, cap) + i - mid >= B)
			a = mid;
		else
			b = mid - 1;
	}
	*lo = a;
	*nk = below(K, nK, a, cap);
}

static int rec_append(kv_rec *r, long t0, const long *K, size_t nK)
{
	long c = t0 / r->chunk;
	if (r->n + nK > r->cap) {
		size_t cap = 2 * (r->n + nK) + 16;
		long *k = realloc(r->kept, cap * sizeof *k);
		if (!k)
			return -1;
		r->kept = k;
		r->cap = cap;
	}
	if (nK) /* r->kept is still NULL before the first kept key */
		memcpy(r->kept + r->n, K, nK * sizeof *K);
	r->off[c] = (long)r->n;
	r->n += nK;
	r->off[c + 1] = (long)r->n;
	return 0;
}

static int select_measure(kv_ctx *c, const ss_sel_view *v, long t0, long *n, const ss_attn_meas **meas)
{
	int l = v->layer;
	long T = c->T, L = c->L;
	if (*n > KV_CHUNK)
		*n = KV_CHUNK;
	if (t0 == 0) {
		memset(c->cls, 0, (size_t)T);
		if (c->o->eps) {
			for (size_t x = 0; x < c->o->n_eps; x++) {
				const kv_episode *p = &c->o->eps[x];
				if (p->l_start <= l - 1 && l - 1 <= p->l_end)
					c->cls[p->pos] = p->primary ? 1 : 2;
			}
		} else {
			size_t k = sinks_online(c, v, 1, c->K);
			for (size_t x = 0; x < k; x++)
				c->cls[c->K[x]] = 2;
		}
		c->cls[0] = 1;
	}
	int k = 0;
	for (size_t p = 0; p < c->res->np; p++) {
		if (c->res->pairs[p].pol == KV_FULL)
			continue;
		const kv_rec *r = &c->res->rec[p * (size_t)L + (size_t)(l - 1)];
		long b = t0 / r->chunk;
		c->msel[k] = (ss_attn_sel){r->lo + t0, r->nk + t0, r->kept + r->off[b], r->off[b + 1] - r->off[b]};
		k++;
	}
	if (!k)
		return 0;
	c->meas = (ss_attn_meas){k, c->msel, c->cls, c->lost + (size_t)(l - 1) * c->res->np * 3};
	*meas = &c->meas;
	return 0;
}

static int kv_select(void *ctx, const ss_sel_view *v, long t0, long *n, const ss_attn_sel **sel,
                     const ss_attn_meas **meas)
{
	kv_ctx *c = ctx;
	if (c->mode == M_PLAIN)
		return 0;
	if (c->mode == M_MEASURE)
		return select_measure(c, v, t0, n, meas);
	const kv_pair *p = &c->res->pairs[c->pair];
	const kv_def *d = &policies[p->pol];
	long B = p->budget;
	if (t0 == 0 && d->layer && d->layer(c, v, B) < 0)
		return -1;
	if (d->chunk && *n > d->chunk)
		*n = d->chunk;
	kv_rec *r = c->res->rec ? &c->res->rec[c->pair * (size_t)c->L + (size_t)(v->layer - 1)] : NULL;
	long *lo = r ? r->lo : c->lo, *nk = r ? r->nk : c->nk, cap;
	d->choose(c, v, t0, *n, B, &cap);
	int cut = 0;
	for (long i = t0; i < t0 + *n; i++) {
		solve(i, B, c->K, c->nK, cap, &lo[i], &nk[i]);
		cut |= i > B;
	}
	if (r && rec_append(r, t0, c->K, c->nK) < 0)
		return -1;
	if (!cut)
		return 0;   /* every key: the plain attention */
	c->sel = (ss_attn_sel){lo + t0, nk + t0, r ? r->kept + r->off[t0 / r->chunk] : c->K, (long)c->nK};
	*sel = &c->sel;
	return 0;
}

static void on_layer(void *ctx, int done, int L)
{
	kv_ctx *c = ctx;
	if (c->o->progress)
		c->o->progress(c->o->progress_ctx, c->pass, c->n_pass, done, L);
}

/* ---- measures ------------------------------------------------------------ */

/* log of the sum of exp(x): p[v] = exp(x[v] - max) (vectorized), *sum
 * their sum in double; *arg: the first largest entry */
static double logsumexp(const float *x, long n, float *p, double *sum, long *arg)
{
	float m = k_max(x, n);
	long a = 0;
	while (x[a] != m)
		a++;
	*arg = a;
	k_exp_shift_to(p, x, n, m);
	double t = 0;   /* the float exps summed in double: KL near 0 needs it */
	for (long v = 0; v < n; v++)
		t += (double)p[v];
	*sum = t;
	return (double)m + log(t);
}

/* NLL, KL and top-1 of every pair from the final hidden states */
static int compare(ss_fwd *f, const ss_model *m, const int32_t *ids, long T, const float *hf,
                   float *const *hp, kv_result *res, ss_err *e)
{
	long V = m->c.vocab, D = m->c.dim, N = T - 1;
	size_t np = res->np;
	float *lf = ss_malloc_big((size_t)(LOGIT_ROWS * V), 4, "logits", e);
	float *lp = lf ? ss_malloc_big((size_t)(LOGIT_ROWS * V), 4, "logits", e) : NULL;
	float *pf = lp ? ss_malloc_big((size_t)(LOGIT_ROWS * V), 4, "probabilities", e) : NULL;
	float *sc = pf ? ss_malloc((size_t)V, 4, "probabilities", e) : NULL;
	double *acc = sc ? ss_calloc(np * 3 + 1, sizeof *acc, "measures", e) : NULL;
	int rc = acc ? 0 : -1;
	for (long t0 = 0; !rc && t0 < N; t0 += LOGIT_ROWS) {
		long nr = N - t0 < LOGIT_ROWS ? N - t0 : LOGIT_ROWS;
		if (fwd_logits(f, hf + t0 * D, nr, lf, e) < 0) {
			rc = -1;
			break;
		}
		double lsef[LOGIT_ROWS], sf[LOGIT_ROWS];
		long argf[LOGIT_ROWS];
		for (long r = 0; r < nr; r++) {
			/* pf / sf: the reference's probabilities */
			lsef[r] = logsumexp(lf + r * V, V, pf + r * V, &sf[r], &argf[r]);
			acc[np * 3] += lsef[r] - (double)lf[r * V + ids[t0 + r + 1]];
		}
		for (size_t p = 0; p < np && !rc; p++) {
			if (!hp[p])
				continue;
			if (fwd_logits(f, hp[p] + t0 * D, nr, lp, e) < 0) {
				rc = -1;
				break;
			}
			for (long r = 0; r < nr; r++) {
				const float *a = lf + r * V, *b = lp + r * V, *q = pf + r * V;
				long argp;
				double sp, lsep = logsumexp(b, V, sc, &sp, &argp), kl = 0;
				/* KL = sum p_f (log p_f - log p) = sum p_f (a - b) + lse_p - lse_f,
				 * p_f = q / sf normalised by the very sum of its terms */
				for (long v = 0; v < V; v++)
					kl += (double)q[v] * ((double)a[v] - (double)b[v]);
				acc[p * 3] += lsep - (double)b[ids[t0 + r + 1]];
				kl = kl / sf[r] + (lsep - lsef[r]);
				acc[p * 3 + 1] += kl > 0 ? kl : 0.0;   /* rounding dips below 0 when p = p_f */
				acc[p * 3 + 2] += argp == argf[r];
			}
		}
	}
	if (!rc) {
		double nf = acc[np * 3] / (double)N;
		for (size_t p = 0; p < np; p++) {
			kv_total *t = &res->tot[p];
			t->nll_full = nf;
			if (!hp[p]) {
				*t = (kv_total){nf, nf, 1, 0, 1};
				continue;
			}
			t->nll = acc[p * 3] / (double)N;
			t->ppl_ratio = exp(t->nll - nf);
			t->kl = acc[p * 3 + 1] / (double)N;
			t->top1 = acc[p * 3 + 2] / (double)N;
		}
	}
	free(lf);
	free(lp);
	free(pf);
	free(sc);
	free(acc);
	return rc;
}

static int rec_alloc(kv_result *res, ss_err *e)
{
	long T = res->T;
	if (!(res->rec = ss_calloc(res->np * (size_t)res->L, sizeof *res->rec, "selections", e)))
		return -1;
	for (size_t p = 0; p < res->np; p++) {
		long chunk = policies[res->pairs[p].pol].chunk ? KV_CHUNK : T;
		for (long l = 0; l < res->L && res->pairs[p].pol != KV_FULL; l++) {
			kv_rec *r = &res->rec[p * (size_t)res->L + (size_t)l];
			r->chunk = chunk;
			if (!(r->lo = ss_malloc((size_t)T, sizeof *r->lo, "selections", e)) ||
			    !(r->nk = ss_malloc((size_t)T, sizeof *r->nk, "selections", e)) ||
			    !(r->off = ss_calloc((size_t)(T / chunk + 2), sizeof *r->off, "selections", e)))
				return -1;
		}
	}
	return 0;
}

int kv_run(const ss_model *m, const int32_t *ids, long T, const kv_pair *pairs, size_t np,
           const kv_opts *o, kv_result **out, ss_err *e)
{
	const ss_config *cf = &m->c;
	long L = cf->n_layers, D = cf->dim, k = o->first > 0 ? o->first : 0;
	*out = NULL;
	if (T < 2)
		return ss_err_set(e, "%ld token: the next-token measures need at least 2", T);
	if (cf->max_pos > 0 && T > cf->max_pos)
		return ss_err_set(e, "%s/config.json:max_position_embeddings: %ld tokens exceed %ld", m->dir, T,
		                  cf->max_pos);
	for (size_t p = 0; p < np; p++)
		if (pairs[p].budget < 1)
			return ss_err_status(e, SS_EXIT_USAGE, "--budgets: %ld, a budget must be at least 1",
			                     pairs[p].budget);
	kv_result *res = ss_calloc(1, sizeof *res, "results", e);
	kv_ctx c = {.o = o, .res = res, .T = T, .L = L};
	ss_fwd *f = NULL;
	float *norm = NULL, *cos0 = NULL, *hf = NULL, **hp = NULL;
	int rc = -1;
	if (!res)
		return -1;
	res->T = T;
	res->L = L;
	res->np = np;
	if (!(res->pairs = ss_malloc(np ? np : 1, sizeof *res->pairs, "results", e)))
		goto done;
	memcpy(res->pairs, pairs, np * sizeof *pairs);
	if (!(res->tot = ss_calloc(np ? np : 1, sizeof *res->tot, "results", e)) ||
	    (o->per_layer && !(res->lay = ss_calloc(np * (size_t)L + 1, sizeof *res->lay, "results", e))) ||
	    ((o->per_layer || o->masks) && rec_alloc(res, e) < 0) ||
	    !(c.lo = ss_malloc((size_t)T, sizeof *c.lo, "selection", e)) ||
	    !(c.nk = ss_malloc((size_t)T, sizeof *c.nk, "selection", e)) ||
	    !(c.K = ss_malloc((size_t)(T + k), sizeof *c.K, "selection", e)) ||
	    !(c.keep = ss_malloc((size_t)T, sizeof *c.keep, "selection", e)) ||
	    !(c.sinks = ss_malloc((size_t)(T + k), sizeof *c.sinks, "selection", e)) ||
	    !(c.sorted = ss_malloc((size_t)T, sizeof *c.sorted, "selection", e)) ||
	    !(c.score = ss_malloc((size_t)T, sizeof *c.score, "selection", e)) ||
	    !(c.msel = ss_malloc(np + 1, sizeof *c.msel, "measurement", e)) ||
	    !(c.cls = ss_malloc((size_t)T, 1, "measurement", e)) ||
	    !(c.lost = ss_calloc((size_t)L * np * 3 + 1, sizeof *c.lost, "measurement", e)) ||
	    !(norm = ss_malloc((size_t)((L + 1) * T), 4, "statistics", e)) ||
	    !(cos0 = ss_malloc((size_t)((L + 1) * T), 4, "statistics", e)) ||
	    !(hf = ss_malloc_big((size_t)(T * D), 4, "hidden states", e)) ||
	    !(hp = ss_calloc(np + 1, sizeof *hp, "hidden states", e)))
		goto done;
	c.n_pass = 1 + !!o->per_layer;
	for (size_t p = 0; p < np; p++) {
		if (pairs[p].pol == KV_FULL)
			continue;
		c.n_pass++;
		if (!(hp[p] = ss_malloc_big((size_t)(T * D), 4, "hidden states", e)))
			goto done;
	}
	ss_fwd_opts fo = {.threads = o->threads, .keep_head = 1, .select = kv_select, .select_ctx = &c, .progress = on_layer,
	                  .progress_ctx = &c};
	if (fwd_create(&f, m, &fo, T, e) < 0)
		goto done;
	ss_stats st = {.resid_norm = norm, .resid_cos0 = cos0};
	c.mode = M_PLAIN;
	c.pass = 1;
	if (fwd_prefill(f, ids, T, &st, hf, e) < 0)
		goto done;
	c.mode = M_POLICY;
	for (size_t p = 0; p < np; p++) {
		if (!hp[p])
			continue;
		c.pair = p;
		c.pass++;
		if (fwd_prefill(f, ids, T, &st, hp[p], e) < 0) {
			ss_err_prefix(e, "%s %ld", kv_policy_names[pairs[p].pol], pairs[p].budget);
			goto done;
		}
	}
	if (o->per_layer) {
		c.mode = M_MEASURE;
		c.pass++;
		if (fwd_prefill(f, ids, T, &st, NULL, e) < 0)
			goto done;
		double q = (double)T * (double)cf->n_heads;
		for (size_t p = 0, s = 0; p < np; p++) {
			if (pairs[p].pol == KV_FULL)
				continue;
			for (long l = 0; l < L; l++) {
				const double *x = c.lost + ((size_t)l * np + s) * 3;
				kv_layer *y = &res->lay[p * (size_t)L + (size_t)l];
				y->primary = x[1] / q;
				y->secondary = x[2] / q;
				y->rest = x[0] / q;
				y->lost = y->primary + y->secondary + y->rest;
			}
			s++;
		}
	}
	if (compare(f, m, ids, T, hf, hp, res, e) < 0)
		goto done;
	*out = res;
	res = NULL;
	rc = 0;
done:
	fwd_free(f);
	for (size_t p = 0; hp && p < np; p++)
		free(hp[p]);
	free(hp);
	free(hf);
	free(norm);
	free(cos0);
	free(c.lo);
	free(c.nk);
	free(c.K);
	free(c.keep);
	free(c.sinks);
	free(c.sorted);
	free(c.score);
	free(c.msel);
	free(c.cls);
	free(c.lost);
	kv_result_free(res);
	return rc;
}

/* ---- tables -------------------------------------------------------------- */

static void put_head(FILE *f, const char *trace, const kv_pair *p)
{
	tsv_put_escaped(f, trace, strlen(trace));
	fprintf(f, "\t%s\t%ld", kv_policy_names[p->pol], p->budget);
}

void kv_totals_write(FILE *f, const char *trace, const kv_result *r)
{
	fputs(KV_TOTALS_HEADER, f);
	for (size_t p = 0; p < r->np; p++) {
		const kv_total *t = &r->tot[p];
		put_head(f, trace, &r->pairs[p]);
		fprintf(f, "\t%ld", r->T);
		double v[] = {t->nll, t->nll_full, t->ppl_ratio, t->kl, t->top1};
		tsv_put_row_end(f, v, 5);
	}
}

void kv_layers_write(FILE *f, const char *trace, const kv_result *r)
{
	fputs(KV_LAYERS_HEADER, f);
	for (size_t p = 0; r->lay && p < r->np; p++)
		for (long l = 1; l <= r->L; l++) {
			const kv_layer *y = kv_result_layer(r, p, l);
			put_head(f, trace, &r->pairs[p]);
			fprintf(f, "\t%ld", l);
			double v[] = {y->lost, y->primary, y->secondary, y->rest};
			tsv_put_row_end(f, v, 4);
		}
}

void kv_masks_write(FILE *f, const kv_result *r)
{
	fputs(KV_MASKS_HEADER, f);
	for (size_t p = 0; r->rec && p < r->np; p++) {
		if (r->pairs[p].pol == KV_FULL)
			continue;
		for (long l = 0; l < r->L; l++) {
			const kv_rec *x = &r->rec[p * (size_t)r->L + (size_t)l];
			for (long i = 0; i < r->T; i++) {
				if (x->lo[i] == 0)
					continue;
				fprintf(f, "%s\t%ld\t%ld\t%ld\t%ld\t", kv_policy_names[r->pairs[p].pol], r->pairs[p].budget,
				        l + 1, i, x->lo[i]);
				const long *K = x->kept + x->off[i / x->chunk];
				for (long k = 0; k < x->nk[i]; k++)
					fprintf(f, k ? ",%ld" : "%ld", K[k]);
				fputs(x->nk[i] ? "\n" : "-\n", f);
			}
		}
	}
}
