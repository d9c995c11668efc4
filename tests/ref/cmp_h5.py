#!/usr/bin/python3
"""cmp_h5.py - compare a sinkscope HDF5 file with hf_ref.py's output.

    cmp_h5.py [--tol T] [--acts c1,c2] [--label NAME] TEST.h5 REF.h5
    cmp_h5.py --pairs FILE     one comparison per line, tab-separated:
                               LABEL TOL ACTS(or -) ANYDTYPE(0/1) TEST REF

Prints one line per check, "ok|not ok<TAB>what<TAB>detail", and exits 1 if
any failed.  Error measures (all must be <= T):
  resid_norm, attn_out_norm, mlp_out_norm   max |a-e| / |e|   (elementwise)
  resid_cos0                                max |a-e|         (a cosine)
  recv                                      max |a-e|         (a probability)
  /acts/<c>                                 max over (layer, token) of
                                            ||a-e|| / ||e||   (rows of d)
  moe_experts (when the reference has it)   every choice equal
  moe_weights                               max |a-e|
The worst position is named as layer (1-based, 0 = embeddings for rows of
L+1), head and token.
"""
import argparse
import sys

import h5py
import numpy as np

ATTRS = ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("test", nargs="?")
    ap.add_argument("ref", nargs="?")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--acts", default="")
    ap.add_argument("--label", default="")
    ap.add_argument("--any-dtype", action="store_true", help="accept float64 stats (reference vs reference)")
    ap.add_argument("--pairs")
    a = ap.parse_args()
    if not a.pairs:
        return compare(a)
    bad = 0
    for line in open(a.pairs):
        if not line.strip():
            continue
        label, tol, acts, anyd, test, ref = line.rstrip("\n").split("\t")
        try:
            bad |= compare(argparse.Namespace(label=label, tol=float(tol), acts="" if acts == "-" else acts,
                                              any_dtype=anyd == "1", test=test, ref=ref))
        except Exception as ex:          # a missing or unreadable file: one failed check
            print("not ok\t%s: read\t%s" % (label, str(ex).splitlines()[0] if str(ex) else type(ex).__name__))
            bad = 1
    return bad


def compare(a):
    lab = (a.label + ": ") if a.label else ""
    bad = 0

    def rep(ok, what, detail):
        nonlocal bad
        bad += not ok
        print("%s\t%s%s\t%s" % ("ok" if ok else "not ok", lab, what, detail))

    t, r = h5py.File(a.test, "r"), h5py.File(a.ref, "r")
    try:
        meta = [(k, t.attrs.get(k), r.attrs.get(k)) for k in ATTRS + ("architecture", "weight_dtype")]
        diff = ["%s=%r (ref %r)" % (k, x, y) for k, x, y in meta
                if x is None or (x.decode() if isinstance(x, bytes) else x) != y]
        fmt = t.attrs.get("sinkscope_format")
        rep(not diff and fmt == 1, "root attributes", "; ".join(diff) or "format %r" % fmt)
        ids_t, ids_r = np.asarray(t["tokens/ids"]), np.asarray(r["tokens/ids"])
        rep(ids_t.dtype == np.int32 and np.array_equal(ids_t, ids_r), "tokens/ids",
            "dtype %s, T %d (ref %d)" % (ids_t.dtype, len(ids_t), len(ids_r)))
        for k, kind in (("resid_norm", "rel"), ("attn_out_norm", "rel"), ("mlp_out_norm", "rel"),
                        ("resid_cos0", "abs"), ("recv", "abs")):
            p = "stats/" + k
            if p not in t:
                rep(False, p, "missing")
                continue
            x, e = np.asarray(t[p], np.float64), np.asarray(r[p], np.float64)
            if x.shape != e.shape or (t[p].dtype != np.float32 and not a.any_dtype):
                rep(False, p, "shape %s dtype %s, expected %s float32" % (x.shape, t[p].dtype, e.shape))
                continue
            if not np.isfinite(x).all():
                rep(False, p, "non-finite values")
                continue
            err = np.abs(x - e)
            if kind == "rel":
                err = err / np.maximum(np.abs(e), 1e-30)
            w = np.unravel_index(np.argmax(err), err.shape)
            off = 0 if k.startswith("resid") else 1     # rows of L+1 start at h[0]
            where = "layer %d" % (w[0] + off) + (", head %d" % w[1] if k == "recv" else "") + \
                    ", token %d" % w[-1]
            rep(err.max() <= a.tol, p, "max %s err %.3g at %s (test %.6g, ref %.6g), tol %g" %
                (kind, err.max(), where, x[w], e[w], a.tol))
        if "stats/moe_experts" in r:   # mixtures of experts: the routing, exactly, and its weights
            if "stats/moe_experts" not in t or "stats/moe_weights" not in t:
                rep(False, "stats/moe_experts", "missing")
            else:
                xe, ee = np.asarray(t["stats/moe_experts"]), np.asarray(r["stats/moe_experts"])
                same = xe.shape == ee.shape and t["stats/moe_experts"].dtype == np.int32
                nd = int((xe != ee).sum()) if same else -1
                rep(same and nd == 0, "stats/moe_experts",
                    "%d of %d choices differ (shape %s, ref %s, dtype %s)" % (nd, ee.size, xe.shape, ee.shape,
                                                                             t["stats/moe_experts"].dtype))
                if same:
                    err = np.abs(np.asarray(t["stats/moe_weights"], np.float64) -
                                 np.asarray(r["stats/moe_weights"], np.float64))
                    rep(err.max() <= a.tol, "stats/moe_weights", "max abs err %.3g, tol %g" % (err.max(), a.tol))
        for c in filter(None, a.acts.split(",")):
            p = "acts/" + c
            if p not in t:
                rep(False, p, "missing")
                continue
            lt = [int(v) for v in t[p].attrs.get("layers", [])]
            lr = [int(v) for v in r[p].attrs["layers"]]
            if not lt or any(v not in lr for v in lt) or t[p].shape[0] != len(lt):
                rep(False, p, "layers attr %r, shape %s" % (lt, t[p].shape))
                continue
            X = np.asarray(t[p], np.float64)
            worst, wl, wt = 0.0, 0, 0
            for i, layer in enumerate(lt):
                E = np.asarray(r[p][lr.index(layer)], np.float64)
                if X[i].shape != E.shape:
                    rep(False, p, "layer %d shape %s, expected %s" % (layer, X[i].shape, E.shape))
                    break
                rel = np.linalg.norm(X[i] - E, axis=1) / np.maximum(np.linalg.norm(E, axis=1), 1e-30)
                if not np.isfinite(rel).all():
                    rel[~np.isfinite(rel)] = np.inf
                j = int(np.argmax(rel))
                if rel[j] > worst or i == 0:
                    worst, wl, wt = max(worst, rel[j]), layer, j
            else:
                rep(worst <= a.tol, p, "max row rel err %.3g at layer %d token %d over layers %s, tol %g" %
                    (worst, wl, wt, ",".join(map(str, lt)) if len(lt) < 12 else "%d..%d" % (lt[0], lt[-1]),
                     a.tol))
    finally:
        t.close()
        r.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
