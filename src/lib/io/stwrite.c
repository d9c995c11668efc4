/* stwrite.c - safetensors writer; see stwrite.h. */
#include "io/stwrite.h"

#include <jansson.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/ofile.h"

typedef struct stw_tensor {
	char *name;
	st_dtype dtype;
	int rank;
	long shape[ST_MAX_RANK];
	size_t nbytes;
	unsigned char *data;
} stw_tensor;

struct stw {
	stw_tensor *t;
	size_t n, cap;
};

stw *stw_new(ss_err *e)
{
	return ss_calloc(1, sizeof(stw), "safetensors writer", e);
}

void stw_free(stw *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n; i++) {
		free(w->t[i].name);
		free(w->t[i].data);
	}
	free(w->t);
	free(w);
}

/* f32 -> f16, round to nearest even; overflow goes to inf, NaN stays NaN. */
static uint16_t f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000u, ex = (x >> 23) & 0xffu, man = x & 0x7fffffu;
	if (ex == 0xff)
		return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
	int e = (int)ex - 127 + 15;
	if (e >= 31)
		return (uint16_t)(sign | 0x7c00u);
	if (e <= 0) { /* subnormal or zero */
		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000u;
		int shift = 14 - e;
		uint32_t half = 1u << (shift - 1), rest = man & ((1u << shift) - 1);
		uint32_t m = man >> shift;
		if (rest > half || (rest == half && (m & 1)))
			m++;
		return (uint16_t)(sign | m);
	}
	uint32_t m = man >> 13, rest = man & 0x1fffu;
	uint32_t h = sign | ((uint32_t)e << 10) | m;
	if (rest > 0x1000u || (rest == 0x1000u && (m & 1)))
		h++; /* may carry into the exponent, which is right */
	return (uint16_t)h;
}

float stw_round(st_dtype dtype, float x)
{
	return dtype == ST_BF16 ? st_bf16_to_f32(st_f32_to_bf16(x))
	       : dtype == ST_F16 ? st_f16_to_f32(f32_to_f16(x)) : x;
}

int stw_add(stw *w, const char *name, st_dtype dtype, int rank, const long *shape,
            const float *data, ss_err *e)
{
	if (rank < 1 || rank > ST_MAX_RANK)
		return ss_err_set(e, "%s: rank %d out of range", name, rank);
	for (size_t i = 0; i < w->n; i++)
		if (!strcmp(w->t[i].name, name))
			return ss_err_set(e, "%s: tensor added twice", name);
	long n = 1;
	for (int i = 0; i < rank; i++) {
		if (shape[i] < 1)
			return ss_err_set(e, "%s: bad shape", name);
		n *= shape[i];
	}
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		stw_tensor *t = realloc(w->t, cap * sizeof(*t));
		if (!t)
			return ss_err_set(e, "out of memory for tensor table");
		w->t = t;
		w->cap = cap;
	}
	stw_tensor *t = &w->t[w->n];
	memset(t, 0, sizeof(*t));
	t->nbytes = (size_t)n * st_dtype_size(dtype);
	t->data = ss_malloc(t->nbytes, 1, name, e);
	t->name = t->data ? ss_strdup(name, e) : NULL;
	if (!t->name) {
		free(t->data);
		return -1;
	}
	t->dtype = dtype;
	t->rank = rank;
	memcpy(t->shape, shape, (size_t)rank * sizeof(long));
	if (dtype == ST_F32) {
		memcpy(t->data, data, t->nbytes);
	} else {
		uint16_t *o = (uint16_t *)t->data;
		for (long i = 0; i < n; i++)
			o[i] = dtype == ST_BF16 ? st_f32_to_bf16(data[i]) : f32_to_f16(data[i]);
	}
	w->n++;
	return 0;
}

static const char *hf_dtype(st_dtype d)
{
	return d == ST_F32 ? "F32" : d == ST_F16 ? "F16" : "BF16";
}

int stw_write(const stw *w, const char *path, ss_err *e)
{
	json_t *h = json_object();
	size_t off = 0;
	for (size_t i = 0; i < w->n; i++) {
		const stw_tensor *t = &w->t[i];
		json_t *shape = json_array();
		for (int k = 0; k < t->rank; k++)
			json_array_append_new(shape, json_integer(t->shape[k]));
		json_t *o = json_pack("{s:s, s:o, s:[I,I]}", "dtype", hf_dtype(t->dtype), "shape", shape,
		                      "data_offsets", (json_int_t)off, (json_int_t)(off + t->nbytes));
		json_object_set_new(h, t->name, o);
		off += t->nbytes;
	}
	json_object_set_new(h, "__metadata__", json_pack("{s:s}", "format", "pt"));
	char *js = json_dumps(h, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(h);
	if (!js)
		return ss_err_set(e, "%s: cannot encode the header", path);
	size_t n = strlen(js), pad = (8 - n % 8) % 8;
	ss_ofile o;
	if (ss_ofile_open(&o, path, e) < 0) {
		free(js);
		return -1;
	}
	unsigned char len[8];
	uint64_t hl = n + pad;
	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)(hl >> (8 * i));
	int ok = fwrite(len, 1, 8, o.f) == 8 && fwrite(js, 1, n, o.f) == n;
	for (size_t i = 0; ok && i < pad; i++)
		ok = fputc(' ', o.f) != EOF;
	for (size_t i = 0; ok && i < w->n; i++)
		ok = fwrite(w->t[i].data, 1, w->t[i].nbytes, o.f) == w->t[i].nbytes;
	free(js);
	if (!ok) {
		ss_ofile_abort(&o);
		return ss_err_errno(e, errno, "%s: write", path);
	}
	return ss_ofile_commit(&o, e);
}
