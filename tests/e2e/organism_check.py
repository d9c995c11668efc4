#!/usr/bin/python3
"""organism_check.py - check that an organism built by mkorganism plants what
its truth/ tables say, with an independent float64 forward pass of Qwen2
(the formulas of Hugging Face's modeling_qwen2, eager attention).

    organism_check.py MODEL_DIR TOKENS

TOKENS: the token ids of a text, as `actdump --tokens-only` prints them
(TSV "i id piece" with a header) or whitespace-separated ids; the
tokenizer is the C one, so the ids are those actdump runs on.  Runs the
model on them and checks, with the sink rule of DESIGN.md (cos to
position 0 > 0.95, norm >= 5 x the layer median):
  - every secondary episode is on a future sink and has its level's
    (l_start, lifetime); every future sink becomes one; a future sink is
    an occurrence of a planted token with a trigger token (truth/context.tsv)
    among the `window` positions before it, position 0 aside (without a
    context every occurrence is one); the same texts elsewhere never are;
  - levels start at their own l_start (truth/levels.tsv; several start
    layers); each planted token has its own norm (truth/tokens.tsv; a
    spread within a level);
  - the fit lifetime ~ ln ||m[l_start]|| gives the planted slope/intercept
    within 5%, and the fit over the truth's norms of the same occurrences
    within 0.5% (lifetimes are whole layers; a level's norms spread around
    its law norm, so the fit over the occurrences is not the law exactly);
  - the primary sink-score is high before start_layer (but at the decision
    layer, whose context heads take the planted tokens' attention), dips in the valley,
    recovers after it; the attention at l_start + 1 rises with the level
    norm among the levels of each start layer;
  - nuisance tokens (truth/nuisance.tsv) hold their planted norm ratios
    and alignment and are never episodes;
  - PCA of the MLP inputs at each start layer (occurrences of the texts of
    the levels starting there): top component along that start layer's
    planted decision direction (|cos| > 0.99).
Prints one "ok"/"not ok" line per check (TAP body, no plan) and the figures.
"""
import json
import math
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)


def read_st(path):
    buf = open(path, "rb").read()
    n = int.from_bytes(buf[:8], "little")
    hdr = json.loads(buf[8:8 + n])
    out = {}
    for k, t in hdr.items():
        if k == "__metadata__":
            continue
        b, e = t["data_offsets"]
        raw = buf[8 + n + b:8 + n + e]
        if t["dtype"] == "BF16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        elif t["dtype"] == "F16":
            a = np.frombuffer(raw, np.float16)
        else:
            a = np.frombuffer(raw, np.float32)
        out[k] = torch.from_numpy(a.astype(np.float64).reshape(t["shape"]))
    return out


def forward(cfg, w, ids, lrels=()):
    D, L, H = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
    hd, eps, T = D // H, cfg["rms_norm_eps"], len(ids)
    inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2) / hd))
    fr = torch.outer(torch.arange(T, dtype=torch.float64), inv)
    cos, sin = torch.cat((fr, fr), -1).cos(), torch.cat((fr, fr), -1).sin()
    rot = lambda x: torch.cat((-x[..., hd // 2:], x[..., :hd // 2]), -1)
    rms = lambda x, g: g * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    mask = torch.full((T, T), float("-inf")).triu(1)
    h = w["model.embed_tokens.weight"][torch.tensor(ids)]
    hs, mins, mouts, recv, relv = [h], [], [], [], {}
    for l in range(L):
        p = "model.layers.%d." % l
        x = rms(h, w[p + "input_layernorm.weight"])
        q, k, v = [(x @ w[p + "self_attn.%s_proj.weight" % n].T + w[p + "self_attn.%s_proj.bias" % n])
                   .view(T, H, hd).transpose(0, 1) for n in "qkv"]
        q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        A = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(hd) + mask, -1)
        recv.append(A.sum(1) / (T - torch.arange(T)))
        if l + 1 in lrels:  # mean over heads and queries i >= j of A[i][j] / A[i][0]
            relv[l + 1] = ((A / A[:, :, :1]) * (~torch.isinf(mask) )).sum(1).mean(0) / (T - torch.arange(T))
        a = (A @ v).transpose(0, 1).reshape(T, D) @ w[p + "self_attn.o_proj.weight"].T
        mid = h + a
        x2 = rms(mid, w[p + "post_attention_layernorm.weight"])
        m = (torch.nn.functional.silu(x2 @ w[p + "mlp.gate_proj.weight"].T) *
             (x2 @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
        h = mid + m
        hs.append(h), mins.append(x2), mouts.append(m)
    return torch.stack(hs), torch.stack(mins), torch.stack(mouts), torch.stack(recv), relv


def tsv(path):
    rows = [l.rstrip("\n").split("\t") for l in open(path)]
    return [dict(zip(rows[0], r)) for r in rows[1:]]


n_ok = 0


def check(desc, cond, diag=""):
    global n_ok
    print(("ok" if cond else "not ok") + " - " + desc + ((" # " + diag) if diag else ""))
    n_ok += 0 if cond else 1


def main():
    md, tokens = sys.argv[1], sys.argv[2]
    lines = open(tokens, encoding="utf-8").read().split("\n")
    if lines[0].split("\t")[:2] == ["i", "id"]:
        ids = [int(l.split("\t")[1]) for l in lines[1:] if l]
    else:
        ids = [int(x) for x in " ".join(lines).split()]
    cfg = json.load(open(md + "/config.json"))
    w = read_st(md + "/model.safetensors")
    levels = tsv(md + "/truth/levels.tsv")
    law = tsv(md + "/truth/law.tsv")[0]
    # one decision direction per start layer
    dirs = {(r["name"], int(r["layer"])): np.array([float(x) for x in r["vector"].split(",")])
            for r in tsv(md + "/truth/directions.tsv")}
    starts = sorted({int(r["l_start"]) for r in levels})
    # per planted token: its level's (l_start, lifetime), the level's law norm, its own planted norm
    lev_of = {}
    for r in tsv(md + "/truth/tokens.tsv"):
        lr = levels[int(r["level"]) - 1]
        lev_of[int(r["id"])] = (int(r["l_start"]), int(r["lifetime"]), float(lr["norm_law"]), float(r["norm"]))
    R, MI, MO, RECV, REL = forward(cfg, w, ids, {ls + 1 for ls in starts})
    rel = REL
    L, T = R.shape[0] - 1, R.shape[1]
    norm = R.norm(dim=-1)
    cos0 = torch.nn.functional.cosine_similarity(R, R[:, :1].expand_as(R), dim=-1)
    med = norm.median(dim=1).values
    sink = (cos0 > 0.95) & (norm >= 5.0 * med[:, None])
    sink[:, 0] = False
    eps = []
    for j in range(1, T):
        l = 1
        while l <= L:
            if sink[l, j]:
                s = l
                while l + 1 <= L and sink[l + 1, j]:
                    l += 1
                eps.append((j, ids[j], s, l - s + 1, float(MO[s - 1, j].norm())))
            l += 1
    ctx = tsv(md + "/truth/context.tsv")
    trig = {int(r["id"]) for r in ctx}
    W = int(ctx[0]["window"]) if ctx else 0
    ld = int(tsv(md + "/truth/decision.tsv")[0]["l_decision"])
    occ = [j for j in range(1, T) if ids[j] in lev_of]
    planted = [j for j in occ if not trig or any(ids[i] in trig for i in range(max(1, j - W), j))]
    others = [j for j in occ if j not in set(planted)]
    print("# %d occurrences of planted tokens, %d of them future sinks by the context rule" % (len(occ), len(planted)))
    print("# %d tokens, %d planted positions, %d episodes" % (T, len(planted), len(eps)))
    print("# start layers %s" % starts)
    bad = [e for e in eps if e[1] not in lev_of or (e[2], e[3]) != lev_of[e[1]][:2]]
    check("every episode is a planted token with its level's (l_start, lifetime)", not bad,
          "first bad: %r" % (bad[:3],))
    have = {e[0] for e in eps}
    miss = [j for j in planted if j not in have]
    check("every future sink becomes a sink", not miss, "missing %r" % miss[:5])
    spur = [j for j in others if j in have]
    check("no other occurrence of a planted text becomes one", not spur, "found %r" % spur[:5])
    found = sorted({(e[2], e[3]) for e in eps})
    want = sorted({lev_of[ids[j]][:2] for j in planted})
    print("# levels found %s, planted (present in the trace) %s" % (found, want))
    check("levels found = planted levels", found == want)
    x = np.array([math.log(e[4]) for e in eps])
    y = np.array([e[3] for e in eps], float)
    if len(set(y)) >= 2:
        b, a = np.polyfit(x, y, 1)
        r = np.corrcoef(x, y)[0, 1]
        # the same fit over the truth: each future sink's planted norm and its level's lifetime
        xt = np.array([math.log(lev_of[ids[j]][3]) for j in planted])
        yt = np.array([lev_of[ids[j]][1] for j in planted], float)
        bt, at = np.polyfit(xt, yt, 1)
        print("# law: lifetime = %.4f + %.4f ln(norm), r = %.4f, n = %d, %d distinct norms "
              "(planted %s + %s ln; over the truth's norms %.4f + %.4f ln)"
              % (a, b, r, len(x), len({round(v, 6) for v in xt}), law["intercept"], law["slope"], at, bt))
        check("law slope within 5% of the planted one", abs(b - float(law["slope"])) <= 0.05 * float(law["slope"]))
        check("law intercept within 5% of the planted one", abs(a - float(law["intercept"])) <= 0.05 * abs(float(law["intercept"])))
        check("law slope within 0.5% of the fit over the truth's norms", abs(b - bt) <= 0.005 * abs(bt), "%.5g vs %.5g" % (b, bt))
        check("law intercept within 0.5% of the fit over the truth's norms", abs(a - at) <= 0.005 * abs(at), "%.5g vs %.5g" % (a, at))
    # nuisance (truth/nuisance.tsv, from layer 4): every occurrence holds
    # its planted norm ratio (within 10%, median over layers 4..L), the
    # aligned ones a cosine > 0.95 to position 0, the others < 0.5; none is
    # an episode (checked above: every episode is a planted token)
    try:
        nus = tsv(md + "/truth/nuisance.tsv")
    except OSError:
        nus = []
    nu = {int(r["id"]): r for r in nus}
    bad, nn = [], 0
    for j in range(1, T):
        r = nu.get(ids[j])
        if r is None:
            continue
        nn += 1
        lo = int(r["layer"])
        ratio = float(np.median((norm[lo:, j] / med[lo:]).numpy()))
        c = cos0[lo:, j].numpy()
        ok = abs(ratio / float(r["ratio"]) - 1) <= 0.10
        ok = ok and (c.min() > 0.95 if r["aligned"] == "1" else c.max() < 0.5)
        if not ok:
            bad.append((j, r["token"], r["kind"], round(ratio, 3), float(r["ratio"]), float(c.min()), float(c.max())))
    print("# %d occurrences of nuisance tokens" % nn)
    if nus:
        check("nuisance tokens hold their planted norm ratio and alignment", nn and not bad, "first bad %r" % bad[:3])
    score = RECV.mean(1)  # [L, T], row l-1 = layer l
    ls = starts[0]
    end = max(int(r["l_start"]) + int(r["lifetime"]) for r in levels)
    p0 = score[:, 0].numpy()
    print("# primary sink-score by layer: " + " ".join("%d:%.2f" % (l + 1, p0[l]) for l in range(L)))
    # attention at layer l reads h[l-1]: sinks of h[ls..ls+life-1] get it at
    # layers ls+1..ls+life, so the valley is layers ls+1 (the first start) to
    # the last level's end
    before = min(p0[l] for l in range(1, ls) if l != ld - 1)
    valley = p0[ls:end].min()
    after = p0[end:].min() if end < L else float("nan")
    check("primary sink-score high before the valley (>0.9)", before > 0.9, "%.3f" % before)
    check("primary sink-score dips in the valley (< 0.5 x before)", valley < 0.5 * before, "%.3f" % valley)
    check("primary sink-score recovers after the valley (> 0.9)", not (after <= 0.9), "%.3f" % after)
    # the first attention that sees a new sink is layer ls+1 (it reads h[ls]);
    # the sink-score depends on where a token sits, so compare each sink with
    # position 0 on the same queries: mean_i A[i][j] / A[i][0]
    # (per start layer: the sinks of one start layer sit on the same queries)
    for s0 in starts:
        byn, bys = {}, {}
        for e in eps:
            j = e[0]
            if e[2] != s0:
                continue
            k = lev_of[e[1]][2]
            bys.setdefault(k, []).append(float(score[s0, j]))
            byn.setdefault(k, []).append(float(rel[s0 + 1][j]))
        ks = sorted(byn)
        ms = [np.mean(byn[k]) for k in ks]
        print("# l_start %d: sink-score at layer l_start+1 by level norm: " % s0 + " ".join("%.0f:%.3g" % (k, np.mean(bys[k])) for k in ks))
        print("# l_start %d: attention relative to position 0 (mean over heads and queries) at layer l_start+1: " % s0 +
              " ".join("%.0f:%.3g" % (k, m) for k, m in zip(ks, ms)))
        check("l_start %d: attention a sink receives (relative to position 0) rises with its level's norm" % s0,
              all(a < b for a, b in zip(ms, ms[1:])))
    # over the occurrences of the planted texts (future sinks and the same
    # texts elsewhere): over all positions the nuisance tokens' own axes
    # carry more variance
    # (per start layer: the occurrences of the texts of the levels starting there)
    for s0 in starts:
        oc = [j for j in occ if lev_of[ids[j]][0] == s0]
        X = MI[s0 - 1, oc].numpy()
        X = X - X.mean(0)
        top = np.linalg.svd(X, full_matrices=False)[2][0]
        c = abs(float(top @ dirs[("decision", s0)]))
        print("# PCA of mlp_in at layer %d over the occurrences of its levels' texts: |cos(top component, planted direction)| = %.5f" % (s0, c))
        check("l_start %d: PCA top component is the planted decision direction (|cos| > 0.99)" % s0, c > 0.99)
    sys.exit(1 if n_ok else 0)


main()
