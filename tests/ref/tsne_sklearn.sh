#!/usr/bin/env bash
# tsne against scikit-learn's Barnes-Hut TSNE on the same planted-cluster
# data and parameters (perplexity 30, 1000 iterations, PCA init, learning
# rate auto): neighbourhood preservation (sklearn.manifold.trustworthiness,
# 10 neighbours) at least sklearn's - 0.01, and the KL divergence of both
# embeddings under one evaluator (tests/bench/tsne_ref.py: the same input
# affinities, exact output similarities) at most 3% above sklearn's.
. "$(dirname "$0")/../lib.sh"
if ! have_py sklearn; then t_skip "tsne vs scikit-learn" "no sklearn in $PY"; t_done; exit 0; fi
R=$SS_ROOT/tests/bench/tsne_ref.py
$PY -c "
import numpy as np, sys
r = np.random.default_rng(11)
y = r.integers(0, 8, 500)
X = (r.normal(0, 1, (500, 40)) + 2.5 * r.normal(0, 1, (8, 40))[y]).astype(np.float32)
np.save(sys.argv[1], X)
np.savetxt(sys.argv[2], X, fmt='%.7g', delimiter='\t')" "$TMP/x.npy" "$TMP/x.tsv"
tsne -q --threads 2 <"$TMP/x.tsv" >"$TMP/ours.tsv"; rc=$?
t_eq "tsne runs on the planted data" 0 $rc
sk=$($PY "$R" sklearn "$TMP/x.npy" "$TMP/sk.npy" 30 1000 2 2>&1 | tail -1)
t_match "scikit-learn TSNE runs" '^[0-9.]+ [0-9.]+$' "$sk"
tw=$($PY -c "
import numpy as np, sys
sys.path.insert(0, sys.argv[4])
from tsne_ref import load_y
from sklearn.manifold import trustworthiness
X = np.load(sys.argv[1])
print('%.4f %.4f' % (trustworthiness(X, load_y(sys.argv[2]), n_neighbors=10),
                     trustworthiness(X, np.load(sys.argv[3]), n_neighbors=10)))" \
	"$TMP/x.npy" "$TMP/ours.tsv" "$TMP/sk.npy" "$SS_ROOT/tests/bench" 2>&1)
read -r two tws <<<"$tw"
t_match "trustworthiness: ours $two >= scikit-learn's $tws - 0.01" '^ok$' \
	"$(awk -v a="$two" -v b="$tws" 'BEGIN{print (a >= b - 0.01 && a > 0.8) ? "ok" : "bad"}')"
kl=$($PY "$R" eval "$TMP/x.npy" 30 "$TMP/ours.tsv" "$TMP/sk.npy" 2>&1 | awk '{printf "%s ", $2}')
read -r klo kls <<<"$kl"
t_match "common-evaluator KL: ours $klo <= 1.03 x scikit-learn's $kls" '^ok$' \
	"$(awk -v a="$klo" -v b="$kls" 'BEGIN{print (a > 0 && a <= 1.03 * b) ? "ok" : "bad"}')"
t_done
