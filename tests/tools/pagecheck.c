/* pagecheck - does layer-major prefill really let go of each layer's mapped
 * weights (st_release via model_layer_release), without changing results?
 *
 *   pagecheck MODEL_DIR T THREADS
 *
 * Prints key=value lines (tests/ref/paging.sh judges them):
 *   layer_bytes     bytes of all layer tensors (mapped, bf16/f16/f32)
 *   touch_kb        RssFile growth after reading every layer tensor
 *   release_kb      ... and after st_release() of them (pages leave the process)
 *   cached_kb       page cache holding the layer tensors then (mincore; the
 *                   pages stay cached: st_release without drop_cache)
 *   prefill_kb      the largest RssFile growth seen during a prefill, sampled
 *                   by a hook inside every layer (after that layer's weights
 *                   were converted, before they are released)
 *   lag_cached_kb   during a second prefill, with drop_cache on: the most
 *                   page cache that layers 1..l-2 held while layer l ran
 *   dropped_cached_kb  page cache holding the layer tensors after it
 *   manual_kb       RssFile growth of the same pass run layer by layer with
 *                   fwd_embed/fwd_layer, which release nothing (the control)
 *   same_repeat     1 when the two prefills' h[L] and statistics are bitwise equal
 *   same_manual     1 when the manual pass's h[L] equals the prefill's bitwise
 * RssFile (file-backed resident pages, /proc/self/status) is what mapped
 * weights add to a process's RSS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/forward.h"
#include "engine/model.h"

static long rss_file_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "RssFile: %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static const st_tensor *layer_t(const ss_layer_w *w, int i)
{
	const st_tensor *const t[] = {w->in_norm, w->post_norm, w->wq, w->wk, w->wv, w->wqkv,
	                              w->bq, w->bk, w->bv, w->wo, w->bo, w->q_norm, w->k_norm,
	                              w->w_gate, w->w_up, w->w_gate_up, w->w_down,
	                              w->b_gate, w->b_up, w->b_down};
	return i < (int)(sizeof t / sizeof t[0]) ? t[i] : (const st_tensor *)-1;
}

/* kB of the pages of layers 1..nl's tensors that the page cache holds */
static long cached_kb_to(const ss_model *m, long nl)
{
	long pg = sysconf(_SC_PAGESIZE), n = 0;
	unsigned char *vec = NULL;
	size_t cap = 0;
	for (long l = 0; l < nl; l++)
		for (int i = 0;; i++) {
			const st_tensor *t = layer_t(&m->layers[l], i);
			if (t == (const st_tensor *)-1)
				break;
			if (!t)
				continue;
			uintptr_t a = (uintptr_t)t->data / (uintptr_t)pg * (uintptr_t)pg;
			size_t len = (size_t)((uintptr_t)t->data - a) + (size_t)t->n * st_dtype_size(t->dtype);
			size_t np = (len + (size_t)pg - 1) / (size_t)pg;
			if (np > cap && !(vec = realloc(vec, cap = np)))
				return -1;
			if (mincore((void *)a, len, vec) < 0)
				return -1;
			for (size_t k = 0; k < np; k++)
				n += vec[k] & 1;
		}
	free(vec);
	return n * pg / 1024;
}

static long cached_kb(const ss_model *m) { return cached_kb_to(m, m->c.n_layers); }

typedef struct sampler { long base, peak, lag; const ss_model *m; int on; } sampler;

/* inside layer `layer` (its weights converted, not yet released) */
static int sample(void *ctx, int layer, ss_hook_point what, long t0, long n, float *x, long d)
{
	sampler *s = ctx;
	if (what != SS_HOOK_MLP_OUT || !s->on)
		return 0;
	long kb = rss_file_kb() - s->base;
	if (kb > s->peak)
		s->peak = kb;
	if (s->m->drop_cache) {   /* the layers before the previous one */
		long c = cached_kb_to(s->m, layer - 2);
		if (c > s->lag)
			s->lag = c;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: pagecheck MODEL_DIR T THREADS\n");
		return 2;
	}
	ss_err e = {0};
	ss_model M;
	long T = atol(argv[2]);
	int th = atoi(argv[3]);
	if (model_load(&M, argv[1], &e) < 0) {
		fprintf(stderr, "pagecheck: %s\n", e.msg);
		return 1;
	}
	const ss_config *c = &M.c;
	long L = c->n_layers, D = c->dim, H = c->n_heads, kvd = c->n_kv_heads * c->head_dim;
	double layer_bytes = 0, sum = 0;
	long r0 = rss_file_kb();
	for (long l = 0; l < L; l++)
		for (int i = 0;; i++) {
			const st_tensor *t = layer_t(&M.layers[l], i);
			if (t == (const st_tensor *)-1)
				break;
			if (!t)
				continue;
			size_t nb = (size_t)t->n * st_dtype_size(t->dtype);
			layer_bytes += (double)nb;
			const unsigned char *p = t->data;
			for (size_t k = 0; k < nb; k += 512)
				sum += p[k];
		}
	long touch = rss_file_kb() - r0;
	for (int l = 1; l <= L; l++)
		model_layer_release(&M, l);
	long rel = rss_file_kb() - r0, cached = cached_kb(&M);

	int32_t *ids = malloc(sizeof *ids * (size_t)T);
	unsigned seed = 7;
	for (long i = 0; i < T; i++) {
		seed = seed * 1103515245u + 12345u;
		ids[i] = (int32_t)((seed >> 8) % (unsigned)c->vocab);
	}
	size_t nst = (size_t)((L + 1) * T * 2 + L * T * 2 + L * H * T);
	float *s1 = calloc(nst, sizeof(float)), *s2 = calloc(nst, sizeof(float));
	float *h1 = malloc(sizeof(float) * (size_t)(T * D)), *h2 = malloc(sizeof(float) * (size_t)(T * D));
	sampler sm = {0, 0, 0, &M, 1};
	ss_fwd_opts fo = {.threads = th, .hook = sample, .hook_ctx = &sm};
	ss_fwd *f = NULL;
	if (fwd_create(&f, &M, &fo, T, &e) < 0) {
		fprintf(stderr, "pagecheck: %s\n", e.msg);
		return 1;
	}
	float *st[2] = {s1, s2}, *hh[2] = {h1, h2};
	for (int run = 0; run < 2; run++) {
		float *p = st[run];
		ss_stats s = {p, p + (L + 1) * T, p + 2 * (L + 1) * T, p + 2 * (L + 1) * T + L * T,
		              p + 2 * (L + 1) * T + 2 * L * T, NULL, NULL};
		M.drop_cache = run == 1;
		sm.base = rss_file_kb();
		if (fwd_prefill(f, ids, T, &s, hh[run], &e) < 0) {
			fprintf(stderr, "pagecheck: %s\n", e.msg);
			return 1;
		}
	}
	long peak = sm.peak, dropped = cached_kb(&M);
	sm.on = 0;
	int same_repeat = !memcmp(s1, s2, nst * sizeof(float)) && !memcmp(h1, h2, sizeof(float) * (size_t)(T * D));

	/* the control: layer by layer, nothing released */
	float *x = malloc(sizeof(float) * (size_t)(T * D)), *kc = malloc(sizeof(float) * (size_t)(T * kvd)),
	      *vc = malloc(sizeof(float) * (size_t)(T * kvd));
	double *recv = malloc(sizeof(double) * (size_t)(H * T));
	long m0 = rss_file_kb();
	if (fwd_embed(f, ids, 0, T, x, &e) < 0)
		return 1;
	for (int l = 1; l <= L; l++) {
		memset(recv, 0, sizeof(double) * (size_t)(H * T));
		if (fwd_layer(f, l, x, 0, T, kc, vc, recv, T, NULL, NULL, &e) < 0) {
			fprintf(stderr, "pagecheck: %s\n", e.msg);
			return 1;
		}
	}
	long manual = rss_file_kb() - m0;
	int same_manual = !memcmp(x, h1, sizeof(float) * (size_t)(T * D));
	printf("layer_bytes=%.0f\ntouch_kb=%ld\nrelease_kb=%ld\ncached_kb=%ld\nprefill_kb=%ld\n"
	       "lag_cached_kb=%ld\ndropped_cached_kb=%ld\nmanual_kb=%ld\nsame_repeat=%d\nsame_manual=%d\nchecksum=%.0f\n",
	       layer_bytes, touch, rel, cached, peak, sm.lag, dropped, manual, same_repeat, same_manual, sum);
	fwd_free(f);
	model_free(&M);
	free(ids); free(s1); free(s2); free(h1); free(h2); free(x); free(kc); free(vc); free(recv);
	return 0;
}
