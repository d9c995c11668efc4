/* kvevict.h - KV-cache eviction policies measured on a trace (DESIGN.md
 * section 1, "Cache eviction"; kvevict(1)).
 *
 * The trace runs teacher-forced once with every key (the reference, the
 * plain forward pass of actdump) and once per policy and budget B: at each
 * layer l, query i sees itself and min(i, B) cached keys, a window of the
 * latest keys plus a short list of kept ones (engine/attention.h), chosen
 * by the policy from what the engine computed of that layer so far:
 *   window     the last B keys;
 *   streaming  the first k keys and the last B - k (StreamingLLM);
 *   sinks      the first k, then the sinks alive at layer l in the order
 *              they arrive (position), then the window; a key j is alive
 *              at layer l while h[l-1][j] is a sink (its key is computed
 *              from h[l-1]): from an episode table, l_start <= l-1 <= l_end;
 *              else the sink rule of sinks.h applied online, with the
 *              median norm over positions 0..j (what is known when j
 *              arrives);
 *   heavy      H2O: B/2 heavy hitters by the attention received so far at
 *              this layer under the policy itself (a key once dropped never
 *              returns), the rest a window; chosen per block of 8 queries
 *              (keys leaving the window during the block compete with the
 *              scores from before it);
 *   random     B/2 kept keys, random ones dropped (splitmix64, seeded per
 *              layer) when the keys leaving the window overfill the list,
 *              the rest a window; per block of 8 queries;
 *   full       every key.
 * The selection is shared by every head of the layer.  On a layer with a
 * sliding window W (Mistral, Qwen2 with use_sliding_window, Gemma 2/3's
 * sliding layers) query i sees the policy's keys that lie in the model's
 * window, j > i - W, as the model itself would: the budget counts the
 * policy's cache, the window what the layer reads of it.
 *
 * Measures per policy and budget, over the T - 1 positions with a next
 * token, in double: NLL of the next token and its ratio exp(NLL - NLL_full)
 * (the perplexity ratio), mean KL(full || policy) of the next-token
 * distributions, top-1 agreement; per layer (when asked) the attention
 * mass the full cache's pass puts on the keys the policy hid (the
 * selections it made in its own run, replayed), mean over queries and
 * heads, split by key class: primary (position 0 and primary episodes),
 * secondary sinks (the episode table's, else the online rule on the full
 * pass) and the rest.
 */
#ifndef SS_KVEVICT_H
#define SS_KVEVICT_H

#include <stdint.h>
#include <stdio.h>
#include "util/err.h"
#include "engine/matmul.h"
#include "engine/model.h"
#include "sinks/sinks.h"

typedef enum kv_policy { KV_FULL, KV_WINDOW, KV_STREAMING, KV_SINKS, KV_HEAVY, KV_RANDOM, KV_NPOL } kv_policy;
extern const char *const kv_policy_names[KV_NPOL];

/* "heavy" -> KV_HEAVY; else a usage error naming the policies. */
int kv_policy_parse(const char *name, kv_policy *p, ss_err *e);

/* One sink episode of the trace (a sinkdetect table row). */
typedef struct kv_episode {
	long pos, l_start, l_end;
	int primary;
} kv_episode;

/* The episodes of a sinkdetect table of this trace (columns pos, l_start
 * and l_end or lifetime; token and kind when present; `trace` names it in
 * messages).  A table of several traces (its trace column), or whose token
 * at a position is not the trace's, is an error. */
int kv_episodes_read(const char *path, const char *trace, const int32_t *ids, long T, long L,
                     kv_episode **eps, size_t *n, ss_err *e);

typedef struct kv_pair {
	kv_policy pol;
	long budget;             /* cached keys besides the query's own, >= 1 */
} kv_pair;

typedef struct kv_opts {
	long first;              /* k of streaming and sinks (default 4) */
	uint64_t seed;           /* random */
	ss_sink_params sp;       /* the online sink rule (tau_cos, tau_norm) */
	const kv_episode *eps;   /* NULL: the online rule */
	size_t n_eps;
	int per_layer;           /* measure the mass lost per layer (one more full pass) */
	int masks;               /* keep every selection (kv_masks_write) */
	int threads;
	ss_compute compute;      /* the matrix products' precision (matmul.h; 0: f32) */
	void (*progress)(void *ctx, int pass, int n_pass, int layer, int n_layers);
	void *progress_ctx;
} kv_opts;

typedef struct kv_total {
	double nll, nll_full, ppl_ratio, kl, top1;
} kv_total;

typedef struct kv_layer {
	double lost, primary, secondary, rest;   /* mean over queries and heads */
} kv_layer;

typedef struct kv_result kv_result;

/* Run the reference and every pair over ids[0..T) (T >= 2, within the
 * model's positions).  *out holds the tables (kv_result_free). */
int kv_run(const ss_model *m, const int32_t *ids, long T, const kv_pair *pairs, size_t np,
           const kv_opts *o, kv_result **out, ss_err *e);
void kv_result_free(kv_result *r);

/* Bytes kv_run allocates for T tokens and these pairs (the forward pass,
 * fwd_memory_estimate; the final hidden states of the reference and of
 * every pair but full; the statistics; with per_layer or masks every
 * pair's selections; the logits compared; lm_head in f32 when the model
 * does not store it so), the mapped weights apart. */
double kv_memory(const ss_model *m, long T, const kv_pair *pairs, size_t np, const kv_opts *o);

/* The pair's totals, and (opts.per_layer) its row of layer l (1..L). */
const kv_total *kv_result_total(const kv_result *r, size_t pair);
const kv_layer *kv_result_layer(const kv_result *r, size_t pair, long l);

/* The tables (kvevict(1)), each with its header line. */
#define KV_TOTALS_HEADER "trace\tpolicy\tbudget\tT\tnll\tnll_full\tppl_ratio\tkl\ttop1\n"
#define KV_LAYERS_HEADER "trace\tpolicy\tbudget\tlayer\tlost\tlost_primary\tlost_secondary\tlost_rest\n"
#define KV_MASKS_HEADER "policy\tbudget\tlayer\tquery\tlo\tkept\n"
void kv_totals_write(FILE *f, const char *trace, const kv_result *r);
void kv_layers_write(FILE *f, const char *trace, const kv_result *r);
/* opts.masks: per pair, layer and query cut by its budget, the window's
 * first key lo and the kept keys below it (comma-separated; "-": none). */
void kv_masks_write(FILE *f, const kv_result *r);

#endif
