/* prefillbench - the stats-only prefill in each compute mode against the
 * rate of oneDNN's matmul at the model's shapes (engine/matmul.h), f32 and
 * bf16, interleaved in one process (tests/bench/actdump.sh, families.sh).
 *   usage: prefillbench MODEL_DIR T THREADS ROUNDS [MODES]
 *   ROUNDS 0: one ref window; MODES: a comma-separated list of f32, bf16,
 *   f32-kept and bf16-kept (default f32,bf16).  MODE-kept: the pass with
 *   the packed weights kept from an earlier one (ss_fwd_keep, forward.h:
 *   actdump's rows after the first), the store filled by one pass per mode
 *   before the rounds; each such round says how many packings it made
 *   (none, unless a layout needed remaking).
 *
 * This machine's speed drifts by 10-20% within seconds, so a matmul figure
 * taken before a separate actdump process says little about the run that
 * follows.  Here the sequence is  ref, ((prefill, ref) per mode) x ROUNDS:
 *   ref      the products of one layer (qkv, o, gate_up, down; up, down
 *            for an ungated MLP; router, top_k experts' gate_up and down
 *            as M = T top_k, a shared expert, for a mixture of experts)
 *            through mm_run with M = T, weights packed once per mode (what
 *            the engine's projections call), the two modes alternating
 *            repetition by repetition, at least 6 repetitions each (or 10 s
 *            in all) and 2 s after a warm-up, each repetition followed by
 *            OpenBLAS's sgemm on the same shapes in f32 (the yardstick of
 *            the engine before oneDNN, which issue 19's per-FLOP target
 *            names);
 *   prefill  what actdump's stats-only run times, with --compute MODE:
 *            fwd_create, fwd_prefill with every statistic, fwd_free
 *            (random ids, the first 1).
 * Each prefill is compared with its own mode's matmul rate, the mean of the
 * two ref windows around it, both as sustained rates (FLOPs over the
 * window's whole time, like the prefill's own rate) and as best repetitions
 * (the stricter figure): the tokens/s that rate implies for all of the
 * pass's FLOPs; also against sgemm's sustained rate, and the pass's own
 * GFLOP/s (model FLOPs x tokens/s), comparable across models.  Model FLOPs per token: 2 x the layer weights x L (a
 * mixture of experts: only its active experts) plus attention (2 x 2 x
 * head_dim per visible query-key pair and head; (T+1)/2 keys per query on
 * average without a sliding window).  The bf16 mode's target (issue 17):
 * at least 70% of the bf16-implied rate at T=2048.  Between phases the
 * process sleeps 0.3 s, so that spinning OpenMP threads and ours never
 * overlap.  Each round also reports the foreign CPU load (other processes,
 * from /proc/stat) in cores; rounds above 0.25 are marked LOADED and left
 * out of the "quiet" medians. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "engine/forward.h"
#include "engine/matmul.h"
#include "engine/model.h"
#include "util/progress.h"

enum { NMODE = 2, NVAR = 2 * NMODE, MAXP = 8 };
static const char *const vname[NVAR] = {"f32", "bf16", "f32-kept", "bf16-kept"};

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
	long T, shp[MAXP][3];   /* N, K and rows per token of the layer's products */
	int n, threads;
	float *A, *C, *W;       /* W: the f32 weights of OpenBLAS's sgemm (shared by the shapes) */
	ss_mm *mm[NMODE];       /* indexed by ss_compute */
	ss_mm_w *w[NMODE][MAXP];
	double flop;            /* of one repetition (one mode) */
} ref_bufs;

/* One ref window: per mode, sustained and best GFLOP/s over the timed
 * repetitions (the modes alternate, then OpenBLAS's sgemm in f32 on the same
 * shapes: index NMODE, the yardstick the engine had before oneDNN), printed
 * as a line of its own. */
static int ref_window(ref_bufs *r, double sust[NMODE + 1], double best[NMODE + 1], ss_err *e)
{
	double total[NMODE + 1] = {0}, bt[NMODE + 1] = {1e30, 1e30, 1e30};
	int reps = 0;
	for (int rep = 0; (rep < 7 && total[0] + total[1] < 10.0) || total[0] + total[1] < 2.0; rep++) {
		for (int md = 0; md <= NMODE; md++) {
			double t0 = ss_now();
			if (md == NMODE) {   /* C = A W^T, as the engine's sgemm fallback calls it */
				openblas_set_num_threads(r->threads);
				for (int i = 0; i < r->n; i++)
					cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(r->T * r->shp[i][2]),
					            (int)r->shp[i][0], (int)r->shp[i][1], 1.0f, r->A, (int)r->shp[i][1], r->W,
					            (int)r->shp[i][1], 0.0f, r->C, (int)r->shp[i][0]);
				openblas_set_num_threads(1);
			}
			for (int i = 0; md < NMODE && i < r->n; i++) {
				/* 1: oneDNN declined the shape and computed nothing; timing it would
				 * count FLOPs never done */
				int rc = mm_run(r->mm[md], r->w[md][i], r->T * r->shp[i][2], r->A, r->shp[i][1], r->C,
				                r->shp[i][0], NULL, e);
				if (rc > 0)
					snprintf(e->msg, sizeof e->msg, "oneDNN %s matmul declined the shape %ld x %ld x %ld",
					         mm_compute_name((ss_compute)md), r->T * r->shp[i][2], r->shp[i][0], r->shp[i][1]);
				if (rc != 0)
					return -1;
			}
			double t = ss_now() - t0;
			if (rep == 0)   /* warm-up (JIT, caches) */
				continue;
			total[md] += t;
			bt[md] = t < bt[md] ? t : bt[md];
		}
		reps += rep > 0;
	}
	for (int md = 0; md <= NMODE; md++) {
		sust[md] = r->flop * reps / total[md] / 1e9;
		best[md] = r->flop / bt[md] / 1e9;
	}
	printf("ref: oneDNN matmul f32 %.1f GFLOP/s sustained, best %.1f (%s); bf16 %.1f sustained, best %.1f (%s); "
	       "OpenBLAS sgemm %.1f sustained, best %.1f; %d repetitions each (%.2f s)\n",
	       sust[0], best[0], mm_impl(r->mm[0]), sust[1], best[1], mm_impl(r->mm[1]), sust[NMODE],
	       best[NMODE], reps, total[0] + total[1] + total[NMODE]);
	fflush(stdout);
	return 0;
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
	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: prefillbench MODEL_DIR T THREADS ROUNDS [MODES]\n");
		return 2;
	}
	long T = atol(argv[2]), th = atol(argv[3]), rounds = atol(argv[4]);
	/* variants v = mode + NMODE kept: f32, bf16, f32-kept, bf16-kept */
	int use[NVAR] = {1, 1, 0, 0};
	if (argc == 6) {
		memset(use, 0, sizeof use);
		char *list = strdup(argv[5]);
		for (char *tk = strtok(list, ","); tk; tk = strtok(NULL, ",")) {
			int v = -1;
			for (int i = 0; i < NVAR; i++)
				if (!strcmp(tk, vname[i]))
					v = i;
			if (v < 0) {
				fprintf(stderr, "prefillbench: MODES: expected a list of f32, bf16, f32-kept, bf16-kept, "
				        "not '%s'\n", tk);
				return 2;
			}
			use[v] = 1;
		}
		free(list);
	}
	if (T < 1 || th < 1 || rounds < 0) {
		fprintf(stderr, "prefillbench: T and THREADS must be positive, ROUNDS at least 0\n");
		return 2;
	}
	ss_err e = {0};
	ss_model m;
	if (model_load(&m, argv[1], &e) < 0) {
		fprintf(stderr, "prefillbench: %s\n", e.msg);
		return 1;
	}
	const ss_config *c = &m.c;
	long D = c->dim, F = c->hidden, q = c->n_heads * c->head_dim, kv = c->n_kv_heads * c->head_dim;
	/* the layer's products as one matmul each over the T tokens: q/k/v, o,
	 * and the MLP (gated: [2F, D]; ungated: [F, D]); a mixture of experts
	 * counts only the active experts: the router, then top_k expert
	 * products per token (as one product of T * top_k rows), and a shared
	 * expert */
	ref_bufs r = {.T = T, .n = 2, .threads = (int)th, .shp = {{q + 2 * kv, D, 1}, {D, q, 1}}};
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
	r.C = malloc(maxc * 4);
	float *W = malloc(maxw * 4);
	int32_t *ids = malloc(sizeof(int32_t) * (size_t)T);
	ss_stats st = {
		calloc((size_t)((c->n_layers + 1) * T), 4), calloc((size_t)((c->n_layers + 1) * T), 4),
		calloc((size_t)(c->n_layers * T), 4), calloc((size_t)(c->n_layers * T), 4),
		calloc((size_t)(c->n_layers * c->n_heads * T), 4), NULL, NULL};
	/* per mode: sustained, best, quiet sustained, quiet best, of sgemm, GFLOP/s */
	double *ratio = malloc(sizeof(double) * 6 * NVAR * (size_t)(rounds + 1));
	if (!r.A || !r.C || !W || !ids || !st.resid_norm || !st.resid_cos0 || !st.attn_out_norm ||
	    !st.mlp_out_norm || !st.recv || !ratio) {
		fprintf(stderr, "prefillbench: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < maxa; i++)
		r.A[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
	for (size_t i = 0; i < maxw; i++)
		W[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
	for (int md = 0; md < NMODE; md++) {
		if (mm_create(&r.mm[md], (ss_compute)md, (int)th, &e) < 0) {
			fprintf(stderr, "prefillbench: %s\n", e.msg);
			return 1;
		}
		for (int i = 0; i < r.n; i++)
			if (mm_pack(r.mm[md], &r.w[md][i], W, r.shp[i][0], r.shp[i][1], r.shp[i][1],
			            T * r.shp[i][2], &e) < 0) {
				fprintf(stderr, "prefillbench: %s\n", e.msg);
				return 1;
			}
	}
	r.W = W;
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
	double *rs[NVAR], *rb[NVAR], *qs[NVAR], *qb[NVAR], *rg[NVAR], *gf[NVAR];
	int nq[NVAR] = {0};
	for (int v = 0; v < NVAR; v++) {
		rs[v] = ratio + (4 * v + 0) * rounds;
		rb[v] = ratio + (4 * v + 1) * rounds;
		qs[v] = ratio + (4 * v + 2) * rounds;
		qb[v] = ratio + (4 * v + 3) * rounds;
		rg[v] = ratio + (4 * NVAR + 2 * v + 0) * rounds;
		gf[v] = ratio + (4 * NVAR + 2 * v + 1) * rounds;
	}
	/* the kept variants: a store per mode, filled by one pass before the
	 * rounds (not timed), as actdump's first sequence fills it for the rest */
	ss_fwd_keep *keep[NMODE] = {NULL, NULL};
	for (int md = 0; md < NMODE; md++) {
		if (!use[NMODE + md])
			continue;
		ss_fwd_opts o = {.threads = (int)th, .compute = (ss_compute)md};
		ss_fwd *f = NULL;
		if (fwd_keep_create(&keep[md], &m, (ss_compute)md, (int)th, &e) < 0 ||
		    (o.keep = keep[md], fwd_create(&f, &m, &o, T, &e) < 0) || fwd_prefill(f, ids, T, &st, NULL, &e) < 0) {
			fprintf(stderr, "prefillbench: %s\n", e.msg);
			return 1;
		}
		fwd_free(f);
		printf("kept %s: %.1f MB of packings (%ld made) after the filling pass\n", mm_compute_name((ss_compute)md),
		       (double)fwd_keep_held(keep[md]) / 1e6, fwd_keep_made(keep[md]));
	}
	double sust0[NMODE + 1], best0[NMODE + 1];
	if (ref_window(&r, sust0, best0, &e) < 0) {
		fprintf(stderr, "prefillbench: %s\n", e.msg);
		return 1;
	}
	for (long k = 0; k < rounds; k++)
		for (int v = 0; v < NVAR; v++) {
			if (!use[v])
				continue;
			int md = v % NMODE;
			const char *mn = mm_compute_name((ss_compute)md);
			pause_s(0.3);
			ss_fwd_opts o = {.threads = (int)th, .compute = (ss_compute)md, .keep = v >= NMODE ? keep[md] : NULL};
			ss_fwd *f = NULL;
			long made0 = o.keep ? fwd_keep_made(o.keep) : 0;
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
			double sust1[NMODE + 1], best1[NMODE + 1];
			if (ref_window(&r, sust1, best1, &e) < 0) {
				fprintf(stderr, "prefillbench: %s\n", e.msg);
				return 1;
			}
			double tok = (double)T / wall, gs = (sust0[md] + sust1[md]) / 2, gb = (best0[md] + best1[md]) / 2;
			rs[v][k] = 100 * tok / (gs * 1e9 / flop_tok);
			rb[v][k] = 100 * tok / (gb * 1e9 / flop_tok);
			double gsg = (sust0[NMODE] + sust1[NMODE]) / 2;
			rg[v][k] = 100 * tok / (gsg * 1e9 / flop_tok);
			gf[v][k] = tok * flop_tok / 1e9;
			if (foreign <= 0.25) {
				qs[v][nq[v]] = rs[v][k];
				qb[v][nq[v]++] = rb[v][k];
			}
			char made[48] = "";
			if (o.keep)
				snprintf(made, sizeof made, "; %ld packings made", fwd_keep_made(o.keep) - made0);
			printf("round %ld %s: %.2f tok/s (%.1f GFLOP/s) = %.1f%% of oneDNN-%s-implied %.1f (sustained %.1f GFLOP/s) and "
			       "%.1f%% of %.1f (best %.1f GFLOP/s), %.1f%% of OpenBLAS-sgemm-implied %.1f (%.1f GFLOP/s); projections %.1f GFLOP/s, attention %.1f GFLOP/s; "
			       "time: projections %.3f s, attention %.3f s, conversion %.3f s, rows %.3f s, paging %.3f s, "
			       "rest %.3f s%s; foreign load %.2f cores%s\n",
			       k + 1, vname[v], tok, gf[v][k], rs[v][k], mn, gs * 1e9 / flop_tok, gs, rb[v][k], gb * 1e9 / flop_tok,
			       gb, rg[v][k], gsg * 1e9 / flop_tok, gsg,
			       ft.linear_flop / ft.linear / 1e9, ft.attention_flop / ft.attention / 1e9, ft.linear,
			       ft.attention, ft.convert, ft.rows, ft.pages, wall - fwd_times_parts(&ft), made, foreign,
			       foreign > 0.25 ? "  LOADED" : "");
			fflush(stdout);
			for (int j = 0; j <= NMODE; j++) {
				sust0[j] = sust1[j];
				best0[j] = best1[j];
			}
		}
	if (rounds > 0) {
		/* one line (families.sh strips its "summary T=N: "), one clause per mode */
		printf("summary T=%ld:", T);
		const char *sep = "";
		for (int v = 0; v < NVAR; v++) {
			if (!use[v])
				continue;
			const char *mn = mm_compute_name((ss_compute)(v % NMODE));
			double lo = 1e30, hi = 0;
			for (long k = 0; k < rounds; k++) {
				lo = rs[v][k] < lo ? rs[v][k] : lo;
				hi = rs[v][k] > hi ? rs[v][k] : hi;
			}
			double med = median(rs[v], (int)rounds), medb = median(rb[v], (int)rounds);
			double mq = median(qs[v], nq[v]), mqb = median(qb[v], nq[v]);
			double mg = median(rg[v], (int)rounds), mgf = median(gf[v], (int)rounds);
			printf("%s %s median %.1f%% of sustained oneDNN-%s-implied (%.1f%% of best) over %ld rounds "
			       "(min %.1f%%, max %.1f%%), %.1f%% of OpenBLAS-sgemm-implied, %.1f GFLOP/s; quiet rounds %d",
			       sep, vname[v], med, mn, medb, rounds, lo, hi, mg, mgf, nq[v]);
			if (nq[v])
				printf(": median %.1f%% (%.1f%% of best)", mq, mqb);
			sep = ";";
		}
		printf("\n");
	}
	free(r.A);
	free(r.C);
	free(r.W);
	for (int md = 0; md < NMODE; md++) {
		for (int i = 0; i < r.n; i++)
			mm_w_free(r.w[md][i]);
		mm_free(r.mm[md]);
	}
	for (int md = 0; md < NMODE; md++)
		fwd_keep_free(keep[md]);
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
