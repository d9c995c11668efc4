/* decision.c - future sinks and controls per layer, and the separability
 * scan.  See decision.h. */
#include "analysis/decision.h"

#include <stdlib.h>
#include <string.h>

#include "io/episodes.h"
#include "io/tsv.h"
#include "sinks/tokclass.h"

const char *const decision_lab_name[DECISION_NLAB] = {"future", "control", "other", "-"};

int decision_init(decision_set *d, ss_mat_src *S, int ns, const decision_rule *rule, ss_err *e)
{
	memset(d, 0, sizeof *d);
	d->S = S;
	d->ns = ns;
	d->rule = *rule;
	d->tr = ss_calloc(ns > 0 ? ns : 1, sizeof *d->tr, "traces", e);
	d->control = ss_calloc(ns > 0 ? ns : 1, sizeof *d->control, "controls", e);
	return d->tr && d->control ? 0 : -1;
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
	return 0;
}

void decision_free(decision_set *d)
{
	for (int k = 0; k < d->ns; k++) {
		if (d->tr)
			trace_free(&d->tr[k]);
		if (d->control)
			free(d->control[k]);
	}
	free(d->tr);
	free(d->control);
	free(d->ep);
	memset(d, 0, sizeof *d);
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
	rc = 0;
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

int decision_label(const decision_set *d, int si, long pos, long l)
{
	const decision_rule *r = &d->rule;
	for (size_t k = 0; k < d->n_ep; k++) {
		const decision_future *p = &d->ep[k];
		if (p->si == si && p->pos == pos && p->l_start > l && p->lifetime >= r->min_life &&
		    p->l_start >= r->lo && p->l_start <= r->hi && wanted_level(r, p->level))
			return DECISION_FUTURE;
	}
	if (d->control[si] && d->control[si][pos])
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

/* layer l of the scan into *o */
static int scan_layer(const decision_set *d, long l, unsigned only, int k, const ss_tsne_params *p,
                      ss_progress *pg, decision_row *o, ss_err *e)
{
	memset(o, 0, sizeof *o);
	o->layer = l;
	ss_matrix R;
	int rc = -1;
	if (matrix_read_h5(d->S, d->ns, l, &R, e) < 0 || decision_label_rows(d, &R, l, e) < 0)
		goto done;
	matrix_select(&R, only);
	for (long i = 0; i < R.n; i++)
		o->cnt[R.lab[i]]++;
	o->n = R.n;
	int groups = (o->cnt[0] > 0) + (o->cnt[1] > 0) + (o->cnt[2] > 0);
	if (groups >= 2 && R.n > k) {
		if (sep_measure(R.X, R.n, R.d, R.lab, k, &o->sep, e) < 0)
			goto done;
		o->have = 1;
		if ((double)R.n > 3 * p->perplexity) {
			float *Y = malloc(2 * R.n * sizeof *Y);
			ss_tsne_info in = {0};
			ss_progress_start(pg, "t-SNE");
			if (!Y || tsne_run(R.X, R.n, R.d, p, Y, &in, e) < 0 ||
			    sep_measure(Y, R.n, 2, R.lab, k, &o->sep2, e) < 0) {
				if (!Y)
					ss_err_set(e, "out of memory");
				ss_err_prefix(e, "layer %ld", l);
				ss_progress_end(pg);
				free(Y);
				goto done;
			}
			ss_progress_end(pg);
			o->have2 = 1;
			o->kl = in.kl;
			free(Y);
		}
	}
	rc = 0;
done:
	matrix_free(&R);
	return rc;
}

int decision_scan(const decision_set *d, const unsigned char *layers, unsigned only, int k,
             const ss_tsne_params *p, ss_progress *pg, decision_row **out, long *n_out,
             ss_err *e)
{
	*out = NULL;
	*n_out = 0;
	decision_row *r = ss_calloc(d->L + 1, sizeof *r, "scan", e);
	if (!r)
		return -1;
	long n = 0;
	for (long l = 1; l <= d->L; l++) {
		if (!layers[l])
			continue;
		if (scan_layer(d, l, only, k, p, pg, &r[n], e) < 0) {
			free(r);
			return -1;
		}
		n++;
	}
	*out = r;
	*n_out = n;
	return 0;
}

void decision_scan_write(FILE *f, const decision_row *r, long n)
{
	fputs("layer\tn\tn_future\tn_control\tn_other\tknn_acc\tknn_bal\tsilhouette\t"
	      "knn_acc_2d\tknn_bal_2d\tsilhouette_2d\tkl\n", f);
	for (long i = 0; i < n; i++) {
		const decision_row *o = &r[i];
		fprintf(f, "%ld\t%ld\t%ld\t%ld\t%ld", o->layer, o->n, o->cnt[0], o->cnt[1], o->cnt[2]);
		double v[7] = {o->sep.knn_acc, o->sep.knn_bal, o->sep.silhouette, o->sep2.knn_acc,
		               o->sep2.knn_bal, o->sep2.silhouette, o->kl};
		int ok[7] = {o->have, o->have, o->have, o->have2, o->have2, o->have2, o->have2};
		for (int k = 0; k < 7; k++) {
			putc('\t', f);
			if (ok[k])
				tsv_put_double(f, v[k]);
			else
				fputs("NA", f);
		}
		putc('\n', f);
	}
}
