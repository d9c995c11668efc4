/* model.c - config.json through the architecture table, and weights bound
 * by name; see model.h. */
#include "engine/model.h"

#include <jansson.h>
#include <stdarg.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The architecture table: everything that differs between the supported
 * architectures, one row each; a flag left out is 0.  Flags read from
 * config.json (attention_bias, mlp_bias, sliding_window, ...) are applied
 * on top where the architecture honours them (config_load). */
enum window_rule {
	WINDOW_NONE = 0, /* no sliding window */
	WINDOW_KEY,      /* "sliding_window": the window (absent or null: none) */
	WINDOW_REFUSED,  /* "use_sliding_window": true is refused (Qwen2 and Qwen3
	                    checkpoints give sliding_window but leave it off) */
};
typedef struct arch_row {
	const char *name;       /* "architectures"[0] of config.json */
	int qkv_bias;           /* always has q/k/v biases */
	int qk_norm;            /* per-head RMSNorm of q and k (q_norm, k_norm) */
	int fused;              /* qkv_proj and gate_up_proj */
	int attn_bias_key;      /* honours "attention_bias" (q/k/v/o biases) */
	int mlp_bias_key;       /* honours "mlp_bias" */
	enum window_rule window;
	int partial_rotary;     /* honours "partial_rotary_factor" */
} arch_row;

static const arch_row arch_table[] = {
	{.name = "LlamaForCausalLM", .attn_bias_key = 1, .mlp_bias_key = 1},
	{.name = "MistralForCausalLM", .window = WINDOW_KEY},
	{.name = "Qwen2ForCausalLM", .qkv_bias = 1, .window = WINDOW_REFUSED},
	{.name = "Qwen3ForCausalLM", .qk_norm = 1, .attn_bias_key = 1, .window = WINDOW_REFUSED},
	{.name = "Phi3ForCausalLM", .fused = 1, .window = WINDOW_KEY, .partial_rotary = 1},
};
#define N_ARCH (sizeof arch_table / sizeof arch_table[0])

static const arch_row *arch_find(const char *name)
{
	for (size_t i = 0; i < N_ARCH; i++)
		if (!strcmp(arch_table[i].name, name))
			return &arch_table[i];
	return NULL;
}

int config_arch_supported(const char *arch) { return arch_find(arch) != NULL; }

/* the table's names, joined once */
static char arch_names[64 * N_ARCH];
static pthread_once_t arch_names_once = PTHREAD_ONCE_INIT;
static void arch_names_join(void)
{
	size_t n = 0;
	for (size_t i = 0; i < N_ARCH; i++)
		n += (size_t)snprintf(arch_names + n, sizeof arch_names - n, "%s%s", i ? ", " : "",
		                      arch_table[i].name);
}

const char *config_arch_list(void)
{
	pthread_once(&arch_names_once, arch_names_join);
	return arch_names;
}

/* Field readers: absent (or null, when allowed) gives the default. */
static int get_long(json_t *o, const char *path, const char *k, long def, int req, long *v, ss_err *e)
{
	json_t *x = json_object_get(o, k);
	if (!x || json_is_null(x)) {
		if (req)
			return ss_err_set(e, "%s:%s: missing", path, k);
		*v = def;
		return 0;
	}
	if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > (1L << 40))
		return ss_err_set(e, "%s:%s: expected a non-negative integer", path, k);
	*v = (long)json_integer_value(x);
	return 0;
}

static int get_double(json_t *o, const char *path, const char *k, double def, double *v, ss_err *e)
{
	json_t *x = json_object_get(o, k);
	if (!x || json_is_null(x)) {
		*v = def;
		return 0;
	}
	if (!json_is_number(x) || !isfinite(json_number_value(x)))
		return ss_err_set(e, "%s:%s: expected a number", path, k);
	*v = json_number_value(x);
	return 0;
}

static int get_bool(json_t *o, const char *path, const char *k, int def, int *v, ss_err *e)
{
	json_t *x = json_object_get(o, k);
	if (!x || json_is_null(x)) {
		*v = def;
		return 0;
	}
	if (!json_is_boolean(x))
		return ss_err_set(e, "%s:%s: expected true or false", path, k);
	*v = json_is_true(x);
	return 0;
}

static int parse_rope_scaling(ss_config *c, json_t *rs, const char *path, ss_err *e)
{
	c->rope_type = SS_ROPE_DEFAULT;
	c->rope_factor = 1;
	if (!rs || json_is_null(rs))
		return 0;
	if (!json_is_object(rs))
		return ss_err_set(e, "%s:rope_scaling: expected an object or null", path);
	json_t *t = json_object_get(rs, "rope_type");
	const char *key = "rope_scaling.rope_type";
	if (!t) {
		t = json_object_get(rs, "type");
		key = "rope_scaling.type";
	}
	const char *ty = json_string_value(t);
	if (!ty)
		return ss_err_set(e, "%s:%s: missing", path, key);
	if (!strcmp(ty, "default"))
		return 0;
	if (!strcmp(ty, "linear"))
		c->rope_type = SS_ROPE_LINEAR;
	else if (!strcmp(ty, "llama3"))
		c->rope_type = SS_ROPE_LLAMA3;
	else
		return ss_err_set(e, "%s:%s: unsupported rope scaling '%s' (supported: linear, llama3)",
		                  path, key, ty);
	char fp[4200];
	snprintf(fp, sizeof fp, "%s:rope_scaling", path);
	json_t *f = json_object_get(rs, "factor");
	if (!json_is_number(f) || !(json_number_value(f) > 0))
		return ss_err_set(e, "%s:rope_scaling.factor: expected a positive number", path);
	c->rope_factor = json_number_value(f);
	if (c->rope_type == SS_ROPE_LLAMA3) {
		if (get_double(rs, fp, "low_freq_factor", 1, &c->rope_low_freq_factor, e) < 0 ||
		    get_double(rs, fp, "high_freq_factor", 4, &c->rope_high_freq_factor, e) < 0 ||
		    get_long(rs, fp, "original_max_position_embeddings", 8192, 0, &c->rope_orig_max_pos, e) < 0)
			return -1;
		if (!(c->rope_high_freq_factor > c->rope_low_freq_factor) || c->rope_orig_max_pos <= 0)
			return ss_err_set(e, "%s:rope_scaling: need high_freq_factor > low_freq_factor and original_max_position_embeddings > 0", path);
	}
	return 0;
}

int config_load(ss_config *c, const char *dir, ss_err *e)
{
	memset(c, 0, sizeof *c);
	char path[4096];
	snprintf(path, sizeof path, "%s/config.json", dir);
	json_error_t je;
	json_t *o = json_load_file(path, 0, &je);
	if (!o) {
		if (je.line < 1)
			return ss_err_set(e, "%s: %s", path, je.text);
		return ss_err_set(e, "%s: bad JSON at line %d: %s", path, je.line, je.text);
	}
	int rc = -1;
	if (!json_is_object(o)) {
		ss_err_set(e, "%s: not a JSON object", path);
		goto done;
	}
	json_t *ar = json_object_get(o, "architectures");
	const char *an = json_string_value(json_array_get(ar, 0));
	if (!an) {
		ss_err_set(e, "%s:architectures: missing", path);
		goto done;
	}
	const arch_row *A = arch_find(an);
	if (!A) {
		ss_err_set(e, "%s:architectures: unsupported architecture '%s' (supported: %s)", path, an,
		           config_arch_list());
		goto done;
	}
	snprintf(c->arch, sizeof c->arch, "%s", an);
	const char *mt = json_string_value(json_object_get(o, "model_type"));
	snprintf(c->model_type, sizeof c->model_type, "%s", mt ? mt : "");
	if (get_long(o, path, "hidden_size", 0, 1, &c->dim, e) < 0 ||
	    get_long(o, path, "intermediate_size", 0, 1, &c->hidden, e) < 0 ||
	    get_long(o, path, "num_hidden_layers", 0, 1, &c->n_layers, e) < 0 ||
	    get_long(o, path, "num_attention_heads", 0, 1, &c->n_heads, e) < 0 ||
	    get_long(o, path, "vocab_size", 0, 1, &c->vocab, e) < 0 ||
	    get_long(o, path, "max_position_embeddings", 0, 0, &c->max_pos, e) < 0 ||
	    get_long(o, path, "bos_token_id", -1, 0, &c->bos_id, e) < 0)
		goto done;
	const char *req[] = {"hidden_size", "intermediate_size", "num_hidden_layers",
	                     "num_attention_heads", "vocab_size"};
	long *reqv[] = {&c->dim, &c->hidden, &c->n_layers, &c->n_heads, &c->vocab};
	for (int i = 0; i < 5; i++)
		if (*reqv[i] <= 0) {
			ss_err_set(e, "%s:%s: must be positive", path, req[i]);
			goto done;
		}
	if (get_long(o, path, "num_key_value_heads", c->n_heads, 0, &c->n_kv_heads, e) < 0)
		goto done;
	if (c->n_kv_heads <= 0 || c->n_heads % c->n_kv_heads) {
		ss_err_set(e, "%s:num_key_value_heads: %ld does not divide num_attention_heads %ld", path,
		           c->n_kv_heads, c->n_heads);
		goto done;
	}
	if (get_long(o, path, "head_dim", c->dim / c->n_heads, 0, &c->head_dim, e) < 0)
		goto done;
	if (!json_object_get(o, "head_dim") && c->dim % c->n_heads) {
		ss_err_set(e, "%s:num_attention_heads: %ld does not divide hidden_size %ld", path,
		           c->n_heads, c->dim);
		goto done;
	}
	if (c->head_dim <= 0 || c->head_dim % 2) {
		ss_err_set(e, "%s:head_dim: %ld must be positive and even", path, c->head_dim);
		goto done;
	}
	const char *eps_key = json_object_get(o, "rms_norm_eps") ? "rms_norm_eps" : "layer_norm_eps";
	if (get_double(o, path, eps_key, 1e-6, &c->eps, e) < 0 ||
	    get_double(o, path, "rope_theta", 10000, &c->rope_theta, e) < 0)
		goto done;
	if (!(c->eps > 0) || !(c->rope_theta > 0)) {
		ss_err_set(e, "%s:%s: must be positive", path, c->eps > 0 ? "rope_theta" : eps_key);
		goto done;
	}
	const char *act = json_string_value(json_object_get(o, "hidden_act"));
	if (json_object_get(o, "hidden_act") && (!act || strcmp(act, "silu"))) {
		ss_err_set(e, "%s:hidden_act: unsupported activation '%s' (supported: silu)", path,
		           act ? act : "?");
		goto done;
	}
	if (parse_rope_scaling(c, json_object_get(o, "rope_scaling"), path, e) < 0)
		goto done;
	double prf = 1;
	if (A->partial_rotary && get_double(o, path, "partial_rotary_factor", 1, &prf, e) < 0)
		goto done;
	c->rotary_dim = (long)(c->head_dim * prf);
	if (c->rotary_dim <= 0 || c->rotary_dim > c->head_dim || c->rotary_dim % 2) {
		ss_err_set(e, "%s:partial_rotary_factor: gives rotary dimension %ld of head_dim %ld", path,
		           c->rotary_dim, c->head_dim);
		goto done;
	}
	int b = 0;
	c->qkv_bias = A->qkv_bias;
	c->qk_norm = A->qk_norm;
	c->fused_qkv = c->fused_gate_up = A->fused;
	if (A->attn_bias_key) {
		if (get_bool(o, path, "attention_bias", 0, &b, e) < 0)
			goto done;
		if (b)
			c->qkv_bias = c->o_bias = 1;
	}
	if (A->mlp_bias_key && get_bool(o, path, "mlp_bias", 0, &c->mlp_bias, e) < 0)
		goto done;
	if (A->window == WINDOW_KEY) {
		if (get_long(o, path, "sliding_window", 0, 0, &c->sliding_window, e) < 0)
			goto done;
	} else if (A->window == WINDOW_REFUSED) {
		if (get_bool(o, path, "use_sliding_window", 0, &b, e) < 0)
			goto done;
		if (b) {
			ss_err_set(e, "%s:use_sliding_window: true is not supported", path);
			goto done;
		}
	}
	if (get_bool(o, path, "tie_word_embeddings", 0, &c->tied, e) < 0)
		goto done;
	rc = 0;
done:
	json_decref(o);
	return rc;
}

size_t model_layer_f32_bytes(const ss_config *c)
{
	size_t hd = (size_t)c->head_dim, qkv = (size_t)(c->n_heads + 2 * c->n_kv_heads) * hd;
	size_t n = qkv * (size_t)c->dim + (size_t)c->dim * (size_t)c->n_heads * hd +
	           3 * (size_t)c->hidden * (size_t)c->dim;
	n += qkv + 2 * (size_t)c->dim + 2 * hd + 2 * (size_t)c->hidden + 2 * (size_t)c->dim;
	return n * sizeof(float);
}

static int bind(ss_model *m, const st_tensor **out, int rank, long a, long b, ss_err *e,
                const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static int bind(ss_model *m, const st_tensor **out, int rank, long a, long b, ss_err *e,
                const char *fmt, ...)
{
	char name[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof name, fmt, ap);
	va_end(ap);
	long shape[2] = {a, b};
	if (st_bind(&m->st, name, rank, shape, out, e) < 0)
		return -1;
	m->weight_bytes += (double)(*out)->n * (double)st_dtype_size((*out)->dtype);
	return 0;
}

int model_load(ss_model *m, const char *dir, ss_err *e)
{
	memset(m, 0, sizeof *m);
	m->dir = ss_strdup(dir, e);
	if (!m->dir)
		return -1;
	ss_config *c = &m->c;
	if (config_load(c, dir, e) < 0 || st_open_dir(&m->st, dir, e) < 0)
		goto fail;
	m->layers = ss_calloc((size_t)c->n_layers, sizeof *m->layers, "layers", e);
	if (!m->layers)
		goto fail;
	long D = c->dim, hd = c->head_dim, q = c->n_heads * hd, kv = c->n_kv_heads * hd, F = c->hidden;
	if (bind(m, &m->embed, 2, c->vocab, D, e, "model.embed_tokens.weight") < 0 ||
	    bind(m, &m->norm, 1, D, 0, e, "model.norm.weight") < 0)
		goto fail;
	if (c->tied) {
		m->lm_head = m->embed;
		/* some tied checkpoints still carry a copy; HF ignores it */
		const st_tensor *x;
		if (st_find(&m->st, "lm_head.weight") &&
		    bind(m, &x, 2, c->vocab, D, e, "lm_head.weight") < 0)
			goto fail;
	} else if (bind(m, &m->lm_head, 2, c->vocab, D, e, "lm_head.weight") < 0) {
		goto fail;
	}
	for (long l = 0; l < c->n_layers; l++) {
		ss_layer_w *w = &m->layers[l];
		const char *p = "model.layers";
		if (bind(m, &w->in_norm, 1, D, 0, e, "%s.%ld.input_layernorm.weight", p, l) < 0 ||
		    bind(m, &w->post_norm, 1, D, 0, e, "%s.%ld.post_attention_layernorm.weight", p, l) < 0 ||
		    bind(m, &w->wo, 2, D, q, e, "%s.%ld.self_attn.o_proj.weight", p, l) < 0 ||
		    bind(m, &w->w_down, 2, D, F, e, "%s.%ld.mlp.down_proj.weight", p, l) < 0)
			goto fail;
		if (c->fused_qkv) {
			if (bind(m, &w->wqkv, 2, q + 2 * kv, D, e, "%s.%ld.self_attn.qkv_proj.weight", p, l) < 0)
				goto fail;
		} else if (bind(m, &w->wq, 2, q, D, e, "%s.%ld.self_attn.q_proj.weight", p, l) < 0 ||
		           bind(m, &w->wk, 2, kv, D, e, "%s.%ld.self_attn.k_proj.weight", p, l) < 0 ||
		           bind(m, &w->wv, 2, kv, D, e, "%s.%ld.self_attn.v_proj.weight", p, l) < 0) {
			goto fail;
		}
		if (c->qkv_bias &&
		    (bind(m, &w->bq, 1, q, 0, e, "%s.%ld.self_attn.q_proj.bias", p, l) < 0 ||
		     bind(m, &w->bk, 1, kv, 0, e, "%s.%ld.self_attn.k_proj.bias", p, l) < 0 ||
		     bind(m, &w->bv, 1, kv, 0, e, "%s.%ld.self_attn.v_proj.bias", p, l) < 0))
			goto fail;
		if (c->o_bias && bind(m, &w->bo, 1, D, 0, e, "%s.%ld.self_attn.o_proj.bias", p, l) < 0)
			goto fail;
		if (c->qk_norm &&
		    (bind(m, &w->q_norm, 1, hd, 0, e, "%s.%ld.self_attn.q_norm.weight", p, l) < 0 ||
		     bind(m, &w->k_norm, 1, hd, 0, e, "%s.%ld.self_attn.k_norm.weight", p, l) < 0))
			goto fail;
		if (c->fused_gate_up) {
			if (bind(m, &w->w_gate_up, 2, 2 * F, D, e, "%s.%ld.mlp.gate_up_proj.weight", p, l) < 0)
				goto fail;
		} else if (bind(m, &w->w_gate, 2, F, D, e, "%s.%ld.mlp.gate_proj.weight", p, l) < 0 ||
		           bind(m, &w->w_up, 2, F, D, e, "%s.%ld.mlp.up_proj.weight", p, l) < 0) {
			goto fail;
		}
		if (c->mlp_bias &&
		    (bind(m, &w->b_gate, 1, F, 0, e, "%s.%ld.mlp.gate_proj.bias", p, l) < 0 ||
		     bind(m, &w->b_up, 1, F, 0, e, "%s.%ld.mlp.up_proj.bias", p, l) < 0 ||
		     bind(m, &w->b_down, 1, D, 0, e, "%s.%ld.mlp.down_proj.bias", p, l) < 0))
			goto fail;
		/* old Llama checkpoints store the RoPE table; it is recomputed */
		char inv[128];
		snprintf(inv, sizeof inv, "%s.%ld.self_attn.rotary_emb.inv_freq", p, l);
		st_tensor *t = (st_tensor *)st_find(&m->st, inv);
		if (t)
			t->used = 1;
	}
	if (st_check_unused(&m->st, e) < 0)
		goto fail;
	/* weight dtype: that of every bound tensor, else "mixed" */
	int dt = -1;
	for (size_t i = 0; i < m->st.n; i++) {
		if (strstr(m->st.t[i].name, "rotary_emb.inv_freq"))
			continue;
		if (dt < 0)
			dt = (int)m->st.t[i].dtype;
		else if (dt != (int)m->st.t[i].dtype)
			dt = 99;
	}
	snprintf(m->weight_dtype, sizeof m->weight_dtype, "%s",
	         dt == 99 ? "mixed" : st_dtype_name(dt < 0 ? ST_F32 : (st_dtype)dt));
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	m->drop_cache = pages > 0 && psz > 0 && m->weight_bytes > 0.75 * (double)pages * (double)psz;
	return 0;
fail:
	model_free(m);
	return -1;
}

/* The tensors of layer l (1..L) lie in one run per shard (a shard stores
 * tensors in name order, and "model.layers.L." names sort together): the
 * span of each run is released or prefetched in one call (st.h says why). */
static void layer_spans(const ss_model *m, int l, int drop, int prefetch)
{
	if (l < 1 || l > m->c.n_layers)
		return;
	const ss_layer_w *w = &m->layers[l - 1];
	const st_tensor *const t[] = {w->in_norm, w->post_norm, w->wq, w->wk, w->wv, w->wqkv,
	                              w->bq, w->bk, w->bv, w->wo, w->bo, w->q_norm, w->k_norm,
	                              w->w_gate, w->w_up, w->w_gate_up, w->w_down,
	                              w->b_gate, w->b_up, w->b_down};
	enum { N = sizeof t / sizeof t[0] };
	int done[N] = {0};
	for (int i = 0; i < N; i++) {
		if (!t[i] || done[i])
			continue;
		const char *lo = t[i]->data, *hi = lo + (size_t)t[i]->n * st_dtype_size(t[i]->dtype);
		for (int j = i; j < N; j++)   /* the others in the same file */
			if (t[j] && t[j]->file == t[i]->file) {
				const char *a = t[j]->data, *z = a + (size_t)t[j]->n * st_dtype_size(t[j]->dtype);
				lo = a < lo ? a : lo;
				hi = z > hi ? z : hi;
				done[j] = 1;
			}
		if (prefetch)
			st_prefetch_range(&m->st, lo, (size_t)(hi - lo));
		else
			st_release_range(&m->st, lo, (size_t)(hi - lo), drop);
	}
}

void model_layer_release(const ss_model *m, int l) { layer_spans(m, l, m->drop_cache, 0); }
void model_layer_prefetch(const ss_model *m, int l) { layer_spans(m, l, 0, 1); }
void model_tensor_release(const ss_model *m, const st_tensor *t)
{
	if (t)
		st_release(&m->st, t, m->drop_cache);
}
void model_release_all(const ss_model *m) { st_release_all(&m->st, m->drop_cache); }

void model_embed_prefetch(const ss_model *m, const int32_t *ids, long n)
{
	const st_tensor *E = m->embed;
	size_t row = (size_t)m->c.dim * st_dtype_size(E->dtype);
	for (long i = 0; i < n; i++)
		if (ids[i] >= 0 && ids[i] < m->c.vocab)
			st_prefetch_range(&m->st, (const char *)E->data + (size_t)ids[i] * row, row);
}

void model_free(ss_model *m)
{
	st_close(&m->st);
	free(m->layers);
	free(m->dir);
	memset(m, 0, sizeof *m);
}

void ss_rope_inv_freq(const ss_config *c, float *inv)
{
	long half = c->rotary_dim / 2;
	for (long i = 0; i < half; i++) {
		/* 1 / base^(2i/dim) */
		double f = 1.0 / pow(c->rope_theta, (double)(float)((float)(2 * i) / (float)c->rotary_dim));
		if (c->rope_type == SS_ROPE_LINEAR) {
			f /= c->rope_factor;
		} else if (c->rope_type == SS_ROPE_LLAMA3) {
			/* transformers' _compute_llama3_parameters */
			double old = (double)c->rope_orig_max_pos, lf = c->rope_low_freq_factor,
			       hf = c->rope_high_freq_factor, factor = c->rope_factor;
			double wavelen = 2 * M_PI / (double)(float)f;
			double low_wl = old / lf, high_wl = old / hf;
			if (wavelen > low_wl) {
				f = f / factor;
			} else if (wavelen >= high_wl) {
				double sm = (old / wavelen - lf) / (hf - lf);
				f = (1 - sm) * f / factor + sm * f;
			}
		}
		inv[i] = (float)f;
	}
}
