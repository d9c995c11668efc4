/* rng.c - splitmix64 and Box-Muller; see rng.h. */
#include "util/rng.h"

#include <math.h>

uint64_t ss_rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* 2^-53 is exact, so these are the 53-bit integers scaled without rounding */
double ss_rng_unif(uint64_t *s) { return (double)(ss_rng_next(s) >> 11) * (1.0 / 9007199254740992.0); }

double ss_rng_unif_open(uint64_t *s)
{
	return ((double)(ss_rng_next(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

double ss_box_muller(double u1, double u2)
{
	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

double ss_rng_gauss(uint64_t *s)
{
	double u1 = ss_rng_unif_open(s);
	double u2 = ss_rng_unif(s);
	return ss_box_muller(u1, u2);
}
