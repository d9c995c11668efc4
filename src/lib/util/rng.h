/* rng.h - the suite's one pseudo-random generator: splitmix64 and Gaussians
 * by Box-Muller.
 *
 * splitmix64 (Steele, Lea and Flood 2014; the seeding generator of
 * xoshiro): a 64-bit state advanced by a Weyl step and mixed by two
 * multiply-xorshift rounds.  Small, seedable from any value (0 included) and
 * the same on every platform, so a seed names one stream: the organism's
 * weights and t-SNE's random start are reproducible from their seeds.
 * (engine/sample.c's token sampler keeps its own xorshift64*: its stream is
 * part of actdump's documented --seed behaviour.)
 */
#ifndef SS_RNG_H
#define SS_RNG_H

#include <stdint.h>

/* The next 64 random bits of the stream *s (advances *s). */
uint64_t ss_rng_next(uint64_t *s);

/* A uniform double in [0, 1): the top 53 bits of ss_rng_next over 2^53. */
double ss_rng_unif(uint64_t *s);

/* A uniform double in (0, 1), never 0 or 1: (top 53 bits + 1/2) / 2^53. */
double ss_rng_unif_open(uint64_t *s);

/* Box-Muller: sqrt(-2 ln u1) cos(2 pi u2), a standard normal when u1 and u2
 * are independent uniforms.  u1 below 1e-300 is taken as 1e-300 (ln 0). */
double ss_box_muller(double u1, double u2);

/* One standard normal: ss_box_muller(ss_rng_unif_open(s), ss_rng_unif(s)),
 * drawn in that order (two steps of the stream). */
double ss_rng_gauss(uint64_t *s);

#endif
