/* decision.c - future sinks and controls per layer, and the separability
 * scan.  See decision.h. */
#include "analysis/decision.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/episodes.h"
#include "io/tsv.h"
#include "sinks/tokclass.h"
#include "util/rng.h"

const char *const decision_lab_name[DECISION_NLAB] = {"future", "control", "other", "twin", "-"};

int decision_init(decision_set *d, ss_mat_src *S, int ns, const decision_rule *rule, ss_err *e)
{
	memset(d, 0, sizeof *d);
	d->S = S;
	d->ns = ns;
	d->rule = *rule;
	d->tr = ss_calloc(ns > 0 ? ns : 1, sizeof *d->tr, "traces", e);
	d->control = ss_calloc(ns > 0 ? ns : 1, sizeof *d->control, "controls", e);
	d->twin = ss_calloc(ns > 0 ? ns : 1, sizeof *d->twin, "twins", e);
	d->never = ss_calloc(ns > 0 ? ns : 1, sizeof *d->never, "sink masks", e);
	return d->tr && d->control && d->twin && d->never ? 0 : -1;
}

int decision_load(decision_set *d, int k, const ss_sink_params *sp, unsigned classes, ss_err *e)
{
	ss_mat_src *s = &d->S[k];
	if (trace_read_h5(s->h, &d->tr[k], e) < 0)
		return -1;
	s->T_known = 1;
	s->T = d->tr[k].T;
	if (d->L && d->tr[k].L != d->L)
		return ss_err_set(e, "%s: %ld layers, but %s has %ld", s->file, d->tr[k].L, d->S[0].file,
		                  d->L);
	d->L = d->tr[k].L;
	if (!(d->control[k] = calloc(s->T > 0 ? s->T : 1, 1)))
		return ss_err_set(e, "out of memory");
	if (tokclass_controls(&d->tr[k], sp, classes, d->control[k], e) < 0)
		return ss_err_prefix(e, "%s", s->file);
	/* never a sink: the rule at no layer */
	long L = d->L, T = s->T;
	unsigned char *m = ss_malloc((size_t)(L + 1) * (size_t)(T > 0 ? T : 1), 1, "sink mask", e);
	if (!m || !(d->never[k] = ss_calloc(T > 0 ? T : 1, 1, "sink mask", e)) ||
	    sink_mask(&d->tr[k], sp, m, e) < 0) {
		free(m);
		return m ? ss_err_prefix(e, "%s", s->file) : -1;
	}
	for (long j = 0; j < T; j++) {
		int sink = 0;
		for (long l = 0; l <= L && !sink; l++)
			sink = m[(size_t)l * T + j];
		d->never[k][j] = !sink;
	}
	free(m);
	return 0;
}

void decision_free(decision_set *d)
{
	for (int k = 0; k < d->ns; k++) {
		if (d->tr)
			trace_free(&d->tr[k]);
		if (d->control)
			free(d->control[k]);
		if (d->twin)
			free(d->twin[k]);
		if (d->never)
			free(d->never[k]);
	}
	free(d->tr);
	free(d->control);
	free(d->twin);
	free(d->never);
	free(d->ep);
	memset(d, 0, sizeof *d);
}

static int wanted_level(const decision_rule *r, long level);

/* episode p passes the rule (at some layer) */
static int passes(const decision_rule *r, const decision_future *p)
{
	return p->lifetime >= r->min_life && p->l_start >= r->lo && p->l_start <= r->hi &&
	       wanted_level(r, p->level);
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* twin[k][j]: never a sink, not an episode, and the token of a future sink
 * (an episode passing the rule, in any of the traces) */
static int find_twins(decision_set *d, ss_err *e)
{
	int32_t *tok = ss_malloc(d->n_ep ? d->n_ep : 1, sizeof *tok, "tokens", e);
	if (!tok)
		return -1;
	size_t nt = 0;
	for (size_t i = 0; i < d->n_ep; i++)
		if (passes(&d->rule, &d->ep[i]))
			tok[nt++] = d->tr[d->ep[i].si].ids[d->ep[i].pos];
	qsort(tok, nt, sizeof *tok, cmp_i32);
	for (int k = 0; k < d->ns; k++) {
		long T = d->S[k].T;
		if (!(d->twin[k] = ss_calloc(T > 0 ? T : 1, 1, "twins", e))) {
			free(tok);
			return -1;
		}
		for (long j = 1; j < T; j++)
			d->twin[k][j] = d->never[k][j] && nt &&
			                bsearch(&d->tr[k].ids[j], tok, nt, sizeof *tok, cmp_i32);
	}
	/* a position with an episode is no twin (it is a sink, or its episode
	 * failed the rule) */
	for (size_t i = 0; i < d->n_ep; i++)
		d->twin[d->ep[i].si][d->ep[i].pos] = 0;
	free(tok);
	return 0;
}

int decision_read_episodes(decision_set *d, const char *path, ss_err *e)
{
	ss_eptab t = {0};
	const decision_rule *r = &d->rule;
	/* levels: membership from sinklevels' assignment, never from the
	 * (l_start, lifetime) ranges of the level table */
	unsigned need = EP_BIT(EP_TRACE) | EP_BIT(EP_POS) | EP_BIT(EP_KIND) | EP_BIT(EP_L_START) |
	                EP_BIT(EP_LIFETIME) | (r->n_levels ? EP_BIT(EP_LEVEL) : 0);
	if (eptab_read(&t, path, need, e) < 0)
		return -1;
	int rc = -1;
	size_t matched = 0;
	const ss_mat_src *S = d->S;
	if (!(d->ep = ss_malloc(t.n ? t.n : 1, sizeof *d->ep, "episodes", e)))
		goto done;
	for (size_t i = 0; i < t.n; i++) {
		const ss_episode *p = &t.ep[i];
		const char *tr = t.trace[i];
		int si = -1;
		for (int k = 0; k < d->ns; k++)
			if (!strcmp(S[k].name, tr) || !strcmp(S[k].file, tr))
				si = k;
		if (si < 0)
			continue; /* an episode of a trace not given */
		matched++;
		if (p->pos >= S[si].T) {
			ss_err_set(e, "%s:%ld: pos %ld outside trace '%s' (%ld tokens): labels do not match the vectors",
			           path, t.line[i], p->pos, tr, S[si].T);
			goto done;
		}
		if ((t.cols & EP_BIT(EP_TOKEN)) && p->token != d->tr[si].ids[p->pos]) {
			ss_err_set(e, "%s:%ld: token %ld at pos %ld, but trace '%s' has %ld there: labels do not match the vectors",
			           path, t.line[i], (long)p->token, p->pos, tr, (long)d->tr[si].ids[p->pos]);
			goto done;
		}
		if (!p->primary)
			d->ep[d->n_ep++] = (decision_future){si, p->pos, p->l_start, p->lifetime, p->level};
	}
	if (!matched) {
		ss_err_set(e, "%s: no episode names an input trace (%s%s): labels do not match the vectors",
		           path, S[0].name, d->ns > 1 ? ", ..." : "");
		goto done;
	}
	for (size_t k = 0; k < r->n_levels; k++) {
		size_t i = 0;
		while (i < t.n && t.ep[i].level != r->levels[k])
			i++;
		if (i == t.n) {
			ss_err_set(e, "%s: no episode of level %ld", path, r->levels[k]);
			goto done;
		}
	}
	rc = find_twins(d, e);
done:
	eptab_free(&t);
	return rc;
}

static int wanted_level(const decision_rule *r, long level)
{
	for (size_t k = 0; k < r->n_levels; k++)
		if (r->levels[k] == level)
			return 1;
	return !r->n_levels;
}

/* the token at (si, pos) is a future sink's somewhere */
static int is_future_text(const decision_set *d, int si, long pos)
{
	int32_t id = d->tr[si].ids[pos];
	for (size_t k = 0; k < d->n_ep; k++)
		if (passes(&d->rule, &d->ep[k]) && d->tr[d->ep[k].si].ids[d->ep[k].pos] == id)
			return 1;
	return 0;
}

int decision_label(const decision_set *d, int si, long pos, long l)
{
	const decision_rule *r = &d->rule;
	for (size_t k = 0; k < d->n_ep; k++) {
		const decision_future *p = &d->ep[k];
		if (p->si == si && p->pos == pos && p->l_start > l && passes(r, p))
			return DECISION_FUTURE;
	}
	if (d->twin[si] && d->twin[si][pos])
		return DECISION_TWIN;
	if (d->control[si] && d->control[si][pos] && !is_future_text(d, si, pos))
		return DECISION_CONTROL;
	return DECISION_OTHER;
}

int decision_label_rows(const decision_set *d, ss_matrix *m, long l, ss_err *e)
{
	if (!(m->lab = ss_malloc(m->n ? m->n : 1, sizeof *m->lab, "labels", e)))
		return -1;
	for (long i = 0; i < m->n; i++)
		m->lab[i] = decision_label(d, m->si[i], m->pos[i], l);
	return 0;
}

/* ------------------------------------------------------------------ scan */

void decision_wilson(double p, long n, double z, double *lo, double *hi)
{
	if (n <= 0) {
		*lo = 0, *hi = 1;
		return;
	}
	double z2n = z * z / (double)n;
	double mid = p + z2n / 2, w = z * sqrt(p * (1 - p) / (double)n + z2n / (4 * (double)n));
	*lo = (mid - w) / (1 + z2n);
	*hi = (mid + w) / (1 + z2n);
	if (*lo < 0)
		*lo = 0;
	if (*hi > 1)
		*hi = 1;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Shuffle lab within each group of equal grp[] (Fisher-Yates over the
 * rows of a group); members [n] and done [n] are scratch. */
static void permute_within(int *lab, const int32_t *grp, long n, long *members,
                           unsigned char *done, uint64_t *rng)
{
	memset(done, 0, (size_t)n);
	for (long i = 0; i < n; i++) {
		if (done[i])
			continue;
		long m = 0;
		for (long j = i; j < n; j++)
			if (!done[j] && grp[j] == grp[i]) {
				members[m++] = j;
				done[j] = 1;
			}
		for (long a = m - 1; a > 0; a--) {
			long b = (long)(ss_rng_unif(rng) * (double)(a + 1));
			if (b > a)
				b = a;
			int t = lab[members[a]];
			lab[members[a]] = lab[members[b]];
			lab[members[b]] = t;
		}
	}
}

/* One comparison over the rows X [n x dim] with labels lab (0 future, 1
 * the other class) and permutation groups grp. */
static int compare(const float *X, long n, long dim, int *lab, const int32_t *grp,
                   const decision_scan_params *p, uint64_t *rng, decision_cmp *o, ss_err *e)
{
	memset(o, 0, sizeof *o);
	for (long i = 0; i < n; i++)
		*(lab[i] ? &o->n1 : &o->n0) += 1;
	if (!o->n0 || !o->n1 || n <= p->k)
		return 0;
	ss_sep s;
	if (sep_measure(X, n, dim, lab, p->k, &s, e) < 0)
		return -1;
	o->have = 1;
	o->acc = s.knn_acc;
	o->silhouette = s.silhouette;
	decision_wilson(o->acc, n, 1.959964, &o->lo, &o->hi);
	int P = p->permutations;
	double *acc = ss_malloc((size_t)P, sizeof *acc, "permutations", e);
	int *pl = ss_malloc((size_t)n, sizeof *pl, "labels", e);
	long *members = ss_malloc((size_t)n, sizeof *members, "permutation", e);
	unsigned char *seen = ss_malloc((size_t)n, 1, "permutation", e);
	int rc = -1;
	if (!acc || !pl || !members || !seen)
		goto done;
	memcpy(pl, lab, (size_t)n * sizeof *pl);
	double sum = 0;
	for (int t = 0; t < P; t++) {
		permute_within(pl, grp, n, members, seen, rng);
		if (sep_measure(X, n, dim, pl, p->k, &s, e) < 0)
			goto done;
		acc[t] = s.knn_acc;
		sum += s.knn_acc;
	}
	qsort(acc, (size_t)P, sizeof *acc, cmp_dbl);
	o->chance = sum / P;
	/* the 95th percentile: the ceil(0.95 P)-th smallest */
	long q = (long)ceil(0.95 * P) - 1;
	o->chance_hi = acc[q < 0 ? 0 : q];
	o->leaves = o->lo > o->chance_hi;
	rc = 0;
done:
	free(acc);
	free(pl);
	free(members);
	free(seen);
	return rc;
}

/* rows of m labelled a or b, packed: X, labels 0 (a) / 1 (b), groups */
static long pack(const ss_matrix *m, const decision_set *d, int a, int b, int by_token, float *X,
                 int *lab, int32_t *grp)
{
	long w = 0;
	for (long i = 0; i < m->n; i++) {
		if (m->lab[i] != a && m->lab[i] != b)
			continue;
		memcpy(X + (size_t)w * m->d, m->X + (size_t)i * m->d, (size_t)m->d * sizeof *X);
		lab[w] = m->lab[i] != a;
		grp[w] = by_token ? d->tr[m->si[i]].ids[m->pos[i]] : 0;
		w++;
	}
	return w;
}

static int scan_layer(const decision_set *d, long l, const decision_scan_params *p,
                      uint64_t *rng, decision_row *o, ss_err *e)
{
	memset(o, 0, sizeof *o);
	o->layer = l;
	ss_matrix R;
	float *X = NULL;
	int *lab = NULL;
	int32_t *grp = NULL;
	int rc = -1;
	if (matrix_read_h5(d->S, d->ns, l, &R, e) < 0 || decision_label_rows(d, &R, l, e) < 0)
		goto done;
	for (long i = 0; i < R.n; i++) {
		o->n_future += R.lab[i] == DECISION_FUTURE;
		o->n_twin += R.lab[i] == DECISION_TWIN;
		o->n_control += R.lab[i] == DECISION_CONTROL;
	}
	long n = o->n_future + (o->n_twin > o->n_control ? o->n_twin : o->n_control);
	X = ss_malloc((size_t)(n ? n : 1) * (size_t)R.d, sizeof *X, "rows", e);
	lab = ss_malloc((size_t)(n ? n : 1), sizeof *lab, "labels", e);
	grp = ss_malloc((size_t)(n ? n : 1), sizeof *grp, "groups", e);
	if (!X || !lab || !grp)
		goto done;
	n = pack(&R, d, DECISION_FUTURE, DECISION_TWIN, 1, X, lab, grp);
	if (compare(X, n, R.d, lab, grp, p, rng, &o->same, e) < 0)
		goto done;
	n = pack(&R, d, DECISION_FUTURE, DECISION_CONTROL, 0, X, lab, grp);
	if (compare(X, n, R.d, lab, grp, p, rng, &o->ctrl, e) < 0)
		goto done;
	rc = 0;
done:
	if (rc < 0)
		ss_err_prefix(e, "layer %ld", l);
	free(X);
	free(lab);
	free(grp);
	matrix_free(&R);
	return rc;
}

long decision_layer_of(const decision_row *r, long n)
{
	long dl = 0;
	for (long i = n - 1; i >= 0; i--) {
		if (!r[i].same.have)
			continue;
		if (!r[i].same.leaves)
			break;
		dl = r[i].layer;
	}
	return dl;
}

int decision_scan(const decision_set *d, const unsigned char *layers,
                  const decision_scan_params *p, decision_row **out, long *n_out,
                  long *decision, ss_err *e)
{
	*out = NULL;
	*n_out = 0;
	*decision = 0;
	decision_row *r = ss_calloc((size_t)d->L + 1, sizeof *r, "scan", e);
	if (!r)
		return -1;
	uint64_t rng = p->seed;
	long n = 0;
	for (long l = 1; l <= d->L; l++) {
		if (!layers[l])
			continue;
		if (scan_layer(d, l, p, &rng, &r[n], e) < 0) {
			free(r);
			return -1;
		}
		n++;
	}
	*out = r;
	*n_out = n;
	*decision = decision_layer_of(r, n);
	return 0;
}

static void put_cmp(FILE *f, const decision_cmp *c)
{
	double v[6] = {c->acc, c->lo, c->hi, c->chance, c->chance_hi, c->silhouette};
	for (int k = 0; k < 6; k++) {
		putc('\t', f);
		if (c->have)
			tsv_put_double(f, v[k]);
		else
			fputs("NA", f);
	}
	fprintf(f, "\t%s", c->have ? (c->leaves ? "1" : "0") : "NA");
}

void decision_scan_write(FILE *f, const decision_row *r, long n, long decision)
{
	fputs("layer\tn_future\tn_twin\tn_control"
	      "\tsame_acc\tsame_lo\tsame_hi\tsame_chance\tsame_chance_hi\tsame_silhouette\tsame_leaves"
	      "\tctrl_acc\tctrl_lo\tctrl_hi\tctrl_chance\tctrl_chance_hi\tctrl_silhouette\tctrl_leaves"
	      "\tdecision\n", f);
	for (long i = 0; i < n; i++) {
		const decision_row *o = &r[i];
		fprintf(f, "%ld\t%ld\t%ld\t%ld", o->layer, o->n_future, o->n_twin, o->n_control);
		put_cmp(f, &o->same);
		put_cmp(f, &o->ctrl);
		fprintf(f, "\t%d\n", decision && o->layer == decision);
	}
}

int decision_label_text(ss_matrix *m, ss_err *e)
{
	if (!(m->lab = ss_malloc(m->n ? m->n : 1, sizeof *m->lab, "labels", e)))
		return -1;
	for (long i = 0; i < m->n; i++) {
		m->lab[i] = DECISION_NONE;
		if (m->ltext && m->ltext[i]) {
			m->lab[i] = DECISION_OTHER;
			for (int k = 0; k < DECISION_NONE; k++)
				if (!strcmp(m->ltext[i], decision_lab_name[k]))
					m->lab[i] = k;
		}
	}
	return 0;
}

int decision_parse_labels(const char *s, const char *what, unsigned *mask, ss_err *e)
{
	*mask = 0;
	char *c = ss_strdup(s, e), *save = NULL;
	if (!c)
		return -1;
	for (char *t = strtok_r(c, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int k;
		for (k = 0; k < DECISION_NONE; k++)
			if (!strcmp(t, decision_lab_name[k]))
				break;
		if (k == DECISION_NONE) {
			ss_err_status(e, SS_EXIT_USAGE, "%s: unknown label '%s' (future, twin, control, other)", what, t);
			free(c);
			return -1;
		}
		*mask |= 1u << k;
	}
	free(c);
	if (!*mask)
		return ss_err_status(e, SS_EXIT_USAGE, "%s: empty list", what);
	return 0;
}

int decision_parse_levels(const char *s, const char *what, long **levels, size_t *n, ss_err *e)
{
	size_t m = 1;
	for (const char *p = s; *p; p++)
		m += *p == ',';
	*n = 0;
	if (!(*levels = ss_malloc(m, sizeof **levels, "levels", e)))
		return -1;
	for (const char *p = s;; p++) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p || v < 1 || (*end && *end != ','))
			return ss_err_status(e, SS_EXIT_USAGE, "%s '%s': expected levels K[,K...], each >= 1", what, s);
		(*levels)[(*n)++] = v;
		p = end;
		if (!*p)
			return 0;
	}
}
