/* plant.c - planted traces; see plant.h. */
#include "organism/plant.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/h5io.h"
#include "io/trace.h"
#include "io/tsv.h"
#include "util/ofile.h"
#include "util/opt.h"
#include "util/rng.h"

typedef struct { long s, life; } level;
typedef struct { long pos, kind, a, b, lev; double m, sc; } planted; /* kind 1 primary, 2 secondary */

static const char *words[] = {"the", " cat", " sat", " on", " mat", " and", " then", " we",
                              " prove", " that", " x", " equals", " sum", "ing", " of"};
static const char *empties[] = {" ", ",", ".", "\n", "0", "1", "2", "7", " \n", ":"};

#define MAX_LEVELS 64

/* xorshift64* (Marsaglia; Vigna's multiplier): the stream every planted
 * trace of the tests and the pipeline was made with, kept so that a seed
 * still names the same trace. */
static uint64_t rnd(uint64_t *rs)
{
	*rs ^= *rs >> 12;
	*rs ^= *rs << 25;
	*rs ^= *rs >> 27;
	return *rs * 2685821657736338717ULL;
}
static double unif(uint64_t *rs) { return (double)(rnd(rs) >> 11) * (1.0 / 9007199254740992.0); }
static double uab(uint64_t *rs, double a, double b) { return a + (b - a) * unif(rs); }
static double gauss(uint64_t *rs)
{
	double u = unif(rs);
	return ss_box_muller(u, unif(rs));
}

static int cmp_planted(const void *a, const void *b)
{
	const planted *x = a, *y = b;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

void plant_defaults(plant_spec *p)
{
	*p = (plant_spec){.layers = 32, .tokens = 4096, .heads = 8, .d_model = 64,
	                  .levels = "12:4,12:10,18:6", .per_level = 200, .distractors = 20,
	                  .primary2 = 5, .seed = 1, .valley = 0.5, .slope_score = 0.02,
	                  .slope_life = 4.0, .life_sd = 0.8};
}

/* --levels into lv[]; *n levels. */
static int parse_levels(const plant_spec *p, level *lv, long *n, ss_err *e)
{
	*n = 0;
	for (const char *s = p->levels; *s;) {
		char *end;
		long a = strtol(s, &end, 10);
		if (*end != ':' || *n == MAX_LEVELS)
			return ss_err_status(e, 2, "--levels: expected S:LIFE,... (at most %d), not '%s'", MAX_LEVELS, s);
		long life = strtol(end + 1, &end, 10);
		if (a < 1 || a > p->layers || life < 1 || (*end && *end != ','))
			return ss_err_status(e, 2, "--levels: bad level near '%s' (S in 1-%ld, LIFE >= 1)", s, p->layers);
		lv[(*n)++] = (level){a, life};
		s = *end ? end + 1 : end;
	}
	return 0;
}

int plant_check(const plant_spec *p, ss_err *e)
{
	if (p->layers < 2 || p->layers > 4096)
		return ss_err_status(e, 2, "--n-layers: %ld, expected 2-4096", p->layers);
	if (p->tokens < 8 || p->tokens > (1L << 24))
		return ss_err_status(e, 2, "--tokens: %ld, expected 8-16777216", p->tokens);
	if (p->heads < 1 || p->heads > 1024)
		return ss_err_status(e, 2, "--heads: %ld, expected 1-1024", p->heads);
	if (p->d_model < 1)
		return ss_err_status(e, 2, "--d-model: %ld, expected at least 1", p->d_model);
	if (p->per_level < 0 || p->distractors < 0)
		return ss_err_status(e, 2, "--%s: %ld is negative", p->per_level < 0 ? "per-level" : "distractors",
		                     p->per_level < 0 ? p->per_level : p->distractors);
	if (p->primary2 < 0 || p->primary2 >= p->tokens)
		return ss_err_status(e, 2, "--primary2: %ld, expected 0-%ld", p->primary2, p->tokens - 1);
	if (!(p->slope_life > 0))
		return ss_err_status(e, 2, "--slope-life: %g, expected > 0", p->slope_life);
	if (!(p->life_sd >= 0))
		return ss_err_status(e, 2, "--life-sd: %g, expected >= 0", p->life_sd);
	level lv[MAX_LEVELS];
	long nlv;
	if (parse_levels(p, lv, &nlv, e))
		return -1;
	long nsec = nlv * p->per_level;
	if (nsec + 2 * p->distractors + 2 > p->tokens)
		return ss_err_status(e, 2, "--tokens: %ld, too few for %ld episodes and %ld distractors", p->tokens,
		                     nsec, 2 * p->distractors);
	return 0;
}

static int write_truth(const char *path, const ss_trace *tr, planted *pl, long np, ss_err *e)
{
	qsort(pl, (size_t)np, sizeof *pl, cmp_planted);
	ss_ofile o;
	if (ss_ofile_open(&o, path, e))
		return -1;
	fprintf(o.f, "pos\ttoken\ttext\tkind\tl_start\tl_end\tlifetime\tlevel\tmlp_norm_start\tscore_start\n");
	for (long k = 0; k < np; k++) {
		const planted *p = &pl[k];
		fprintf(o.f, "%ld\t%d\t", p->pos, tr->ids[p->pos]);
		tsv_put_escaped(o.f, tr->text[p->pos], strlen(tr->text[p->pos]));
		fprintf(o.f, "\t%s\t%ld\t%ld\t%ld\t%ld\t", p->kind == 1 ? "primary" : "secondary", p->a, p->b,
		        p->b - p->a + 1, p->lev);
		tsv_put_double(o.f, p->m);
		fputc('\t', o.f);
		tsv_put_double(o.f, p->sc);
		fputc('\n', o.f);
	}
	return ss_ofile_commit(&o, e);
}

static char *dup_or(const char *s, int *bad)
{
	char *d = strdup(s);
	if (!d)
		*bad = 1;
	return d;
}

int plant_write(const plant_spec *sp, const char *command, const char *out, const char *truth, ss_err *e)
{
	if (plant_check(sp, e))
		return -1;
	const long L = sp->layers, T = sp->tokens, H = sp->heads, primary2 = sp->primary2;
	const long per_level = sp->per_level, distractors = sp->distractors;
	const double valley = sp->valley, slope_score = sp->slope_score, slope_life = sp->slope_life,
	             life_sd = sp->life_sd;
	level lv[MAX_LEVELS];
	long nlv;
	parse_levels(sp, lv, &nlv, e);
	long nsec = nlv * per_level;
	uint64_t rs = 0x9E3779B97F4A7C15ULL * (uint64_t)(sp->seed + 1);
	for (int k = 0; k < 8; k++)
		rnd(&rs);
	ss_trace tr;
	if (trace_alloc(&tr, L, T, H, e))
		return -1;
	int rc = -1, bad = 0;
	float *score = calloc((size_t)L * (size_t)T, sizeof(float));
	planted *pl = calloc((size_t)(nsec + 2), sizeof *pl);
	long *perm = malloc((size_t)T * sizeof *perm);
	tr.meta.model = dup_or("planted", &bad);
	tr.meta.architecture = dup_or("Planted", &bad);
	tr.meta.weight_dtype = dup_or("f32", &bad);
	tr.meta.generator = dup_or("sinkplant " SS_VERSION, &bad);
	tr.meta.command = dup_or(command ? command : "sinkplant", &bad);
	if (!score || !pl || !perm || bad) {
		ss_err_set(e, "out of memory for a %ldx%ldx%ld planted trace", L, H, T);
		goto done;
	}
	tr.meta.d_model = sp->d_model;
	tr.meta.n_kv_heads = H;
	tr.meta.head_dim = sp->d_model / H > 0 ? sp->d_model / H : 1;
	/* background */
	for (long l = 0; l <= L; l++) {
		double base = 4 * (1 + (double)l / (double)L);
		for (long j = 0; j < T; j++) {
			double nn = base * (1 + 0.1 * gauss(&rs));
			tr.resid_norm[l * T + j] = (float)(nn < 0.1 * base ? 0.1 * base : nn);
			double c = 0.1 + 0.15 * gauss(&rs);
			tr.resid_cos0[l * T + j] = (float)(c > 0.9 ? 0.9 : c < -0.9 ? -0.9 : c);
		}
	}
	for (long l = 0; l < L; l++) {
		double base = 2 * (1 + (double)(l + 1) / (double)L);
		for (long j = 0; j < T; j++) {
			tr.mlp_out_norm[l * T + j] = (float)(base * (1 + 0.1 * gauss(&rs)));
			tr.attn_out_norm[l * T + j] = (float)(base * (0.5 + 0.05 * gauss(&rs)));
			score[l * T + j] = (float)(0.002 * uab(&rs, 0.5, 1.5));
		}
	}
	/* tokens: words, and semantically empty pieces for the sinks */
	for (long j = 0; j < T; j++) {
		int w = (int)(rnd(&rs) % 15);
		free(tr.text[j]);
		tr.text[j] = dup_or(words[w], &bad);
		tr.ids[j] = 1000 + w;
	}
	free(tr.text[0]);
	tr.text[0] = dup_or("<s>", &bad);
	tr.ids[0] = 1;
	/* position 0: primary, valley in the middle */
	long np = 0;
	for (long l = 1; l <= L; l++) {
		double base = 4 * (1 + (double)l / (double)L);
		tr.resid_norm[l * T] = (float)(100 * base);
		double z = ((double)l - (double)L / 2) / ((double)L / 6);
		score[(l - 1) * T] = (float)(0.8 - valley * exp(-z * z));
	}
	for (long l = 0; l <= L; l++)
		tr.resid_cos0[l * T] = 1;
	pl[np++] = (planted){0, 1, 1, L, 0, tr.mlp_out_norm[0], score[T] /* read by layer 2 */};
	if (primary2 > 0) {
		long j = primary2;
		for (long l = 2; l <= L; l++) {
			double base = 4 * (1 + (double)l / (double)L);
			tr.resid_norm[l * T + j] = (float)(60 * base);
			tr.resid_cos0[l * T + j] = (float)uab(&rs, 0.97, 0.99);
			score[(l - 1) * T + j] = 0.05f;
		}
		free(tr.text[j]);
		tr.text[j] = dup_or("\n", &bad);
		tr.ids[j] = 13;
		pl[np++] = (planted){j, 1, 2, L, 0, tr.mlp_out_norm[1 * T + j], 0.05};
	}
	/* positions for the secondary sinks and distractors: a shuffle */
	long nperm = 0;
	for (long j = 1; j < T; j++)
		if (j != primary2)
			perm[nperm++] = j;
	for (long k = nperm - 1; k > 0; k--) {
		long r = (long)(rnd(&rs) % (uint64_t)(k + 1)), t = perm[k];
		perm[k] = perm[r];
		perm[r] = t;
	}
	const double ln40 = log(40.0);
	long used = 0;
	for (long v = 0; v < nlv; v++)
		for (long q = 0; q < per_level; q++) {
			long j = perm[used++];
			double x = ln40 + (double)lv[v].life / slope_life + life_sd / slope_life * gauss(&rs);
			long life = lround(slope_life * (x - ln40));
			long s = lv[v].s;
			if (life < 1)
				life = 1;
			if (s + life - 1 > L)
				life = L - s + 1;
			double m = exp(x);
			double sc = 0.05 + slope_score * (x - ln40) + 0.002 * gauss(&rs);
			if (sc < 0.001)
				sc = 0.001;
			tr.mlp_out_norm[(s - 1) * T + j] = (float)m;
			for (long l = s; l < s + life; l++) {
				tr.resid_norm[l * T + j] = (float)(0.9 * m);
				tr.resid_cos0[l * T + j] = (float)uab(&rs, 0.96, 0.995);
				/* attention to h[l] is paid by layer l+1: recv row l */
				if (l < L)
					score[l * T + j] =
					    (float)(sc * (1 - 0.5 * (double)(l - s) / (double)life));
			}
			int w = (int)(rnd(&rs) % 10);
			free(tr.text[j]);
			tr.text[j] = dup_or(empties[w], &bad);
			tr.ids[j] = 100 + w;
			/* what is stored is f32: the truth is what the file holds */
			pl[np++] = (planted){j, 2, s, s + life - 1, v + 1, (double)(float)m,
			                     s < L ? (double)score[s * T + j] : 0};
		}
	for (long q = 0; q < 2 * distractors; q++) {
		long j = perm[used++];
		long a = 1 + (long)(rnd(&rs) % (uint64_t)L);
		long len = 1 + (long)(rnd(&rs) % (uint64_t)(L / 3 + 1));
		for (long l = a; l < a + len && l <= L; l++) {
			double base = 4 * (1 + (double)l / (double)L);
			if (q % 2 == 0) { /* high norm, cosine 0.8 */
				tr.resid_norm[l * T + j] = (float)(base * uab(&rs, 10, 30));
				tr.resid_cos0[l * T + j] = (float)uab(&rs, 0.75, 0.85);
			} else { /* cosine 0.99, ordinary norm */
				tr.resid_norm[l * T + j] = (float)(base * uab(&rs, 0.9, 1.2));
				tr.resid_cos0[l * T + j] = (float)uab(&rs, 0.985, 0.995);
			}
			score[(l - 1) * T + j] = (float)uab(&rs, 0.01, 0.05);
		}
		if (q % 2 == 0)
			tr.mlp_out_norm[(a - 1) * T + j] = (float)(4 * uab(&rs, 10, 30));
	}
	/* spread over heads with zero-mean offsets */
	for (long l = 0; l < L; l++)
		for (long k = 0; k < H; k++) {
			double c = H > 1 ? ((double)k - (double)(H - 1) / 2) / ((double)(H - 1) / 2) : 0;
			float *r = tr.recv + ((size_t)l * H + k) * T;
			const float *s = score + (size_t)l * T;
			for (long j = 0; j < T; j++)
				r[j] = (float)(s[j] * (1 + 0.3 * c));
		}

	if (bad) {
		ss_err_set(e, "out of memory for the planted token texts");
		goto done;
	}
	ss_h5 *f;
	if (h5_create(&f, out, e))
		goto done;
	if (trace_write_h5(f, &tr, e) || (truth && write_truth(truth, &tr, pl, np, e))) {
		h5_close(f);
		goto done;
	}
	rc = h5_commit(f, e);
done:
	free(score);
	free(pl);
	free(perm);
	trace_free(&tr);
	return rc;
}
