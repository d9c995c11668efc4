/* summary.c - the layer summary and the compensation curve; see summary.h. */
#include "sinks/summary.h"
#include "util/opt.h"

#include <string.h>

#include "io/tsv.h"
#include "sinks/sinks.h"

int layer_summary(const ss_trace *tr, const ss_episode *ep, size_t n, long lo, long hi,
                  ss_layer_sum **rows, ss_err *e)
{
	*rows = NULL;
	char rs[48];
	if (lo < 1 || hi > tr->L || lo > hi)
		return ss_err_set(e, "layer%s %s: outside the trace's layers 1-%ld", lo == hi ? "" : " range",
		                  ss_format_range(lo, hi, rs, sizeof rs), tr->L);
	size_t m = (size_t)(hi - lo + 1);
	ss_layer_sum *r = ss_calloc(m, sizeof *r, "summary", e);
	if (!r)
		return -1;
	for (size_t k = 0; k < m; k++) {
		r[k].layer = lo + (long)k;
		r[k].primary_score = sink_score(tr, r[k].layer, 0);
	}
	for (size_t i = 0; i < n; i++) {
		const ss_episode *p = &ep[i];
		if (p->pos == 0)
			continue;
		for (long l = p->l_start > lo ? p->l_start : lo; l <= p->l_end && l <= hi; l++) {
			r[l - lo].sinks++;
			if (p->primary)
				r[l - lo].primary++;
			else
				r[l - lo].secondary++;
		}
		if (!p->primary && p->l_start >= lo && p->l_start <= hi)
			r[p->l_start - lo].starts++;
	}
	*rows = r;
	return 0;
}

void layer_summary_put_header(FILE *f)
{
	fputs("trace\tlayer\tsinks\tprimary\tsecondary\tprimary_score\tsecondary_starts\n", f);
}

void layer_summary_put(FILE *f, const char *trace, const ss_layer_sum *r, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		tsv_put_escaped(f, trace, strlen(trace));
		fprintf(f, "\t%ld\t%ld\t%ld\t%ld\t", r[k].layer, r[k].sinks, r[k].primary,
		        r[k].secondary);
		tsv_put_double(f, r[k].primary_score);
		fprintf(f, "\t%ld\n", r[k].starts);
	}
}
