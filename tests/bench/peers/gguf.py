#!/usr/bin/python3
"""gguf.py - a bf16 Qwen2 model folder (config.json, model.safetensors) as a
GGUF file for llama.cpp, through the gguf-py writer of llama.cpp's own tree
(make bench-peers).  llama.cpp's convert_hf_to_gguf.py needs transformers
for the tokenizer; the bench model has none, so the file carries no
vocabulary ("no_vocab", vocab_size dummy tokens: llama-bench draws random
ids) and the weights as they are.

    gguf.py GGUF_PY_DIR MODEL_DIR OUT.gguf bf16|f16

Matrices in BF16 (the safetensors' own bits) or F16 (bf16 -> f32 -> f16,
round to nearest); norms and biases in F32, as convert_hf_to_gguf.py
stores 1-D tensors.
"""
import json
import struct
import sys

import numpy as np


def main():
    if len(sys.argv) != 5 or sys.argv[4] not in ("bf16", "f16"):
        sys.exit(__doc__)
    sys.path.insert(0, sys.argv[1])
    import gguf
    src, out, kind = sys.argv[2], sys.argv[3], sys.argv[4]
    c = json.load(open(src + "/config.json"))
    if c.get("model_type") != "qwen2":
        sys.exit("gguf.py: %s/config.json: model_type %r, only qwen2" % (src, c.get("model_type")))
    path = src + "/model.safetensors"
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
    raw = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    L = c["num_hidden_layers"]
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, L)
    w = gguf.GGUFWriter(out, "qwen2")
    w.add_name("sinkscope bench " + src.rstrip("/").split("/")[-1])
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_block_count(L)
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(c["num_attention_heads"])
    w.add_head_count_kv(c["num_key_value_heads"])
    w.add_rope_freq_base(c["rope_theta"])
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16 if kind == "bf16" else gguf.LlamaFileType.MOSTLY_F16)
    w.add_tokenizer_model("no_vocab")
    w.add_vocab_size(c["vocab_size"])
    for name, t in head.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "BF16":
            sys.exit("gguf.py: %s: %s is %s, expected BF16" % (path, name, t["dtype"]))
        a, b = t["data_offsets"]
        x = raw[a:b].view(np.uint16).reshape(t["shape"])
        new = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if new is None:
            sys.exit("gguf.py: %s: no GGUF name for %s" % (path, name))
        if x.ndim == 1:
            w.add_tensor(new, (x.astype(np.uint32) << 16).view(np.float32))
        elif kind == "bf16":
            w.add_tensor(new, np.ascontiguousarray(x), raw_dtype=gguf.GGMLQuantizationType.BF16)
        else:
            w.add_tensor(new, (x.astype(np.uint32) << 16).view(np.float32).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
