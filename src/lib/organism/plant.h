/* plant.h - planted traces: a valid sinkscope trace (sinkscope-h5(5), stats
 * only) whose sinks are known, and its ground truth (sinkplant(1)).
 *
 * What is planted (layers 1..L; resid rows 0..L, stats rows l-1 = layer l):
 * - position 0: the primary sink (cos0 = 1, norm 100x the layer's typical
 *   norm) whose sink-score dips in the middle layers:
 *       score0(l) = 0.8 - valley * exp(-((l - L/2) / (L/6))^2)
 * - a second primary sink at primary2 (layers 2..L, norm 60x, cos 0.97-0.99);
 * - secondary sinks: per_level episodes for each level S:LIFE of levels.
 *   Each draws x = ln ||m[l_start]|| = ln 40 + LIFE/b + (life_sd/b) N(0,1),
 *   then   lifetime    = round(b * (x - ln 40))          (b = slope_life)
 *          score_start = 0.05 + c * (x - ln 40) + N(0, 0.002)   (c = slope_score)
 *   so that both relate log-linearly to the MLP-output norm with the chosen
 *   slopes.  Over the episode: ||h|| = 0.9 ||m||, cos0 in [0.96, 0.995], and
 *   the sink-score paid to it (by layers l_start+1 .., recv rows l_start ..)
 *   falls linearly from score_start to half of it.  Episodes are clamped to
 *   the layers (lifetime >= 1, l_end <= L).
 * - distractors (of each kind, never sinks): high norm (10-30x) with cos0
 *   0.75-0.85; and cos0 0.985-0.995 with ordinary norm (0.9-1.2x);
 * - background: typical norm 4 (1 + l/L) with 10% noise, cos0 ~ N(0.1, 0.15)
 *   clipped to [-0.9, 0.9], sink-score ~ 0.002 U(0.5, 1.5).
 * Heads: recv[l-1][k][j] = v (1 + 0.3 c_k) with sum_k c_k = 0, so the mean
 * over heads is the planted sink-score v.
 * Truth TSV: pos token text kind l_start l_end lifetime level mlp_norm_start
 * score_start (position 0 and primary2 are the primary rows, level 0).
 * Random numbers: a xorshift64* stream of the seed (Gaussians by
 * util/rng.h's Box-Muller).
 */
#ifndef SS_PLANT_H
#define SS_PLANT_H

#include "util/err.h"

typedef struct plant_spec {
	long layers, tokens, heads, d_model;
	const char *levels; /* "S:LIFE,..." ("" = none) */
	long per_level, distractors, primary2, seed;
	double valley, slope_score, slope_life, life_sd;
} plant_spec;

/* The defaults: 32 layers, 4096 tokens, 8 heads, d_model 64, levels
 * 12:4,12:10,18:6 with 200 episodes each, 20 distractors of each kind,
 * primary2 at 5, seed 1, valley 0.5, slopes 0.02 and 4, life_sd 0.8. */
void plant_defaults(plant_spec *p);
/* Sizes, slopes and the level list checked: a usage error (status 2)
 * naming the option when wrong. */
int plant_check(const plant_spec *p, ss_err *e);
/* Write the trace to out_h5 and, when truth_tsv is not NULL, its truth
 * (both through ofile.h's policy; "-" = stdout).  command is stored in the
 * trace's "command" attribute. */
int plant_write(const plant_spec *p, const char *command, const char *out_h5, const char *truth_tsv,
                ss_err *e);

#endif
