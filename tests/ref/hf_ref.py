#!/usr/bin/python3
"""hf_ref.py - independent float64 reference forward pass (PyTorch).

    hf_ref.py -m MODEL_DIR --ids FILE -o OUT.h5     stats + all activations
    hf_ref.py -m MODEL_DIR --greedy N [--ids FILE]  greedy ids on stdout
    hf_ref.py --batch FILE       lines "MODEL_DIR IDS_FILE OUT.h5 [f32|bf16:NB,KT|bf16A]":
                                 one torch start-up for many models
    --compute bf16 --tiles NB,KT the engine's bf16 mode (see mm and attend below)

Follows Hugging Face transformers' modeling code for LlamaForCausalLM,
MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM and Phi3ForCausalLM
(eager attention), but in float64 throughout, from the weights exactly as
stored (bf16/f16 widened exactly), so that it measures only the engine's
rounding:

  RMSNorm(x)   = w * (x / sqrt(mean(x^2) + eps))             (LlamaRMSNorm)
  RoPE         q*cos + rotate_half(q)*sin, rotate_half(x) = cat(-x2, x1),
               cos/sin of pos * inv_freq repeated twice (cat(freqs, freqs));
               inv_freq = theta^(-2i/hd); "linear": inv_freq / factor;
               "llama3": _compute_llama3_parameters (3 wavelength bands)
  Qwen2        q/k/v biases; Qwen3: q_norm/k_norm per head before RoPE,
               explicit head_dim; Phi3: qkv_proj split [q | k | v],
               gate_up_proj.chunk(2) = (gate, up)
  attention    softmax(q k^T / sqrt(hd) + causal mask) v, GQA by
               repeat_kv; Mistral/Phi3/Qwen2 sliding window (key j seen by query i
               when i - j < window, as transformers masking_utils)
  MLP          down(silu(gate(x)) * up(x)); Llama attention_bias (q/k/v/o)
               and mlp_bias (gate/up/down) when present
  Phi3         partial_rotary_factor: RoPE on the first hd*f dims only,
               inv_freq computed over that width

The HDF5 written has the layout of DESIGN.md section 2 with every layer of
every component in /acts.  Row L of resid is h[L] before the final norm
(DESIGN.md section 1: h[l] = mid + m[l]); HF's hidden_states[-1] is after
model.norm, and --hf-last-norm writes that instead.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)

ST = {"F32": (np.float32, 4), "F16": (np.float16, 2), "BF16": (None, 2),
      "F64": (np.float64, 8)}


def read_safetensors(path):
    """name -> float64 numpy array.  Own parser (no safetensors package)."""
    with open(path, "rb") as f:
        buf = f.read()
    n = int.from_bytes(buf[:8], "little")
    hdr = json.loads(buf[8:8 + n])
    base = 8 + n
    out = {}
    for name, t in hdr.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        raw = buf[base + b:base + e]
        dt = t["dtype"]
        if dt == "BF16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(raw, ST[dt][0]).astype(np.float32 if dt != "F64" else np.float64)
        out[name] = a.astype(np.float64).reshape(t["shape"])
    return out


def load(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    idx = os.path.join(model_dir, "model.safetensors.index.json")
    w = {}
    if os.path.exists(idx):
        with open(idx) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    for fn in files:
        w.update(read_safetensors(os.path.join(model_dir, fn)))
    return cfg, {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in w.items()}


def inv_freq_of(cfg, hd):
    theta = cfg.get("rope_theta", 10000.0)
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    rs = cfg.get("rope_scaling") or None
    if rs:
        kind = rs.get("rope_type", rs.get("type"))
        if kind == "linear":
            inv = inv / rs["factor"]
        elif kind == "llama3":
            factor = rs["factor"]
            lo, hi = rs["low_freq_factor"], rs["high_freq_factor"]
            old = rs["original_max_position_embeddings"]
            lo_wl, hi_wl = old / lo, old / hi
            wl = 2 * math.pi / inv
            inv_l = torch.where(wl > lo_wl, inv / factor, inv)
            smooth = (old / wl - lo) / (hi - lo)
            smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
            medium = ~(wl < hi_wl) * ~(wl > lo_wl)
            inv = torch.where(medium, smoothed, inv_l)
        elif kind == "default":
            pass
        else:
            raise SystemExit("hf_ref: unsupported rope_scaling %r" % kind)
    return inv


class Used(dict):
    """The weights, remembering which were read."""
    def __init__(self, d):
        super().__init__(d)
        self.seen = set()

    def __getitem__(self, k):
        self.seen.add(k)
        return super().__getitem__(k)

    def unused(self):
        return sorted(set(self.keys()) - self.seen)


# --compute bf16: the engine's bf16 mode (actdump --compute bf16): each
# projection's input and weight rounded to bf16 (f32 first, then round to
# nearest even, as the engine rounds its f32 activations; bf16 weights are
# exact), the product of those rounded values accumulated in float64 (the
# engine: f32); norms, RoPE, softmax and the lm_head as in f32 mode.
# mm(x, W) is every projection x @ W.  Attention follows the rounding points
# the engine documents (engine/attention.h, attention.c) for its packed
# tiles: q, K and V rounded to bf16 before QK^T; the keys of each query
# block (NB queries from position 0; keys from the block's first query's
# first visible key, down to a multiple of 16) in tiles of KT, each row
# with the online softmax of FlashAttention (Dao et al. 2022, alg. 1):
#   m' = max(m, max_tile S),  P~ = exp(S - m'),  l = l e^(m - m') + sum P~,
#   O = O e^(m - m') + bf16(P~) V,  output O / l,
# so only P~ is rounded, per tile against its running max, and l and recv
# come from the unrounded probabilities.  NB, KT: --tiles (the engine's
# SINKSCOPE_ATTN_TILE).  TILES = None with MM_BF16 is the earlier, weaker
# reference ("bf16A"): the normalised A rounded instead of P~.
MM_BF16 = False
TILES = None


def bfr(t):
    return t.to(torch.float32).to(torch.bfloat16).to(t.dtype) if MM_BF16 else t


def mm(x, wt):
    return bfr(x) @ bfr(wt)


def attend(s, mask, v):
    """The attention output [H, T, hd] of scores s [H, T, T] (masked: -inf
    where mask is not 0) and values v [H, T, hd], and the probabilities A."""
    A = torch.softmax(s, -1)
    if not MM_BF16 or TILES is None:
        return bfr(A) @ bfr(v), A
    nb, kt = TILES
    vb = bfr(v)
    H, T, hd = v.shape
    allowed = mask == 0
    out = torch.empty_like(v)
    for qs in range(0, T, nb):
        qe = min(qs + nb, T)
        kb = int(allowed[qs].nonzero()[0]) // 16 * 16
        m = torch.full((H, qe - qs), float("-inf"), dtype=s.dtype)
        l = torch.zeros((H, qe - qs), dtype=s.dtype)
        o = torch.zeros((H, qe - qs, hd), dtype=s.dtype)
        for c0 in range(kb, qe, kt):
            c1 = min(c0 + kt, qe)
            S = s[:, qs:qe, c0:c1]                      # -inf where masked
            mt = torch.maximum(m, S.amax(-1))
            seen = mt > float("-inf")
            mt0 = torch.where(seen, mt, torch.zeros_like(mt))
            a = torch.where(seen, torch.exp(m - mt0), torch.ones_like(mt))
            P = torch.exp(S - mt0[..., None])           # exp(-inf) = 0: masked keys
            l = l * a + P.sum(-1)
            o = o * a[..., None] + bfr(P) @ vb[:, c0:c1]
            m = mt
        out[:, qs:qe] = o / l[..., None]
    return out, A


def rms(x, w, eps):
    return w * (x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), -1)


FAMILIES = ("GPT2LMHeadModel", "GPTNeoXForCausalLM", "Gemma2ForCausalLM", "Gemma3ForCausalLM",
            "Olmo2ForCausalLM", "MixtralForCausalLM", "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM")


def layer_norm(x, w, b, eps):
    """torch.nn.LayerNorm: biased variance"""
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


def act_fn(name):
    """transformers' ACT2FN for the names these families use"""
    if name in ("silu", "swish"):
        return torch.nn.functional.silu
    if name == "gelu":
        return lambda x: torch.nn.functional.gelu(x)                 # exact (erf)
    if name in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        return lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))
    raise SystemExit("hf_ref: unsupported activation %r" % name)


def forward_family(cfg, w, ids, keep_acts, hf_last_norm, dt, edit, allowed_of=None, attn_hook=None):
    """The families beyond the paper, after transformers' modeling_gpt2,
    modeling_gpt_neox, modeling_gemma2, modeling_gemma3 (text), modeling_olmo2,
    modeling_mixtral, modeling_qwen2_moe and modeling_qwen3_moe (eager):

      GPT2     h0 = wte[ids] + wpe[pos]; ln_1 -> c_attn (Conv1D: x @ W + b,
               W [in, out]) split q|k|v; softmax(q k^T / sqrt(hd)); c_proj;
               h += a; ln_2 -> c_fc -> gelu_new -> c_proj; h += m; ln_f;
               lm_head = wte (tied)
      NeoX     query_key_value viewed [T, H, 3 hd] (q, k, v per head);
               RoPE (rotate_half) on the first hd * rotary_pct dims, base
               rotary_emb_base; parallel residual: h + attn(ln1(h)) +
               mlp(ln2(h)), else mlp(ln2(h + a)) + h + a; gelu (erf)
      Gemma    RMSNorm * (1 + w); h0 = embed * sqrt(d); scores * qpas^-0.5,
               then cap tanh(s / cap) (attn_logit_softcapping) before the
               mask; post_attention_layernorm on the attention output,
               pre_/post_feedforward_layernorm around the GeGLU MLP; sliding
               layers (Gemma 2: even layers; Gemma 3: layer_types or all but
               every sliding_window_pattern-th, with rope_local_base_freq);
               Gemma 3: q_norm/k_norm per head; final_logit_softcapping
      OLMo2    attention and MLP read h itself; q_norm/k_norm over the whole
               projection; post_attention_layernorm / post_feedforward_layernorm
               on the outputs before each residual add
      MoE      router softmax (float), topk, renormalised (Mixtral; Qwen:
               norm_topk_prob); m = sum_k w_k expert_k(x); Qwen2-MoE adds
               sigmoid(shared_expert_gate(x)) * shared_expert(x)
    """
    arch = cfg["architectures"][0]
    gpt2 = arch == "GPT2LMHeadModel"
    neox = arch == "GPTNeoXForCausalLM"
    gemma = arch.startswith("Gemma")
    gemma3 = arch == "Gemma3ForCausalLM"
    olmo2 = arch == "Olmo2ForCausalLM"
    moe = arch in ("MixtralForCausalLM", "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM")
    g = (lambda k, dflt=None: cfg.get(k, dflt))
    d = g("n_embd") if gpt2 else g("hidden_size")
    L = g("n_layer") if gpt2 else g("num_hidden_layers")
    H = g("n_head") if gpt2 else g("num_attention_heads")
    KV = g("num_key_value_heads") or H
    hd = g("head_dim") or d // H
    eps = g("layer_norm_epsilon", 1e-5) if gpt2 else g("layer_norm_eps", 1e-5) if neox else g("rms_norm_eps", 1e-6)
    T = len(ids)
    if dt != torch.float64:
        w = {k: v.to(dt) for k, v in w.items()}
    w = Used(w)
    root = "transformer." if gpt2 and "transformer.wte.weight" in w else ""
    for k in list(w.keys()):   # buffers, not weights (strict loading ignores them)
        if k.endswith((".attn.bias", ".attn.masked_bias", ".attention.bias", ".attention.masked_bias",
                       "rotary_emb.inv_freq")):
            w.seen.add(k)
    ids_t = torch.tensor(ids, dtype=torch.long)
    if gpt2:
        act = act_fn(g("activation_function", "gelu_new"))
    elif neox:
        act = act_fn(g("hidden_act", "gelu"))
    elif gemma:
        act = act_fn(g("hidden_activation") or g("hidden_act", "gelu_pytorch_tanh"))
    else:
        act = act_fn(g("hidden_act", "silu"))

    def norm(x, name):
        if gpt2 or neox:
            return layer_norm(x, w[name + ".weight"], w[name + ".bias"], eps)
        if gemma:
            return rms(x, 1.0 + w[name + ".weight"], eps)
        return rms(x, w[name + ".weight"], eps)

    def lin(x, name, bias=False):
        y = mm(x, w[name + ".weight"].T)
        return y + w[name + ".bias"] if bias else y

    # RoPE tables (global; Gemma 3's local layers get their own base)
    def tables(c, rd):
        freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq_of(c, rd))
        emb = torch.cat((freqs, freqs), -1)
        return emb.cos().to(dt), emb.sin().to(dt)
    if neox:
        rd = int(hd * g("rotary_pct", 0.25))
        c2 = dict(cfg)
        c2["rope_theta"] = g("rope_theta", g("rotary_emb_base", 10000))
    else:
        rd, c2 = hd, cfg
    rope_g = None if gpt2 else tables(c2, rd)
    rope_l = None
    if gemma3:
        c3 = dict(cfg)
        c3["rope_theta"] = g("rope_local_base_freq", 10000.0)
        c3["rope_scaling"] = None
        rope_l = tables(c3, rd)

    # which layers slide, and by how much
    window = [None] * L
    if gemma:
        lt = g("layer_types")
        if lt is None:
            pat = 2 if not gemma3 else g("sliding_window_pattern", 6)
            lt = ["sliding_attention" if (i + 1) % pat else "full_attention" for i in range(L)]
        window = [g("sliding_window", 4096) if t == "sliding_attention" else None for t in lt]
    elif arch == "MixtralForCausalLM" and g("sliding_window"):
        window = [g("sliding_window")] * L
    i = torch.arange(T)

    def mask_of(win):
        allowed = i[:, None] >= i[None, :]
        if win is not None and win < T:
            allowed &= (i[:, None] - i[None, :]) < win
        return torch.where(allowed, 0.0, float("-inf")).to(dt)

    scale = g("query_pre_attn_scalar", hd) ** -0.5 if gemma else 1.0 / math.sqrt(hd)
    cap = g("attn_logit_softcapping") if gemma else None
    qkv_bias = arch == "Qwen2MoeForCausalLM" or bool(g("attention_bias")) and not neox
    if gpt2:
        h = w[root + "wte.weight"][ids_t] + w[root + "wpe.weight"][torch.arange(T)]
    elif neox:
        h = w["gpt_neox.embed_in.weight"][ids_t]
    else:
        h = w["model.embed_tokens.weight"][ids_t]
        if gemma:
            h = h * torch.tensor(d ** 0.5, dtype=dt)
    h = edit(0, "resid", h)
    hs, attn_outs, mlp_ins, mlp_outs, recv, experts, eweights = [h], [], [], [], [], [], []
    for l in range(L):
        p = (root + "h.%d." % l) if gpt2 else ("gpt_neox.layers.%d." % l) if neox else ("model.layers.%d." % l)
        # attention
        if gpt2:
            x = norm(h, p + "ln_1")
            qkv = mm(x, w[p + "attn.c_attn.weight"]) + w[p + "attn.c_attn.bias"]
            q, k, v = qkv.split(d, -1)
        elif neox:
            x = norm(h, p + "input_layernorm")
            qkv = lin(x, p + "attention.query_key_value", g("attention_bias", True))
            qkv = qkv.view(T, H, 3 * hd)
            q, k, v = (qkv[..., :hd].reshape(T, H * hd), qkv[..., hd:2 * hd].reshape(T, H * hd),
                       qkv[..., 2 * hd:].reshape(T, H * hd))
        else:
            x = h if olmo2 else norm(h, p + "input_layernorm")
            q = lin(x, p + "self_attn.q_proj", qkv_bias)
            k = lin(x, p + "self_attn.k_proj", qkv_bias)
            v = lin(x, p + "self_attn.v_proj", qkv_bias)
            if olmo2:
                q = rms(q, w[p + "self_attn.q_norm.weight"], eps)
                k = rms(k, w[p + "self_attn.k_norm.weight"], eps)
        q = q.view(T, H, hd).transpose(0, 1)
        k = k.view(T, KV, hd).transpose(0, 1)
        v = v.view(T, KV, hd).transpose(0, 1)
        if gemma3 or arch == "Qwen3MoeForCausalLM":
            nq = (lambda x, n: rms(x, 1.0 + w[n], eps)) if gemma3 else (lambda x, n: rms(x, w[n], eps))
            q = nq(q, p + "self_attn.q_norm.weight")
            k = nq(k, p + "self_attn.k_norm.weight")
        if not gpt2:
            cos, sin = rope_l if (rope_l is not None and window[l] is not None) else rope_g
            def rope(x):
                xr, xp = x[..., :rd], x[..., rd:]
                return torch.cat((xr * cos + rotate_half(xr) * sin, xp), -1)
            q, k = rope(q), rope(k)
        rep = H // KV
        k = k.repeat_interleave(rep, 0)
        v = v.repeat_interleave(rep, 0)
        s = (bfr(q) @ bfr(k).transpose(1, 2)) * scale
        if cap:
            s = torch.tanh(s / cap) * cap
        mask = mask_of(window[l])
        if allowed_of is not None:   # a key selection within the layer's causal window
            mask = torch.where(allowed_of(l + 1, mask == 0), 0.0, float("-inf")).to(dt)
        o, A = attend(s + mask, mask, v)
        if attn_hook is not None:
            attn_hook(l + 1, A)
        o = o.transpose(0, 1).reshape(T, H * hd)
        if gpt2:
            a = mm(o, w[p + "attn.c_proj.weight"]) + w[p + "attn.c_proj.bias"]
        elif neox:
            a = lin(o, p + "attention.dense", g("attention_bias", True))
        else:
            a = lin(o, p + "self_attn.o_proj", bool(g("attention_bias")) and not moe)
            if gemma or olmo2:
                a = norm(a, p + "post_attention_layernorm")
        a = edit(l + 1, "attn_out", a)
        recv.append(A.sum(1) / (T - torch.arange(T, dtype=dt)))
        mid = h + a
        # MLP input
        if gpt2:
            x2 = norm(mid, p + "ln_2")
        elif neox:
            x2 = norm(h if g("use_parallel_residual", True) else mid, p + "post_attention_layernorm")
        elif gemma:
            x2 = norm(mid, p + "pre_feedforward_layernorm")
        elif olmo2:
            x2 = mid
        else:
            x2 = norm(mid, p + "post_attention_layernorm")
        x2 = edit(l + 1, "mlp_in", x2)
        if gpt2:
            m = mm(act(mm(x2, w[p + "mlp.c_fc.weight"]) + w[p + "mlp.c_fc.bias"]), w[p + "mlp.c_proj.weight"]) \
                + w[p + "mlp.c_proj.bias"]
        elif neox:
            m = lin(act(lin(x2, p + "mlp.dense_h_to_4h", True)), p + "mlp.dense_4h_to_h", True)
        elif moe:
            mix = arch == "MixtralForCausalLM"
            pm = p + ("block_sparse_moe." if mix else "mlp.")
            E = g("num_local_experts") if mix else g("num_experts")
            K = g("num_experts_per_tok")
            probs = torch.softmax(lin(x2, pm + "gate"), -1)
            tw, ti = torch.topk(probs, K, -1)
            if mix or g("norm_topk_prob", False):
                tw = tw / tw.sum(-1, keepdim=True)
            m = torch.zeros_like(x2)
            names = ("w1", "w3", "w2") if mix else ("gate_proj", "up_proj", "down_proj")
            for e in range(E):
                pe = pm + "experts.%d." % e
                tok, slot = torch.where(ti == e)
                if len(tok) == 0:
                    for nme in names:
                        w.seen.add(pe + nme + ".weight")
                    continue
                xe = x2[tok]
                ye = lin(act(lin(xe, pe + names[0])) * lin(xe, pe + names[1]), pe + names[2])
                m.index_add_(0, tok, ye * tw[tok, slot][:, None])
            if arch == "Qwen2MoeForCausalLM":
                ps = pm + "shared_expert."
                sh = lin(act(lin(x2, ps + "gate_proj")) * lin(x2, ps + "up_proj"), ps + "down_proj")
                m = m + torch.sigmoid(lin(x2, pm + "shared_expert_gate")) * sh
            experts.append(ti)
            eweights.append(tw)
        else:
            m = lin(act(lin(x2, p + "mlp.gate_proj")) * lin(x2, p + "mlp.up_proj"), p + "mlp.down_proj")
        if gemma or olmo2:
            m = norm(m, p + "post_feedforward_layernorm")
        m = edit(l + 1, "mlp_out", m)
        h = edit(l + 1, "resid", mid + m)
        hs.append(h)
        attn_outs.append(a)
        mlp_ins.append(x2)
        mlp_outs.append(m)
    fn = (root + "ln_f") if gpt2 else "gpt_neox.final_layer_norm" if neox else "model.norm"
    final = norm(h, fn)
    if hf_last_norm:
        hs[-1] = final
    if g("tie_word_embeddings", gpt2 or gemma):
        head = w[(root + "wte.weight") if gpt2 else "gpt_neox.embed_in.weight" if neox
                 else "model.embed_tokens.weight"]
    elif neox:
        head = w["embed_out.weight"]
    else:
        head = w["lm_head.weight"]
    if "lm_head.weight" in w:
        w.seen.add("lm_head.weight")
    logits = final @ head.T
    if gemma and g("final_logit_softcapping"):
        fc = g("final_logit_softcapping")
        logits = torch.tanh(logits / fc) * fc
    unused = w.unused()
    if unused:
        raise SystemExit("hf_ref: tensors not used by %s: %s" % (arch, ", ".join(unused[:4])))
    R = torch.stack(hs)
    out = {
        "resid_norm": R.norm(dim=-1),
        "resid_cos0": torch.nn.functional.cosine_similarity(R, R[:, :1, :].expand_as(R), dim=-1,
                                                            eps=1e-300),
        "attn_out_norm": torch.stack(attn_outs).norm(dim=-1),
        "mlp_out_norm": torch.stack(mlp_outs).norm(dim=-1),
        "recv": torch.stack(recv),
        "logits": logits,
    }
    if moe:
        out["moe_experts"] = torch.stack(experts).to(torch.int32)
        out["moe_weights"] = torch.stack(eweights)
    if keep_acts:
        out["acts"] = {"resid": R, "attn_out": torch.stack(attn_outs),
                       "mlp_in": torch.stack(mlp_ins), "mlp_out": torch.stack(mlp_outs)}
    return out


def forward(cfg, w, ids, keep_acts=True, hf_last_norm=False, dt=torch.float64, edit=None,
            allowed_of=None, attn_hook=None):
    """dt=torch.float32 gives an f32 run of the same code: the size of the
    rounding a correct f32 engine shows, used to set the tolerances.
    edit(layer, component, x) -> x, when given, may change resid (layer 0 =
    embeddings), attn_out, mlp_in and mlp_out [T, d] (interventions).
    allowed_of(layer, allowed) -> bool [T, T], when given, is the key
    selection of layer 1..L (cache policies); attn_hook(layer, A) sees the
    probabilities [H, T, T] of each layer."""
    if edit is None:
        edit = lambda l, c, x: x
    if cfg["architectures"][0] in FAMILIES:
        return forward_family(cfg, w, ids, keep_acts, hf_last_norm, dt, edit, allowed_of, attn_hook)
    if dt != torch.float64:
        w = {k: v.to(dt) for k, v in w.items()}
    w = Used(w)
    arch = cfg["architectures"][0]
    d = cfg["hidden_size"]
    L = cfg["num_hidden_layers"]
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or d // H
    eps = cfg["rms_norm_eps"]
    T = len(ids)
    qkv_bias = arch == "Qwen2ForCausalLM" or bool(cfg.get("attention_bias"))
    o_bias = arch != "Qwen2ForCausalLM" and bool(cfg.get("attention_bias"))
    mlp_bias = bool(cfg.get("mlp_bias"))
    window = None
    if arch in ("MistralForCausalLM", "Phi3ForCausalLM") or (arch == "Qwen2ForCausalLM" and cfg.get("use_sliding_window")):
        window = cfg.get("sliding_window")

    rd = int(hd * cfg.get("partial_rotary_factor", 1.0))
    pos = torch.arange(T, dtype=torch.float64)
    freqs = torch.outer(pos, inv_freq_of(cfg, rd))
    emb = torch.cat((freqs, freqs), -1)
    cos, sin = emb.cos().to(dt), emb.sin().to(dt)           # [T, hd]

    i = torch.arange(T)
    allowed = i[:, None] >= i[None, :]
    if window is not None and window < T:
        allowed &= (i[:, None] - i[None, :]) < window
    mask = torch.where(allowed, 0.0, float("-inf")).to(dt)

    h = edit(0, "resid", w["model.embed_tokens.weight"][torch.tensor(ids, dtype=torch.long)])
    hs, attn_outs, mlp_ins, mlp_outs, recv = [h], [], [], [], []
    for l in range(L):
        p = "model.layers.%d." % l
        x = rms(h, w[p + "input_layernorm.weight"], eps)
        if arch == "Phi3ForCausalLM":
            qkv = mm(x, w[p + "self_attn.qkv_proj.weight"].T)
            qp = H * hd
            q, k, v = qkv[:, :qp], qkv[:, qp:qp + KV * hd], qkv[:, qp + KV * hd:]
        else:
            q = mm(x, w[p + "self_attn.q_proj.weight"].T)
            k = mm(x, w[p + "self_attn.k_proj.weight"].T)
            v = mm(x, w[p + "self_attn.v_proj.weight"].T)
            if qkv_bias:
                q = q + w[p + "self_attn.q_proj.bias"]
                k = k + w[p + "self_attn.k_proj.bias"]
                v = v + w[p + "self_attn.v_proj.bias"]
        q = q.view(T, H, hd).transpose(0, 1)                # [H, T, hd]
        k = k.view(T, KV, hd).transpose(0, 1)
        v = v.view(T, KV, hd).transpose(0, 1)
        if arch == "Qwen3ForCausalLM":
            q = rms(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms(k, w[p + "self_attn.k_norm.weight"], eps)
        def rope(x):
            xr, xp = x[..., :rd], x[..., rd:]
            return torch.cat((xr * cos + rotate_half(xr) * sin, xp), -1)
        q, k = rope(q), rope(k)
        rep = H // KV
        k = k.repeat_interleave(rep, 0)                     # repeat_kv
        v = v.repeat_interleave(rep, 0)
        if allowed_of is not None:
            mask = torch.where(allowed_of(l + 1, allowed), 0.0, float("-inf")).to(dt)
        s = bfr(q) @ bfr(k).transpose(1, 2) / math.sqrt(hd) + mask
        o, A = attend(s, mask, v)                           # A [H, Tq, Tk]
        if attn_hook is not None:
            attn_hook(l + 1, A)
        o = o.transpose(0, 1).reshape(T, H * hd)
        a = mm(o, w[p + "self_attn.o_proj.weight"].T)
        if o_bias:
            a = a + w[p + "self_attn.o_proj.bias"]
        a = edit(l + 1, "attn_out", a)
        # recv[k][j] = mean over queries i >= j of A[i][j]
        recv.append(A.sum(1) / (T - torch.arange(T, dtype=dt)))
        mid = h + a
        x2 = edit(l + 1, "mlp_in", rms(mid, w[p + "post_attention_layernorm.weight"], eps))
        if arch == "Phi3ForCausalLM":
            gu = mm(x2, w[p + "mlp.gate_up_proj.weight"].T)
            g, u = gu.chunk(2, -1)
        else:
            g = mm(x2, w[p + "mlp.gate_proj.weight"].T)
            u = mm(x2, w[p + "mlp.up_proj.weight"].T)
            if mlp_bias:
                g = g + w[p + "mlp.gate_proj.bias"]
                u = u + w[p + "mlp.up_proj.bias"]
        m = mm(torch.nn.functional.silu(g) * u, w[p + "mlp.down_proj.weight"].T)
        if mlp_bias:
            m = m + w[p + "mlp.down_proj.bias"]
        m = edit(l + 1, "mlp_out", m)
        h = edit(l + 1, "resid", mid + m)
        hs.append(h)
        attn_outs.append(a)
        mlp_ins.append(x2)
        mlp_outs.append(m)
    final = rms(h, w["model.norm.weight"], eps)
    if hf_last_norm:
        hs[-1] = final
    head = w["model.embed_tokens.weight" if cfg.get("tie_word_embeddings", False) else "lm_head.weight"]
    unused = w.unused()
    if unused:   # as a strict load_state_dict would
        raise SystemExit("hf_ref: tensors not used by %s: %s" % (arch, ", ".join(unused[:4])))
    R = torch.stack(hs)                                     # [L+1, T, d]
    out = {
        "resid_norm": R.norm(dim=-1),
        "resid_cos0": torch.nn.functional.cosine_similarity(R, R[:, :1, :].expand_as(R), dim=-1,
                                                            eps=1e-300),
        "attn_out_norm": torch.stack(attn_outs).norm(dim=-1),
        "mlp_out_norm": torch.stack(mlp_outs).norm(dim=-1),
        "recv": torch.stack(recv),
        "logits": final @ head.T,
    }
    if keep_acts:
        out["acts"] = {"resid": R, "attn_out": torch.stack(attn_outs),
                       "mlp_in": torch.stack(mlp_ins), "mlp_out": torch.stack(mlp_outs)}
    return out


def weight_dtype(model_dir):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    return {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}.get(cfg.get("torch_dtype"), "?")


def write_h5(path, model_dir, cfg, ids, out):
    import h5py
    L = cfg.get("num_hidden_layers") or cfg["n_layer"]
    H = cfg.get("num_attention_heads") or cfg["n_head"]
    d = cfg.get("hidden_size") or cfg["n_embd"]
    with h5py.File(path, "w") as f:
        f.attrs["sinkscope_format"] = 1
        f.attrs["model"] = model_dir
        f.attrs["architecture"] = cfg["architectures"][0]
        f.attrs["n_layers"] = L
        f.attrs["d_model"] = d
        f.attrs["n_heads"] = H
        f.attrs["n_kv_heads"] = cfg.get("num_key_value_heads") or H
        f.attrs["head_dim"] = cfg.get("head_dim") or d // H
        f.attrs["weight_dtype"] = weight_dtype(model_dir)
        f.attrs["generator"] = "hf_ref.py (float64 torch %s)" % torch.__version__
        f.attrs["command"] = " ".join(sys.argv)
        f["tokens/ids"] = np.asarray(ids, np.int32)
        for k in ("resid_norm", "resid_cos0", "attn_out_norm", "mlp_out_norm", "recv"):
            f["stats/" + k] = out[k].numpy()        # float64: the reference keeps full precision
        if "moe_experts" in out:
            f["stats/moe_experts"] = out["moe_experts"].numpy()
            f["stats/moe_experts"].attrs["n_experts"] = cfg.get("num_local_experts") or cfg["num_experts"]
            f["stats/moe_weights"] = out["moe_weights"].numpy()
        for c, a in out.get("acts", {}).items():
            ds = f.create_dataset("acts/" + c, data=a.numpy())
            ds.attrs["layers"] = np.arange(0 if c == "resid" else 1, L + 1, dtype=np.int64)


def read_ids(path):
    s = sys.stdin.read() if path == "-" else open(path).read()
    return [int(t) for t in s.split()]


def compute_of(word):
    """f32 | bf16:NB,KT | bf16A -> (MM_BF16, TILES)"""
    if word == "f32":
        return False, None
    if word == "bf16A":
        return True, None
    if word.startswith("bf16:"):
        nb, kt = (int(x) for x in word[5:].split(","))
        if nb < 1 or kt < 16 or kt % 16:
            raise SystemExit("hf_ref: tiles %r: NB >= 1, KT a multiple of 16" % word)
        return True, (nb, kt)
    raise SystemExit("hf_ref: compute %r: expected f32, bf16:NB,KT or bf16A" % word)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-m", "--model")
    ap.add_argument("--batch")
    ap.add_argument("--ids")
    ap.add_argument("-o", "--output")
    ap.add_argument("--greedy", type=int, default=0, help="decode N tokens greedily from --ids or BOS")
    ap.add_argument("--no-acts", action="store_true")
    ap.add_argument("--hf-last-norm", action="store_true")
    ap.add_argument("--f32", action="store_true", help="compute in float32 (to size tolerances)")
    ap.add_argument("--compute", choices=("f32", "bf16", "bf16A"), default="f32",
                    help="bf16: the engine's bf16 mode (mm, attend above) with --tiles; "
                         "bf16A: the normalised probabilities rounded instead")
    ap.add_argument("--tiles", metavar="NB,KT", help="the engine's query block and key tile (bf16)")
    a = ap.parse_args()
    global MM_BF16, TILES
    MM_BF16, TILES = compute_of(a.compute + (":" + a.tiles if a.tiles else ""))
    if a.batch:
        for line in open(a.batch):
            if line.strip():
                f = line.split()   # MODEL_DIR IDS_FILE OUT.h5 [f32|bf16:NB,KT|bf16A]
                md, idf, o = f[:3]
                MM_BF16, TILES = compute_of(f[3] if len(f) > 3 else "f32")
                cfg, w = load(md)
                ids = read_ids(idf)
                write_h5(o, md, cfg, ids, forward(cfg, w, ids))
        return
    if not a.model:
        ap.error("-m MODEL_DIR is required")
    cfg, w = load(a.model)
    ids = read_ids(a.ids) if a.ids else [cfg.get("bos_token_id", 1)]
    if a.greedy:
        for _ in range(a.greedy):
            out = forward(cfg, w, ids, keep_acts=False)
            ids.append(int(out["logits"][-1].argmax()))
        print(" ".join(map(str, ids)))
        return
    out = forward(cfg, w, ids, keep_acts=not a.no_acts, hf_last_norm=a.hf_last_norm,
                  dt=torch.float32 if a.f32 else torch.float64)
    write_h5(a.output, a.model, cfg, ids, out)


if __name__ == "__main__":
    main()
