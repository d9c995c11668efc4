#!/usr/bin/python3
"""tsne_trace.py OUT.h5 SINKS.tsv [SEED] - a planted sinkscope trace for tsne.

L = 4 layers, T = 400 tokens, d = 16.  Every 5th token (pos > 0) is a
"future sink": a secondary episode with l_start 3, lifetime 2 (listed in
SINKS.tsv and sink-like in /stats at layers 3-4, so it is never a control).
Other tokens alternate between non-informative pieces (" ", ",", "7": the
controls) and words ("cat": other), but every 14th from position 3 is the
futures' own token (id 220) without becoming a sink: the twins.  /acts/resid holds layers 0..4; at
layer 1 futures and controls come from one distribution, at layer 2 the
futures are shifted by 4 along a fixed direction (separable).
"""
import sys
import h5py
import numpy as np

out, sinks = sys.argv[1], sys.argv[2]
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
rng = np.random.default_rng(seed)
L, T, H, d = 4, 400, 2, 16
text, ids, future = [], [], []
for j in range(T):
    if j == 0:
        text.append("<s>"); ids.append(1)
    elif j % 5 == 0:
        text.append(" "); ids.append(220); future.append(j)
    elif j % 2 == 0:
        text.append([" ", ",", "7"][j % 3]); ids.append(300 + j % 3)
    elif j % 14 == 3:
        text.append(" "); ids.append(220)
    else:
        text.append("cat"); ids.append(5000 + j % 7)
fut = np.zeros(T, bool); fut[future] = True
norm = np.ones((L + 1, T), np.float32) * 10
cos0 = np.full((L + 1, T), 0.1, np.float32)
norm[:, 0] = 500; cos0[:, 0] = 1
for l in (3, 4):
    norm[l, fut] = 400; cos0[l, fut] = 0.99
acts = rng.normal(0, 1, (L + 1, T, d)).astype(np.float32)
u = np.zeros(d, np.float32); u[0] = 4
acts[2, fut] += u
with h5py.File(out, "w") as f:
    f.attrs["sinkscope_format"] = 1
    f.attrs["model"] = "planted"; f.attrs["architecture"] = "LlamaForCausalLM"
    f.attrs["weight_dtype"] = "f32"; f.attrs["generator"] = "tsne_trace.py"
    f.attrs["command"] = "tsne_trace.py"
    for k, v in dict(n_layers=L, d_model=d, n_heads=H, n_kv_heads=1, head_dim=d // H).items():
        f.attrs[k] = np.int64(v)
    f["tokens/ids"] = np.array(ids, np.int32)
    f.create_dataset("tokens/text", data=text, dtype=h5py.string_dtype("utf-8"))
    f["stats/resid_norm"] = norm
    f["stats/resid_cos0"] = cos0
    f["stats/attn_out_norm"] = np.ones((L, T), np.float32)
    f["stats/mlp_out_norm"] = np.ones((L, T), np.float32)
    f["stats/recv"] = np.full((L, H, T), 1.0 / T, np.float32)
    a = f.create_dataset("acts/resid", data=acts)
    a.attrs["layers"] = np.arange(L + 1, dtype=np.int64)
    f["plain/matrix"] = acts[2]
name = out.rsplit("/", 1)[-1]
with open(sinks, "w") as s:
    s.write("trace\tpos\ttoken\ttext\tkind\tl_start\tl_end\tlifetime\n")
    s.write("%s\t0\t1\t<s>\tprimary\t1\t4\t4\n" % name)
    for j in future:
        s.write("%s\t%d\t%d\t \tsecondary\t3\t4\t2\n" % (name, j, ids[j]))
