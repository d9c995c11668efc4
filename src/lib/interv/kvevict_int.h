/* kvevict_int.h - private to the KV-eviction module (kvevict.c names,
 * inputs, results and tables; kvevict_pol.c the policies and the selection
 * the engine calls; kvevict_run.c the passes and the measures).  The
 * result's layout and the state the selection works on.
 */
#ifndef SS_KVEVICT_INT_H
#define SS_KVEVICT_INT_H

#include "engine/attention.h"
#include "engine/forward.h"
#include "interv/kvevict.h"

#define KV_CHUNK 8     /* queries per choice of the policies that look at attention */

/* one pair's choices at one layer, kept for the measurement pass and --masks */
typedef struct kv_rec {
	long *lo, *nk;        /* [T] */
	long *kept;           /* the lists of the blocks, one after another */
	size_t n, cap;
	long *off;            /* block c's list is kept[off[c] .. off[c+1]) */
	long chunk;           /* queries per list */
} kv_rec;                 /* (the layer's window applies on top: attn_keys) */

struct kv_result {
	long T, L;
	size_t np;
	kv_pair *pairs;
	kv_total *tot;        /* [np] */
	kv_layer *lay;        /* [np * L] or NULL */
	kv_rec *rec;          /* [np * L] or NULL */
	long *window;         /* [L] the layers' sliding windows (0: none), for --masks */
};

enum { M_PLAIN, M_POLICY, M_MEASURE };

typedef struct kv_score { double s; long j; } kv_score;

typedef struct kv_ctx {
	const kv_opts *o;
	kv_result *res;
	long T, L;
	int mode;
	size_t pair;             /* M_POLICY: the pair running */
	long *lo, *nk;           /* [T] the choice when not recorded */
	long solved;             /* queries below this one of the layer have their choice */
	long *K;                 /* [T + first] the block's kept list */
	size_t nK;
	ss_attn_sel sel;
	/* the policy's state in this layer */
	long *keep;              /* [T] heavy, random: the kept keys, ascending */
	size_t nkeep;
	long edge;               /* keys below edge have left every window */
	uint64_t rng;
	long *sinks;             /* [T + first] sinks: first keys, then sinks alive */
	size_t nsinks;
	float *sorted;           /* [T] online rule: norms of 0..j, ascending */
	kv_score *score;         /* [T] heavy */
	/* measurement */
	ss_attn_sel *msel;       /* [np] */
	ss_attn_meas meas;
	unsigned char *cls;      /* [T] */
	double *lost;            /* [L * np * 3] */
	int pass, n_pass;
} kv_ctx;

/* Queries per choice of policy pol (KV_CHUNK, or 0: one choice a pass). */
long kv_policy_chunk(kv_policy pol);
/* The selection (forward.h ss_select_fn, ctx a kv_ctx): the policy's keys
 * in mode M_POLICY, the recorded selections measured in M_MEASURE. */
int kv_select(void *ctx, const ss_sel_view *v, long t0, long *n, const ss_attn_sel **sel,
              const ss_attn_meas **meas);
/* The forward pass's progress callback (ctx a kv_ctx). */
void kv_on_layer(void *ctx, int done, int L);

#endif
