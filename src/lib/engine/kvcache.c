/* kvcache.c - per-layer key/value cache and single-query attention. */
#include <stdlib.h>
#include <string.h>
#include "engine/kvcache.h"
#include "io/st.h"

int kv_dtype_parse(const char *s, ss_kv_dtype *dt, ss_err *e)
{
	if (!strcmp(s, "f32"))
		*dt = SS_KV_F32;
	else if (!strcmp(s, "bf16"))
		*dt = SS_KV_BF16;
	else
		return ss_err_status(e, SS_EXIT_USAGE, "kv cache dtype '%s': expected f32 or bf16", s);
	return 0;
}

static size_t elsize(ss_kv_dtype dt) { return dt == SS_KV_BF16 ? 2 : 4; }

double kv_bytes(long n_layers, long cap, long kv_dim, ss_kv_dtype dt)
{
	return 2.0 * n_layers * (double)cap * kv_dim * elsize(dt);
}

int kv_init(ss_kvcache *kv, long n_layers, long cap, long n_kv_heads, long head_dim,
            ss_kv_dtype dt, ss_err *e)
{
	*kv = (ss_kvcache){.dtype = dt, .n_layers = n_layers, .cap = cap,
	                   .n_kv_heads = n_kv_heads, .head_dim = head_dim,
	                   .kv_dim = n_kv_heads * head_dim};
	kv->k = ss_calloc(n_layers, sizeof *kv->k, "kv cache", e);
	kv->v = ss_calloc(n_layers, sizeof *kv->v, "kv cache", e);
	if (!kv->k || !kv->v)
		goto fail;
	for (long l = 0; l < n_layers; l++) {
		kv->k[l] = ss_malloc((size_t)cap * kv->kv_dim, elsize(dt), "kv cache keys", e);
		kv->v[l] = ss_malloc((size_t)cap * kv->kv_dim, elsize(dt), "kv cache values", e);
		if (!kv->k[l] || !kv->v[l])
			goto fail;
	}
	return 0;
fail:
	kv_free(kv);
	return -1;
}

void kv_free(ss_kvcache *kv)
{
	for (long l = 0; l < kv->n_layers; l++) {
		if (kv->k)
			free(kv->k[l]);
		if (kv->v)
			free(kv->v[l]);
	}
	free(kv->k);
	free(kv->v);
	kv->k = kv->v = NULL;
	kv->n_layers = 0;
}

static void put_rows(void *dst, ss_kv_dtype dt, size_t off, size_t n, const float *src)
{
	if (dt == SS_KV_F32) {
		memcpy((float *)dst + off, src, n * sizeof *src);
		return;
	}
	uint16_t *d = (uint16_t *)dst + off;
	for (size_t i = 0; i < n; i++)
		d[i] = st_f32_to_bf16(src[i]);
}

void kv_put(ss_kvcache *kv, long layer, long pos, long n, const float *k, const float *v)
{
	size_t off = (size_t)pos * kv->kv_dim, cnt = (size_t)n * kv->kv_dim;
	put_rows(kv->k[layer - 1], kv->dtype, off, cnt, k);
	put_rows(kv->v[layer - 1], kv->dtype, off, cnt, v);
}

static void get_row(const void *src, ss_kv_dtype dt, size_t off, size_t n, float *dst)
{
	if (dt == SS_KV_F32) {
		memcpy(dst, (const float *)src + off, n * sizeof *dst);
		return;
	}
	const uint16_t *s = (const uint16_t *)src + off;
	for (size_t i = 0; i < n; i++)
		dst[i] = kv_bf16_to_f32(s[i]);
}

void kv_get(const ss_kvcache *kv, long layer, long pos, float *k, float *v)
{
	size_t off = (size_t)pos * kv->kv_dim;
	get_row(kv->k[layer - 1], kv->dtype, off, kv->kv_dim, k);
	get_row(kv->v[layer - 1], kv->dtype, off, kv->kv_dim, v);
}

void kv_layer_f32(const ss_kvcache *kv, long layer, long n, float *kbuf, float *vbuf,
                  float **k, float **v)
{
	if (kv->dtype == SS_KV_F32) {
		*k = kv->k[layer - 1];
		*v = kv->v[layer - 1];
		return;
	}
	get_row(kv->k[layer - 1], kv->dtype, 0, (size_t)n * kv->kv_dim, kbuf);
	get_row(kv->v[layer - 1], kv->dtype, 0, (size_t)n * kv->kv_dim, vbuf);
	*k = kbuf;
	*v = vbuf;
}
