/* trace.c - the sinkscope HDF5 contract; see trace.h and sinkscope-h5(5). */
#include "io/trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *base_name(const char *p)
{
	if (!strcmp(p, "-"))
		return "-";
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static void meta_free(ss_meta *m)
{
	free(m->model);
	free(m->architecture);
	free(m->weight_dtype);
	free(m->generator);
	free(m->command);
	free(m->compute);
}

void trace_free(ss_trace *tr)
{
	if (!tr)
		return;
	free(tr->name);
	meta_free(&tr->meta);
	free(tr->ids);
	h5_free_strings(tr->text, tr->text ? (size_t)tr->T : 0);
	float *st[5] = {tr->resid_norm, tr->resid_cos0, tr->attn_out_norm, tr->mlp_out_norm, tr->recv};
	for (int k = 0; k < 5; k++)
		if (!(tr->borrowed & (1u << k)))
			free(st[k]);
	free(tr->moe_experts);
	free(tr->moe_weights);
	h5_buffers_free(tr->bufs);
	memset(tr, 0, sizeof *tr);
}

double trace_stats_bytes(long L, long T, long H)
{
	/* resid_norm and resid_cos0 (L+1 rows each), attn_out_norm and
	 * mlp_out_norm (L), recv (L x H), f32; the ids and texts are small */
	return 4.0 * (double)T * (double)(4 * L + 2 + L * H);
}

int trace_alloc(ss_trace *tr, long L, long T, long H, ss_err *e)
{
	memset(tr, 0, sizeof *tr);
	if (L < 1 || T < 1 || H < 1)
		return ss_err_set(e, "trace: bad sizes L=%ld T=%ld H=%ld", L, T, H);
	tr->L = L;
	tr->T = T;
	tr->H = H;
	size_t t = (size_t)T, l = (size_t)L;
	tr->ids = ss_calloc(t, sizeof(int32_t), "/tokens/ids", e);
	tr->text = ss_calloc(t, sizeof(char *), "/tokens/text", e);
	tr->resid_norm = ss_calloc((l + 1) * t, sizeof(float), "/stats/resid_norm", e);
	tr->resid_cos0 = ss_calloc((l + 1) * t, sizeof(float), "/stats/resid_cos0", e);
	tr->attn_out_norm = ss_calloc(l * t, sizeof(float), "/stats/attn_out_norm", e);
	tr->mlp_out_norm = ss_calloc(l * t, sizeof(float), "/stats/mlp_out_norm", e);
	tr->recv = ss_calloc(l * (size_t)H * t, sizeof(float), "/stats/recv", e);
	if (!tr->ids || !tr->text || !tr->resid_norm || !tr->resid_cos0 || !tr->attn_out_norm ||
	    !tr->mlp_out_norm || !tr->recv) {
		free(tr->text);
		tr->text = NULL;
		trace_free(tr);
		return -1;
	}
	for (long j = 0; j < T; j++) {
		tr->text[j] = strdup("");
		if (!tr->text[j]) {
			trace_free(tr);
			return ss_err_set(e, "trace: out of memory");
		}
	}
	tr->meta.format = SS_FORMAT;
	tr->meta.n_layers = L;
	tr->meta.n_heads = H;
	return 0;
}

/* Optional string attribute: missing is "", anything else wrong is an error. */
static int opt_str(ss_h5 *f, const char *name, char **v, ss_err *e)
{
	ss_err tmp = {0};
	if (h5_get_attr_str(f, "/", name, v, &tmp) == 0)
		return 0;
	if (strstr(tmp.msg, "missing attribute")) {
		*v = ss_strdup("", e);
		return *v ? 0 : -1;
	}
	*e = tmp;
	return -1;
}

/* The first non-finite value of x (n floats), reported with its index in
 * a row-major array of the given dims. */
static int check_finite(ss_h5 *f, const char *path, const float *x, int rank, const size_t *dims,
                        ss_err *e)
{
	size_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= dims[i];
	/* A branch-free scan of the exponent bits (vectorised) finds whether
	 * there is any Inf/NaN; only then look for the first one. */
	const uint32_t *u = (const uint32_t *)(const void *)x;
	uint32_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad |= (uint32_t)((u[i] & 0x7f800000u) == 0x7f800000u);
	if (!bad)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (isfinite(x[i]))
			continue;
		char idx[96];
		size_t r = i, o = 0;
		size_t sub[4];
		for (int k = rank - 1; k >= 0; k--) {
			sub[k] = r % dims[k];
			r /= dims[k];
		}
		for (int k = 0; k < rank; k++)
			o += (size_t)snprintf(idx + o, sizeof idx - o, "[%zu]", sub[k]);
		return ss_err_set(e, "%s:%s: non-finite value at %s", h5_name(f), path, idx);
	}
	return 0;
}

static int read_stat(ss_h5 *f, ss_trace *tr, int k, const char *path, int rank,
                     const size_t *dims, float **x, ss_err *e)
{
	int b = 0;
	if (h5_view_f32(f, path, rank, dims, x, NULL, &b, e))
		return -1;
	if (b)
		tr->borrowed |= 1u << k;
	return check_finite(f, path, *x, rank, dims, e);
}

/* /stats/moe_experts int32 and /stats/moe_weights float32 [L, T, K]: the
 * experts of each token, checked against the number of experts attribute */
static int read_moe(ss_h5 *f, ss_trace *tr, ss_err *e)
{
	const char *fn = h5_name(f);
	size_t d[3];
	if (h5_read_i32(f, "/stats/moe_experts", 3, NULL, &tr->moe_experts, d, e))
		return -1;
	if (d[0] != (size_t)tr->L || d[1] != (size_t)tr->T || d[2] < 1)
		return ss_err_set(e, "%s:/stats/moe_experts: shape %zux%zux%zu, expected %ldx%ldxK", fn, d[0],
		                  d[1], d[2], tr->L, tr->T);
	tr->K = (long)d[2];
	if (h5_get_attr_int(f, "/stats/moe_experts", "n_experts", &tr->n_experts, e))
		return -1;
	size_t n = d[0] * d[1] * d[2];
	for (size_t i = 0; i < n; i++)
		if (tr->moe_experts[i] < 0 || tr->moe_experts[i] >= tr->n_experts)
			return ss_err_set(e, "%s:/stats/moe_experts: expert %ld outside 0-%ld", fn,
			                  (long)tr->moe_experts[i], tr->n_experts - 1);
	if (h5_read_f32(f, "/stats/moe_weights", 3, d, &tr->moe_weights, NULL, e))
		return -1;
	return check_finite(f, "/stats/moe_weights", tr->moe_weights, 3, d, e);
}

static int read_h5(ss_h5 *f, ss_trace *tr, ss_err *e)
{
	const char *fn = h5_name(f);
	ss_meta *m = &tr->meta;
	if (h5_get_attr_int(f, "/", "sinkscope_format", &m->format, e)) {
		if (strstr(e->msg, "missing attribute"))
			ss_err_set(e, "%s:/: missing attribute 'sinkscope_format' (not a sinkscope file)",
			           fn);
		return -1;
	}
	if (m->format != SS_FORMAT)
		return ss_err_set(e, "%s:/: sinkscope_format %ld, this program reads %d", fn, m->format,
		                  SS_FORMAT);
	if (h5_get_attr_int(f, "/", "n_layers", &m->n_layers, e) ||
	    h5_get_attr_int(f, "/", "d_model", &m->d_model, e) ||
	    h5_get_attr_int(f, "/", "n_heads", &m->n_heads, e) ||
	    h5_get_attr_int(f, "/", "n_kv_heads", &m->n_kv_heads, e) ||
	    h5_get_attr_int(f, "/", "head_dim", &m->head_dim, e))
		return -1;
	if (opt_str(f, "model", &m->model, e) || opt_str(f, "architecture", &m->architecture, e) ||
	    opt_str(f, "weight_dtype", &m->weight_dtype, e) ||
	    opt_str(f, "generator", &m->generator, e) || opt_str(f, "command", &m->command, e) ||
	    opt_str(f, "compute", &m->compute, e))
		return -1;
	if (m->n_layers < 1 || m->n_layers > 100000)
		return ss_err_set(e, "%s:/: n_layers %ld out of range", fn, m->n_layers);
	if (m->n_heads < 1 || m->n_heads > 100000)
		return ss_err_set(e, "%s:/: n_heads %ld out of range", fn, m->n_heads);
	if (m->d_model < 1 || m->n_kv_heads < 1 || m->head_dim < 1)
		return ss_err_set(e, "%s:/: d_model, n_kv_heads and head_dim must be positive", fn);
	tr->L = m->n_layers;
	tr->H = m->n_heads;
	size_t dims[1];
	if (h5_read_i32(f, "/tokens/ids", 1, NULL, &tr->ids, dims, e))
		return -1;
	tr->T = (long)dims[0];
	if (tr->T < 1)
		return ss_err_set(e, "%s:/tokens/ids: no tokens", fn);
	size_t nt;
	if (h5_read_strings(f, "/tokens/text", &nt, &tr->text, e))
		return -1;
	if (nt != (size_t)tr->T) {
		h5_free_strings(tr->text, nt);
		tr->text = NULL;
		return ss_err_set(e, "%s:/tokens/text: shape %zu, expected %ld (as /tokens/ids)", fn, nt,
		                  tr->T);
	}
	size_t T = (size_t)tr->T, L = (size_t)tr->L, H = (size_t)tr->H;
	size_t d2[2] = {L + 1, T}, d1[2] = {L, T}, d3[3] = {L, H, T};
	int rc = read_stat(f, tr, 0, "/stats/resid_norm", 2, d2, &tr->resid_norm, e) ||
	         read_stat(f, tr, 1, "/stats/resid_cos0", 2, d2, &tr->resid_cos0, e) ||
	         read_stat(f, tr, 2, "/stats/attn_out_norm", 2, d1, &tr->attn_out_norm, e) ||
	         read_stat(f, tr, 3, "/stats/mlp_out_norm", 2, d1, &tr->mlp_out_norm, e) ||
	         read_stat(f, tr, 4, "/stats/recv", 3, d3, &tr->recv, e);
	if (rc == 0 && h5_exists(f, "/stats/moe_experts") > 0)
		rc = read_moe(f, tr, e);
	if (tr->borrowed)
		tr->bufs = h5_take_buffers(f);
	return rc ? -1 : 0;
}

int trace_read_h5(ss_h5 *f, ss_trace *tr, ss_err *e)
{
	memset(tr, 0, sizeof *tr);
	const char *n = h5_name(f);
	int rc = read_h5(f, tr, e);
	if (rc == 0) {
		tr->name = ss_strdup(strcmp(n, "<stdin>") ? base_name(n) : "-", e);
		if (!tr->name)
			rc = -1;
	}
	if (rc)
		trace_free(tr);
	return rc;
}

int trace_read(const char *path, ss_trace *tr, ss_err *e)
{
	memset(tr, 0, sizeof *tr);
	ss_h5 *f = NULL;
	if (h5_open(&f, path, e))
		return -1;
	int rc = trace_read_h5(f, tr, e);
	h5_close(f);
	return rc;
}

static const char *nz(const char *s) { return s ? s : ""; }

int trace_write_h5(ss_h5 *f, const ss_trace *tr, ss_err *e)
{
	const ss_meta *m = &tr->meta;
	if (h5_set_attr_int(f, "/", "sinkscope_format", SS_FORMAT, e) ||
	    h5_set_attr_str(f, "/", "model", nz(m->model), e) ||
	    h5_set_attr_str(f, "/", "architecture", nz(m->architecture), e) ||
	    h5_set_attr_int(f, "/", "n_layers", tr->L, e) ||
	    h5_set_attr_int(f, "/", "d_model", m->d_model, e) ||
	    h5_set_attr_int(f, "/", "n_heads", tr->H, e) ||
	    h5_set_attr_int(f, "/", "n_kv_heads", m->n_kv_heads, e) ||
	    h5_set_attr_int(f, "/", "head_dim", m->head_dim, e) ||
	    h5_set_attr_str(f, "/", "weight_dtype", nz(m->weight_dtype), e) ||
	    h5_set_attr_str(f, "/", "generator", nz(m->generator), e) ||
	    h5_set_attr_str(f, "/", "command", nz(m->command), e) ||
	    (m->compute && h5_set_attr_str(f, "/", "compute", m->compute, e)))
		return -1;
	size_t T = (size_t)tr->T, L = (size_t)tr->L, H = (size_t)tr->H;
	size_t d0[1] = {T}, d2[2] = {L + 1, T}, d1[2] = {L, T}, d3[3] = {L, H, T};
	if (h5_write_i32(f, "/tokens/ids", 1, d0, tr->ids, e) ||
	    h5_write_strings(f, "/tokens/text", T, (const char *const *)tr->text, e) ||
	    h5_write_f32(f, "/stats/resid_norm", 2, d2, tr->resid_norm, e) ||
	    h5_write_f32(f, "/stats/resid_cos0", 2, d2, tr->resid_cos0, e) ||
	    h5_write_f32(f, "/stats/attn_out_norm", 2, d1, tr->attn_out_norm, e) ||
	    h5_write_f32(f, "/stats/mlp_out_norm", 2, d1, tr->mlp_out_norm, e) ||
	    h5_write_f32(f, "/stats/recv", 3, d3, tr->recv, e))
		return -1;
	size_t dm[3] = {L, T, (size_t)tr->K};
	if (tr->moe_experts &&
	    (h5_write_i32(f, "/stats/moe_experts", 3, dm, tr->moe_experts, e) ||
	     h5_set_attr_int(f, "/stats/moe_experts", "n_experts", tr->n_experts, e) ||
	     h5_write_f32(f, "/stats/moe_weights", 3, dm, tr->moe_weights, e)))
		return -1;
	return 0;
}

int trace_acts_create(ss_h5 *f, const char *component, const long *layers, size_t n_sel,
                      long T, long d, ss_err *e)
{
	char path[256];
	snprintf(path, sizeof path, "/acts/%s", component);
	size_t dims[3] = {n_sel, (size_t)T, (size_t)d};
	if (h5_create_f32(f, path, 3, dims, e))
		return -1;
	return h5_set_attr_ints(f, path, "layers", n_sel, layers, e);
}

int trace_acts_write(ss_h5 *f, const char *component, size_t k, const float *x, ss_err *e)
{
	char path[256];
	snprintf(path, sizeof path, "/acts/%s", component);
	return h5_write_f32_rows(f, path, k, 1, x, e);
}

/* "1-4,7" for messages. */
static void ranges(char *buf, size_t cap, const long *v, size_t n)
{
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && o + 24 < cap;) {
		size_t j = i;
		while (j + 1 < n && v[j + 1] == v[j] + 1)
			j++;
		if (j > i)
			o += (size_t)snprintf(buf + o, cap - o, "%s%ld-%ld", o ? "," : "", v[i], v[j]);
		else
			o += (size_t)snprintf(buf + o, cap - o, "%s%ld", o ? "," : "", v[i]);
		i = j + 1;
	}
	if (!n)
		snprintf(buf, cap, "none");
}

int trace_acts_read(ss_h5 *f, const char *component, long layer, float **x, long *T, long *d,
                    ss_err *e)
{
	*x = NULL;
	char path[256];
	snprintf(path, sizeof path, "/acts/%s", component);
	if (!h5_exists(f, path))
		return ss_err_set(e, "%s:%s: not stored (run actdump with this component)", h5_name(f),
		                  path);
	int rank;
	size_t dims[H5IO_MAX_RANK];
	if (h5_shape(f, path, &rank, dims, e))
		return -1;
	if (rank != 3)
		return ss_err_set(e, "%s:%s: rank %d, expected 3 (n_sel x T x d)", h5_name(f), path,
		                  rank);
	size_t n;
	long *layers;
	if (h5_get_attr_ints(f, path, "layers", &n, &layers, e))
		return -1;
	if (n != dims[0]) {
		free(layers);
		return ss_err_set(e, "%s:%s: attribute 'layers' has %zu entries for %zu stored layers",
		                  h5_name(f), path, n, dims[0]);
	}
	size_t k = n;
	for (size_t i = 0; i < n; i++)
		if (layers[i] == layer)
			k = i;
	if (k == n) {
		char buf[256];
		ranges(buf, sizeof buf, layers, n);
		free(layers);
		return ss_err_set(e, "%s:%s: layer %ld not stored (stored: %s)", h5_name(f), path, layer,
		                  buf);
	}
	free(layers);
	size_t cnt = dims[1] * dims[2];
	float *buf = ss_malloc(cnt ? cnt : 1, sizeof(float), path, e);
	if (!buf)
		return -1;
	if (h5_read_f32_rows(f, path, k, 1, buf, e)) {
		free(buf);
		return -1;
	}
	*x = buf;
	*T = (long)dims[1];
	*d = (long)dims[2];
	return 0;
}

int trace_acts_copy(ss_h5 *dst, ss_h5 *src, ss_err *e)
{
	if (!h5_exists(src, "/acts"))
		return 0;
	char **names;
	size_t n;
	if (h5_list(src, "/acts", &names, &n, e))
		return -1;
	int rc = -1;
	float *buf = NULL;
	for (size_t i = 0; i < n; i++) {
		char path[300];
		snprintf(path, sizeof path, "/acts/%s", names[i]);
		int rank;
		size_t dims[H5IO_MAX_RANK];
		if (h5_shape(src, path, &rank, dims, e))
			goto done;
		if (rank != 3) {
			ss_err_set(e, "%s:%s: rank %d, expected 3 (n_sel x T x d)", h5_name(src), path, rank);
			goto done;
		}
		size_t row = dims[1] * dims[2];
		free(buf);
		buf = ss_malloc(row ? row : 1, sizeof(float), path, e);
		if (!buf || h5_create_f32(dst, path, 3, dims, e) || h5_copy_attrs(dst, src, path, e))
			goto done;
		for (size_t k = 0; k < dims[0]; k++)
			if (h5_read_f32_rows(src, path, k, 1, buf, e) ||
			    h5_write_f32_rows(dst, path, k, 1, buf, e))
				goto done;
	}
	rc = 0;
done:
	free(buf);
	h5_free_strings(names, n);
	return rc;
}
