/* model.h - model configuration (config.json) and weights bound by name.
 *
 * config.json is read through an architecture table: each supported
 * "architectures" entry maps to a set of flags, so an architecture is a
 * table row plus its differences, never a copy of the forward pass:
 *
 *   LlamaForCausalLM    base (rope_scaling: none, "linear", "llama3";
 *                       attention_bias and mlp_bias honoured)
 *   MistralForCausalLM  base (+ sliding_window)
 *   Qwen2ForCausalLM    qkv_bias (+ sliding_window when use_sliding_window)
 *   Qwen3ForCausalLM    qk_norm (per-head RMSNorm of q and k before RoPE),
 *                       explicit head_dim
 *   Phi3ForCausalLM     fused_qkv (qkv_proj), fused_gate_up (gate_up_proj),
 *                       partial_rotary_factor, sliding_window
 *
 * Weights stay in the mapped safetensors (bf16, f16 or f32); the forward
 * pass converts one layer at a time.  Weight matrices are stored as in
 * Hugging Face: [out_features, in_features], row-major.
 */
#ifndef SS_MODEL_H
#define SS_MODEL_H

#include "util/err.h"
#include "io/st.h"

typedef enum ss_rope_type { SS_ROPE_DEFAULT = 0, SS_ROPE_LINEAR, SS_ROPE_LLAMA3 } ss_rope_type;

typedef struct ss_config {
	char arch[64];           /* "architectures"[0] */
	char model_type[32];
	long dim;                /* hidden_size */
	long hidden;             /* intermediate_size */
	long n_layers;           /* num_hidden_layers */
	long n_heads;            /* num_attention_heads */
	long n_kv_heads;         /* num_key_value_heads (default n_heads) */
	long head_dim;           /* head_dim (default dim / n_heads) */
	long vocab;              /* vocab_size */
	long max_pos;            /* max_position_embeddings */
	double eps;              /* rms_norm_eps */
	double rope_theta;
	long rotary_dim;         /* head_dim * partial_rotary_factor (even) */
	ss_rope_type rope_type;
	double rope_factor;      /* linear and llama3 */
	double rope_low_freq_factor, rope_high_freq_factor; /* llama3 */
	long rope_orig_max_pos;  /* llama3: original_max_position_embeddings */
	long sliding_window;     /* 0 = none: key j visible to query i when i-j < window */
	long bos_id;             /* -1 when absent */
	/* architecture flags */
	int qkv_bias;            /* q/k/v projections have biases */
	int o_bias;              /* o_proj has a bias (Llama attention_bias) */
	int mlp_bias;            /* gate/up/down have biases (Llama mlp_bias) */
	int qk_norm;             /* Qwen3: q_norm, k_norm of shape [head_dim] */
	int fused_qkv;           /* Phi3: qkv_proj [(H+2Hkv)*hd, dim] */
	int fused_gate_up;       /* Phi3: gate_up_proj [2*hidden, dim], gate first */
	int tied;                /* tie_word_embeddings: lm_head = embed_tokens */
} ss_config;

/* Parse and validate DIR/config.json; errors "DIR/config.json:FIELD: ...". */
int config_load(ss_config *c, const char *dir, ss_err *e);
/* 1 when arch is in the table. */
int config_arch_supported(const char *arch);
/* Comma-separated list of supported architectures (for messages). */
const char *config_arch_list(void);

/* One decoder layer: tensors in the mapping; NULL where the architecture
 * lacks them.  Shapes: */
typedef struct ss_layer_w {
	const st_tensor *in_norm;    /* [dim]            input_layernorm */
	const st_tensor *post_norm;  /* [dim]            post_attention_layernorm */
	const st_tensor *wq;         /* [H*hd, dim] */
	const st_tensor *wk;         /* [Hkv*hd, dim] */
	const st_tensor *wv;         /* [Hkv*hd, dim] */
	const st_tensor *wqkv;       /* [(H+2Hkv)*hd, dim]  fused_qkv instead of wq/wk/wv */
	const st_tensor *bq, *bk, *bv; /* [H*hd], [Hkv*hd], [Hkv*hd] (qkv_bias) */
	const st_tensor *wo;         /* [dim, H*hd] */
	const st_tensor *bo;         /* [dim] (o_bias) */
	const st_tensor *q_norm;     /* [hd] (qk_norm) */
	const st_tensor *k_norm;     /* [hd] (qk_norm) */
	const st_tensor *w_gate;     /* [hidden, dim] */
	const st_tensor *w_up;       /* [hidden, dim] */
	const st_tensor *w_gate_up;  /* [2*hidden, dim]  fused_gate_up instead */
	const st_tensor *w_down;     /* [dim, hidden] */
	const st_tensor *b_gate, *b_up, *b_down; /* mlp_bias */
} ss_layer_w;

typedef struct ss_model {
	char *dir;
	ss_config c;
	st_set st;
	const st_tensor *embed;      /* [vocab, dim] model.embed_tokens.weight */
	const st_tensor *norm;       /* [dim] model.norm.weight */
	const st_tensor *lm_head;    /* [vocab, dim]; == embed when tied */
	ss_layer_w *layers;          /* [n_layers] */
	char weight_dtype[8];        /* "bf16", "f16", "f32" or "mixed" */
	double weight_bytes;         /* bytes of all bound tensors */
	int drop_cache;              /* weights above 3/4 of the RAM: they cannot stay
	                                cached, so released layers leave the page cache too */
} ss_model;

/* Load config.json and bind every tensor by name with dtype and shape
 * checked; a missing, extra or mis-shaped tensor is an error naming the file
 * and the tensor. */
int model_load(ss_model *m, const char *dir, ss_err *e);
void model_free(ss_model *m);

/* Paging of the mapped weights (st.h) for layer-major passes: once a layer
 * is converted its pages leave the process (and, with m->drop_cache, the
 * page cache), so a model larger than memory runs with about one layer
 * mapped; the next layer is read ahead meanwhile.  l is 1..L; out of range:
 * nothing.  model_release_all: every mapped page (the end of a pass). */
void model_layer_release(const ss_model *m, int l);
void model_layer_prefetch(const ss_model *m, int l);
void model_tensor_release(const ss_model *m, const st_tensor *t);
void model_release_all(const ss_model *m);
/* Read ahead exactly the embedding rows of ids[0..n) (otherwise each row's
 * first fault would read megabytes around it: the kernel's mmap read-around). */
void model_embed_prefetch(const ss_model *m, const int32_t *ids, long n);

/* Bytes of one layer's weights in f32 (the conversion buffer). */
size_t model_layer_f32_bytes(const ss_config *c);

/* inv_freq[i] for i < rotary_dim/2 per the config's rope_type (HF's
 * rope initialisation functions). */
void ss_rope_inv_freq(const ss_config *c, float *inv_freq);

#endif
