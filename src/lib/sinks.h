/* sinks.h - the sink rule (DESIGN.md section 1), shared by every stage.
 *
 * Token j > 0 is a sink at layer l (row l of resid stats, 0..L) when
 *     cos(h[l][j], h[l][0]) > tau_cos   and   ||h[l][j]|| >= tau_norm * median_j ||h[l][j]||
 * Episodes are maximal runs of sink layers; primary vs secondary is decided
 * by the parameters below.
 */
#ifndef SS_SINKS_H
#define SS_SINKS_H

#include "err.h"
#include "trace.h"

typedef struct ss_sink_params {
	double tau_cos;     /* default 0.95 */
	double tau_norm;    /* default from measurements, see sinkdetect(1) */
	long min_lifetime;  /* episodes shorter than this are dropped (default 1) */
	long layer_lo, layer_hi; /* layer range considered (1..L by default; 0 = unset) */
	/* primary/secondary rule parameters are added by the implementation */
	double primary_start_frac; /* an episode starting at or before this fraction of L ... */
	double primary_end_frac;   /* ... and ending at or after this fraction is primary */
} ss_sink_params;

void sink_params_default(ss_sink_params *p);

/* Median of n floats (does not modify x). */
double ss_median_f32(const float *x, long n);

/* The rule itself, for one (layer, position). */
int ss_is_sink(const ss_sink_params *p, double cos0, double norm, double median_norm);

/* mask[l * T + j] = 1 when j is a sink at layer l (l = 0..L; position 0 is
 * never marked; it is the primary sink by definition).  mask has (L+1)*T. */
int sink_mask(const ss_trace *tr, const ss_sink_params *p, unsigned char *mask, ss_err *e);

#endif
