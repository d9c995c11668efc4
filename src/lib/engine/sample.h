/* sample.h - choosing the next token from logits.
 *
 * Greedy (temperature 0): the argmax, ties to the lowest id (as llama2.c).
 * Sampled: softmax(logits / temperature), then nucleus (top-p) truncation
 * to the smallest set of most probable ids whose mass reaches top_p
 * (Holtzman et al. 2019; top_p >= 1 disables it), then one draw from a
 * seeded generator, so a run is reproducible from its seed.
 */
#ifndef SS_SAMPLE_H
#define SS_SAMPLE_H

#include <stdint.h>
#include "util/err.h"

typedef struct ss_sampler {
	long vocab;
	double temperature; /* 0 = greedy */
	double top_p;       /* (0, 1]; 1 = no truncation */
	uint64_t rng;       /* xorshift64* state, never 0 */
	float *probs;       /* [vocab] scratch */
	int32_t *order;     /* [vocab] scratch for top-p */
} ss_sampler;

/* temperature >= 0, 0 < top_p <= 1; any seed (0 is remapped). */
int sampler_init(ss_sampler *s, long vocab, double temperature, double top_p, uint64_t seed,
                 ss_err *e);
void sampler_free(ss_sampler *s);

/* Next id from logits[vocab] (not modified). */
long sampler_next(ss_sampler *s, const float *logits);

/* Building blocks, exposed for tests. */
long sample_argmax(const float *x, long n);
/* Uniform double in [0, 1) from the generator. */
double sample_uniform(uint64_t *state);

#endif
