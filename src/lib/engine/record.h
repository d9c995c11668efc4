/* record.h - a forward pass recorded as a sinkscope trace (io/trace.h): the
 * statistics of every layer into /stats, and, through the forward pass's
 * hook, the activations asked for into /acts, each layer written as soon as
 * the pass completes it (so only one layer of each component is held).
 * Also what such a run costs in memory and where its time went.  actdump(1)
 * is a thin main over it:
 *
 *   rec_acts_parse, ss_parse_layers_from, rec_acts_plan   what to store
 *   rec_memory                                             refuse too big
 *   rec_trace_init, h5_create, rec_run                     run and capture
 *   trace_write_h5, h5_commit                              the rest
 */
#ifndef SS_RECORD_H
#define SS_RECORD_H

#include <stdio.h>

#include "engine/forward.h"
#include "io/h5io.h"
#include "io/trace.h"
#include "util/err.h"

/* The activations a run stores: /acts/<component> [n_sel, T, d]. */
typedef struct ss_rec_acts {
	int on[SS_HOOK_N];              /* components stored */
	int n_on;
	long L;
	long n_sel[SS_HOOK_N];          /* layers stored of each component */
	unsigned char *mask[SS_HOOK_N]; /* [L+1] layer stored (0: resid's embeddings) */
	long *index[SS_HOOK_N];         /* [L+1] its row in /acts/<component> */
	/* from rec_run */
	ss_h5 *h5;
	long T, D;
	float *buf[SS_HOOK_N];          /* [T, D] the layer being computed */
	double write_s;                 /* seconds spent writing /acts */
	ss_err err;                     /* the hook's own error */
} ss_rec_acts;

/* "resid,mlp_in", "all" or NULL (none) into on[]; an unknown name is a
 * usage error "--acts: unknown component 'x' (resid, attn_out, mlp_in,
 * mlp_out)". */
int rec_acts_parse(const char *s, int on[SS_HOOK_N], ss_err *e);

/* Store components on[] at the layers of layers[0..L] (layer 0, the
 * embeddings, only for resid).  A component left with no layer is a usage
 * error "no layer of attn_out selected (layer 0 exists only for resid)". */
int rec_acts_plan(ss_rec_acts *a, const int on[SS_HOOK_N], const unsigned char *layers, long L,
                  ss_err *e);
void rec_acts_free(ss_rec_acts *a);

/* Bytes a recorded run of T tokens needs besides the mapped weights: the
 * forward pass (fwd_memory_estimate), the trace's statistics, one layer of
 * each stored component and, with image (the HDF5 file built in memory, for
 * a pipe), the file's statistics and activations once more.  actdump checks
 * it against --max-memory with ss_mem_check (util/mem.h). */
double rec_memory(const ss_config *c, const ss_rec_acts *a, long T, int threads, int image);

/* tr allocated for T tokens of M: the ids, their pieces (pieces[j] taken
 * over and set NULL; pieces NULL: empty texts), the name, and the metadata
 * (model folder, generator "prog version", command line).  On failure tr
 * is freed. */
int rec_trace_init(ss_trace *tr, const ss_model *M, const int32_t *ids, long T, char **pieces,
                   const char *name, const char *model_dir, const char *generator,
                   const char *command, ss_err *e);

/* Where a run's time went: wall and CPU seconds of the forward pass, the
 * part of it spent writing /acts, and the forward pass's own parts. */
typedef struct ss_rec_times {
	double forward, write_acts, cpu;
	ss_fwd_times parts;
} ss_rec_times;

/* Create a's /acts datasets in h5 (when a stores any), then run ids[0..T)
 * through M with `threads` threads: the statistics into tr (for a mixture
 * of experts also each token's experts and router weights, allocated here),
 * the activations into h5 layer by layer.  Progress on stderr (a terminal) as "PROG: layer
 * l/L".  keep: packed weights kept from run to run (forward.h), or NULL.
 * times may be NULL. */
int rec_run(const ss_model *M, const int32_t *ids, long T, int threads, ss_compute compute,
            ss_fwd_keep *keep, ss_rec_acts *a, ss_trace *tr, ss_h5 *h5, const char *prog,
            ss_rec_times *times, ss_err *e);

/* Two lines on f: tokens, layers, threads, the forward pass's wall time and
 * rate, the part writing /acts, the final write (write_s seconds), CPU
 * time; then the parts (projections and attention with their FLOPs and
 * rates, weight conversion, row kernels, paging, the rest). */
void rec_times_print(FILE *f, const char *prog, long T, long L, int threads, const ss_rec_times *t,
                     double write_s);

#endif
