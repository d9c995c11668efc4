/* config.h - a model's configuration: config.json read through the
 * architecture table (config.c).
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
 *   GPT2LMHeadModel     LayerNorm with bias, learned absolute positions (no
 *                       RoPE), fused c_attn stored as Conv1D ([in, out],
 *                       transposed on conversion), biases everywhere, an
 *                       ungated GELU (tanh) MLP, tied lm_head
 *   GPTNeoXForCausalLM  LayerNorm with bias, rotary_pct, parallel residual,
 *                       query_key_value laid out per head ([q k v] of head 0,
 *                       then of head 1 ...), ungated GELU MLP
 *   Gemma2ForCausalLM   RMSNorm with (1 + weight), norms before and after
 *                       attention and MLP, GeGLU, embeddings times
 *                       sqrt(hidden_size), query_pre_attn_scalar, attention
 *                       and final logit soft-capping, sliding-window and
 *                       global layers alternating (even layers slide)
 *   Gemma3ForCausalLM   Gemma 2 plus per-head q/k norms, one global layer in
 *                       sliding_window_pattern (or layer_types), local
 *                       layers' RoPE base rope_local_base_freq
 *   Olmo2ForCausalLM    no norm before attention or MLP: their outputs are
 *                       normalised (post_attention_layernorm,
 *                       post_feedforward_layernorm) before the residual add;
 *                       q/k RMSNorm over the whole projection
 *   MixtralForCausalLM  Mistral with top-k routed experts (block_sparse_moe,
 *                       w1 gate, w3 up, w2 down), top-k renormalised
 *   Qwen2MoeForCausalLM Qwen2 with routed experts (norm_topk_prob) and a
 *                       shared expert scaled by sigmoid(shared_expert_gate)
 *   Qwen3MoeForCausalLM Qwen3 with routed experts (norm_topk_prob)
 *
 * Weights are bound by name in model.h (model.c).
 */
#ifndef SS_CONFIG_H
#define SS_CONFIG_H

#include <stdint.h>
#include "util/err.h"

typedef enum ss_rope_type { SS_ROPE_DEFAULT = 0, SS_ROPE_LINEAR, SS_ROPE_LLAMA3 } ss_rope_type;
/* MLP activation: silu (SwiGLU), exact erf GELU, GELU's tanh approximation */
typedef enum ss_act { SS_ACT_SILU = 0, SS_ACT_GELU, SS_ACT_GELU_TANH } ss_act;
/* Tensor names of a family (one per table row of config.c):
 * "<layer prefix><L>.<role>.weight" (and ".bias"); NULL where the family
 * has no such tensor. */
typedef struct ss_names {
	const char *embed, *pos_embed, *final_norm, *lm_head; /* full names less ".weight" */
	const char *layer;                                   /* layer prefix, then "%ld." */
	const char *attn_in, *mlp_in, *attn_out, *mlp_out;   /* norms */
	const char *q, *k, *v, *qkv, *o, *q_norm, *k_norm;
	const char *gate, *up, *gate_up, *down;
	const char *router, *expert;                         /* expert: prefix, then "%ld." */
	const char *e_gate, *e_up, *e_down;
	const char *shared, *shared_gate;                    /* shared: prefix of gate/up/down */
	const char *buffers[3];  /* non-weights some checkpoints store per layer (ignored) */
} ss_names;

#define SS_MAX_LAYERS 1024   /* per-layer window flags (Gemma) */

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
	/* the families beyond the paper (all 0 for the five above) */
	ss_act act;              /* hidden_act / hidden_activation / activation_function */
	int ungated;             /* MLP down(act(up(x) + b)) + b, no gate (GPT-2, NeoX) */
	int layer_norm;          /* LayerNorm with bias instead of RMSNorm (GPT-2, NeoX) */
	int norm_plus1;          /* RMSNorm weight is 1 + w (Gemma) */
	int abs_pos;             /* learned position embeddings [max_pos, dim], no RoPE (GPT-2) */
	int conv1d;              /* Conv1D weights stored [in, out] (GPT-2) */
	int qkv_per_head;        /* fused qkv rows [H][3][hd] (NeoX) */
	int parallel_resid;      /* h = h + a(n1(h)) + m(n2(h)) (NeoX) */
	int attn_in_norm;        /* a norm before attention (all but OLMo 2) */
	int mlp_in_norm;         /* a norm before the MLP (all but OLMo 2) */
	int attn_out_norm;       /* the attention output normalised before the add (Gemma, OLMo 2) */
	int mlp_out_norm;        /* the MLP output normalised before the add (Gemma, OLMo 2) */
	int qk_norm_full;        /* OLMo 2: q_norm [H*hd], k_norm [Hkv*hd] before the head split */
	double embed_scale;      /* embeddings times this (Gemma: sqrt(hidden_size)); 1 */
	double attn_scale;       /* score scale: 1/sqrt(head_dim) or 1/sqrt(query_pre_attn_scalar) */
	double attn_softcap;     /* scores -> cap tanh(scores / cap) before the mask; 0: none */
	double final_softcap;    /* logits -> cap tanh(logits / cap); 0: none */
	int window_per_layer;    /* layer l slides (sliding_window) iff swa_layer[l-1] */
	unsigned char swa_layer[SS_MAX_LAYERS];
	double rope_local_theta; /* Gemma 3: RoPE base of sliding layers (default rope); 0: none */
	/* mixture of experts: n_experts = 0 for a dense MLP */
	long n_experts;          /* num_local_experts / num_experts */
	long top_k;              /* num_experts_per_tok */
	int norm_topk;           /* renormalise the top-k router probabilities to sum 1 */
	long moe_hidden;         /* one expert's intermediate size */
	long shared_hidden;      /* the shared expert's (Qwen2-MoE); 0: none */
	const ss_names *names;   /* tensor names of the family (config.c) */
} ss_config;

/* Parse and validate DIR/config.json; errors "DIR/config.json:FIELD: ...". */
int config_load(ss_config *c, const char *dir, ss_err *e);

/* Sequence name's ids against the model: each below vocab, else "NAME:
 * token id I at position J outside the vocabulary (0-V)". */
int config_check_ids(const ss_config *c, const char *name, const int32_t *ids, long T, ss_err *e);

/* T tokens against max_position_embeddings: with refuse an excess is an
 * error naming DIR/config.json, both numbers and --positions warn, else a
 * warning under prog's name. */
int config_check_positions(const ss_config *c, const char *dir, const char *name, long T, int refuse,
                           const char *prog, ss_err *e);

/* A --layers value (spec; "all" always fits) against DIR/config.json's
 * layer count: a usage error before any input is read.  A config.json that
 * does not load is no error here (model_load reports it later). */
int config_check_layers(const char *dir, const char *spec, ss_err *e);
/* One --layer (1..L: pcaprobe's l_start) against DIR/config.json the same
 * way: "--layer: 99 outside 1-24, the layers of DIR", a usage error. */
int config_check_layer(const char *dir, long layer, ss_err *e);
/* 1 when arch is in the table. */
int config_arch_supported(const char *arch);
/* Comma-separated list of supported architectures (for messages). */
const char *config_arch_list(void);
/* The sliding window of layer l (1..L): 0 = none. */
long config_layer_window(const ss_config *c, int l);
/* 1 when layer l (1..L) takes the local RoPE base (Gemma 3's sliding layers). */
int config_layer_local_rope(const ss_config *c, int l);

/* inv_freq[i] for i < rotary_dim/2 per the config's rope_type (HF's
 * rope initialisation functions). */
void ss_rope_inv_freq(const ss_config *c, float *inv_freq);

#endif
