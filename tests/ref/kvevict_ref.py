#!/usr/bin/python3
"""kvevict_ref.py - kvevict(1) against an independent float64 reference.

    kvevict_ref.py MODEL IDS TOTALS LAYERS MASKS EPISODES FIRST SEED

TOTALS, LAYERS and MASKS are kvevict's outputs (-o, --per-layer, --masks)
for the ids of IDS, run with --episodes EPISODES --first FIRST --seed SEED.
Prints one line per check: "ok|not ok<TAB>what<TAB>detail".

1. The masks follow each policy's definition, written here independently:
   every query i > B sees exactly B keys besides itself (i <= B: all);
   window: the last B; streaming: the first K and the last B - K; sinks:
   the first K, then the episodes' sinks alive at the layer (l_start <= l-1
   <= l_end) in position order, as many as precede the window, then the
   window; random: splitmix64 replayed (state seed + (layer << 32), blocks
   of 8 queries, the keys leaving the window by the block's last query
   admitted, a uniform index dropped while the list exceeds B/2); heavy
   (H2O): at each block, the kept keys are B/2 of the candidates (those
   kept before and those leaving the window) and each received at least as
   much attention as each dropped one (queries before the block, summed
   over heads, under the policy, from this reference), within 1e-6.
2. The masked forward pass (hf_ref.forward with allowed_of) under those
   masks gives kvevict's nll within 1e-4, kl within 1e-4 + 1e-3 kl, top1
   within one position; the full pass gives nll_full within 1e-4.
3. The mass the full reference attention puts on the hidden keys, per
   layer and class (episode table: position 0 and primary rows primary,
   the rest secondary), matches lost_* within 1e-5.
A layer with a sliding window W (Mistral, Qwen2's use_sliding_window,
Gemma 2/3's sliding layers, written here from the config) lets query i see
only keys j > i - W: the masks must be the policy's choice within that
window; heavy's choice is checked block by block while no kept key can be
older than the window, after that only as lying in the window.
Tolerances: the engine computes in f32 (attention probabilities to ~1e-6,
logits to ~1e-5 on these models); a wrong mask moves nll by 1e-2 or more.
"""
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_ref  # noqa: E402

CHUNK = 8


def read_tsv(path):
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        return [dict(zip(head, l.rstrip("\n").split("\t"))) for l in f if l.strip()]


def splitmix64(s):
    s = (s + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = s
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return s, z ^ (z >> 31)


def visible_rule(i, B, cand, cap):
    """{i}, the first p entries of cand below the window, the window of the
    last B - p keys, p as large as possible (p <= cap)."""
    if i <= B:
        return set(range(i + 1))
    c = [j for j in cand if j < i]
    for p in range(min(cap, len(c), B), -1, -1):
        lo = i - (B - p)
        if all(j < lo for j in c[:p]):
            return set(c[:p]) | set(range(lo, i + 1))
    raise AssertionError("no window")


def windows(cfg):
    """The sliding window of each layer 1..L (None: none), from the config."""
    arch, L, g = cfg["architectures"][0], cfg["num_hidden_layers"], cfg.get
    if arch.startswith("Gemma"):
        lt = g("layer_types")
        if lt is None:
            pat = 2 if arch == "Gemma2ForCausalLM" else g("sliding_window_pattern", 6)
            lt = ["sliding_attention" if (i + 1) % pat else "full_attention" for i in range(L)]
        return [None] + [g("sliding_window", 4096) if t == "sliding_attention" else None for t in lt]
    if arch in ("MistralForCausalLM", "Phi3ForCausalLM", "MixtralForCausalLM") or (
            arch == "Qwen2ForCausalLM" and g("use_sliding_window")):
        return [None] + [g("sliding_window")] * L
    return [None] * (L + 1)


def main():
    model, idsf, totf, layf, maskf, epf, K, seed = sys.argv[1:9]
    K, seed = int(K), int(seed)
    cfg, w = hf_ref.load(model)
    ids = [int(t) for t in open(idsf).read().split()]
    T, L, H = len(ids), cfg["num_hidden_layers"], cfg["num_attention_heads"]
    W = windows(cfg)

    def in_window(l, i, keys):
        return {j for j in keys if W[l] is None or j > i - W[l]}
    eps = read_tsv(epf)
    out = []

    def check(ok, what, detail=""):
        out.append("%s\t%s\t%s" % ("ok" if ok else "not ok", what, detail))

    masks = {}
    for r in read_tsv(maskf):
        key = (r["policy"], int(r["budget"]))
        kept = [] if r["kept"] == "-" else [int(x) for x in r["kept"].split(",")]
        masks.setdefault(key, {}).setdefault(int(r["layer"]), {})[int(r["query"])] = (int(r["lo"]), kept)

    def vis_of(key, l, i):
        row = masks.get(key, {}).get(l, {}).get(i)
        if row is None:
            return in_window(l, i, range(i + 1))
        lo, kept = row
        return set(kept) | set(range(lo, i + 1))

    def allowed_for(key):
        def f(l, allowed):
            a = allowed.clone()
            for i, (lo, kept) in masks.get(key, {}).get(l, {}).items():
                a[i, :] = False
                a[i, lo:i + 1] = True
                a[i, kept] = True
            return a
        return f

    A_full = {}
    full = hf_ref.forward(cfg, w, ids, keep_acts=False, attn_hook=lambda l, A: A_full.__setitem__(l, A))
    lf = torch.log_softmax(full["logits"], -1)
    tgt = torch.tensor(ids[1:])
    nll_full = float(-lf[:-1].gather(1, tgt[:, None]).mean())

    tot = read_tsv(totf)
    lay = read_tsv(layf)
    for r in tot:
        pol, B = r["policy"], int(r["budget"])
        key = (pol, B)
        check(abs(float(r["nll_full"]) - nll_full) < 1e-4, "%s %d: nll_full = reference" % key,
              "%s vs %.6f" % (r["nll_full"], nll_full))
        if pol == "full":
            continue
        # 1. the masks
        bad = []
        for l in range(1, L + 1):
            for i in range(T):
                v = vis_of(key, l, i)
                n = min(i, B) + 1
                if W[l] is not None and i - W[l] >= 0:   # the window binds
                    if not (len(v) <= min(n, W[l]) and max(v) == i and min(v) > i - W[l]):
                        bad.append("layer %d query %d sees %d keys, window %d" % (l, i, len(v), W[l]))
                elif len(v) != n or max(v) != i:
                    bad.append("layer %d query %d sees %d keys" % (l, i, len(v)))
        check(not bad, "%s %d: every query sees min(i, B) keys besides its own (within the window)" % key,
              "; ".join(bad[:3]))
        hh, win = B // 2, B - B // 2
        A_pol = {}
        pol_out = hf_ref.forward(cfg, w, ids, keep_acts=False, allowed_of=allowed_for(key),
                                 attn_hook=lambda l, A: A_pol.__setitem__(l, A))
        if pol in ("window", "streaming", "sinks", "random"):
            bad = []
            for l in range(1, L + 1):
                kf = min(K, B)
                if pol == "window":
                    cand_of, cap = (lambda i: []), 0
                elif pol == "streaming":
                    cand_of, cap = (lambda i: list(range(kf))), kf
                elif pol == "sinks":
                    alive = sorted({int(e["pos"]) for e in eps if int(e["pos"]) >= kf and
                                    int(e["l_start"]) <= l - 1 <= int(e["l_end"])})
                    cs = list(range(kf)) + alive
                    cand_of, cap = (lambda i, cs=cs: cs), B
                else:
                    st, keep, edge, ks = (seed + (l << 32)) & 0xFFFFFFFFFFFFFFFF, [], 0, {}
                    for t0 in range(0, T, CHUNK):
                        last = min(t0 + CHUNK, T) - 1
                        e = max(0, last - win)
                        keep += list(range(edge, e))
                        edge = max(edge, e)
                        while len(keep) > hh:
                            st, u = splitmix64(st)
                            keep.pop(u % len(keep))
                        ks[t0 // CHUNK] = list(keep)
                    cand_of, cap = (lambda i, ks=ks: ks[i // CHUNK]), hh
                for i in range(T):
                    want = in_window(l, i, visible_rule(i, B, cand_of(i), cap))
                    if vis_of(key, l, i) != want:
                        bad.append("layer %d query %d: %s, want %s" % (l, i, sorted(vis_of(key, l, i))[:8],
                                                                      sorted(want)[:8]))
            check(not bad, "%s %d: the masks are the policy's" % key, "; ".join(bad[:2]))
        else:   # heavy: each block's choice is H2O's on this reference's attention
            bad = []
            for l in range(1, L + 1):
                cum = A_pol[l].sum(0)                     # [Tq, Tk] summed over heads
                keep, edge = [], 0
                for t0 in range(0, T, CHUNK):
                    last = min(t0 + CHUNK, T) - 1
                    e = max(0, last - win)
                    cand = keep + list(range(edge, e))
                    edge = max(edge, e)
                    if len(cand) <= hh:
                        keep = cand
                        continue
                    lo, kept = masks[key][l][last]
                    if W[l] is not None and last - W[l] >= 0:   # the window may hide kept keys
                        if not set(kept) <= set(cand) or (kept and min(kept) <= last - W[l]):
                            bad.append("layer %d block %d keeps %s outside window %d" % (l, t0, kept[:6], W[l]))
                        break
                    s = cum[:t0].sum(0)   # received before the block
                    drop = sorted(set(cand) - set(kept))
                    if len(kept) != hh or not set(kept) <= set(cand):
                        bad.append("layer %d block %d keeps %s of %s" % (l, t0, kept[:6], cand[:6]))
                    elif float(s[kept].min()) < float(s[drop].max()) - 1e-6:
                        bad.append("layer %d block %d: kept %.6g < dropped %.6g" %
                                   (l, t0, float(s[kept].min()), float(s[drop].max())))
                    keep = kept
            check(not bad, "heavy %d: each block keeps the B/2 candidates that received the most attention" % B,
                  "; ".join(bad[:2]))
        # 2. the measures
        lp = torch.log_softmax(pol_out["logits"], -1)
        nll = float(-lp[:-1].gather(1, tgt[:, None]).mean())
        kl = float((lf[:-1].exp() * (lf[:-1] - lp[:-1])).sum(-1).mean())
        top1 = float((lf[:-1].argmax(-1) == lp[:-1].argmax(-1)).double().mean())
        check(abs(float(r["nll"]) - nll) < 1e-4, "%s %d: nll = masked reference" % key,
              "%s vs %.6f" % (r["nll"], nll))
        check(abs(float(r["kl"]) - kl) < 1e-4 + 1e-3 * kl, "%s %d: kl = masked reference" % key,
              "%s vs %.6g" % (r["kl"], kl))
        check(abs(float(r["top1"]) - top1) <= 1.0 / (T - 1) + 1e-9, "%s %d: top1 = masked reference" % key,
              "%s vs %.6f" % (r["top1"], top1))
        # 3. the mass lost per layer
        bad = []
        for l in range(1, L + 1):
            cls = np.zeros(T, int)
            for e in eps:
                if int(e["l_start"]) <= l - 1 <= int(e["l_end"]):
                    cls[int(e["pos"])] = 1 if e.get("kind") == "primary" else 2
            cls[0] = 1
            lost = np.zeros(3)
            A = A_full[l].sum(0).numpy()                  # over heads
            for i in range(T):
                hid = sorted(set(range(i + 1)) - vis_of(key, l, i))
                for j in hid:
                    lost[cls[j]] += A[i, j]
            lost /= T * H
            row = [x for x in lay if x["policy"] == pol and int(x["budget"]) == B and int(x["layer"]) == l][0]
            got = [float(row["lost_rest"]), float(row["lost_primary"]), float(row["lost_secondary"])]
            if max(abs(a - b) for a, b in zip(got, lost)) > 1e-5 or abs(float(row["lost"]) - lost.sum()) > 1e-5:
                bad.append("layer %d: %s vs %s" % (l, got, list(lost)))
        check(not bad, "%s %d: mass lost per layer and class = full reference" % key, "; ".join(bad[:2]))
    print("\n".join(out))


if __name__ == "__main__":
    main()
