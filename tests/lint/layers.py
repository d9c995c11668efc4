#!/usr/bin/python3
"""tests/lint/layers.py - the library's folders form layers; check it.

src/lib/<folder>/ holds one layer of the library.  A file may include
headers of its own folder and of folders listed before it here, never of a
later folder or of a peer:

    util < io < tok < engine < sinks < analysis < interv < organism

Two checks, printed as TAP:
  1. includes: every '#include "..."' of src/ and tests/ names its folder
     ("io/h5io.h"), and no library file includes against the order above
     (src/cmd/ mains and tests may include any library header, never a main);
  2. links: with the built objects (SS_BUILD/lib/<folder>/*.o), a module
     (a .c file) that uses a symbol defined in another module depends on
     it; no dependency runs against the order, and the module graph has no
     cycle (two files each needing the other are one concern, or two with a
     third below both).
"""
import os, re, subprocess, sys

ORDER = ["util", "io", "tok", "engine", "sinks", "analysis", "interv", "organism"]
RANK = {d: i for i, d in enumerate(ORDER)}
root = os.environ.get("SS_ROOT") or os.path.join(os.path.dirname(__file__), "..", "..")
build = os.environ.get("SS_BUILD") or os.path.join(root, "build")
os.chdir(root)
inc_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
n = 0


def tap(ok, desc, diag=()):
    global n
    n += 1
    print(("ok %d - %s" if ok else "not ok %d - %s") % (n, desc))
    for d in diag:
        print("#   " + d)


def sources(top, exts=(".c", ".h")):
    for dp, _, fs in os.walk(top):
        for f in sorted(fs):
            if f.endswith(exts):
                yield os.path.join(dp, f)


# 1. includes
folders = sorted(d for d in os.listdir("src/lib") if os.path.isdir("src/lib/" + d))
bad = ["src/lib/%s: folder not in the layer order" % d for d in folders if d not in RANK]
bad += ["%s: file directly under src/lib" % f for f in os.listdir("src/lib")
        if os.path.isfile("src/lib/" + f) and f.endswith((".c", ".h"))]
for f in list(sources("src")) + list(sources("tests")):
    text = open(f, encoding="utf-8", errors="replace").read()
    for inc in inc_re.findall(text):
        if f.startswith("tests/") and "/" not in inc and os.path.exists(os.path.join(os.path.dirname(f), inc)):
            continue  # a test's own helper header beside it (fuzz.h)
        parts = inc.split("/")
        if len(parts) != 2 or not os.path.exists(os.path.join("src/lib", inc)):
            bad.append('%s: #include "%s" does not name a library header as folder/file.h' % (f, inc))
            continue
        if f.startswith("src/lib/"):
            mine = f.split("/")[2]
            theirs = parts[0]
            if mine in RANK and theirs in RANK and theirs != mine and RANK[theirs] > RANK[mine]:
                bad.append('%s (%s) includes "%s": %s comes after %s' % (f, mine, inc, theirs, mine))
tap(not bad, "includes follow the layer order " + " < ".join(ORDER), bad[:40])

# 2. links
objs = {}
for f in sources("src/lib", (".c",)):
    o = os.path.join(build, "lib", os.path.relpath(f, "src/lib"))[:-2] + ".o"
    objs[os.path.relpath(f, "src/lib")[:-2]] = o
missing = [o for o in objs.values() if not os.path.exists(o)]
if missing:
    tap(False, "library objects built for the link check (make all)", missing[:5])
    print("1..%d" % n)
    sys.exit(0)
defs, undefs = {}, {}
for m, o in objs.items():
    out = subprocess.run(["nm", "-P", o], capture_output=True, text=True, check=True).stdout
    u = set()
    for line in out.splitlines():
        p = line.split()
        if len(p) < 2:
            continue
        sym, typ = p[0], p[1]
        if typ == "U":
            u.add(sym)
        elif typ in "TDBRVWC":  # global definitions only: static ones are private
            defs.setdefault(sym, m)
    undefs[m] = u
deps = {m: sorted({defs[s] for s in u if s in defs and defs[s] != m}) for m, u in undefs.items()}
bad = []
for m, ds in sorted(deps.items()):
    for d in ds:
        a, b = m.split("/")[0], d.split("/")[0]
        if a in RANK and b in RANK and a != b and RANK[b] > RANK[a]:
            bad.append("%s uses %s: %s comes after %s" % (m, d, b, a))
tap(not bad, "no module uses a module of a later layer", bad[:40])

# module graph by includes too: m -> d when m.c or m.h includes d.h
incdeps = {}
for f in sources("src/lib"):
    m = os.path.relpath(f, "src/lib").rsplit(".", 1)[0]
    for inc in inc_re.findall(open(f, encoding="utf-8", errors="replace").read()):
        d = inc.rsplit(".", 1)[0]
        # a header without a .c of its own (a folder's private declarations,
        # tok/tok_impl.h) is part of the modules that share it, not a node
        if d != m and d in objs and m in objs:
            incdeps.setdefault(m, set()).add(d)
for m, ds in incdeps.items():
    deps.setdefault(m, [])
    deps[m] = sorted(set(deps[m]) | ds)

# cycles: Tarjan's strongly connected components
index, low, onstack, stack, sccs, counter = {}, {}, set(), [], [], [0]
sys.setrecursionlimit(10000)


def visit(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    onstack.add(v)
    for w in deps.get(v, []):
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in onstack:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            onstack.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            sccs.append(sorted(comp))


for v in sorted(deps):
    if v not in index:
        visit(v)
tap(not sccs, "no cycle between library modules (by symbols or by includes)",
    ["cycle: " + " <-> ".join(c) for c in sccs])
print("1..%d" % n)
