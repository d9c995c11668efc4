/* sinks.c - the sink rule and sink episodes; see sinks.h and sinkdetect(1). */
#include "sinks/sinks.h"
#include "util/opt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void sink_params_default(ss_sink_params *p)
{
	memset(p, 0, sizeof *p);
	p->tau_cos = 0.95;
	/* Measured on planted data and on real dumps; see sinkdetect(1). */
	p->tau_norm = 5.0;
	p->min_lifetime = 1;
	p->layer_lo = 0;
	p->layer_hi = 0;
	p->primary_start_frac = 0.25;
	p->primary_end_frac = 0.9;
}

int sink_params_check(const ss_sink_params *p, long L, long *lo, long *hi, ss_err *e)
{
	/* Bad parameters are usage errors (2); a range outside the trace is a
	 * mismatch with the data (1). */
	if (!(p->tau_cos > -1 && p->tau_cos < 1))
		return ss_err_status(e, SS_EXIT_USAGE, "--tau-cos %g: must lie in (-1, 1)", p->tau_cos);
	if (!(p->tau_norm >= 0))
		return ss_err_status(e, SS_EXIT_USAGE, "--tau-norm %g: must be >= 0", p->tau_norm);
	if (p->min_lifetime < 1)
		return ss_err_status(e, SS_EXIT_USAGE, "--min-lifetime %ld: must be >= 1",
		                     p->min_lifetime);
	if (!(p->primary_start_frac >= 0 && p->primary_start_frac <= 1))
		return ss_err_status(e, SS_EXIT_USAGE, "--primary-start %g: must lie in [0, 1]",
		                     p->primary_start_frac);
	if (!(p->primary_end_frac >= 0 && p->primary_end_frac <= 1))
		return ss_err_status(e, SS_EXIT_USAGE, "--primary-end %g: must lie in [0, 1]",
		                     p->primary_end_frac);
	char r[48];
	if (p->layer_lo < 0 || p->layer_hi < 0 || (p->layer_hi && p->layer_lo > p->layer_hi))
		return ss_err_status(e, SS_EXIT_USAGE, "--layers: layer range %s: expected 1 <= A <= B",
		                     ss_format_range(p->layer_lo, p->layer_hi, r, sizeof r));
	long a = p->layer_lo ? p->layer_lo : 1, b = p->layer_hi ? p->layer_hi : L;
	if (a < 1 || b > L || a > b)
		return ss_err_set(e, "layer%s %s: outside the trace's layers 1-%ld", a == b ? "" : " range",
		                  ss_format_range(a, b, r, sizeof r), L);
	*lo = a;
	*hi = b;
	return 0;
}

/* Quickselect of the k-th smallest in x[0..n) (reorders x). */
static float kth(float *x, long n, long k)
{
	long lo = 0, hi = n - 1;
	while (lo < hi) {
		float piv = x[lo + (hi - lo) / 2];
		long i = lo, j = hi;
		while (i <= j) {
			while (x[i] < piv)
				i++;
			while (x[j] > piv)
				j--;
			if (i <= j) {
				float t = x[i];
				x[i] = x[j];
				x[j] = t;
				i++;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return x[k];
	}
	return x[k];
}

static double median_scratch(const float *x, long n, float *tmp)
{
	if (n <= 0)
		return 0;
	memcpy(tmp, x, (size_t)n * sizeof *tmp);
	double hi = kth(tmp, n, n / 2);
	if (n % 2)
		return hi;
	/* Lower middle: the largest of the lower half left by the selection. */
	float lo = tmp[0];
	for (long i = 1; i < n / 2; i++)
		if (tmp[i] > lo)
			lo = tmp[i];
	return 0.5 * ((double)lo + hi);
}

int ss_median_f32(const float *x, long n, double *med, ss_err *e)
{
	*med = 0;
	if (n <= 0)
		return 0;
	float *tmp = ss_malloc((size_t)n, sizeof *tmp, "median scratch", e);
	if (!tmp)
		return -1;
	*med = median_scratch(x, n, tmp);
	free(tmp);
	return 0;
}

int ss_is_sink(const ss_sink_params *p, double cos0, double norm, double median_norm)
{
	return cos0 > p->tau_cos && norm >= p->tau_norm * median_norm;
}

/* med[l] = median over positions of ||h[l][j]||, l = 0..L. */
static int layer_medians(const ss_trace *tr, double *med, ss_err *e)
{
	float *tmp = ss_malloc((size_t)tr->T, sizeof(float), "median scratch", e);
	if (!tmp)
		return -1;
	for (long l = 0; l <= tr->L; l++)
		med[l] = median_scratch(tr->resid_norm + (size_t)l * tr->T, tr->T, tmp);
	free(tmp);
	return 0;
}

/* The rule over layers lo..hi given the layer medians med[0..L]. */
static void mask_from(const ss_trace *tr, const ss_sink_params *p, long lo, long hi,
                      const double *med, unsigned char *mask)
{
	long T = tr->T;
	memset(mask, 0, (size_t)(tr->L + 1) * (size_t)T);
	for (long l = lo; l <= hi; l++) {
		const float *nr = tr->resid_norm + (size_t)l * T, *cs = tr->resid_cos0 + (size_t)l * T;
		unsigned char *m = mask + (size_t)l * T;
		for (long j = 1; j < T; j++)
			m[j] = (unsigned char)ss_is_sink(p, cs[j], nr[j], med[l]);
	}
}

int sink_mask(const ss_trace *tr, const ss_sink_params *p, unsigned char *mask, ss_err *e)
{
	long lo, hi;
	if (sink_params_check(p, tr->L, &lo, &hi, e))
		return -1;
	double *med = ss_malloc((size_t)tr->L + 1, sizeof(double), "medians", e);
	if (!med || layer_medians(tr, med, e)) {
		free(med);
		return -1;
	}
	mask_from(tr, p, lo, hi, med, mask);
	free(med);
	return 0;
}

double sink_score(const ss_trace *tr, long l, long j)
{
	const float *r = tr->recv + (size_t)(l - 1) * tr->H * tr->T + j;
	double s = 0;
	for (long k = 0; k < tr->H; k++)
		s += r[(size_t)k * tr->T];
	return s / (double)tr->H;
}

static void fill(const ss_trace *tr, const double *med, ss_episode *ep, long j, long a, long b)
{
	long T = tr->T;
	memset(ep, 0, sizeof *ep);
	ep->pos = j;
	ep->token = tr->ids[j];
	ep->l_start = a;
	ep->l_end = b;
	ep->lifetime = b - a + 1;
	if (tr->moe_experts) {   /* mixtures of experts: who wrote m[l_start][j] */
		size_t o = 0;
		const int32_t *x = tr->moe_experts + ((size_t)(a - 1) * (size_t)T + (size_t)j) * (size_t)tr->K;
		for (long k = 0; k < tr->K && o + 12 < sizeof ep->experts; k++)
			o += (size_t)snprintf(ep->experts + o, sizeof ep->experts - o, "%s%d", k ? "," : "",
			                      (int)x[k]);
	}
	double cs = 0;
	for (long l = a; l <= b; l++) {
		double nrm = tr->resid_norm[(size_t)l * T + j];
		double r = med[l] > 0 ? nrm / med[l] : INFINITY;
		if (nrm > ep->peak_norm)
			ep->peak_norm = nrm;
		if (r > ep->norm_ratio)
			ep->norm_ratio = r;
		cs += tr->resid_cos0[(size_t)l * T + j];
	}
	if (!isfinite(ep->norm_ratio))
		ep->norm_ratio = 0; /* all-zero layer: no meaningful ratio */
	ep->cos0 = cs / (double)ep->lifetime;
	/* The attention a state h[l] receives is paid by the next layer, l+1
	 * (HF: attentions[l] reads hidden_states[l]); layer l's own attention
	 * reads h[l-1] and cannot see a sink its MLP has just made.  So the
	 * episode's scores are those of layers l_start+1 .. l_end+1 (up to L);
	 * an episode that starts at the last layer has no reader: 0. */
	double sc = 0;
	long hi = b + 1 <= tr->L ? b + 1 : tr->L, cnt = 0;
	for (long l = a + 1; l <= hi; l++, cnt++)
		sc += sink_score(tr, l, j);
	ep->score = cnt ? sc / (double)cnt : 0;
	ep->score_start = a < tr->L ? sink_score(tr, a + 1, j) : 0;
	ep->mlp_norm_start = tr->mlp_out_norm[(size_t)(a - 1) * T + j];
}

int sink_episodes(const ss_trace *tr, const ss_sink_params *p, ss_episode **eps, size_t *n,
                  ss_err *e)
{
	*eps = NULL;
	*n = 0;
	long lo, hi, L = tr->L, T = tr->T;
	if (sink_params_check(p, L, &lo, &hi, e))
		return -1;
	size_t cells = (size_t)(L + 1) * (size_t)T;
	unsigned char *mask = ss_malloc(cells, 1, "sink mask", e);
	double *med = ss_malloc((size_t)L + 1, sizeof(double), "medians", e);
	ss_episode *out = NULL;
	size_t cnt = 0, cap = 0;
	int rc = -1;
	if (!mask || !med || layer_medians(tr, med, e))
		goto done;
	mask_from(tr, p, lo, hi, med, mask);
	long nl = hi - lo + 1;
	long smax = lo - 1 + (long)fmax(1, ceil(p->primary_start_frac * (double)nl - 1e-9));
	long emin = lo - 1 + (long)fmax(1, floor(p->primary_end_frac * (double)nl + 1e-9));
	cap = 64;
	out = ss_malloc(cap, sizeof *out, "episodes", e);
	if (!out)
		goto done;
	fill(tr, med, &out[cnt], 0, lo, hi);
	out[cnt].primary = 1;
	out[cnt].cos0 = 1;
	cnt++;
	for (long j = 1; j < T; j++) {
		for (long l = lo; l <= hi; l++) {
			if (!mask[(size_t)l * T + j])
				continue;
			long a = l;
			while (l + 1 <= hi && mask[(size_t)(l + 1) * T + j])
				l++;
			long b = l;
			if (b - a + 1 < p->min_lifetime)
				continue;
			if (cnt == cap) {
				ss_episode *ne = realloc(out, 2 * cap * sizeof *out);
				if (!ne) {
					ss_err_set(e, "out of memory for episodes");
					goto done;
				}
				out = ne;
				cap *= 2;
			}
			fill(tr, med, &out[cnt], j, a, b);
			out[cnt].primary = a <= smax && b >= emin;
			cnt++;
		}
	}
	*eps = out;
	*n = cnt;
	out = NULL;
	rc = 0;
done:
	free(out);
	free(med);
	free(mask);
	return rc;
}

int sink_params_write_h5(ss_h5 *f, const char *g, const ss_sink_params *p, long lo, long hi,
                         ss_err *e)
{
	if (h5_set_attr_f64(f, g, "tau_cos", p->tau_cos, e) ||
	    h5_set_attr_f64(f, g, "tau_norm", p->tau_norm, e) ||
	    h5_set_attr_int(f, g, "min_lifetime", p->min_lifetime, e) ||
	    h5_set_attr_int(f, g, "layer_lo", lo, e) || h5_set_attr_int(f, g, "layer_hi", hi, e) ||
	    h5_set_attr_f64(f, g, "primary_start_frac", p->primary_start_frac, e) ||
	    h5_set_attr_f64(f, g, "primary_end_frac", p->primary_end_frac, e))
		return -1;
	return 0;
}
