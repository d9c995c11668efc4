#!/usr/bin/python3
"""mkmodel.py - write small random models in Hugging Face layout.

    mkmodel.py [options] OUTDIR          one model
    mkmodel.py --variants OUTROOT        every variant of VARIANTS below,
                                         one folder each, plus OUTROOT/list

A model folder is config.json plus model.safetensors, or with --shards N
model-0000k-of-0000N.safetensors and model.safetensors.index.json.  The
safetensors files are written here by hand (8-byte little-endian header
length, JSON header padded with spaces to a multiple of 8, raw tensor data),
so that no code is shared with the engine's reader.  bf16 is the top 16 bits
of the f32 value after round-to-nearest-even; f16 is numpy's IEEE half.

Weights are scaled so that activations stay O(1) (embeddings ~ N(0,1),
projections ~ N(0, 1/fan_in)), RMSNorm weights scatter around 1 so that a
missing norm weight shows, and q/k carry a gain so that attention logits
have a spread of a few units: softmax is neither uniform nor one-hot.

--fault KIND writes a broken model for the loading-error tests (see FAULTS).
Only numpy is needed.
"""
import argparse
import json
import os
import sys

import numpy as np

ARCHS = ("llama", "mistral", "qwen2", "qwen3", "phi3", "gpt2", "neox", "gemma2", "gemma3", "olmo2",
         "mixtral", "qwen2moe", "qwen3moe")

# name -> (arch, dict of options).  Dtype, tying and sharding vary so that
# each of bf16/f16/f32, tied/untied, single/sharded appears several times.
VARIANTS = {
    "llama-f32":          ("llama", dict(dtype="f32")),
    "llama-bf16-tied":    ("llama", dict(dtype="bf16", tied=True)),
    "llama3rope-f32":     ("llama", dict(dtype="f32", rope="llama3")),
    "llama3rope-bf16-sh": ("llama", dict(dtype="bf16", rope="llama3", shards=3)),
    "linrope-f16":        ("llama", dict(dtype="f16", rope="linear")),
    "codellama-bf16":     ("llama", dict(dtype="bf16", theta=1e6)),
    "mistral-f32-sh":     ("mistral", dict(dtype="f32", shards=2)),
    "mistral-bf16":       ("mistral", dict(dtype="bf16")),
    "mistral-swa-f32":    ("mistral", dict(dtype="f32", window=100)),   # window < T binds
    "llama-bias-f32":     ("llama", dict(dtype="f32", bias=True)),      # attention_bias, mlp_bias
    "qwen2-f32-tied":     ("qwen2", dict(dtype="f32", tied=True)),
    "qwen2-bf16-sh":      ("qwen2", dict(dtype="bf16", tied=True, shards=2)),
    "qwen3-f32":          ("qwen3", dict(dtype="f32")),
    "qwen3-bf16-tied":    ("qwen3", dict(dtype="bf16", tied=True)),
    "phi3-f32":           ("phi3", dict(dtype="f32")),
    "phi3-partial-bf16":  ("phi3", dict(dtype="bf16", partial=0.75)),   # Phi-4-mini style
    "phi3-f16-sh":        ("phi3", dict(dtype="f16", shards=2, kv_heads=4)),  # Phi-3-mini: no GQA
}

# The families beyond the paper's (--variants OUT --set families): T = 300
# in their reference test, so a window of 100 binds; soft-capping at a few
# units is active at these logit spreads.
FAMILY_VARIANTS = {
    "gpt2-f32":           ("gpt2", dict(dtype="f32", tied=True)),
    "gpt2-bf16-hf-sh":    ("gpt2", dict(dtype="bf16", tied=True, shards=2, prefix=True)),  # transformer.*
    "gpt2-f32-untied":    ("gpt2", dict(dtype="f32", buffers=True)),     # OpenAI's attn.bias buffers
    "neox-f32":           ("neox", dict(dtype="f32")),                   # parallel residual
    "neox-bf16-seq-sh":   ("neox", dict(dtype="bf16", parallel=False, shards=3, buffers=True)),
    "neox-f32-tied-full": ("neox", dict(dtype="f32", tied=True, partial=1.0)),
    "gemma2-f32":         ("gemma2", dict(dtype="f32", window=100)),
    "gemma2-bf16-sh":     ("gemma2", dict(dtype="bf16", window=100, shards=2)),
    "gemma3-f32":         ("gemma3", dict(dtype="f32", window=100, layers=4, rope="linear")),
    "gemma3-bf16-types":  ("gemma3", dict(dtype="bf16", window=64, layers=4, layer_types=True)),
    "olmo2-f32":          ("olmo2", dict(dtype="f32")),
    "olmo2-bf16-tied-sh": ("olmo2", dict(dtype="bf16", tied=True, shards=2)),
    "mixtral-f32":        ("mixtral", dict(dtype="f32")),
    "mixtral-bf16-sh":    ("mixtral", dict(dtype="bf16", shards=2, window=100)),
    "qwen2moe-f32":       ("qwen2moe", dict(dtype="f32")),
    "qwen2moe-bf16-norm": ("qwen2moe", dict(dtype="bf16", norm_topk=True, tied=True)),
    "qwen3moe-f32":       ("qwen3moe", dict(dtype="f32")),
    "qwen3moe-bf16-sh":   ("qwen3moe", dict(dtype="bf16", shards=2, norm_topk=False)),
}
VARIANT_SETS = {"paper": VARIANTS, "families": FAMILY_VARIANTS}

FAULTS = ("missing-tensor", "extra-tensor", "misshaped", "trunc-header",
          "trunc-header-len", "trunc-mid", "unknown-dtype", "bad-json",
          "bad-config-json", "unsupported-arch", "unsupported-rope",
          "missing-config", "missing-shard", "offsets-overflow",
          "conv1d-transposed", "missing-expert", "unsupported-act", "unsupported-layer-type")

ST_DTYPE = {"f32": "F32", "bf16": "BF16", "f16": "F16"}


def bf16_bits(x):
    """f32 -> bf16 bit patterns (uint16), round to nearest even."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    lsb = (u >> 16) & 1
    r = ((u + 0x7FFF + lsb) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        r[nan] = 0x7FC0
    return r


def encode(x, dtype):
    x = np.asarray(x, dtype=np.float32)
    if dtype == "f32":
        return x.astype("<f4").tobytes()
    if dtype == "f16":
        with np.errstate(over="ignore"):
            return x.astype("<f2").tobytes()
    return bf16_bits(x).astype("<u2").tobytes()


def make_config(arch, o):
    L, d, H, KV = o["layers"], o["hidden"], o["heads"], o["kv_heads"]
    hd = o["head_dim"] or d // H
    if arch in ("gpt2", "neox", "gemma2", "gemma3", "olmo2", "mixtral", "qwen2moe", "qwen3moe"):
        return family_config(arch, o, L, d, H, KV, hd)
    cls = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
           "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
           "phi3": "Phi3ForCausalLM"}[arch]
    cfg = {
        "architectures": [cls],
        "model_type": arch,
        "hidden_size": d,
        "intermediate_size": o["inter"],
        "num_hidden_layers": L,
        "num_attention_heads": H,
        "num_key_value_heads": KV,
        "vocab_size": o["vocab"],
        "max_position_embeddings": o["max_pos"],
        "rms_norm_eps": 1e-6 if arch in ("qwen2", "qwen3") else 1e-5,
        "rope_theta": o["theta"],
        "rope_scaling": None,
        "hidden_act": "silu",
        "tie_word_embeddings": bool(o["tied"]),
        "bos_token_id": 1,
        "eos_token_id": 2,
        "torch_dtype": {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}[o["dtype"]],
    }
    if arch in ("llama", "qwen3"):
        cfg["attention_bias"] = bool(o["bias"]) and arch == "llama"
    if arch == "llama":
        cfg["mlp_bias"] = bool(o["bias"])
    if arch == "qwen3" or o["head_dim"]:
        cfg["head_dim"] = hd
    if arch == "mistral":
        cfg["sliding_window"] = o["window"] or 4096   # default: longer than any test sequence
    if arch == "qwen2":
        cfg["use_sliding_window"] = False
        cfg["sliding_window"] = 4096
    if arch == "phi3":
        cfg["original_max_position_embeddings"] = 4096
        cfg["resid_pdrop"] = 0.0
        if o["partial"]:
            cfg["partial_rotary_factor"] = o["partial"]
    if o["rope"] == "llama3":
        # original_max_position_embeddings is small so that this head_dim's
        # frequencies fall in all three bands of the llama3 formula.
        cfg["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0, "original_max_position_embeddings": 128}
    elif o["rope"] == "linear":
        cfg["rope_scaling"] = {"type": "linear", "factor": 4.0}
    return cfg


def family_config(arch, o, L, d, H, KV, hd):
    dt = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}[o["dtype"]]
    if arch == "gpt2":
        return {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": d, "n_layer": L,
                "n_head": H, "n_inner": None if o["inter"] == 4 * d else o["inter"],
                "n_positions": o["max_pos"], "vocab_size": o["vocab"], "layer_norm_epsilon": 1e-5,
                "activation_function": o["act"] or "gelu_new", "tie_word_embeddings": bool(o["tied"]),
                "scale_attn_weights": True, "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": dt}
    if arch == "neox":
        return {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_size": d,
                "intermediate_size": o["inter"], "num_hidden_layers": L, "num_attention_heads": H,
                "vocab_size": o["vocab"], "max_position_embeddings": o["max_pos"],
                "layer_norm_eps": 1e-5, "rotary_pct": o["partial"] or 0.25, "rotary_emb_base": o["theta"],
                "use_parallel_residual": o["parallel"], "hidden_act": o["act"] or "gelu",
                "attention_bias": True, "tie_word_embeddings": bool(o["tied"]), "bos_token_id": 1,
                "eos_token_id": 2, "torch_dtype": dt}
    cfg = {"architectures": [{"gemma2": "Gemma2ForCausalLM", "gemma3": "Gemma3ForCausalLM",
                              "olmo2": "Olmo2ForCausalLM", "mixtral": "MixtralForCausalLM",
                              "qwen2moe": "Qwen2MoeForCausalLM", "qwen3moe": "Qwen3MoeForCausalLM"}[arch]],
           "model_type": {"gemma3": "gemma3_text", "qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe"}.get(arch, arch),
           "hidden_size": d, "intermediate_size": o["inter"], "num_hidden_layers": L,
           "num_attention_heads": H, "num_key_value_heads": KV, "head_dim": hd,
           "vocab_size": o["vocab"], "max_position_embeddings": o["max_pos"],
           "rms_norm_eps": 1e-6, "rope_theta": o["theta"], "rope_scaling": None,
           "hidden_act": "silu", "attention_bias": False, "tie_word_embeddings": bool(o["tied"]),
           "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": dt}
    if arch in ("gemma2", "gemma3"):
        cfg["hidden_act"] = cfg["hidden_activation"] = o["act"] or "gelu_pytorch_tanh"
        cfg["query_pre_attn_scalar"] = 24          # not head_dim: the scaling shows
        cfg["sliding_window"] = o["window"] or 4096
        if arch == "gemma2":
            cfg["attn_logit_softcapping"] = 3.0    # below the score spread: active
            cfg["final_logit_softcapping"] = 2.0
        else:
            cfg["attn_logit_softcapping"] = None
            cfg["final_logit_softcapping"] = None
            cfg["rope_local_base_freq"] = 10000.0
            cfg["sliding_window_pattern"] = 3      # layers 3, 6, ... (1-based) global
            if o["layer_types"]:
                cfg["layer_types"] = ["full_attention" if l in (0, 2) else "sliding_attention" for l in range(L)]
            if o["rope"] == "linear":
                cfg["rope_scaling"] = {"rope_type": "linear", "factor": 8.0}
    if arch == "mixtral":
        cfg.update(num_local_experts=o["experts"], num_experts_per_tok=o["topk"],
                   sliding_window=o["window"] or None, intermediate_size=o["moe_inter"])
    if arch in ("qwen2moe", "qwen3moe"):
        cfg.update(num_experts=o["experts"], num_experts_per_tok=o["topk"],
                   moe_intermediate_size=o["moe_inter"], norm_topk_prob=bool(o["norm_topk"]),
                   decoder_sparse_step=1, mlp_only_layers=[], use_sliding_window=False,
                   sliding_window=4096)
        if arch == "qwen2moe":
            cfg["shared_expert_intermediate_size"] = 2 * o["moe_inter"]
    return cfg


def family_tensors(arch, cfg, o, rng):
    """Ordered list of (name, f32 array) of the families beyond the paper's."""
    g = cfg.get
    d = g("n_embd") or g("hidden_size")
    L = g("n_layer") or g("num_hidden_layers")
    H = g("n_head") or g("num_attention_heads")
    KV = g("num_key_value_heads") or H
    hd = g("head_dim") or d // H
    I, V = g("n_inner") or g("intermediate_size") or 4 * d, g("vocab_size")
    qk = o["qk_gain"]

    def lin(out, inp, gain=1.0):
        return (rng.standard_normal((out, inp)) * gain / np.sqrt(inp)).astype(np.float32)

    def vec(n, s=0.3):
        return (s * rng.standard_normal(n)).astype(np.float32)

    def normw(n, gemma=False):
        w = (1.0 + 0.2 * rng.standard_normal(n)).astype(np.float32)
        return (w - 1.0).astype(np.float32) if gemma else w   # Gemma stores w of (1 + w)

    t = []
    if arch == "gpt2":
        r = "transformer." if o["prefix"] else ""
        P = g("n_positions")
        t.append((r + "wte.weight", rng.standard_normal((V, d)).astype(np.float32)))
        t.append((r + "wpe.weight", (0.5 * rng.standard_normal((P, d))).astype(np.float32)))
        for l in range(L):
            p = r + "h.%d." % l
            t += [(p + "ln_1.weight", normw(d)), (p + "ln_1.bias", vec(d, 0.1))]
            if o["buffers"]:   # OpenAI's checkpoints: the causal mask as a buffer
                t.append((p + "attn.bias", np.tril(np.ones((P, P), np.float32))[None, None]))
            qkv = np.concatenate([lin(d, d, qk), lin(d, d, qk), lin(d, d)], 0)   # [out, in]
            t += [(p + "attn.c_attn.weight", np.ascontiguousarray(qkv.T)), (p + "attn.c_attn.bias", vec(3 * d))]
            t += [(p + "attn.c_proj.weight", np.ascontiguousarray(lin(d, d).T)), (p + "attn.c_proj.bias", vec(d))]
            t += [(p + "ln_2.weight", normw(d)), (p + "ln_2.bias", vec(d, 0.1))]
            t += [(p + "mlp.c_fc.weight", np.ascontiguousarray(lin(I, d, 1.5).T)), (p + "mlp.c_fc.bias", vec(I))]
            t += [(p + "mlp.c_proj.weight", np.ascontiguousarray(lin(d, I).T)), (p + "mlp.c_proj.bias", vec(d))]
        t += [(r + "ln_f.weight", normw(d)), (r + "ln_f.bias", vec(d, 0.1))]
        if not g("tie_word_embeddings"):
            t.append(("lm_head.weight", lin(V, d)))
        return t
    if arch == "neox":
        t.append(("gpt_neox.embed_in.weight", rng.standard_normal((V, d)).astype(np.float32)))
        for l in range(L):
            p = "gpt_neox.layers.%d." % l
            t += [(p + "input_layernorm.weight", normw(d)), (p + "input_layernorm.bias", vec(d, 0.1))]
            t += [(p + "post_attention_layernorm.weight", normw(d)),
                  (p + "post_attention_layernorm.bias", vec(d, 0.1))]
            if o["buffers"]:
                t.append((p + "attention.rotary_emb.inv_freq", np.ones(4, np.float32)))
            # rows per head: [q of head h | k of head h | v of head h]
            w = np.concatenate([np.concatenate([lin(hd, d, qk), lin(hd, d, qk), lin(hd, d)], 0)
                                for _ in range(H)], 0)
            t += [(p + "attention.query_key_value.weight", w), (p + "attention.query_key_value.bias", vec(3 * d))]
            t += [(p + "attention.dense.weight", lin(d, d)), (p + "attention.dense.bias", vec(d))]
            t += [(p + "mlp.dense_h_to_4h.weight", lin(I, d, 1.5)), (p + "mlp.dense_h_to_4h.bias", vec(I))]
            t += [(p + "mlp.dense_4h_to_h.weight", lin(d, I)), (p + "mlp.dense_4h_to_h.bias", vec(d))]
        t += [("gpt_neox.final_layer_norm.weight", normw(d)), ("gpt_neox.final_layer_norm.bias", vec(d, 0.1))]
        if not g("tie_word_embeddings"):
            t.append(("embed_out.weight", lin(V, d)))
        return t
    gemma = arch in ("gemma2", "gemma3")
    es = 1.0 / np.sqrt(d) if gemma else 1.0    # Gemma multiplies by sqrt(d)
    t.append(("model.embed_tokens.weight", (es * rng.standard_normal((V, d))).astype(np.float32)))
    E, Fe = g("num_local_experts") or g("num_experts"), g("moe_intermediate_size") or I
    for l in range(L):
        p = "model.layers.%d." % l
        if arch != "olmo2":
            t.append((p + "input_layernorm.weight", normw(d, gemma)))
        t.append((p + "post_attention_layernorm.weight", normw(d, gemma)))
        if gemma:
            t.append((p + "pre_feedforward_layernorm.weight", normw(d, gemma)))
        if gemma or arch == "olmo2":
            t.append((p + "post_feedforward_layernorm.weight", normw(d, gemma)))
        t.append((p + "self_attn.q_proj.weight", lin(H * hd, d, qk)))
        t.append((p + "self_attn.k_proj.weight", lin(KV * hd, d, qk)))
        t.append((p + "self_attn.v_proj.weight", lin(KV * hd, d)))
        if arch == "qwen2moe":
            t += [(p + "self_attn.%s_proj.bias" % n, vec(k)) for n, k in (("q", H * hd), ("k", KV * hd), ("v", KV * hd))]
        if arch in ("gemma3", "qwen3moe"):
            t.append((p + "self_attn.q_norm.weight",
                      ((normw(hd) * qk) - (1.0 if gemma else 0.0)).astype(np.float32)))
            t.append((p + "self_attn.k_norm.weight", normw(hd, gemma)))
        if arch == "olmo2":
            t.append((p + "self_attn.q_norm.weight", (normw(H * hd) * qk).astype(np.float32)))
            t.append((p + "self_attn.k_norm.weight", normw(KV * hd)))
        t.append((p + "self_attn.o_proj.weight", lin(d, H * hd)))
        if arch in ("mixtral", "qwen2moe", "qwen3moe"):
            mix = arch == "mixtral"
            pm = p + ("block_sparse_moe." if mix else "mlp.")
            t.append((pm + "gate.weight", lin(E, d, 3.0)))
            for e in range(E):
                pe = pm + "experts.%d." % e
                gn, un, dn = ("w1", "w3", "w2") if mix else ("gate_proj", "up_proj", "down_proj")
                t += [(pe + gn + ".weight", lin(Fe, d, 1.5)), (pe + un + ".weight", lin(Fe, d, 1.5)),
                      (pe + dn + ".weight", lin(d, Fe))]
            if arch == "qwen2moe":
                Fs = g("shared_expert_intermediate_size")
                ps = pm + "shared_expert."
                t += [(ps + "gate_proj.weight", lin(Fs, d, 1.5)), (ps + "up_proj.weight", lin(Fs, d, 1.5)),
                      (ps + "down_proj.weight", lin(d, Fs)), (pm + "shared_expert_gate.weight", lin(1, d, 2.0))]
        else:
            t += [(p + "mlp.gate_proj.weight", lin(I, d, 1.5)), (p + "mlp.up_proj.weight", lin(I, d, 1.5)),
                  (p + "mlp.down_proj.weight", lin(d, I))]
    t.append(("model.norm.weight", normw(d, gemma)))
    if not g("tie_word_embeddings"):
        t.append(("lm_head.weight", lin(V, d)))
    return t


def make_tensors(arch, cfg, o, rng):
    """Ordered list of (name, f32 array)."""
    if arch in ("gpt2", "neox", "gemma2", "gemma3", "olmo2", "mixtral", "qwen2moe", "qwen3moe"):
        return family_tensors(arch, cfg, o, rng)
    d, L = cfg["hidden_size"], cfg["num_hidden_layers"]
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", d // H)
    I, V = cfg["intermediate_size"], cfg["vocab_size"]
    qk_gain = o["qk_gain"]

    def lin(out, inp, gain=1.0):
        return (rng.standard_normal((out, inp)) * gain / np.sqrt(inp)).astype(np.float32)

    def normw(n):
        return (1.0 + 0.2 * rng.standard_normal(n)).astype(np.float32)

    t = [("model.embed_tokens.weight", rng.standard_normal((V, d)).astype(np.float32))]
    for l in range(L):
        p = "model.layers.%d." % l
        t.append((p + "input_layernorm.weight", normw(d)))
        t.append((p + "post_attention_layernorm.weight", normw(d)))
        q, k, v = lin(H * hd, d, qk_gain), lin(KV * hd, d, qk_gain), lin(KV * hd, d)
        if arch == "phi3":
            t.append((p + "self_attn.qkv_proj.weight", np.concatenate([q, k, v], 0)))
        else:
            t.append((p + "self_attn.q_proj.weight", q))
            t.append((p + "self_attn.k_proj.weight", k))
            t.append((p + "self_attn.v_proj.weight", v))
        if arch == "qwen2":
            t.append((p + "self_attn.q_proj.bias", (0.3 * rng.standard_normal(H * hd)).astype(np.float32)))
            t.append((p + "self_attn.k_proj.bias", (0.3 * rng.standard_normal(KV * hd)).astype(np.float32)))
            t.append((p + "self_attn.v_proj.bias", (0.3 * rng.standard_normal(KV * hd)).astype(np.float32)))
        if arch == "qwen3":
            t.append((p + "self_attn.q_norm.weight", (normw(hd) * qk_gain).astype(np.float32)))
            t.append((p + "self_attn.k_norm.weight", normw(hd)))
        if cfg.get("attention_bias"):
            for n, k in (("q", H * hd), ("k", KV * hd), ("v", KV * hd)):
                t.append((p + "self_attn.%s_proj.bias" % n, (0.3 * rng.standard_normal(k)).astype(np.float32)))
        t.append((p + "self_attn.o_proj.weight", lin(d, H * hd)))
        if cfg.get("attention_bias"):
            t.append((p + "self_attn.o_proj.bias", (0.3 * rng.standard_normal(d)).astype(np.float32)))
        g, u = lin(I, d, 1.5), lin(I, d, 1.5)
        if arch == "phi3":
            t.append((p + "mlp.gate_up_proj.weight", np.concatenate([g, u], 0)))
        else:
            t.append((p + "mlp.gate_proj.weight", g))
            t.append((p + "mlp.up_proj.weight", u))
        if cfg.get("mlp_bias"):
            t.append((p + "mlp.gate_proj.bias", (0.3 * rng.standard_normal(I)).astype(np.float32)))
            t.append((p + "mlp.up_proj.bias", (0.3 * rng.standard_normal(I)).astype(np.float32)))
        t.append((p + "mlp.down_proj.weight", lin(d, I)))
        if cfg.get("mlp_bias"):
            t.append((p + "mlp.down_proj.bias", (0.3 * rng.standard_normal(d)).astype(np.float32)))
    t.append(("model.norm.weight", normw(d)))
    if not cfg["tie_word_embeddings"]:
        t.append(("lm_head.weight", lin(V, d)))
    return t


def write_safetensors(path, tensors, dtype, hdr_mut=None):
    """tensors: list of (name, array, dtype-or-None).  hdr_mut(header) may
    alter the header dict before writing.  Returns bytes of data written."""
    hdr, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, arr, dt in tensors:
        dt = dt or dtype
        b = encode(arr, dt)
        hdr[name] = {"dtype": ST_DTYPE[dt], "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if hdr_mut:
        hdr_mut(hdr)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)
    return off


def write_model(outdir, arch, o, fault=None):
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(o["seed"])
    cfg = make_config(arch, o)
    tensors = make_tensors(arch, cfg, o, rng)
    tensors = [(n, a, None) for n, a in tensors]
    if o["plant_inf"] is not None:
        # A weight too large for f16: it overflows to +inf when the model is
        # written, so the forward pass turns non-finite at exactly this layer's
        # MLP output (layer plant_inf+1 in sinkscope's 1-based numbering).
        name = "model.layers.%d.mlp.down_proj.weight" % o["plant_inf"]
        for i, (n, a, dt) in enumerate(tensors):
            if n == name:
                a = a.copy()
                a[0, 0] = 1e6
                tensors[i] = (n, a, dt)
    hdr_mut = None
    victim = "model.layers.0.self_attn.o_proj.weight"
    if fault == "conv1d-transposed":   # GPT-2: c_attn stored [out, in]
        tensors = [(n, np.ascontiguousarray(a.T) if n.endswith("h.0.attn.c_attn.weight") else a, dt)
                   for n, a, dt in tensors]
    elif fault == "missing-expert":
        tensors = [x for x in tensors if not x[0].endswith(("experts.1.w2.weight", "experts.1.down_proj.weight"))
                   or ".layers.1." not in x[0]]
    elif fault == "unsupported-act":
        for k in ("activation_function", "hidden_act", "hidden_activation"):
            if k in cfg:
                cfg[k] = "relu2"
    elif fault == "unsupported-layer-type":
        cfg["layer_types"] = ["chunked_attention"] * cfg["num_hidden_layers"]
    if fault == "missing-tensor":
        tensors = [x for x in tensors if x[0] != victim]
    elif fault == "extra-tensor":
        tensors.append(("model.layers.0.self_attn.rotary_emb.extra", np.zeros(4, np.float32), None))
    elif fault == "misshaped":
        tensors = [(n, a[:, :-1] if n == victim else a, dt) for n, a, dt in tensors]
    elif fault == "unknown-dtype":
        def hdr_mut(h):
            h[victim]["dtype"] = "F8_E9M0"
    elif fault == "offsets-overflow":
        def hdr_mut(h):
            h[victim]["data_offsets"][1] += 1 << 40
    if fault == "unsupported-arch":
        cfg["architectures"] = ["BloomForCausalLM"]
        cfg["model_type"] = "bloom"
    if fault == "unsupported-rope":
        cfg["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}

    shards = o["shards"] if fault != "missing-shard" else max(2, o["shards"])
    if shards <= 1:
        write_safetensors(os.path.join(outdir, "model.safetensors"), tensors, o["dtype"], hdr_mut)
        files = ["model.safetensors"]
    else:
        per = -(-len(tensors) // shards)
        wmap, total, files = {}, 0, []
        for s in range(shards):
            fn = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
            part = tensors[s * per:(s + 1) * per]
            total += write_safetensors(os.path.join(outdir, fn), part, o["dtype"],
                                       hdr_mut if any(n == victim for n, _, _ in part) else None)
            for n, _, _ in part:
                wmap[n] = fn
            files.append(fn)
        with open(os.path.join(outdir, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": wmap}, f, indent=2)
        if fault == "missing-shard":
            os.unlink(os.path.join(outdir, files[-1]))
    with open(os.path.join(outdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    st = os.path.join(outdir, files[0])
    if fault in ("trunc-header", "trunc-header-len", "trunc-mid"):
        n = int.from_bytes(open(st, "rb").read(8), "little")
        size = {"trunc-header": 8 + n // 2, "trunc-header-len": 5,
                "trunc-mid": (8 + n + os.path.getsize(st)) // 2}[fault]
        os.truncate(st, size)
    elif fault == "bad-json":
        with open(st, "r+b") as f:
            f.seek(8)
            f.write(b"{\"model.embed")     # leaves an unterminated string inside
            f.seek(8 + 40)
            f.write(b"\x00[[")
    elif fault == "bad-config-json":
        with open(os.path.join(outdir, "config.json"), "w") as f:
            f.write('{"architectures": ["LlamaForCausalLM"], "hidden_size": 64,\n')
    elif fault == "missing-config":
        os.unlink(os.path.join(outdir, "config.json"))
    return cfg


def defaults():
    return dict(layers=3, hidden=64, heads=4, kv_heads=2, head_dim=0, inter=128, vocab=256,
                theta=10000.0, rope="none", dtype="f32", tied=False, shards=1, seed=1,
                qk_gain=2.0, plant_inf=None, bias=False, window=0, partial=0.0, max_pos=4096,
                act="", parallel=True, prefix=False, buffers=False, layer_types=False,
                experts=4, topk=2, moe_inter=48, norm_topk=False)


def variant_opts(arch, extra, seed):
    o = defaults()
    o["seed"] = seed
    if arch == "qwen3":
        o.update(hidden=48, head_dim=16, theta=1e6)   # q width 64 != hidden 48
    if arch in ("gpt2", "neox"):
        o.update(kv_heads=o["heads"], inter=4 * o["hidden"], max_pos=512)
    if arch in ("gemma2", "gemma3"):
        o.update(hidden=48, head_dim=16, theta=1e6 if arch == "gemma3" else 10000.0)   # q width 64 != 48
    if arch == "olmo2":
        o.update(theta=500000.0)
    if arch == "qwen3moe":
        o.update(hidden=48, head_dim=16, experts=6, norm_topk=True, theta=1e6)
    o.update(extra)
    return o


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--variants", action="store_true", help="write every variant under OUT")
    ap.add_argument("--set", choices=sorted(VARIANT_SETS), default="paper",
                    help="which variants: the paper's architectures or the other families")
    ap.add_argument("--arch", choices=ARCHS, default="llama")
    for k, v in defaults().items():
        if k in ("tied", "bias", "prefix", "buffers", "layer_types", "norm_topk"):
            ap.add_argument("--" + k.replace("_", "-"), action="store_true")
        elif k == "parallel":
            ap.add_argument("--sequential", dest="parallel", action="store_false", default=None,
                            help="NeoX without the parallel residual")
        elif k == "act":
            ap.add_argument("--act", default=None)
        elif k == "plant_inf":
            ap.add_argument("--plant-inf", type=int, metavar="LAYER0",
                            help="0-based layer whose down_proj gets a weight overflowing f16")
        elif k == "rope":
            ap.add_argument("--rope", choices=("none", "llama3", "linear"), default="none")
        elif k == "dtype":
            ap.add_argument("--dtype", choices=("f32", "bf16", "f16"), default="f32")
        else:
            ap.add_argument("--" + k.replace("_", "-"), type=type(v), default=None)
    ap.add_argument("--fault", choices=FAULTS)
    a = ap.parse_args()
    if a.variants:
        names = []
        for i, (name, (arch, extra)) in enumerate(VARIANT_SETS[a.set].items()):
            write_model(os.path.join(a.out, name), arch, variant_opts(arch, extra, 100 + i))
            names.append(name)
        with open(os.path.join(a.out, "list"), "w") as f:
            f.write("\n".join(names) + "\n")
        return
    extra = {k: getattr(a, k) for k in defaults() if getattr(a, k, None) is not None}
    for k in ("tied", "bias", "prefix", "buffers", "layer_types", "norm_topk"):
        extra[k] = getattr(a, k)
    write_model(a.out, a.arch, variant_opts(a.arch, {k: v for k, v in extra.items()}, extra.get("seed", 1)),
                a.fault)


if __name__ == "__main__":
    main()
