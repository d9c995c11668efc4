/* sinks.h - the sink rule (DESIGN.md section 1), shared by every stage.
 *
 * Token j > 0 is a sink at layer l (row l of resid stats, 0..L) when
 *     cos(h[l][j], h[l][0]) > tau_cos   and   ||h[l][j]|| >= tau_norm * median_j ||h[l][j]||
 * Episodes are maximal runs of sink layers; primary vs secondary is decided
 * by the parameters below.
 */
#ifndef SS_SINKS_H
#define SS_SINKS_H

#include <stdio.h>

#include "util/err.h"
#include "io/episodes.h"
#include "io/h5io.h"
#include "io/trace.h"

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

/* *med = the median of n floats (the mean of the two middle ones when n
 * is even; 0 when n <= 0); x is not modified.  Fails only when its
 * scratch copy cannot be allocated. */
int ss_median_f32(const float *x, long n, double *med, ss_err *e);

/* The rule itself, for one (layer, position): the one home of the
 * comparison; sink_mask, sink_episodes, swapexp and kvevict's online rule
 * call it. */
int ss_is_sink(const ss_sink_params *p, double cos0, double norm, double median_norm);

/* mask[l * T + j] = 1 when j is a sink at layer l (l = 0..L; position 0 is
 * never marked; it is the primary sink by definition).  mask has (L+1)*T. */
int sink_mask(const ss_trace *tr, const ss_sink_params *p, unsigned char *mask, ss_err *e);

/* Sink-score of position j at layer l (1..L): mean over heads of
 * recv[l-1][k][j] (the /stats/recv row of layer l). */
double sink_score(const ss_trace *tr, long l, long j);

/* All episodes (ss_episode: io/episodes.h) of a trace, position 0 first (always primary, over the whole
 * layer range), then by position and l_start.  Episodes shorter than
 * min_lifetime are dropped.  Primary: l_start <= lo-1+max(1,ceil(s*n)) and
 * l_end >= lo-1+max(1,floor(f*n)) with n = hi-lo+1 layers in range, s =
 * primary_start_frac, f = primary_end_frac; else secondary.
 * *eps is malloc'd (free it). */
int sink_episodes(const ss_trace *tr, const ss_sink_params *p, ss_episode **eps, size_t *n,
                  ss_err *e);

/* The rule's parameters as attributes of an HDF5 group (/sinks,
 * sinkscope-h5(5)): tau_cos, tau_norm, min_lifetime, layer_lo, layer_hi
 * (the range used), primary_start_frac, primary_end_frac.  The episodes
 * themselves go through episodes_write_h5 (io/episodes.h). */
int sink_params_write_h5(ss_h5 *f, const char *group, const ss_sink_params *p, long lo, long hi,
                         ss_err *e);

/* Check a parameter set (and resolve layer_lo/hi = 0 to 1/L for this trace). */
int sink_params_check(const ss_sink_params *p, long L, long *lo, long *hi, ss_err *e);

#endif
