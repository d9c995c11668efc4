#!/usr/bin/env bash
# The HDF5 contract against an independent implementation (h5py): a file
# written by h5py reads identically with our library, a file written by our
# library reads identically with h5py, and the same holds through pipes
# (HDF5 file images on stdin/stdout).  Values compare exactly (%.9g of f32).
. "$(dirname "$0")/../lib.sh"
TC=$SS_BUILD/tools/tracecat
if ! have_py h5py; then t_skip "h5py contract" "no h5py in $PY"; t_done; exit 0; fi
cat >"$TMP/dump.py" <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
a = f.attrs
def s(x): return x.decode() if isinstance(x, bytes) else str(x)
name = sys.argv[2]
print("name", name); print("format", int(a["sinkscope_format"]))
for k in ("model", "architecture", "weight_dtype", "generator", "command"): print(k, s(a[k]))
for k in ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim"): print(k, int(a[k]))
ids = f["tokens/ids"][()]; text = f["tokens/text"][()]
print("T", len(ids))
def esc(b):
    out = []
    for c in b:
        if c == 9: out.append("\\t")
        elif c == 10: out.append("\\n")
        elif c == 13: out.append("\\r")
        elif c == 92: out.append("\\\\")
        elif c < 32 or c == 127: out.append("\\x%02x" % c)
        else: out.append(chr(c))
    return "".join(out).encode("latin-1").decode("utf-8")
for j, (i, t) in enumerate(zip(ids, text)):
    print("tok", j, int(i), esc(t if isinstance(t, bytes) else t.encode()))
for k in ("resid_norm", "resid_cos0", "attn_out_norm", "mlp_out_norm", "recv"):
    v = f["stats/" + k][()].astype(np.float32).ravel()
    print(k, " ".join("%.9g" % x for x in v))
if len(sys.argv) > 3:
    comp, layer = sys.argv[3].split(":")
    d = f["acts/" + comp]; ls = list(d.attrs["layers"])
    v = d[ls.index(int(layer))].astype(np.float32).ravel()
    print("acts", " ".join("%.9g" % x for x in v))
PY
cat >"$TMP/make.py" <<'PY'
import sys, h5py, numpy as np
L, T, H, d = 3, 6, 2, 4
rng = np.random.default_rng(7)
with h5py.File(sys.argv[1], "w") as f:
    f.attrs["sinkscope_format"] = 1
    f.attrs["model"] = "h5py-model"; f.attrs["architecture"] = "LlamaForCausalLM"
    f.attrs["weight_dtype"] = "f32"; f.attrs["generator"] = "h5py_contract.sh"
    f.attrs["command"] = "make.py \u00e9"
    for k, v in dict(n_layers=L, d_model=d, n_heads=H, n_kv_heads=1, head_dim=2).items():
        f.attrs[k] = np.int64(v)
    f["tokens/ids"] = np.arange(T, dtype=np.int32) * 3 - 1
    f.create_dataset("tokens/text", data=["<s>", " ", "caf\u00e9", "a\tb", "\n", "\u2581x"],
                     dtype=h5py.string_dtype("utf-8"))
    f["stats/resid_norm"] = rng.random((L + 1, T), dtype=np.float32) * 10
    f["stats/resid_cos0"] = rng.random((L + 1, T), dtype=np.float32)
    f["stats/attn_out_norm"] = rng.random((L, T), dtype=np.float32)
    # stored as f64: the library reads every float type as f32
    f["stats/mlp_out_norm"] = rng.random((L, T)).astype(np.float64)
    f["stats/recv"] = rng.random((L, H, T), dtype=np.float32)
    a = f.create_dataset("acts/mlp_in", data=rng.random((2, T, d), dtype=np.float32), chunks=(1, T, d))
    a.attrs["layers"] = np.array([1, 3], dtype=np.int64)
PY
$PY "$TMP/make.py" "$TMP/py.h5"
$PY "$TMP/dump.py" "$TMP/py.h5" py.h5 mlp_in:3 >"$TMP/ref.txt"
"$TC" -a mlp_in:3 "$TMP/py.h5" >"$TMP/ours.txt" 2>"$TMP/err"
t_eq "h5py-written file reads identically with the library" "" "$(diff "$TMP/ref.txt" "$TMP/ours.txt" | head -5; cat "$TMP/err")"
"$TC" -o "$TMP/ours.h5" "$TMP/py.h5"
$PY "$TMP/dump.py" "$TMP/ours.h5" py.h5 mlp_in:3 >"$TMP/back.txt" 2>&1
t_eq "library-written file reads identically with h5py" "" "$(diff "$TMP/ref.txt" "$TMP/back.txt" | head -5)"
h5dump -H "$TMP/ours.h5" >/dev/null 2>&1; t_eq "h5dump reads the library's file" 0 $?
# pipes: image in through stdin, image out through stdout
cat "$TMP/py.h5" | "$TC" -o - - | "$TC" -a mlp_in:3 - | sed '1s/.*/name py.h5/' >"$TMP/pipe.txt"
t_eq "stdin/stdout images round-trip (cat | tracecat -o - - | tracecat -)" "" "$(diff "$TMP/ref.txt" "$TMP/pipe.txt" | head -5)"
"$TC" -o - "$TMP/py.h5" >"$TMP/img.h5"
$PY "$TMP/dump.py" "$TMP/img.h5" py.h5 mlp_in:3 >"$TMP/img.txt" 2>&1
t_eq "stdout image is a valid HDF5 file for h5py" "" "$(diff "$TMP/ref.txt" "$TMP/img.txt" | head -5)"
t_match "chunked /acts (chunk = one layer)" "CHUNKED \( 1, 6, 4 \)" "$(h5dump -p -H -d /acts/mlp_in "$TMP/ours.h5" 2>&1 | tr -s ' \n' ' ')"
t_match "strings are vlen UTF-8" "H5T_CSET_UTF8" "$(h5dump -H -d /tokens/text "$TMP/ours.h5" 2>&1 | tr -s ' \n' ' ')"
t_match "root attribute sinkscope_format = 1" "1" "$($PY -c "import h5py,sys; print(int(h5py.File(sys.argv[1]).attrs['sinkscope_format']))" "$TMP/ours.h5")"
# a closed stdout pipe and a full disk are errors, not crashes or silence
$PY -c '
import os, subprocess, sys
r, w = os.pipe(); os.close(r)
p = subprocess.run(sys.argv[1:], stdout=w, stderr=subprocess.PIPE)
print(p.returncode, p.stderr.decode().strip())' "$TC" -o - "$TMP/py.h5" >"$TMP/epipe"
t_eq "closed pipe: ended by SIGPIPE, silently" "-13" "$(cat "$TMP/epipe" | xargs)"
"$TC" -o - "$TMP/py.h5" >/dev/full 2>"$TMP/efull"; rc=$?
t_match "full disk: exit 1, write error reported" "^1 .*No space left" "$rc $(cat "$TMP/efull")"
t_done
