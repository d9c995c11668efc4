/* model.h - a model: its configuration (config.h) and its weights bound by
 * name from the mapped safetensors, dtype and shape checked on load.
 *
 * Weights stay in the mapped safetensors (bf16, f16 or f32); the forward
 * pass converts one layer at a time.  Weight matrices are stored as in
 * Hugging Face: [out_features, in_features], row-major.
 */
#ifndef SS_MODEL_H
#define SS_MODEL_H

#include "engine/config.h"
#include "io/st.h"
#include "util/err.h"

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
	const st_tensor *bqkv;       /* [(H+2Hkv)*hd] fused_qkv with qkv_bias */
	const st_tensor *wo;         /* [dim, H*hd] */
	const st_tensor *bo;         /* [dim] (o_bias) */
	const st_tensor *q_norm;     /* [hd] (qk_norm); [H*hd] (qk_norm_full) */
	const st_tensor *k_norm;     /* [hd] (qk_norm); [Hkv*hd] (qk_norm_full) */
	const st_tensor *w_gate;     /* [hidden, dim] */
	const st_tensor *w_up;       /* [hidden, dim] */
	const st_tensor *w_gate_up;  /* [2*hidden, dim]  fused_gate_up instead */
	const st_tensor *w_down;     /* [dim, hidden] */
	const st_tensor *b_gate, *b_up, *b_down; /* mlp_bias; b_up, b_down: ungated MLPs too */
	const st_tensor *in_norm_b, *post_norm_b; /* [dim] LayerNorm biases */
	const st_tensor *attn_out_norm;  /* [dim] post-attention norm (Gemma, OLMo 2) */
	const st_tensor *mlp_out_norm;   /* [dim] post-MLP norm (Gemma, OLMo 2) */
	/* mixture of experts (n_experts > 0): w_gate, w_up, w_down unused */
	const st_tensor *router;         /* [E, dim] */
	const st_tensor **e_gate, **e_up, **e_down; /* [E] each: [Fe, dim], [Fe, dim], [dim, Fe] */
	const st_tensor *s_gate, *s_up, *s_down;    /* shared expert [Fs, dim], [Fs, dim], [dim, Fs] */
	const st_tensor *s_router;       /* [1, dim] shared_expert_gate */
} ss_layer_w;

typedef struct ss_model {
	char *dir;
	ss_config c;
	st_set st;
	const st_tensor *embed;      /* [vocab, dim] model.embed_tokens.weight */
	const st_tensor *norm;       /* [dim] model.norm.weight */
	const st_tensor *norm_b;     /* [dim] final LayerNorm bias (GPT-2, NeoX) */
	const st_tensor *pos_embed;  /* [max_pos, dim] (abs_pos) */
	const st_tensor *lm_head;    /* [vocab, dim]; == embed when tied */
	const st_tensor **experts;   /* [n_layers * n_experts * 3] storage of e_gate/e_up/e_down */
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
/* part of nparts (0..nparts-1) of layer l's spans mapped into the page
 * tables now (st_populate_range), ahead of its conversion; parts of one
 * layer may run on threads at once */
void model_layer_populate(const ss_model *m, int l, int part, int nparts);
void model_tensor_release(const ss_model *m, const st_tensor *t);
void model_release_all(const ss_model *m);
/* Read ahead exactly the embedding rows of ids[0..n) (otherwise each row's
 * first fault would read megabytes around it: the kernel's mmap read-around). */
void model_embed_prefetch(const ss_model *m, const int32_t *ids, long n);

/* Bytes of one layer's weights in f32 (the conversion buffer). */
size_t model_layer_f32_bytes(const ss_config *c);


#endif
