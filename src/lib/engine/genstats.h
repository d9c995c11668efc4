/* genstats.h - a trace's statistics (forward.h's ss_stats, DESIGN.md
 * section 1) recorded while a sequence is generated, instead of a second
 * prefill over the whole sequence once it is complete.
 *
 * Attached to a dec (dec_record), every pass through it adds what it
 * computes: the prompt's prefill its rows, each dec_step one more
 *   resid_norm, resid_cos0   ||h[l][j]||, cos(h[l][j], h[l][0])   l = 0..L
 *   attn_out_norm, mlp_out_norm   ||a[l][j]||, ||m[l][j]||
 *   recv sums                each new query's attention row added to the
 *                            sums of the keys it sees (in double)
 * and gst_fill writes them in the trace's layouts for the final length T,
 * recv[l][k][j] = sum / (T - j).  The values are those of the causal
 * passes that generated the sequence: they equal a prefill of the final
 * sequence up to the order of f32 sums (tests/unit/test_genstats.c).
 * Dense models (no /stats/moe_*); positions appended in order from 0. */
#ifndef SS_GENSTATS_H
#define SS_GENSTATS_H

#include "engine/config.h"
#include "engine/forward.h"
#include "util/err.h"

typedef struct ss_genstats {
	long L, H, D, cap;
	long n;                          /* positions recorded (rows 0..n-1 complete) */
	float *resid_norm, *resid_cos0;  /* [L+1, cap] */
	float *attn_out_norm, *mlp_out_norm; /* [L, cap] */
	double *recv;                    /* [L, H, cap] sums over the queries so far */
	float *h0;                       /* [L+1, D] h[l][0] */
	double *h0n;                     /* [L+1] ||h[l][0]|| */
} ss_genstats;

/* For up to cap positions of a model of config c. */
int gst_init(ss_genstats *g, const ss_config *c, long cap, ss_err *e);
void gst_free(ss_genstats *g);
/* Bytes gst_init allocates. */
double gst_bytes(const ss_config *c, long cap);

/* A hook point's rows x [n, D] of positions t0.. (forward.h's hook):
 * norms, and for resid the cosines with position 0 (t0 = 0 first). */
void gst_observe(ss_genstats *g, int layer, ss_hook_point what, long t0, long n, const float *x);
/* The recv sums of layer l (1..L): [H, cap] (fwd_layer's recv_sum, ld = cap). */
double *gst_recv_sum(ss_genstats *g, int l);

/* The statistics of positions 0..T-1 (T <= g->n) into st's layouts for T
 * (any pointer of st may be NULL). */
int gst_fill(const ss_genstats *g, long T, ss_stats *st, ss_err *e);

#endif
