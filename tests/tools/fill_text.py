#!/usr/bin/python3
"""fill_text.py TRACE.h5 TOKENIZER.json TOOLSDIR - fill an all-empty /tokens/text
with the byte-level pieces of the ids (for traces made by actdump --ids
before it decodes pieces itself); a trace that has pieces is left alone."""
import json, sys, h5py
sys.path.insert(0, sys.argv[3])
import bpe_ids
tok = json.load(open(sys.argv[2]))
inv = {v: k for k, v in tok["model"]["vocab"].items()}
for a in tok.get("added_tokens", []):
    inv[a["id"]] = a["content"]
ub = {c: b for b, c in bpe_ids.byte_map().items()}
with h5py.File(sys.argv[1], "a") as f:
    ids = f["tokens/ids"][()]
    old = [t.decode() if isinstance(t, bytes) else t for t in f["tokens/text"][()]]
    if any(old):
        sys.exit(0)
    txt = [bytes(ub.get(c, 63) for c in inv[int(i)]).decode("utf-8", "replace") for i in ids]
    del f["tokens/text"]
    f.create_dataset("tokens/text", data=txt, dtype=h5py.string_dtype("utf-8"))
