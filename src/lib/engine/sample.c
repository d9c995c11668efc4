/* sample.c - greedy, temperature and top-p sampling (see sample.h). */
#include <math.h>
#include <stdlib.h>
#include "engine/sample.h"

long sample_argmax(const float *x, long n)
{
	long best = 0;
	for (long i = 1; i < n; i++)
		if (x[i] > x[best])
			best = i;
	return best;
}

/* xorshift64* (Vigna 2014); the top 53 bits make the double. */
double sample_uniform(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) * (1.0 / 9007199254740992.0);
}

int sampler_init(ss_sampler *s, long vocab, double temperature, double top_p, uint64_t seed,
                 ss_err *e)
{
	*s = (ss_sampler){0};
	if (!(temperature >= 0) || !isfinite(temperature))
		return ss_err_set(e, "temperature %g: must be >= 0", temperature);
	if (!(top_p > 0 && top_p <= 1))
		return ss_err_set(e, "top-p %g: must be in (0, 1]", top_p);
	s->vocab = vocab;
	s->temperature = temperature;
	s->top_p = top_p;
	/* splitmix64 of the seed, so nearby seeds give unrelated streams */
	uint64_t z = seed + 0x9E3779B97F4A7C15ULL;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	z ^= z >> 31;
	s->rng = z ? z : 0x2545F4914F6CDD1DULL;
	if (temperature > 0) {
		s->probs = ss_malloc(vocab, sizeof *s->probs, "sampler probabilities", e);
		s->order = ss_malloc(vocab, sizeof *s->order, "sampler order", e);
		if (!s->probs || !s->order) {
			sampler_free(s);
			return -1;
		}
	}
	return 0;
}

void sampler_free(ss_sampler *s)
{
	free(s->probs);
	free(s->order);
	s->probs = NULL;
	s->order = NULL;
}

static const float *cmp_probs;
static int cmp_desc(const void *a, const void *b)
{
	float pa = cmp_probs[*(const int32_t *)a], pb = cmp_probs[*(const int32_t *)b];
	if (pa != pb)
		return pa > pb ? -1 : 1;
	return *(const int32_t *)a - *(const int32_t *)b; /* stable: lower id first */
}

long sampler_next(ss_sampler *s, const float *logits)
{
	long n = s->vocab;
	if (s->temperature == 0)
		return sample_argmax(logits, n);
	/* softmax(logits / T), in double for the normaliser */
	float mx = logits[sample_argmax(logits, n)];
	double sum = 0;
	for (long i = 0; i < n; i++) {
		s->probs[i] = expf((float)((logits[i] - mx) / s->temperature));
		sum += s->probs[i];
	}
	double r = sample_uniform(&s->rng);
	if (s->top_p >= 1) {
		double c = 0, target = r * sum;
		for (long i = 0; i < n; i++) {
			c += s->probs[i];
			if (c > target)
				return i;
		}
		return n - 1;
	}
	/* nucleus: candidates above (1 - p) / (n - 1) of the mass can be in the
	 * set (as llama2.c does), which keeps the sort short */
	double cutoff = (1.0 - s->top_p) / (double)(n > 1 ? n - 1 : 1) * sum;
	long m = 0;
	for (long i = 0; i < n; i++)
		if (s->probs[i] >= cutoff)
			s->order[m++] = (int32_t)i;
	cmp_probs = s->probs;
	qsort(s->order, m, sizeof *s->order, cmp_desc);
	double mass = 0;
	long last = m - 1;
	for (long k = 0; k < m; k++) {
		mass += s->probs[s->order[k]];
		if (mass >= s->top_p * sum) {
			last = k;
			break;
		}
	}
	double target = r * mass, c = 0;
	for (long k = 0; k <= last; k++) {
		c += s->probs[s->order[k]];
		if (c > target)
			return s->order[k];
	}
	return s->order[last];
}
