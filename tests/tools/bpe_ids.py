#!/usr/bin/python3
"""bpe_ids.py - token ids of a text with a tokenizer.json BPE, in plain
Python (a stand-in for tests and the demo where no C tokenizer program is
at hand; the C tokenizer is the reference).

    bpe_ids.py TOKENIZER.json (--jsonl FILE [--field F] | --text FILE) [-n N]

Byte-level BPE (GPT-2/Qwen/Llama-3 style) with a rough pre-split (letters,
single digits, punctuation runs with trailing newlines, whitespace), or
SentencePiece-style BPE ("▁" for spaces, <0xXX> byte fallback, the
template's BOS).  Prints the ids on one line.
"""
import json
import re
import sys


def byte_map():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def _merge(w, ranks):
    while len(w) > 1:
        best = min(range(len(w) - 1), key=lambda i: ranks.get((w[i], w[i + 1]), 1 << 30))
        if (w[best], w[best + 1]) not in ranks:
            break
        w[best:best + 2] = [w[best] + w[best + 1]]
    return w


def tokenize(tok, text):
    m = tok["model"]
    vocab = m["vocab"]
    ranks = {}
    for i, mg in enumerate(m["merges"]):
        a, b = mg.split(" ") if isinstance(mg, str) else mg
        ranks[(a, b)] = i
    if "▁" in json.dumps(tok.get("normalizer") or {}, ensure_ascii=False) or m.get("byte_fallback"):
        ids = []
        pp = tok.get("post_processor") or {}
        for s in (pp.get("special_tokens") or {}).values():
            ids += s["ids"]  # BOS of the template
        for piece in _merge(list("▁" + text.replace(" ", "▁")), ranks):
            if piece in vocab:
                ids.append(vocab[piece])
            else:
                ids += [vocab["<0x%02X>" % b] for b in piece.encode("utf-8")]
        return ids
    bm = byte_map()
    pat = re.compile(r"'(?:s|t|re|ve|m|ll|d)| ?[^\W\d_]+|\d| ?[^\s\w]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
    ids = []
    for piece in pat.findall(text):
        ids += [vocab[x] for x in _merge([bm[b] for b in piece.encode("utf-8")], ranks)]
    return ids


def main():
    a = sys.argv[1:]
    tok = json.load(open(a[0]))
    n = int(a[a.index("-n") + 1]) if "-n" in a else None
    field = a[a.index("--field") + 1] if "--field" in a else "response"
    if "--jsonl" in a:
        text = json.loads(open(a[a.index("--jsonl") + 1]).readline())[field]
    else:
        text = open(a[a.index("--text") + 1]).read()
    ids = tokenize(tok, text)
    print(" ".join(map(str, ids[:n] if n else ids)))


if __name__ == "__main__":
    main()
