/* summary.h - the layer summary of a trace, with the compensation curve
 * (DESIGN.md section 1, "Compensation"; sinkdetect(1) --summary).
 *
 * For each layer l of a range, over the trace's episodes (sinks.h):
 *   sinks      episodes of positions > 0 that cover l (l_start <= l <= l_end),
 *   primary, secondary   how many of those are primary / secondary,
 *   primary_score        sink_score(l, 0): the strength of the primary sink,
 *                        whose dip in the middle layers is the valley,
 *   secondary_starts     secondary episodes with l_start = l: the histogram
 *                        of l_start, which the valley should frame.
 * Both curves share the layer axis 1..L.
 */
#ifndef SS_SUMMARY_H
#define SS_SUMMARY_H

#include <stdio.h>

#include "util/err.h"
#include "io/episodes.h"
#include "io/trace.h"

typedef struct ss_layer_sum {
	long layer;
	long sinks, primary, secondary, starts;
	double primary_score;
} ss_layer_sum;

/* Rows for layers lo..hi (1 <= lo <= hi <= L) into *rows (malloc'd,
 * hi - lo + 1 of them); ep: the trace's n episodes. */
int layer_summary(const ss_trace *tr, const ss_episode *ep, size_t n, long lo, long hi,
                  ss_layer_sum **rows, ss_err *e);

/* The table: header "trace layer sinks primary secondary primary_score
 * secondary_starts", then one row per layer, the trace name escaped. */
void layer_summary_put_header(FILE *f);
void layer_summary_put(FILE *f, const char *trace, const ss_layer_sum *r, size_t n);

#endif
