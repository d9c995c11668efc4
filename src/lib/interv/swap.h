/* swap.h - token swapping (DESIGN.md section 1, "Token swapping").
 *
 * For a future sink j with episode start ls, at each swap layer l in
 * [max(1, ls - window + 1), ls] and each component c of {resid h[l],
 * attn_out a[l], mlp_out m[l]}: replace c at (l, j) by the mean of c at
 * layer l over the trace's control set (tokclass_controls: non-informative
 * tokens that are never a sink), continue to ls, and apply the sink rule
 * (ss_is_sink) to j at ls.
 *
 * Cost: one baseline prefill fills a KV cache; each swap then re-runs
 * position j alone through layers l..ls (dec_rerun), which is exact for
 * everything about j at ls that depends on positions <= j only:
 *   - h[ls][j], hence its norm and cos(h[ls][j], h[ls][0]), are exact;
 *   - the median norm of layer ls is the baseline's with j's entry
 *     replaced by its new norm (later positions, which attend to j, are
 *     not re-run: they move the median by a negligible amount);
 *   - the sink-score of j is measured at ls + 1 (at ls when ls = L), the
 *     first layer whose attention reads h[ls] (keys come from a layer's
 *     input), where the sink made at ls is first visible; at ls it is not
 *     visible yet (on the organism its score there is ~1e-38).  It is
 *     (1/H) sum_k mean_{i>=j} A_k[i][j]: A[j][j] exactly from re-running
 *     h[ls][j] through that layer and, for i > j, the softmax of the
 *     baseline queries q_i of that layer with j's key replaced by its new
 *     key:  A'[i][j] = e^{s'} / (Z_i - e^{s} + e^{s'}), s and s' the old
 *     and new logits and Z_i the baseline normaliser.
 * `exact` instead re-runs the whole sequence with the intervention (one
 * full forward pass per swap) and reports its norm median and sink-score
 * (at the same layer).
 */
#ifndef SS_SWAP_H
#define SS_SWAP_H

#include <stdio.h>
#include "engine/decode.h"
#include "util/err.h"
#include "engine/model.h"
#include "sinks/sinks.h"
#include "io/trace.h"

enum { SS_SWAP_RESID = 0, SS_SWAP_ATTN_OUT, SS_SWAP_MLP_OUT, SS_SWAP_NCOMP };
extern const char *const swap_comp_names[SS_SWAP_NCOMP]; /* "resid", "attn_out", "mlp_out" */

typedef struct ss_swap_target {
	long pos, l_start, lifetime, level; /* lifetime, level: 0 when unknown */
} ss_swap_target;

typedef struct ss_swap_opts {
	long window;          /* swap layers ls-window+1 .. ls */
	unsigned comps;       /* bit c set: component c swapped */
	unsigned classes;     /* control token classes (tokclass.h) */
	ss_sink_params sp;
	int exact;            /* full re-run per swap */
	ss_dec_opts dec;
	/* optional: called as the run advances, done of total layer passes
	 * (the baseline's L layers, then each --exact pass's L, else the
	 * batched re-runs as one step); from the calling thread */
	void (*progress)(void *ctx, double done, double total);
	void *progress_ctx;
} ss_swap_opts;

typedef struct ss_swap_row {
	long target;          /* index into the targets */
	long layer;           /* swap layer */
	int comp;
	int base_sink, sink;  /* j a sink at ls without / with the swap */
	double norm, base_norm, median, cos0, score, base_score;
} ss_swap_row;

/* Targets from an episode table (eptab_read, io/episodes.h: its column
 * rules): the secondary episodes of this trace (column "trace" equal to
 * trace_name, when present), with columns pos and l_start and, when
 * present, lifetime and level.  Positions must lie in 1..T-1 and l_start
 * in 1..L, else "FILE:LINE: pos 900 out of range 1-599". */
int swap_targets_read(const char *path, const char *trace_name, long T, long L,
                      ss_swap_target **tg, size_t *n, ss_err *e);

/* Parse "resid,attn_out,mlp_out" (or "all") into a component mask. */
int swap_comps_parse(const char *s, unsigned *mask, ss_err *e);

/* Check that the trace was made with this model (root attributes against
 * config.json); "TRACE:/:n_layers: 24, model MODEL has 28". */
int swap_check_model(const ss_trace *tr, const ss_model *m, ss_err *e);

/* Run every swap; *rows (malloc'd, *n_rows of them) in target order, then
 * layer, then component.  n_control (may be NULL) receives the size of the
 * control set; an empty one is an error. */
int swap_run(const ss_model *m, const ss_trace *tr, const ss_swap_target *tg, size_t n_tg,
             const ss_swap_opts *o, ss_swap_row **rows, size_t *n_rows, long *n_control,
             ss_err *e);

/* Bytes swap_run allocates for these targets and options (its dec for the
 * trace's T positions, dec_memory_estimate; the statistics of one pass, of
 * two with exact; the control means, the swap rows and states; without
 * exact the queries and normalisers of every score layer in use), and
 * the trace as trace_read holds it; the mapped weights apart. */
double swap_memory(const ss_model *m, const ss_trace *tr, const ss_swap_target *tg, size_t n_tg,
                   const ss_swap_opts *o);

/* The per-swap table: header when `header`, then one row per swap:
 *   trace pos token level l_start lifetime layer rel_layer component
 *   base_sink sink suppressed base_norm norm median norm_ratio cos0
 *   base_score score
 * (rel_layer = layer - l_start; suppressed = base_sink and not sink). */
void swap_write_rows(FILE *f, int header, const ss_trace *tr, const ss_swap_target *tg,
                     const ss_swap_row *r, size_t n);

/* The summary table, over swaps whose baseline is a sink:
 *   level l_start lifetime component rel_layer layer n suppressed frac decision
 * one row per (level, component, layer), levels being the table's "level"
 * column or else the distinct (l_start, lifetime) pairs numbered by
 * l_start; then rows with level "all" per (component, rel_layer) over
 * every target.  decision = 1 on the earliest layer of each (level,
 * component) whose fraction suppressed is at least decision_frac: the
 * decision layer of the paper. */
void swap_write_summary(FILE *f, int header, const ss_swap_target *tg, size_t n_tg,
                        const ss_swap_row *r, size_t n, long window, double decision_frac);

#endif
