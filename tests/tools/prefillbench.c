/* prefillbench - the stats-only prefill against OpenBLAS's own sgemm,
 * interleaved in one process (tests/bench/actdump.sh).
 *   usage: prefillbench MODEL_DIR T THREADS ROUNDS   (ROUNDS 0: one ref window)
 *
 * This machine's speed drifts by 10-20% within seconds, so a sgemm figure
 * taken before a separate actdump process says little about the run that
 * follows.  Here the sequence is  ref, (prefill, ref) x ROUNDS:
 *   ref      the products of one layer (qkv, o, gate_up, down; up, down
 *            for an ungated MLP; router, top_k experts' gate_up and down
 *            as M = T top_k, a shared expert, for a mixture of experts) as
 *            single sgemm calls with M = T and OpenBLAS's own threading,
 *            repeated at least 6 times (or for 10 s) and for at least 2 s after a
 *            warm-up (the former gemmbench's statistic, and the mean);
 *   prefill  what actdump's stats-only run times: fwd_create, fwd_prefill
 *            with every statistic, fwd_free (random ids, the first 1).
 * Each prefill is compared with the mean of the two ref windows around it,
 * both as sustained rates (FLOPs over the window's whole time, like the
 * prefill's own rate) and as best repetitions (the stricter figure).
 * Model FLOPs per token: 2 x the layer weights x L (a mixture of experts:
 * only its active experts) plus attention (2 x 2 x
 * head_dim per visible query-key pair and head; (T+1)/2 keys per query on
 * average without a sliding window).  Between phases the process sleeps
 * 0.3 s, so that OpenBLAS's spinning threads and ours never overlap.
 * Each round also reports the foreign CPU load (other processes, from
 * /proc/stat) in cores; rounds above 0.25 are marked LOADED and left out
 * of the "quiet" medians. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/forward.h"
#include "engine/model.h"
#include "util/progress.h"

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double busy_s(void)   /* CPU seconds of the whole machine so far */
{
	FILE *fp = fopen("/proc/stat", "r");
	double u = 0, n = 0, s = 0, idle = 0, io = 0, irq = 0, sirq = 0;
	if (fp) {
		if (fscanf(fp, "cpu %lf %lf %lf %lf %lf %lf %lf", &u, &n, &s, &idle, &io, &irq, &sirq) != 7)
			u = n = s = irq = sirq = 0;
		fclose(fp);
	}
	return (u + n + s + irq + sirq) / 100.0;   /* USER_HZ */
}

static void pause_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
}

typedef struct ref_bufs {
	long T, shp[8][3];   /* N, K and rows per token of the layer's products */
	int n;
	float *A, *W, *C;
	double flop;         /* of one repetition */
} ref_bufs;

/* One ref window: sustained and best GFLOP/s over at least 6 timed
 * repetitions (or 10 s) and 2 s after a warm-up, printed as a line of its own. */
static void ref_window(const ref_bufs *r, int th, double *sust, double *best)
{
	openblas_set_num_threads(th);
	double total = 0, bt = 1e30;
	int reps = 0;
	for (int rep = 0; (rep < 7 && total < 10.0) || total < 2.0; rep++) {
		double t0 = ss_now();
		for (int i = 0; i < r->n; i++)
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(r->T * r->shp[i][2]), (int)r->shp[i][0],
			            (int)r->shp[i][1], 1.0f, r->A, (int)r->shp[i][1], r->W, (int)r->shp[i][1], 0.0f,
			            r->C, (int)r->shp[i][0]);
		double t = ss_now() - t0;
		if (rep == 0)   /* warm-up */
			continue;
		total += t;
		reps++;
		bt = t < bt ? t : bt;
	}
	*sust = r->flop * reps / total / 1e9;
	*best = r->flop / bt / 1e9;
	printf("ref: sgemm %.1f GFLOP/s sustained over %d repetitions (%.2f s), best %.1f\n", *sust, reps,
	       total, *best);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	if (n == 0)
		return 0;
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: prefillbench MODEL_DIR T THREADS ROUNDS\n");
		return 2;
	}
	ss_err e = {0};
	ss_model m;
	if (model_load(&m, argv[1], &e) < 0) {
		fprintf(stderr, "prefillbench: %s\n", e.msg);
		return 1;
	}
	const ss_config *c = &m.c;
	long T = atol(argv[2]), th = atol(argv[3]), rounds = atol(argv[4]);
	if (T < 1 || th < 1 || rounds < 0) {
		fprintf(stderr, "prefillbench: T and THREADS must be positive, ROUNDS at least 0\n");
		return 2;
	}
	long D = c->dim, F = c->hidden, q = c->n_heads * c->head_dim, kv = c->n_kv_heads * c->head_dim;
	/* the layer's products as one sgemm each over the T tokens: q/k/v, o, and
	 * the MLP (gated: [2F, D]; ungated: [F, D]); a mixture of experts counts
	 * only the active experts: the router, then top_k expert products per
	 * token (as one sgemm of T * top_k rows), and a shared expert */
	ref_bufs r = {.T = T, .n = 2, .shp = {{q + 2 * kv, D, 1}, {D, q, 1}}};
#define SHP(N_, K_, R_) do { r.shp[r.n][0] = (N_); r.shp[r.n][1] = (K_); r.shp[r.n][2] = (R_); r.n++; } while (0)
	if (c->n_experts) {
		SHP(c->n_experts, D, 1);
		SHP(2 * c->moe_hidden, D, c->top_k);
		SHP(D, c->moe_hidden, c->top_k);
		if (c->shared_hidden) {
			SHP(2 * c->shared_hidden, D, 1);
			SHP(D, c->shared_hidden, 1);
		}
	} else {
		SHP(c->ungated ? F : 2 * F, D, 1);
		SHP(D, F, 1);
	}
#undef SHP
	size_t maxa = 0, maxw = 0, maxc = 0;
	for (int i = 0; i < r.n; i++) {
		size_t a = (size_t)(T * r.shp[i][2] * r.shp[i][1]), w = (size_t)(r.shp[i][0] * r.shp[i][1]),
		       cc = (size_t)(T * r.shp[i][2] * r.shp[i][0]);
		maxa = a > maxa ? a : maxa;
		maxw = w > maxw ? w : maxw;
		maxc = cc > maxc ? cc : maxc;
		r.flop += 2.0 * (double)T * (double)r.shp[i][2] * (double)r.shp[i][0] * (double)r.shp[i][1];
	}
	r.A = malloc(maxa * 4);
	r.W = malloc(maxw * 4);
	r.C = malloc(maxc * 4);
	int32_t *ids = malloc(sizeof(int32_t) * (size_t)T);
	ss_stats st = {
		calloc((size_t)((c->n_layers + 1) * T), 4), calloc((size_t)((c->n_layers + 1) * T), 4),
		calloc((size_t)(c->n_layers * T), 4), calloc((size_t)(c->n_layers * T), 4),
		calloc((size_t)(c->n_layers * c->n_heads * T), 4), NULL, NULL};
	double *ratio = malloc(sizeof(double) * 4 * (size_t)(rounds + 1));
	if (!r.A || !r.W || !r.C || !ids || !st.resid_norm || !st.resid_cos0 || !st.attn_out_norm ||
	    !st.mlp_out_norm || !st.recv || !ratio) {
		fprintf(stderr, "prefillbench: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < maxa; i++)
		r.A[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
	for (size_t i = 0; i < maxw; i++)
		r.W[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
	unsigned long long s = 0x9e3779b97f4a7c15ull ^ (unsigned long long)T;
	for (long i = 0; i < T; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		ids[i] = i == 0 ? 1 : (int32_t)((s >> 33) % (unsigned long long)c->vocab);
	}
	double pairs = 0;   /* over the layers: Gemma's alternate windows */
	for (int l = 1; l <= c->n_layers; l++)
		pairs += fwd_attention_pairs(config_layer_window(c, l), 0, T);
	double lin_tok = r.flop / (double)T * (double)c->n_layers;
	double attn_tok = (double)c->n_heads * 4.0 * (double)c->head_dim * pairs / (double)T;
	double flop_tok = lin_tok + attn_tok;
	printf("# prefillbench T=%ld threads=%ld: model %.1f MFLOP/token (attention %.1f)\n", T, th,
	       flop_tok / 1e6, attn_tok / 1e6);
	double *rs = ratio, *rb = ratio + rounds, *qs = ratio + 2 * rounds, *qb = ratio + 3 * rounds;
	int nq = 0;
	double sust0, best0;
	ref_window(&r, (int)th, &sust0, &best0);
	for (long k = 0; k < rounds; k++) {
		pause_s(0.3);
		ss_fwd_opts o = {.threads = (int)th};
		ss_fwd *f = NULL;
		double b0 = busy_s(), c0 = cpu_now(), t0 = ss_now();
		if (fwd_create(&f, &m, &o, T, &e) < 0 || fwd_prefill(f, ids, T, &st, NULL, &e) < 0) {
			fprintf(stderr, "prefillbench: %s\n", e.msg);
			return 1;
		}
		ss_fwd_times ft;
		fwd_times(f, &ft);
		fwd_free(f);
		double wall = ss_now() - t0, own = cpu_now() - c0, b1 = busy_s();
		double foreign = (b1 - b0 - own) / wall;
		foreign = foreign < 0 ? 0 : foreign;
		pause_s(0.3);
		double sust1, best1;
		ref_window(&r, (int)th, &sust1, &best1);
		double tok = (double)T / wall, gs = (sust0 + sust1) / 2, gb = (best0 + best1) / 2;
		rs[k] = 100 * tok / (gs * 1e9 / flop_tok);
		rb[k] = 100 * tok / (gb * 1e9 / flop_tok);
		if (foreign <= 0.25) {
			qs[nq] = rs[k];
			qb[nq++] = rb[k];
		}
		printf("round %ld: %.2f tok/s = %.1f%% of sgemm-implied %.1f (sustained %.1f GFLOP/s) and %.1f%% of %.1f "
		       "(best %.1f GFLOP/s); projections %.1f GFLOP/s, attention %.1f GFLOP/s; "
		       "time: projections %.3f s, attention %.3f s, conversion %.3f s, rows %.3f s, paging %.3f s, "
		       "rest %.3f s; foreign load %.2f cores%s\n",
		       k + 1, tok, rs[k], gs * 1e9 / flop_tok, gs, rb[k], gb * 1e9 / flop_tok, gb,
		       ft.linear_flop / ft.linear / 1e9, ft.attention_flop / ft.attention / 1e9, ft.linear,
		       ft.attention, ft.convert, ft.rows, ft.pages,
		       wall - fwd_times_parts(&ft), foreign,
		       foreign > 0.25 ? "  LOADED" : "");
		fflush(stdout);
		sust0 = sust1;
		best0 = best1;
	}
	if (rounds > 0) {
		double mq = median(qs, nq), mqb = median(qb, nq);
		double lo = 1e30, hi = 0;
		for (long k = 0; k < rounds; k++) {
			lo = rs[k] < lo ? rs[k] : lo;
			hi = rs[k] > hi ? rs[k] : hi;
		}
		printf("summary T=%ld: median %.1f%% of sustained sgemm-implied (%.1f%% of best) over %ld rounds "
		       "(min %.1f%%, max %.1f%%); quiet rounds %d: median %.1f%% (%.1f%% of best)\n",
		       T, median(rs, (int)rounds), median(rb, (int)rounds), rounds, lo, hi, nq, mq, mqb);
	}
	free(r.A);
	free(r.W);
	free(r.C);
	free(ids);
	free(st.resid_norm);
	free(st.resid_cos0);
	free(st.attn_out_norm);
	free(st.mlp_out_norm);
	free(st.recv);
	free(ratio);
	model_free(&m);
	return 0;
}
