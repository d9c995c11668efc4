/* plant - planted-data generator: a valid sinkscope HDF5 trace with known
 * sinks, and its ground truth as TSV.
 *
 *   plant [options] -o OUT.h5 [--truth TRUTH.tsv]      ("-" = stdout image)
 *
 * What is planted (layers 1..L; resid rows 0..L, stats rows l-1 = layer l):
 * - position 0: the primary sink (cos0 = 1, norm 100x the layer's typical
 *   norm) whose sink-score dips in the middle layers:
 *       score0(l) = 0.8 - valley * exp(-((l - L/2) / (L/6))^2)
 * - a second primary sink at --primary2 (layers 2..L, norm 60x, cos 0.97-0.99);
 * - secondary sinks: --per-level episodes for each level S:LIFE of --levels.
 *   Each draws x = ln ||m[l_start]|| = ln 40 + LIFE/b + (life_sd/b) N(0,1),
 *   then   lifetime    = round(b * (x - ln 40))          (b = --slope-life)
 *          score_start = 0.05 + c * (x - ln 40) + N(0, 0.002)   (c = --slope-score)
 *   so that both relate log-linearly to the MLP-output norm with the chosen
 *   slopes.  Over the episode: ||h|| = 0.9 ||m||, cos0 in [0.96, 0.995], and
 *   the sink-score paid to it (by layers l_start+1 .., recv rows l_start ..)
 *   falls linearly from score_start to half of it.  Episodes
 *   are clamped to the layers (lifetime >= 1, l_end <= L).
 * - distractors (--distractors of each kind, never sinks): high norm
 *   (10-30x) with cos0 0.75-0.85; and cos0 0.985-0.995 with ordinary norm
 *   (0.9-1.2x);
 * - background: typical norm 4 (1 + l/L) with 10% noise, cos0 ~ N(0.1, 0.15)
 *   clipped to [-0.9, 0.9], sink-score ~ 0.002 U(0.5, 1.5).
 * Heads: recv[l-1][k][j] = v (1 + 0.3 c_k) with sum_k c_k = 0, so the mean
 * over heads is the planted sink-score v.
 * Truth TSV: pos token text kind l_start l_end lifetime level mlp_norm_start score_start
 * (position 0 and --primary2 are the primary rows, level 0).             */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "io/h5io.h"
#include "util/ofile.h"
#include "util/opt.h"
#include "io/trace.h"
#include "io/tsv.h"

static long L = 32, T = 4096, H = 8, per_level = 200, distractors = 20, primary2 = 5, seed = 1,
            d_model = 64;
static double valley = 0.5, slope_score = 0.02, slope_life = 4.0, life_sd = 0.8;
static const char *levels = "12:4,12:10,18:6", *out, *truth;

static const ss_opt opts[] = {
	{"layers", 'L', SS_OPT_INT, &L, "N", "number of layers (32)", NULL},
	{"tokens", 'T', SS_OPT_INT, &T, "N", "number of tokens (4096)", NULL},
	{"heads", 'H', SS_OPT_INT, &H, "N", "number of heads (8)", NULL},
	{"d-model", 0, SS_OPT_INT, &d_model, "N", "d_model attribute (64)", NULL},
	{"levels", 0, SS_OPT_STRING, &levels, "S:LIFE,...", "secondary levels (12:4,12:10,18:6; \"\" = none)", NULL},
	{"per-level", 0, SS_OPT_INT, &per_level, "N", "episodes per level (200)", NULL},
	{"valley", 0, SS_OPT_DOUBLE, &valley, "X", "depth of the primary sink-score valley (0.5)", NULL},
	{"slope-score", 0, SS_OPT_DOUBLE, &slope_score, "X", "d score_start / d ln mlp_norm (0.02)", NULL},
	{"slope-life", 0, SS_OPT_DOUBLE, &slope_life, "X", "d lifetime / d ln mlp_norm (4)", NULL},
	{"life-sd", 0, SS_OPT_DOUBLE, &life_sd, "X", "spread of lifetime within a level (0.8)", NULL},
	{"distractors", 0, SS_OPT_INT, &distractors, "N", "near-miss distractors of each kind (20)", NULL},
	{"primary2", 0, SS_OPT_INT, &primary2, "POS", "position of a second primary sink (5; 0 = none)", NULL},
	{"seed", 0, SS_OPT_INT, &seed, "N", "random seed (1)", NULL},
	{"output", 'o', SS_OPT_STRING, &out, "OUT.h5", "output trace (\"-\" = stdout)", NULL},
	{"truth", 0, SS_OPT_STRING, &truth, "FILE", "ground-truth TSV", NULL},
	{0},
};
static const ss_prog prog = {"plant", "[options] -o OUT.h5 [--truth FILE]",
                             "write a planted sinkscope trace and its ground truth", opts};

/* splitmix64 seeding xoshiro-like xorshift64*: fast, reproducible. */
static uint64_t rs;
static uint64_t rnd(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return rs * 2685821657736338717ULL;
}
static double unif(void) { return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0); }
static double uab(double a, double b) { return a + (b - a) * unif(); }
static double gauss(void)
{
	double u = unif(), v = unif();
	if (u < 1e-300)
		u = 1e-300;
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

typedef struct { long s, life; } level;
typedef struct { long pos, kind, a, b, lev; double m, sc; } planted; /* kind 1 primary, 2 secondary */

static const char *words[] = {"the", " cat", " sat", " on", " mat", " and", " then", " we",
                              " prove", " that", " x", " equals", " sum", "ing", " of"};
static const char *empties[] = {" ", ",", ".", "\n", "0", "1", "2", "7", " \n", ":"};

static int cmp_planted(const void *a, const void *b)
{
	const planted *x = a, *y = b;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

int main(int argc, char **argv)
{
	ss_err e = {0};
	ss_signals_install("plant");
	int i = ss_opt_parse(&prog, argc, argv, &e);
	if (i == SS_OPT_EXIT)
		return 0;
	if (i >= 0 && (i != argc || !out))
		ss_err_status(&e, 2, "usage: plant [options] -o OUT.h5 [--truth FILE]"), i = -1;
	if (i >= 0 && (L < 2 || T < 8 || H < 1 || per_level < 0 || distractors < 0 ||
	               primary2 < 0 || primary2 >= T || slope_life <= 0))
		ss_err_status(&e, 2, "bad sizes or slopes"), i = -1;
	level lv[64];
	long nlv = 0;
	for (const char *p = levels; i >= 0 && *p;) {
		char *end;
		long s = strtol(p, &end, 10);
		if (*end != ':' || nlv == 64) {
			ss_err_status(&e, 2, "--levels: expected S:LIFE,..."), i = -1;
			break;
		}
		long life = strtol(end + 1, &end, 10);
		if (s < 1 || s > L || life < 1 || (*end && *end != ',')) {
			ss_err_status(&e, 2, "--levels: bad level near '%s'", p), i = -1;
			break;
		}
		lv[nlv++] = (level){s, life};
		p = *end ? end + 1 : end;
	}
	long nsec = nlv * per_level;
	if (i >= 0 && nsec + 2 * distractors + 2 > T)
		ss_err_status(&e, 2, "too few tokens for %ld episodes and %ld distractors", nsec,
		              2 * distractors), i = -1;
	if (i < 0) {
		ss_err_print("plant", &e);
		return e.status;
	}
	rs = 0x9E3779B97F4A7C15ULL * (uint64_t)(seed + 1);
	for (int k = 0; k < 8; k++)
		rnd();

	ss_trace tr;
	if (trace_alloc(&tr, L, T, H, &e)) {
		ss_err_print("plant", &e);
		return 1;
	}
	tr.meta.model = strdup("planted");
	tr.meta.architecture = strdup("Planted");
	tr.meta.weight_dtype = strdup("f32");
	tr.meta.generator = strdup("plant " SS_VERSION);
	{
		size_t n = 16;
		for (int k = 0; k < argc; k++)
			n += strlen(argv[k]) + 1;
		tr.meta.command = calloc(n, 1);
		for (int k = 0; k < argc; k++) {
			if (k)
				strcat(tr.meta.command, " ");
			strcat(tr.meta.command, argv[k]);
		}
	}
	tr.meta.d_model = d_model;
	tr.meta.n_kv_heads = H;
	tr.meta.head_dim = d_model / H > 0 ? d_model / H : 1;

	/* per-position value of the sink-score per layer, before head spreading */
	float *score = calloc((size_t)L * (size_t)T, sizeof(float));
	planted *pl = calloc((size_t)(nsec + 2), sizeof *pl);
	long *perm = malloc((size_t)T * sizeof *perm);
	if (!score || !pl || !perm) {
		fprintf(stderr, "plant: out of memory\n");
		return 1;
	}
	/* background */
	for (long l = 0; l <= L; l++) {
		double base = 4 * (1 + (double)l / (double)L);
		for (long j = 0; j < T; j++) {
			double nn = base * (1 + 0.1 * gauss());
			tr.resid_norm[l * T + j] = (float)(nn < 0.1 * base ? 0.1 * base : nn);
			double c = 0.1 + 0.15 * gauss();
			tr.resid_cos0[l * T + j] = (float)(c > 0.9 ? 0.9 : c < -0.9 ? -0.9 : c);
		}
	}
	for (long l = 0; l < L; l++) {
		double base = 2 * (1 + (double)(l + 1) / (double)L);
		for (long j = 0; j < T; j++) {
			tr.mlp_out_norm[l * T + j] = (float)(base * (1 + 0.1 * gauss()));
			tr.attn_out_norm[l * T + j] = (float)(base * (0.5 + 0.05 * gauss()));
			score[l * T + j] = (float)(0.002 * uab(0.5, 1.5));
		}
	}
	/* tokens: words, and semantically empty pieces for the sinks */
	for (long j = 0; j < T; j++) {
		int w = (int)(rnd() % 15);
		free(tr.text[j]);
		tr.text[j] = strdup(words[w]);
		tr.ids[j] = 1000 + w;
	}
	free(tr.text[0]);
	tr.text[0] = strdup("<s>");
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
			tr.resid_cos0[l * T + j] = (float)uab(0.97, 0.99);
			score[(l - 1) * T + j] = 0.05f;
		}
		free(tr.text[j]);
		tr.text[j] = strdup("\n");
		tr.ids[j] = 13;
		pl[np++] = (planted){j, 1, 2, L, 0, tr.mlp_out_norm[1 * T + j], 0.05};
	}
	/* positions for the secondary sinks and distractors: a shuffle */
	long nperm = 0;
	for (long j = 1; j < T; j++)
		if (j != primary2)
			perm[nperm++] = j;
	for (long k = nperm - 1; k > 0; k--) {
		long r = (long)(rnd() % (uint64_t)(k + 1)), t = perm[k];
		perm[k] = perm[r];
		perm[r] = t;
	}
	const double ln40 = log(40.0);
	long used = 0;
	for (long v = 0; v < nlv; v++)
		for (long q = 0; q < per_level; q++) {
			long j = perm[used++];
			double x = ln40 + (double)lv[v].life / slope_life + life_sd / slope_life * gauss();
			long life = lround(slope_life * (x - ln40));
			long s = lv[v].s;
			if (life < 1)
				life = 1;
			if (s + life - 1 > L)
				life = L - s + 1;
			double m = exp(x);
			double sc = 0.05 + slope_score * (x - ln40) + 0.002 * gauss();
			if (sc < 0.001)
				sc = 0.001;
			tr.mlp_out_norm[(s - 1) * T + j] = (float)m;
			for (long l = s; l < s + life; l++) {
				tr.resid_norm[l * T + j] = (float)(0.9 * m);
				tr.resid_cos0[l * T + j] = (float)uab(0.96, 0.995);
				/* attention to h[l] is paid by layer l+1: recv row l */
				if (l < L)
					score[l * T + j] =
					    (float)(sc * (1 - 0.5 * (double)(l - s) / (double)life));
			}
			int w = (int)(rnd() % 10);
			free(tr.text[j]);
			tr.text[j] = strdup(empties[w]);
			tr.ids[j] = 100 + w;
			/* what is stored is f32: the truth is what the file holds */
			pl[np++] = (planted){j, 2, s, s + life - 1, v + 1, (double)(float)m,
			                     s < L ? (double)score[s * T + j] : 0};
		}
	for (long q = 0; q < 2 * distractors; q++) {
		long j = perm[used++];
		long a = 1 + (long)(rnd() % (uint64_t)L);
		long len = 1 + (long)(rnd() % (uint64_t)(L / 3 + 1));
		for (long l = a; l < a + len && l <= L; l++) {
			double base = 4 * (1 + (double)l / (double)L);
			if (q % 2 == 0) { /* high norm, cosine 0.8 */
				tr.resid_norm[l * T + j] = (float)(base * uab(10, 30));
				tr.resid_cos0[l * T + j] = (float)uab(0.75, 0.85);
			} else { /* cosine 0.99, ordinary norm */
				tr.resid_norm[l * T + j] = (float)(base * uab(0.9, 1.2));
				tr.resid_cos0[l * T + j] = (float)uab(0.985, 0.995);
			}
			score[(l - 1) * T + j] = (float)uab(0.01, 0.05);
		}
		if (q % 2 == 0)
			tr.mlp_out_norm[(a - 1) * T + j] = (float)(4 * uab(10, 30));
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

	ss_h5 *f;
	if (h5_create(&f, out, &e) || trace_write_h5(f, &tr, &e)) {
		h5_close(f);
		ss_err_print("plant", &e);
		return 1;
	}
	if (truth) {
		qsort(pl, (size_t)np, sizeof *pl, cmp_planted);
		ss_ofile o;
		if (ss_ofile_open(&o, truth, &e)) {
			h5_close(f);
			ss_err_print("plant", &e);
			return 1;
		}
		fprintf(o.f, "pos\ttoken\ttext\tkind\tl_start\tl_end\tlifetime\tlevel\tmlp_norm_start\tscore_start\n");
		for (long k = 0; k < np; k++) {
			const planted *p = &pl[k];
			fprintf(o.f, "%ld\t%d\t", p->pos, tr.ids[p->pos]);
			tsv_put_escaped(o.f, tr.text[p->pos], strlen(tr.text[p->pos]));
			fprintf(o.f, "\t%s\t%ld\t%ld\t%ld\t%ld\t", p->kind == 1 ? "primary" : "secondary",
			        p->a, p->b, p->b - p->a + 1, p->lev);
			tsv_put_double(o.f, p->m);
			fputc('\t', o.f);
			tsv_put_double(o.f, p->sc);
			fputc('\n', o.f);
		}
		if (ss_ofile_commit(&o, &e)) {
			h5_close(f);
			ss_err_print("plant", &e);
			return 1;
		}
	}
	if (h5_commit(f, &e) || ss_close_stdout(&e)) {
		ss_err_print("plant", &e);
		return 1;
	}
	free(score);
	free(pl);
	free(perm);
	trace_free(&tr);
	return 0;
}
