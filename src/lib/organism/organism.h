/* organism.h - a model organism: a small Qwen2ForCausalLM whose weights are
 * built by hand so that the real forward pass plants a known sink structure
 * (DESIGN.md section 1).  mkorganism(1) documents the mechanism layer by
 * layer; in short, with u the sink direction:
 *
 *   layer 1      a uniform head subtracts the mean of a per-token signature,
 *                which leaves position 0 (it sees only itself) with none; the
 *                MLP computes the sign of |signature|^2 - tau |bulk|^2 with
 *                exact quadratic neuron pairs (silu(z) z + silu(-z)(-z) = z^2)
 *   layer 2      an MLP neuron that fires on that sign writes U u (the primary)
 *   layers 3,4   MLPs erase the signature and the sign coordinate
 *   layer ld     (decision) an MLP maps each planted token's class marker onto
 *                the direction v_ls of its level's start layer, with a gain
 *                gamma per token (a level's tokens spread their norms)
 *   layer ls     (formation, per start layer) an MLP neuron reads v_ls and
 *                writes G (u + 0.1 e_ls): the token becomes a secondary sink
 *                of norm G (gamma sets G) marked with its start layer
 *   layers > ls  (erosion, per start layer) an MLP neuron that fires on the
 *                secondary sinks with that marker removes a set amount
 *                S(n) - S(n-1) of u at age n, with S(n) = exp((n + h - a) / b)
 *                + 2, so a sink of norm G dies at age n when S(n) > G:
 *                lifetime = a + b ln G within the spread (the norm law)
 *   attention    from layer 3 every head's query favours keys aligned with u
 *                (Qwen2 q/k biases, lowest RoPE frequency), less so for keys
 *                of smaller norm; values are zero, so attention only shows
 *                where the sinks are; secondary sinks take attention from
 *                position 0, which makes the valley.
 */
#ifndef SS_ORGANISM_H
#define SS_ORGANISM_H

#include "util/err.h"
#include <stdint.h>
#include <stdio.h>

#include "io/st.h"

typedef struct org_level {
	long lifetime;
	long start;       /* l_start of the level (its start_layer, else sinks.start_layer) */
	long ntok;
	char **text;      /* [ntok] token texts as bytes (e.g. ",", "\n\n") */
	long *ids;        /* [ntok] token ids in the tokenizer */
	double norm;      /* the law's norm of the level, exp((lifetime - a) / b) */
	double *tnorm;    /* [ntok] each token's planted ||m[ls]||: exp((lifetime + d - a) / b),
	                   * d spread evenly over [-spread, spread] in list order */
	double *tgamma;   /* [ntok] each token's decision gain (solved) */
} org_level;

typedef struct org_spec {
	char *path;                 /* the spec file (for messages) */
	long d_model, n_layers, n_heads, intermediate, vocab_size;
	double rope_theta, eps;
	st_dtype dtype;
	unsigned long long seed;
	char *tokenizer;            /* path of tokenizer.json (resolved) */
	long start_layer;           /* ls of the levels that name none */
	double spread;              /* half-width of each level's norms, in layers of lifetime */
	long decision_layer;        /* ld */
	double slope, intercept;    /* lifetime = intercept + slope * ln(norm) */
	org_level *lv;
	long nlv;
	/* context (optional): an occurrence of a planted token becomes a sink
	 * only when one of these tokens sits among the `window` positions
	 * before it (position 0 excluded); ntrig == 0: every occurrence */
	long ntrig, window;
	char **trig_text;           /* [ntrig] as bytes */
	long *trig_ids;             /* [ntrig] */
	/* nuisance (optional): ordinary tokens the sink rule must not report,
	 * from layer 4 on: kind 0 heavy (norm 2-3x the median, not aligned
	 * with position 0), 1 loud (10-30x, not aligned), 2 aligned (cosine
	 * > 0.95 to position 0, norm 2-3x); ratio: the planted norm over the
	 * median, spread evenly over the kind's range in list order */
	long nnu;
	char **nu_text;             /* [nnu] as bytes */
	long *nu_ids;               /* [nnu] */
	int *nu_kind;               /* [nnu] */
	double *nu_ratio;           /* [nnu] */
} org_spec;

/* names of the nuisance kinds: "heavy", "loud", "aligned" */
extern const char *const org_nuisance_kind[3];

/* Read and check a spec (YAML).  Errors: "FILE:FIELD: what". */
int org_spec_load(org_spec *s, const char *path, ss_err *e);
/* The default spec: beside the running program, an installed
 * PREFIX/bin/mkorganism reads PREFIX/share/sinkscope/organism.yaml (make
 * install puts it there with its tokenizer); a build tree's bin/mkorganism
 * reads examples/organism.yaml; else examples/organism.yaml from the
 * working directory.  The first that exists, into buf. */
const char *org_spec_default(char *buf, size_t n);
void org_spec_free(org_spec *s);

/* Build the model folder dir (config.json, model.safetensors, tokenizer.json,
 * organism.yaml, truth/{levels,tokens,law,decision,layers}.tsv).  The folder
 * appears complete or not at all; an existing dir is replaced only when it
 * is empty or an earlier organism (it holds truth/levels.tsv). */
int org_build(org_spec *s, const char *dir, ss_err *e);

/* The planted truth of one token sequence ids[T] for the organism folder
 * dir (its truth/tokens.tsv and truth/context.tsv): one row per
 * occurrence of a planted token after position 0, written to f as TSV
 * "trace pos token future level l_start lifetime norm triggers" (future 1
 * when the context rule makes it a sink; triggers: how many trigger
 * tokens sit in its window).  trace names the sequence in the table. */
int org_occurrences(const char *dir, const char *trace, const int32_t *ids, long T, FILE *f,
                    ss_err *e);

#endif
