/* kvevict_pol.c - the eviction policies and the selection; see kvevict.h.
 *
 * Each policy is one small function (the table `policies`) that, for a
 * block of queries t0.., lists the keys it keeps besides the window (sorted)
 * and how many of them may count: `cap`.  One solver then gives each query
 * i > B its window: the largest lo with min(cap, #kept below lo) + (i - lo)
 * = B, so that every query sees exactly B cached keys; a query i <= B sees
 * them all.  The engine runs the selection (forward.h, ss_select_fn); its
 * statistics of the layer's input (norms, cosines to position 0) and the
 * attention received so far are all a policy looks at. */
#include <stdlib.h>
#include <string.h>

#include "interv/kvevict_int.h"
#include "util/rng.h"

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

long kv_policy_chunk(kv_policy pol)
{
	return policies[pol].chunk;
}

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

/* The recorded choice of pair p (not full) at layer l, and its list of the
 * block of query t0 (*nK entries). */
static const kv_rec *rec_of(const kv_ctx *c, size_t p, int l, long t0, const long **K, long *nK)
{
	const kv_rec *r = &c->res->rec[p * (size_t)c->L + (size_t)(l - 1)];
	long b = t0 / r->chunk;
	*K = r->kept + r->off[b];
	*nK = r->off[b + 1] - r->off[b];
	return r;
}

/* classes of the keys at layer l: 1 primary (position 0, primary
 * episodes), 2 secondary sinks, 0 the rest */
static void key_classes(kv_ctx *c, const ss_sel_view *v)
{
	int l = v->layer;
	memset(c->cls, 0, (size_t)v->T);
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

static int select_measure(kv_ctx *c, const ss_sel_view *v, long t0, long *n, const ss_attn_meas **meas)
{
	int l = v->layer;
	if (t0 == 0)
		key_classes(c, v);
	if (*n > KV_CHUNK)
		*n = KV_CHUNK;
	int k = 0;
	for (size_t p = 0; p < c->res->np; p++) {
		if (c->res->pairs[p].pol == KV_FULL)
			continue;
		const long *K;
		long nK;
		const kv_rec *r = rec_of(c, p, l, t0, &K, &nK);
		c->msel[k] = (ss_attn_sel){r->lo + t0, r->nk + t0, K, nK};
		k++;
	}
	if (!k)
		return 0;
	c->meas = (ss_attn_meas){k, c->msel, c->cls, c->lost + (size_t)(l - 1) * c->res->np * 3};
	*meas = &c->meas;
	return 0;
}

int kv_select(void *ctx, const ss_sel_view *v, long t0, long *n, const ss_attn_sel **sel,
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
	kv_rec *r = c->res->rec ? &c->res->rec[c->pair * (size_t)c->L + (size_t)(v->layer - 1)] : NULL;
	long *lo = r ? r->lo : c->lo, *nk = r ? r->nk : c->nk;
	if (t0 == 0)
		c->solved = 0;
	if (t0 >= c->solved) {   /* a new choice for the queries t0.. */
		if (t0 == 0 && d->layer && d->layer(c, v, B) < 0)
			return -1;
		if (d->chunk && *n > d->chunk)
			*n = d->chunk;
		long cap;
		d->choose(c, v, t0, *n, B, &cap);
		for (long i = t0; i < t0 + *n; i++)   /* the layer's window: the engine's (attn_keys) */
			solve(i, B, c->K, c->nK, cap, &lo[i], &nk[i]);
		if (r && rec_append(r, t0, c->K, c->nK) < 0)
			return -1;
		c->solved = t0 + *n;
	}
	/* one call per choice (the list is one for the call) */
	long m = c->solved - t0;
	*n = m;
	int cut = 0;
	for (long i = t0; i < t0 + m; i++)
		cut |= i > B;
	if (!cut)
		return 0;   /* every key (of the window): the plain attention */
	const long *K = r ? r->kept + r->off[t0 / r->chunk] : c->K;
	c->sel = (ss_attn_sel){lo + t0, nk + t0, K, (long)c->nK};
	*sel = &c->sel;
	return 0;
}

void kv_on_layer(void *ctx, int done, int L)
{
	kv_ctx *c = ctx;
	if (c->o->progress)
		c->o->progress(c->o->progress_ctx, c->pass, c->n_pass, done, L);
}
