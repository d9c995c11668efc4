/* config.c - config.json read through the architecture table: the tensor
 * names of each family, the table (one row per "architectures" entry, its
 * flags in designated initialisers) and the readers that apply the keys a
 * family honours; see config.h. */
#include "engine/config.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/opt.h"

#define LLAMA_ATTN .embed = "model.embed_tokens", .final_norm = "model.norm", .lm_head = "lm_head", \
	.layer = "model.layers.", .q = "self_attn.q_proj", .k = "self_attn.k_proj",                  \
	.v = "self_attn.v_proj", .qkv = "self_attn.qkv_proj", .o = "self_attn.o_proj",              \
	.q_norm = "self_attn.q_norm", .k_norm = "self_attn.k_norm"
#define LLAMA_MLP .gate = "mlp.gate_proj", .up = "mlp.up_proj", .gate_up = "mlp.gate_up_proj", \
	.down = "mlp.down_proj"

static const ss_names llama_names = {
	LLAMA_ATTN, LLAMA_MLP, .attn_in = "input_layernorm", .mlp_in = "post_attention_layernorm",
};
static const ss_names gemma_names = {
	LLAMA_ATTN, LLAMA_MLP, .attn_in = "input_layernorm", .mlp_in = "pre_feedforward_layernorm",
	.attn_out = "post_attention_layernorm", .mlp_out = "post_feedforward_layernorm",
};
static const ss_names olmo2_names = {
	LLAMA_ATTN, LLAMA_MLP, .attn_out = "post_attention_layernorm",
	.mlp_out = "post_feedforward_layernorm",
};
static const ss_names gpt2_names = {   /* model_load adds "transformer." where stored so */
	.embed = "wte", .pos_embed = "wpe", .final_norm = "ln_f", .lm_head = "lm_head",
	.layer = "h.", .attn_in = "ln_1", .mlp_in = "ln_2", .qkv = "attn.c_attn", .o = "attn.c_proj",
	.up = "mlp.c_fc", .down = "mlp.c_proj", .buffers = {"attn.bias", "attn.masked_bias"},
};
static const ss_names neox_names = {
	.embed = "gpt_neox.embed_in", .final_norm = "gpt_neox.final_layer_norm", .lm_head = "embed_out",
	.layer = "gpt_neox.layers.", .attn_in = "input_layernorm", .mlp_in = "post_attention_layernorm",
	.qkv = "attention.query_key_value", .o = "attention.dense", .up = "mlp.dense_h_to_4h",
	.down = "mlp.dense_4h_to_h",
	.buffers = {"attention.bias", "attention.masked_bias", "attention.rotary_emb.inv_freq"},
};
static const ss_names mixtral_names = {
	LLAMA_ATTN, .attn_in = "input_layernorm", .mlp_in = "post_attention_layernorm",
	.router = "block_sparse_moe.gate", .expert = "block_sparse_moe.experts.", .e_gate = "w1",
	.e_up = "w3", .e_down = "w2",
};
static const ss_names qwen_moe_names = {
	LLAMA_ATTN, .attn_in = "input_layernorm", .mlp_in = "post_attention_layernorm",
	.router = "mlp.gate", .expert = "mlp.experts.", .e_gate = "gate_proj", .e_up = "up_proj",
	.e_down = "down_proj", .shared = "mlp.shared_expert.", .shared_gate = "mlp.shared_expert_gate",
};

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
	const ss_names *names;  /* tensor names of the family */
	int qkv_bias;           /* always has q/k/v biases */
	int qk_norm;            /* per-head RMSNorm of q and k (q_norm, k_norm) */
	int fused;              /* qkv_proj and gate_up_proj */
	int attn_bias_key;      /* honours "attention_bias" (q/k/v/o biases) */
	int mlp_bias_key;       /* honours "mlp_bias" */
	enum window_rule window;
	int partial_rotary;     /* honours "partial_rotary_factor" */
	int tied;               /* tie_word_embeddings when config.json does not say */
	int gpt2;               /* GPT-2: its config keys (n_embd ...), Conv1D, positions, LayerNorm */
	int neox;               /* GPT-NeoX: rotary_pct, parallel residual, per-head qkv, LayerNorm */
	int gemma;              /* 2 or 3: Gemma's norms, GeGLU, scalings, window layers */
	int olmo2;              /* post-norms only, whole-projection q/k norms */
	int moe;                /* 1: Mixtral's keys; 2: Qwen-MoE's (moe_intermediate_size ...);
	                           3: Qwen-MoE's with a shared expert (Qwen2-MoE) */
} arch_row;

static const arch_row arch_table[] = {
	{.name = "LlamaForCausalLM", .names = &llama_names, .attn_bias_key = 1, .mlp_bias_key = 1},
	{.name = "MistralForCausalLM", .names = &llama_names, .window = WINDOW_KEY},
	{.name = "Qwen2ForCausalLM", .names = &llama_names, .qkv_bias = 1, .window = WINDOW_REFUSED},
	{.name = "Qwen3ForCausalLM", .names = &llama_names, .qk_norm = 1, .attn_bias_key = 1,
	 .window = WINDOW_REFUSED},
	{.name = "Phi3ForCausalLM", .names = &llama_names, .fused = 1, .window = WINDOW_KEY,
	 .partial_rotary = 1},
	{.name = "GPT2LMHeadModel", .names = &gpt2_names, .tied = 1, .gpt2 = 1},
	{.name = "GPTNeoXForCausalLM", .names = &neox_names, .neox = 1},
	{.name = "Gemma2ForCausalLM", .names = &gemma_names, .attn_bias_key = 1, .tied = 1, .gemma = 2},
	{.name = "Gemma3ForCausalLM", .names = &gemma_names, .qk_norm = 1, .attn_bias_key = 1,
	 .tied = 1, .gemma = 3},
	{.name = "Olmo2ForCausalLM", .names = &olmo2_names, .attn_bias_key = 1, .olmo2 = 1},
	{.name = "MixtralForCausalLM", .names = &mixtral_names, .window = WINDOW_KEY, .moe = 1},
	{.name = "Qwen2MoeForCausalLM", .names = &qwen_moe_names, .qkv_bias = 1,
	 .window = WINDOW_REFUSED, .moe = 3},
	{.name = "Qwen3MoeForCausalLM", .names = &qwen_moe_names, .qk_norm = 1, .attn_bias_key = 1,
	 .window = WINDOW_REFUSED, .moe = 2},
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

long config_layer_window(const ss_config *c, int l)
{
	if (c->window_per_layer)
		return l >= 1 && l <= c->n_layers && c->swa_layer[l - 1] ? c->sliding_window : 0;
	return c->sliding_window;
}

int config_layer_local_rope(const ss_config *c, int l)
{
	return c->rope_local_theta > 0 && config_layer_window(c, l) > 0;
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

/* The activation named by config.json's key k (absent: def). */
static int get_act(json_t *o, const char *path, const char *k, ss_act def, ss_act *act, ss_err *e)
{
	json_t *x = json_object_get(o, k);
	*act = def;
	if (!x)
		return 0;
	const char *s = json_string_value(x);
	static const struct { const char *name; ss_act a; } acts[] = {
		{"silu", SS_ACT_SILU}, {"swish", SS_ACT_SILU}, {"gelu", SS_ACT_GELU},
		{"gelu_new", SS_ACT_GELU_TANH}, {"gelu_pytorch_tanh", SS_ACT_GELU_TANH},
		{"gelu_fast", SS_ACT_GELU_TANH},
	};
	for (size_t i = 0; s && i < sizeof acts / sizeof acts[0]; i++)
		if (!strcmp(s, acts[i].name)) {
			*act = acts[i].a;
			return 0;
		}
	return ss_err_set(e, "%s:%s: unsupported activation '%s' (supported: silu, gelu, gelu_new, "
	                  "gelu_pytorch_tanh, gelu_fast)", path, k, s ? s : "?");
}

/* Gemma's sliding and global layers: layer_types when present, else one
 * global layer in every `pattern` (Gemma 2: 2, Gemma 3: sliding_window_pattern). */
static int parse_layer_types(ss_config *c, json_t *o, const char *path, long pattern, ss_err *e)
{
	if (c->n_layers > SS_MAX_LAYERS)
		return ss_err_set(e, "%s:num_hidden_layers: %ld layers with per-layer windows (at most %d)",
		                  path, c->n_layers, SS_MAX_LAYERS);
	c->window_per_layer = 1;
	json_t *lt = json_object_get(o, "layer_types");
	if (lt && !json_is_null(lt)) {
		if (!json_is_array(lt) || (long)json_array_size(lt) != c->n_layers)
			return ss_err_set(e, "%s:layer_types: expected %ld entries", path, c->n_layers);
		for (long l = 0; l < c->n_layers; l++) {
			const char *t = json_string_value(json_array_get(lt, (size_t)l));
			if (t && !strcmp(t, "sliding_attention"))
				c->swa_layer[l] = 1;
			else if (!t || strcmp(t, "full_attention"))
				return ss_err_set(e, "%s:layer_types[%ld]: unsupported layer type '%s' (supported: "
				                  "sliding_attention, full_attention)", path, l, t ? t : "?");
		}
		return 0;
	}
	if (pattern < 1)
		return ss_err_set(e, "%s:sliding_window_pattern: must be positive", path);
	for (long l = 0; l < c->n_layers; l++)
		c->swa_layer[l] = (l + 1) % pattern != 0;
	return 0;
}

/* The family flags of rows beyond the paper's five (arch_row says which). */
static int config_family(ss_config *c, const arch_row *A, json_t *o, const char *path, ss_err *e)
{
	int b = 0;
	c->attn_in_norm = c->mlp_in_norm = 1;
	c->embed_scale = 1;
	if (A->gpt2 || A->neox) {
		c->layer_norm = c->ungated = 1;
		c->qkv_bias = c->o_bias = c->mlp_bias = 1;
		c->fused_qkv = 1;
	}
	if (A->gpt2) {
		c->abs_pos = c->conv1d = 1;
		if (get_bool(o, path, "scale_attn_weights", 1, &b, e) < 0)
			return -1;
		if (!b)
			return ss_err_set(e, "%s:scale_attn_weights: false is not supported", path);
		if (get_bool(o, path, "scale_attn_by_inverse_layer_idx", 0, &b, e) < 0)
			return -1;
		if (b)
			return ss_err_set(e, "%s:scale_attn_by_inverse_layer_idx: true is not supported", path);
		if (c->max_pos <= 0)
			return ss_err_set(e, "%s:n_positions: must be positive", path);
	}
	if (A->neox) {
		c->qkv_per_head = 1;
		if (c->n_kv_heads != c->n_heads)   /* query_key_value holds q, k, v of each head */
			return ss_err_set(e, "%s:num_key_value_heads: %ld, but %s fuses q, k and v per head (%ld heads)",
			                  path, c->n_kv_heads, c->arch, c->n_heads);
		if (get_bool(o, path, "use_parallel_residual", 1, &c->parallel_resid, e) < 0 ||
		    get_bool(o, path, "attention_bias", 1, &b, e) < 0)
			return -1;
		c->qkv_bias = c->o_bias = b;
	}
	if (A->gemma) {
		c->norm_plus1 = 1;
		c->attn_out_norm = c->mlp_out_norm = 1;
		c->embed_scale = sqrt((double)c->dim);
		double qpas = 0;
		if (get_double(o, path, "query_pre_attn_scalar", (double)c->head_dim, &qpas, e) < 0 ||
		    get_double(o, path, "attn_logit_softcapping", 0, &c->attn_softcap, e) < 0 ||
		    get_double(o, path, "final_logit_softcapping", 0, &c->final_softcap, e) < 0)
			return -1;
		if (!(qpas > 0))
			return ss_err_set(e, "%s:query_pre_attn_scalar: must be positive", path);
		if (c->attn_softcap < 0 || c->final_softcap < 0)
			return ss_err_set(e, "%s:%s: must not be negative", path,
			                  c->attn_softcap < 0 ? "attn_logit_softcapping" : "final_logit_softcapping");
		c->attn_scale = pow(qpas, -0.5);
		long pattern = 2;
		if (A->gemma == 3 &&
		    (get_long(o, path, "sliding_window_pattern", 6, 0, &pattern, e) < 0 ||
		     get_double(o, path, "rope_local_base_freq", 10000, &c->rope_local_theta, e) < 0))
			return -1;
		if (A->gemma == 3 && !(c->rope_local_theta > 0))
			return ss_err_set(e, "%s:rope_local_base_freq: must be positive", path);
		if (get_long(o, path, "sliding_window", 4096, 0, &c->sliding_window, e) < 0 ||
		    parse_layer_types(c, o, path, pattern, e) < 0)
			return -1;
	}
	if (A->olmo2) {
		c->attn_in_norm = c->mlp_in_norm = 0;
		c->attn_out_norm = c->mlp_out_norm = 1;
		c->qk_norm_full = 1;
	}
	if (A->moe) {
		const char *ne = A->moe == 1 ? "num_local_experts" : "num_experts";
		if (get_long(o, path, ne, 0, 1, &c->n_experts, e) < 0 ||
		    get_long(o, path, "num_experts_per_tok", 2, 0, &c->top_k, e) < 0)
			return -1;
		if (c->n_experts < 1 || c->n_experts > 4096)
			return ss_err_set(e, "%s:%s: %ld experts (supported: 1-4096)", path, ne, c->n_experts);
		if (c->top_k < 1 || c->top_k > c->n_experts)
			return ss_err_set(e, "%s:num_experts_per_tok: %ld, expected 1-%ld", path, c->top_k,
			                  c->n_experts);
		c->moe_hidden = c->hidden;
		c->norm_topk = 1;
		if (A->moe >= 2) {
			long step = 1;
			if (get_long(o, path, "moe_intermediate_size", 0, 1, &c->moe_hidden, e) < 0 ||
			    get_bool(o, path, "norm_topk_prob", 0, &c->norm_topk, e) < 0 ||
			    get_long(o, path, "decoder_sparse_step", 1, 0, &step, e) < 0)
				return -1;
			if (step != 1)
				return ss_err_set(e, "%s:decoder_sparse_step: %ld is not supported (only 1: every layer sparse)",
				                  path, step);
			json_t *mo = json_object_get(o, "mlp_only_layers");
			if (mo && !json_is_null(mo) && (!json_is_array(mo) || json_array_size(mo)))
				return ss_err_set(e, "%s:mlp_only_layers: dense layers among sparse ones are not supported",
				                  path);
			if (A->moe == 3 && get_long(o, path, "shared_expert_intermediate_size", 0, 1,
			                            &c->shared_hidden, e) < 0)
				return -1;
		}
		if (c->moe_hidden <= 0)
			return ss_err_set(e, "%s:%s: must be positive", path,
			                  A->moe == 1 ? "intermediate_size" : "moe_intermediate_size");
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
	c->names = A->names;
	const char *mt = json_string_value(json_object_get(o, "model_type"));
	snprintf(c->model_type, sizeof c->model_type, "%s", mt ? mt : "");
	/* GPT-2's config.json spells the sizes its own way (HF's attribute_map) */
	const char *req[] = {"hidden_size", "intermediate_size", "num_hidden_layers",
	                     "num_attention_heads", "vocab_size"};
	const char *k_pos = "max_position_embeddings";
	if (A->gpt2) {
		req[0] = "n_embd";
		req[1] = "n_inner";
		req[2] = "n_layer";
		req[3] = "n_head";
		k_pos = "n_positions";
	}
	if (get_long(o, path, req[0], 0, 1, &c->dim, e) < 0 ||
	    get_long(o, path, req[1], A->gpt2 ? 4 * c->dim : 0, !A->gpt2, &c->hidden, e) < 0 ||
	    get_long(o, path, req[2], 0, 1, &c->n_layers, e) < 0 ||
	    get_long(o, path, req[3], 0, 1, &c->n_heads, e) < 0 ||
	    get_long(o, path, req[4], 0, 1, &c->vocab, e) < 0 ||
	    get_long(o, path, k_pos, 0, 0, &c->max_pos, e) < 0 ||
	    get_long(o, path, "bos_token_id", -1, 0, &c->bos_id, e) < 0)
		goto done;
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
		ss_err_set(e, "%s:%s: %ld does not divide hidden_size %ld", path, req[3],
		           c->n_heads, c->dim);
		goto done;
	}
	if (c->head_dim <= 0 || c->head_dim % 2) {
		ss_err_set(e, "%s:head_dim: %ld must be positive and even", path, c->head_dim);
		goto done;
	}
	const char *eps_key = json_object_get(o, "rms_norm_eps") ? "rms_norm_eps"
	                      : A->gpt2 ? "layer_norm_epsilon" : "layer_norm_eps";
	/* NeoX's rope base was rotary_emb_base before transformers named it rope_theta */
	const char *theta_key = A->neox && !json_object_get(o, "rope_theta") ? "rotary_emb_base" : "rope_theta";
	if (get_double(o, path, eps_key, A->gpt2 || A->neox ? 1e-5 : 1e-6, &c->eps, e) < 0 ||
	    get_double(o, path, theta_key, 10000, &c->rope_theta, e) < 0)
		goto done;
	if (!(c->eps > 0) || !(c->rope_theta > 0)) {
		ss_err_set(e, "%s:%s: must be positive", path, c->eps > 0 ? theta_key : eps_key);
		goto done;
	}
	if (A->gpt2 || A->neox || A->gemma) {
		const char *ak = A->gpt2 ? "activation_function"
		                 : A->gemma && json_object_get(o, "hidden_activation") ? "hidden_activation"
		                 : "hidden_act";
		if (get_act(o, path, ak, A->neox ? SS_ACT_GELU : SS_ACT_GELU_TANH, &c->act, e) < 0)
			goto done;
	} else {
		const char *act = json_string_value(json_object_get(o, "hidden_act"));
		if (json_object_get(o, "hidden_act") && (!act || strcmp(act, "silu"))) {
			ss_err_set(e, "%s:hidden_act: unsupported activation '%s' (supported: silu)", path,
			           act ? act : "?");
			goto done;
		}
	}
	if (parse_rope_scaling(c, json_object_get(o, "rope_scaling"), path, e) < 0)
		goto done;
	double prf = 1;
	const char *prf_key = A->neox ? "rotary_pct" : "partial_rotary_factor";
	if ((A->partial_rotary || A->neox) && get_double(o, path, prf_key, A->neox ? 0.25 : 1, &prf, e) < 0)
		goto done;
	c->rotary_dim = A->gpt2 ? 0 : (long)(c->head_dim * prf);
	if (!A->gpt2 && (c->rotary_dim <= 0 || c->rotary_dim > c->head_dim || c->rotary_dim % 2)) {
		ss_err_set(e, "%s:%s: gives rotary dimension %ld of head_dim %ld", path, prf_key,
		           c->rotary_dim, c->head_dim);
		goto done;
	}
	int b = 0;
	c->qkv_bias = A->qkv_bias;
	c->qk_norm = A->qk_norm;
	c->fused_qkv = c->fused_gate_up = A->fused;
	c->attn_scale = 1.0 / sqrt((double)c->head_dim);
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
	if (get_bool(o, path, "tie_word_embeddings", A->tied, &c->tied, e) < 0 ||
	    config_family(c, A, o, path, e) < 0)
		goto done;
	rc = 0;
done:
	json_decref(o);
	return rc;
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

int config_check_ids(const ss_config *c, const char *name, const int32_t *ids, long T, ss_err *e)
{
	for (long j = 0; j < T; j++)
		if (ids[j] >= c->vocab)
			return ss_err_set(e, "%s: token id %d at position %ld outside the vocabulary (0-%ld)",
			                  name, ids[j], j, c->vocab - 1);
	return 0;
}

int config_check_positions(const ss_config *c, const char *dir, const char *name, long T, int refuse,
                           const char *prog, ss_err *e)
{
	if (c->max_pos > 0 && T > c->max_pos) {
		if (refuse)
			return ss_err_set(e, "%s/config.json:max_position_embeddings: %ld tokens exceed %ld "
			                  "(--positions warn runs them anyway)", dir, T, c->max_pos);
		ss_warn(prog, "warning: %s: %ld tokens exceed max_position_embeddings %ld of %s", name, T,
		        c->max_pos, dir);
	}
	return 0;
}

/* The layer count of DIR/config.json; 0 when it does not load (model_load
 * reports that later, with the file and the field). */
static long layers_of(const char *dir)
{
	ss_config c;
	ss_err ce = {0};
	return dir && config_load(&c, dir, &ce) == 0 ? c.n_layers : 0;
}

int config_check_layers(const char *dir, const char *spec, ss_err *e)
{
	long n;
	if (!strcmp(spec, "all") || !(n = layers_of(dir)))
		return 0;
	unsigned char *m = ss_malloc((size_t)n + 1, 1, "layers", e);
	if (!m)
		return -1;
	int rc = ss_parse_layers_from(spec, 0, (int)n, m, "--layers", e);
	free(m);
	return rc;
}

int config_check_layer(const char *dir, long layer, ss_err *e)
{
	long n = layers_of(dir);
	if (n && (layer < 1 || layer > n))
		return ss_err_status(e, SS_EXIT_USAGE, "--layer: %ld outside 1-%ld, the layers of %s", layer,
		                     n, dir);
	return 0;
}
