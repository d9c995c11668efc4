#!/usr/bin/python3
"""swap_ref.py - independent expectations for swapexp and pcaprobe, from the
float64 PyTorch reference (hf_ref.py) with interventions.

    swap_ref.py trace MODEL IDS OUT.h5        reference trace + /tokens/text
    swap_ref.py targets TRACE.h5 TAU_COS TAU_NORM N     episode starts (TSV)
    swap_ref.py swaps MODEL TRACE.h5 TARGETS WINDOW TAU_COS TAU_NORM
    swap_ref.py probe MODEL TRACE.h5 TARGETS LAYER K ALPHAS TAU_COS TAU_NORM
                                              (LAYER "first": the first target's)
    swap_ref.py batch FILE     lines "OUT COMMAND ARGS...": each command's
                               stdout into OUT, in one torch start-up

Token pieces of the test traces: id % 3 == 0 -> ",", == 1 -> " ", else
"w<id>", so the control set (space, punct, digit classes) is known.  Every
swap is a full forward pass of the reference with the component replaced
(no cache, nothing shared with the C code).
"""
import math
import os
import sys
import unicodedata

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_ref  # noqa: E402


def piece(i):
    return "," if i % 3 == 0 else " " if i % 3 == 1 else "w%d" % i


def noninf(s):
    return len(s) > 0 and all(c.isspace() or unicodedata.category(c)[0] in "PS" or
                              unicodedata.category(c) == "Nd" for c in s)


def sinks(norm, cos0, tc, tn):
    """mask[l, j] by the sink rule; row 0 .. L; position 0 never."""
    med = np.median(norm, axis=1, keepdims=True)
    m = (cos0 > tc) & (norm >= tn * med)
    m[:, 0] = False
    return m


def read_trace(path):
    with h5py.File(path, "r") as f:
        ids = list(f["tokens/ids"][()])
        text = [t.decode() if isinstance(t, bytes) else t for t in f["tokens/text"][()]]
        st = {k: f["stats/" + k][()].astype(np.float64) for k in ("resid_norm", "resid_cos0", "recv")}
        acts = {k: f["acts/" + k][()] for k in f["acts"]} if "acts" in f else {}
    return ids, text, st, acts


def controls(text, norm, cos0, tc, tn):
    m = sinks(norm, cos0, tc, tn).any(0)
    return [j for j in range(1, len(text)) if noninf(text[j]) and not m[j]]


def read_targets(path):
    rows = [l.rstrip("\n").split("\t") for l in open(path)]
    h = rows[0]
    return [(int(r[h.index("pos")]), int(r[h.index("l_start")])) for r in rows[1:]
            if "kind" not in h or r[h.index("kind")] != "primary"]


def main(argv=None):
    if argv is None:
        argv = sys.argv
    if argv[1] == "batch":
        for line in open(argv[2]):
            if not line.strip():
                continue
            out, *args = line.split()
            with open(out, "w") as f:
                old, sys.stdout = sys.stdout, f
                try:
                    main([argv[0]] + args)
                finally:
                    sys.stdout = old
        return
    cmd = argv[1]
    if cmd == "trace":
        md, idf, out = argv[2:5]
        cfg, w = hf_ref.load(md)
        ids = hf_ref.read_ids(idf)
        hf_ref.write_h5(out, md, cfg, ids, hf_ref.forward(cfg, w, ids))
        with h5py.File(out, "a") as f:
            f.create_dataset("tokens/text", data=[piece(i) for i in ids],
                             dtype=h5py.string_dtype("utf-8"))
        return
    if cmd == "targets":
        tp, tc, tn, n = argv[2], float(argv[3]), float(argv[4]), int(argv[5])
        ids, text, st, _ = read_trace(tp)
        m = sinks(st["resid_norm"], st["resid_cos0"], tc, tn)
        print("trace\tpos\tkind\tl_start\tl_end\tlifetime")
        got = 0
        for j in range(1, m.shape[1]):
            for l in range(2, m.shape[0]):
                if m[l, j] and not m[l - 1, j] and got < n:
                    e = l
                    while e + 1 < m.shape[0] and m[e + 1, j]:
                        e += 1
                    print("%s\t%d\tsecondary\t%d\t%d\t%d" % (os.path.basename(tp), j, l, e, e - l + 1))
                    got += 1
                    break
        return
    md, tp, tgp = argv[2:5]
    cfg, w = hf_ref.load(md)
    ids, text, st, acts = read_trace(tp)
    if cmd == "swaps":
        W, tc, tn = int(argv[5]), float(argv[6]), float(argv[7])
        ctl = controls(text, st["resid_norm"], st["resid_cos0"], tc, tn)
        base = hf_ref.forward(cfg, w, ids)["acts"]
        print("pos\tlayer\tcomponent\tnorm\tcos0\tmedian\tscore\tsink")
        for j, ls in read_targets(tgp):
            for l in range(max(1, ls - W + 1), ls + 1):
                for comp in ("resid", "attn_out", "mlp_out"):
                    A = base[comp][l if comp == "resid" else l - 1]
                    mean = A[ctl].mean(0)

                    def edit(layer, c, x, l=l, comp=comp, mean=mean, j=j):
                        if layer == l and c == comp:
                            x = x.clone()
                            x[j] = mean
                        return x
                    o = hf_ref.forward(cfg, w, ids, keep_acts=False, edit=edit)
                    nrm = o["resid_norm"][ls].numpy()
                    cos = o["resid_cos0"][ls, j].item()
                    med = float(np.median(nrm))
                    # the score where the sink is first visible: layer ls + 1 (ls at the last)
                    sl = ls + 1 if ls < o["recv"].shape[0] else ls
                    score = o["recv"][sl - 1, :, j].mean().item()
                    sink = int(cos > tc and nrm[j] >= tn * med)
                    print("%d\t%d\t%s\t%.9g\t%.9g\t%.9g\t%.9g\t%d" % (j, l, comp, nrm[j], cos, med, score, sink))
        return
    if cmd == "probe":
        ls = read_targets(tgp)[0][1] if argv[5] == "first" else int(argv[5])
        K = int(argv[6])
        alphas = [float(a) for a in argv[7].split(",")]
        tc, tn = float(argv[8]), float(argv[9])
        ctl = controls(text, st["resid_norm"], st["resid_cos0"], tc, tn)
        fs = [j for j, l in read_targets(tgp) if l == ls]
        X = acts["mlp_in"][ls - 1].astype(np.float64)
        u = acts["resid"][ls][0].astype(np.float64)
        u /= np.linalg.norm(u)
        fit = X[1:]
        mu = fit.mean(0)
        C = np.cov(fit, rowvar=False)
        ev, V = np.linalg.eigh(C)
        order = np.argsort(ev)[::-1]
        ev, V = ev[order], V[:, order]
        total = np.trace(C)

        def mlp(x):
            """MLP_ls of the rows x, for every family: the reference forward
            pass with those rows put at mlp_in of layer ls, mlp_out taken"""
            x = np.atleast_2d(x)
            got = {}

            def edit(layer, c, v):
                if layer == ls and c == "mlp_in":
                    v = v.clone()
                    v[:len(x)] = torch.tensor(x)
                if layer == ls and c == "mlp_out":
                    got["y"] = v[:len(x)].numpy().copy()
                return v
            hf_ref.forward(cfg, w, ids, keep_acts=False, edit=edit)
            return got["y"] if len(x) > 1 else got["y"][0]
        ym = mlp(mu)
        y0 = np.linalg.norm(ym)
        print("component\tvar_ratio\tproj_sinks\tproj_controls\talpha\tgain\tcos_u")
        for i in range(K):
            pc = V[:, i]
            if pc[np.argmax(np.abs(pc))] < 0:
                pc = -pc
            ps = np.mean([(X[j] - mu) @ pc for j in fs])
            pcn = np.mean([(X[j] - mu) @ pc for j in ctl])
            for a in alphas:
                y = mlp(mu + a * math.sqrt(max(ev[i], 0)) * pc)
                dy = y - ym  # cos_u: the direction of the response to the move
                ndy = np.linalg.norm(dy)
                print("%d\t%.9g\t%.9g\t%.9g\t%g\t%.9g\t%.9g" % (
                    i + 1, ev[i] / total, ps, pcn, a, np.linalg.norm(y) / y0,
                    dy @ u / ndy if ndy > 0 else 0.0))
        return
    sys.exit("swap_ref.py: unknown command " + cmd)


if __name__ == "__main__":
    main()
