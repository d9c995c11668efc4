#!/usr/bin/env bash
# PCA (pca.h) against numpy (eigh of the covariance, both the covariance
# path n >= d and the SVD path n < d), and k-NN accuracy / silhouette
# (knn.h) against scikit-learn, through tests/tools/pcatool.
. "$(dirname "$0")/../lib.sh"
T=$SS_BUILD/tools/pcatool
if ! have_py numpy; then t_skip "PCA vs numpy" "no numpy in $PY"; t_done; exit 0; fi
cat >"$TMP/cmp.py" <<'PY'
import sys, numpy as np
mode, data, out = sys.argv[1], sys.argv[2], sys.argv[3]
X = np.loadtxt(data, delimiter="\t", ndmin=2)
lines = open(out).read().split("\n")
if mode == "pca":
    k = int(sys.argv[4])
    var = np.array([float(l.split()[1]) for l in lines if l.startswith("var ")])
    tot = [float(l.split()[1]) for l in lines if l.startswith("total ")][0]
    comp = np.array([[float(x) for x in l.split()[1:]] for l in lines if l.startswith("comp")])
    proj = np.array([[float(x) for x in l.split()[1:]] for l in lines if l.startswith("proj")])
    Xc = X - X.mean(0)
    C = Xc.T @ Xc / (len(X) - 1)
    w, V = np.linalg.eigh(C)
    w, V = w[::-1][:k], V[:, ::-1][:, :k].T
    for i in range(k):  # sign convention: largest |entry| positive
        if V[i][np.argmax(np.abs(V[i]))] < 0: V[i] = -V[i]
    e1 = np.max(np.abs(var - w) / w[0])
    e2 = np.max(np.abs(comp - V))
    e3 = np.max(np.abs(proj - Xc @ V.T)) / np.max(np.abs(Xc @ V.T))
    e4 = abs(tot - np.trace(C)) / np.trace(C)
    print("%.3g %.3g %.3g %.3g" % (e1, e2, e3, e4))
else:
    from sklearn.neighbors import NearestNeighbors
    from sklearn.metrics import silhouette_score, balanced_accuracy_score
    k = int(sys.argv[4])
    y = X[:, 0].astype(int); Z = X[:, 1:]
    got = {l.split()[0]: float(l.split()[1]) for l in lines if l}
    nb = NearestNeighbors(n_neighbors=k + 1).fit(Z).kneighbors(Z, return_distance=False)
    pred = []
    for i, row in enumerate(nb):
        row = [j for j in row if j != i][:k]
        pred.append(np.argmax(np.bincount(y[row], minlength=y.max() + 1)))
    pred = np.array(pred)
    ref = dict(knn_acc=(pred == y).mean(), knn_bal=balanced_accuracy_score(y, pred),
               silhouette=silhouette_score(Z, y))
    print(" ".join("%s %.3g" % (n, abs(got[n] - ref[n])) for n in ref))
PY
gen() { $PY -c "
import numpy as np, sys
r = np.random.default_rng($3)
n, d = $1, $2
X = r.normal(0, 1, (n, d)) @ r.normal(0, 1, (d, d)) + r.normal(0, 3, d)
np.savetxt(sys.stdout, X, fmt='%.7g', delimiter='\t')"; }
for shape in "500 20 1" "30 60 2"; do
	set -- $shape
	gen $1 $2 $3 >"$TMP/x.tsv"
	"$T" pca 5 <"$TMP/x.tsv" >"$TMP/out.txt" 2>"$TMP/err"
	r=$($PY "$TMP/cmp.py" pca "$TMP/x.tsv" "$TMP/out.txt" 5 2>&1)
	read -r e1 e2 e3 e4 <<<"$r"
	t_match "PCA ${1}x$2 (top 5): variances vs numpy eigh (rel err $e1 < 1e-6)" '^[0-9.e+-]+$' \
		"$(awk -v a="$e1" 'BEGIN{if (a < 1e-6) print a}')$(cat "$TMP/err")"
	t_match "PCA ${1}x$2: components vs numpy (max abs err $e2 < 1e-5)" '^[0-9.e+-]+$' \
		"$(awk -v a="$e2" 'BEGIN{if (a < 1e-5) print a}')"
	t_match "PCA ${1}x$2: projections and total variance (rel err $e3, $e4 < 1e-6)" '^[0-9.e+-]+$' \
		"$(awk -v a="$e3" -v b="$e4" 'BEGIN{if (a < 1e-6 && b < 1e-6) print a}')"
done
if ! have_py sklearn; then t_skip "k-NN and silhouette vs scikit-learn" "no sklearn in $PY"; t_done; exit 0; fi
$PY -c "
import numpy as np, sys
r = np.random.default_rng(5)
y = r.integers(0, 3, 400)
Z = r.normal(0, 1, (400, 12)) + 1.2 * np.eye(3)[y] @ r.normal(0, 1, (3, 12))
np.savetxt(sys.stdout, np.column_stack([y, Z]), fmt='%.7g', delimiter='\t')" >"$TMP/lab.tsv"
for k in 5 10; do
	"$T" sep $k <"$TMP/lab.tsv" >"$TMP/sep.txt"
	r=$($PY "$TMP/cmp.py" sep "$TMP/lab.tsv" "$TMP/sep.txt" $k 2>&1)
	t_match "k=$k: k-NN accuracy, balanced accuracy, silhouette vs scikit-learn (abs err < 1e-6): $r" \
		'^knn_acc 0 knn_bal 0 silhouette [0-9.e-]+$' "$(echo "$r" | awk '{ if ($6 < 1e-6) print $1, $2, $3, $4, $5, ($6 < 1e-6 ? $6 : "BAD") }')"
done
t_done
