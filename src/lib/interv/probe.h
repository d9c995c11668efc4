/* probe.h - formation of secondary sinks (DESIGN.md section 1,
 * "Formation"): PCA of the MLP inputs x[ls] and the MLP's response.
 *
 * At layer ls, with u = h[ls][0] / ||h[ls][0]|| the primary sink's
 * direction:
 *   - PCA (pca.h, double) of x[ls] over the fit set (every position > 0,
 *     or the positions never a sink);
 *   - per component i: explained variance ratio, mean projection
 *     (x - mean).pc_i of the future sinks (episodes starting at ls) and of
 *     the controls (tokclass_controls), and for each alpha the MLP output
 *     y = MLP_ls(mean + alpha sigma_i pc_i) (sigma_i = sqrt(var_i), so
 *     alpha counts standard deviations): gain ||y|| / ||MLP_ls(mean)|| and
 *     cos_u = cos(y - MLP_ls(mean), u), the direction of the MLP's response
 *     to the move along the component (+1: it adds along the sink
 *     direction, -1: it takes away, 0: orthogonal, or alpha = 0).  Not
 *     cos(y, u): that is the baseline output's direction wherever the move
 *     changes little (0.9998 on the organism in every row, also at gain
 *     3e-27);
 *   - per future sink: x = x_par + x_perp with x_par = sum_{i<k} (x.pc_i)
 *     pc_i (the projection on the top-k subspace through the origin) and
 *     the MLP on x, x_par, x_perp: norm and cos to u of each output.
 */
#ifndef SS_PROBE_H
#define SS_PROBE_H

#include <stdio.h>
#include "engine/decode.h"
#include "util/err.h"
#include "analysis/pca.h"
#include "interv/swap.h"
#include "io/trace.h"

typedef struct ss_probe_comp {
	double var_ratio, proj_sinks, proj_controls;
	double *gain, *cos_u;       /* [n_alpha] */
} ss_probe_comp;

typedef struct ss_probe_sink {
	long pos;
	double frac_par;            /* ||x_par||^2 / ||x||^2 */
	double norm[3], cos_u[3];   /* MLP output on x, x_par, x_perp */
} ss_probe_sink;

typedef struct ss_probe {
	long layer, k, n_alpha, n_fit, n_sinks, n_controls, dim;
	double *pcs;                /* [k * dim] unit components (pca.h signs) */
	const double *alpha;
	ss_probe_comp *comp;        /* [k] */
	ss_probe_sink *sink;        /* [n_sinks] */
} ss_probe;

/* x [T, dim] = x[ls] of the trace, h0 [dim] = h[ls][0]; targets with
 * l_start == layer are the future sinks; fit_nonsink: fit only positions
 * never a sink.  An empty set of future sinks or controls is an error. */
int probe_run(ss_dec *d, const ss_trace *tr, long layer, const float *x, const float *h0,
              const ss_swap_target *tg, size_t n_tg, int k, const double *alpha, long n_alpha,
              int fit_nonsink, const ss_sink_params *sp, unsigned classes, ss_probe *out,
              ss_err *e);
void probe_free(ss_probe *p);

/* probe_run at every l_start of tg (or only at layer, when > 0), each
 * once, reading x[ls] (/acts/mlp_in) and h[ls] (/acts/resid) of trace tr
 * from f.  pr [tr->L + 1] receives the probe of layer ls at pr[ls] and
 * probed [tr->L + 1] is set to 1 there.  progress (may be NULL) gets
 * (l_starts done, l_starts in all) before each and once at the end. */
typedef struct ss_probe_plan {
	long layer;                 /* 0: every l_start of the targets */
	int k, fit_nonsink;
	const double *alpha;
	long n_alpha;
	ss_sink_params sp;
	unsigned classes;
	void (*progress)(void *ctx, double done, double total);
	void *progress_ctx;
} ss_probe_plan;
int probe_run_all(ss_dec *d, ss_h5 *f, const ss_trace *tr, const ss_swap_target *tg, size_t n_tg,
                  const ss_probe_plan *pl, ss_probe *pr, unsigned char *probed, ss_err *e);

/* The positions of the dec pcaprobe runs its MLPs through (dec_mlp takes
 * them a block at a time). */
#define SS_PROBE_CAP 64

/* Bytes probe_run_all allocates for this plan (one l_start's x[ls], h[ls],
 * fit set, PCA, pca_memory, and MLP rows at a time; what each probe keeps),
 * a dec of SS_PROBE_CAP positions (dec_memory_estimate) and the trace as
 * trace_read_h5 holds it; the mapped weights apart. */
double probe_memory(const ss_model *m, const ss_trace *tr, const ss_swap_target *tg, size_t n_tg,
                    const ss_probe_plan *pl, const ss_dec_opts *dopt);

/* trace l_start component var_ratio cum_ratio proj_sinks proj_controls alpha gain cos_u */
void probe_write_comps(FILE *f, int header, const ss_trace *tr, const ss_probe *p);
/* trace l_start pos token frac_par norm_full cos_full norm_par cos_par norm_perp cos_perp */
void probe_write_sinks(FILE *f, int header, const ss_trace *tr, const ss_probe *p);

/* trace l_start component var_ratio vector (comma-separated, %.9g) */
void probe_write_vectors(FILE *f, int header, const ss_trace *tr, const ss_probe *p);

#endif
