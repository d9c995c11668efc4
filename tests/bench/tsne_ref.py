#!/usr/bin/python3
"""tsne_ref.py - data, reference runs and the common evaluator for tsne.

  gen N D SEED OUT.npy [L]   clustered data (20 clusters, L-dim latent
                             structure in D dims, small isotropic noise;
                             L = 40 unless given)
  h5 IN.npy OUT.h5           the matrix as OUT.h5:/X (tsne's input)
  tsv IN.npy                 the matrix as TSV on stdout (tsne's stdin input)
  sklearn IN.npy OUT.npy PERP ITER JOBS
                             scikit-learn's Barnes-Hut TSNE (init pca,
                             learning_rate auto); prints wall seconds
  eval IN.npy PERP Y1.npy|Y1.tsv [Y2 ...]
                             one evaluator for every embedding: input
                             affinities P computed once from IN (exact
                             3*PERP nearest neighbours, bisection to
                             |H - log PERP| < 1e-5, P = (Pc + Pc^T)/sum),
                             then KL(P || Q) with Q exact over all pairs.
"""
import sys, time
import numpy as np


def gen(n, d, seed, out, lat=40):
    rng = np.random.default_rng(seed)
    c = 20
    centres = rng.normal(0, 2.0, (c, lat))
    scales = rng.uniform(0.5, 1.5, c)
    lab = rng.integers(0, c, n)
    z = centres[lab] + rng.normal(0, 1, (n, lat)) * scales[lab, None]
    basis, _ = np.linalg.qr(rng.normal(0, 1, (d, lat)))
    X = z @ basis.T + rng.normal(0, 0.03, (n, d))
    np.save(out, X.astype(np.float32))
    np.save(out.replace('.npy', '.labels.npy'), lab)


def knn(X, k):
    n = X.shape[0]
    sq = np.einsum('ij,ij->i', X, X)
    idx = np.empty((n, k), np.int64)
    dist = np.empty((n, k))
    for a in range(0, n, 2048):
        b = min(n, a + 2048)
        D = sq[a:b, None] + sq[None, :] - 2 * (X[a:b] @ X.T)
        D[np.arange(b - a), np.arange(a, b)] = np.inf
        part = np.argpartition(D, k, axis=1)[:, :k]
        pd = np.take_along_axis(D, part, 1)
        o = np.argsort(pd, 1)
        idx[a:b] = np.take_along_axis(part, o, 1)
        dist[a:b] = np.maximum(np.take_along_axis(pd, o, 1), 0)
    return idx, dist


def affinities(X, perp):
    import scipy.sparse as sp
    X = X.astype(np.float64)
    n = X.shape[0]
    k = min(n - 1, int(3 * perp + 1))
    idx, d2 = knn(X, k)
    d2 = d2 - d2[:, :1]
    target = np.log(perp)
    lo = np.full(n, -np.inf)
    hi = np.full(n, np.inf)
    beta = 1 / np.maximum(d2.mean(1), 1e-300)
    for _ in range(200):
        P = np.exp(-beta[:, None] * d2)
        s = P.sum(1)
        H = np.log(s) + beta * (d2 * P).sum(1) / s
        diff = H - target
        if np.all(np.abs(diff) <= 1e-5):
            break
        up = diff > 0
        lo = np.where(up, beta, lo)
        hi = np.where(up, hi, beta)
        beta = np.where(up, np.where(np.isinf(hi), beta * 2, (beta + hi) / 2),
                        np.where(np.isinf(lo), beta / 2, (beta + lo) / 2))
    P = P / P.sum(1, keepdims=True)
    M = sp.csr_matrix((P.ravel(), idx.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n))
    M = M + M.T
    M = M / M.sum()
    return M.tocoo()


def kl(P, Y):
    Y = Y.astype(np.float64)
    n = Y.shape[0]
    sq = (Y * Y).sum(1)
    Z = 0.0
    for a in range(0, n, 2048):
        b = min(n, a + 2048)
        D = sq[a:b, None] + sq[None, :] - 2 * (Y[a:b] @ Y.T)
        Z += (1 / (1 + np.maximum(D, 0))).sum() - (b - a)
    d = ((Y[P.row] - Y[P.col]) ** 2).sum(1)
    q = 1 / (1 + d) / Z
    p = P.data
    return float((p * np.log(p / q)).sum())


def load_y(path):
    if path.endswith('.npy'):
        return np.load(path)
    if path.endswith('.h5'):
        import h5py
        with h5py.File(path, 'r') as f:
            return f['tsne/xy'][()]
    import csv
    with open(path) as f:
        r = csv.reader(f, delimiter='\t')
        h = next(r)
        ix, iy = h.index('x'), h.index('y')
        return np.array([[float(row[ix]), float(row[iy])] for row in r])


def main():
    cmd = sys.argv[1]
    if cmd == 'gen':
        gen(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5],
            int(sys.argv[6]) if len(sys.argv) > 6 else 40)
    elif cmd == 'h5':
        import h5py
        with h5py.File(sys.argv[3], 'w') as f:
            f['X'] = np.load(sys.argv[2])
    elif cmd == 'tsv':
        X = np.load(sys.argv[2])
        np.savetxt(sys.stdout, X, fmt='%.7g', delimiter='\t')
    elif cmd == 'sklearn':
        from sklearn.manifold import TSNE
        X = np.load(sys.argv[2])
        t0 = time.time()
        kw = dict(perplexity=float(sys.argv[4]), init='pca', learning_rate='auto',
                  n_jobs=int(sys.argv[6]), random_state=0, method='barnes_hut', angle=0.5)
        try:
            m = TSNE(max_iter=int(sys.argv[5]), **kw)
        except TypeError:
            m = TSNE(n_iter=int(sys.argv[5]), **kw)
        Y = m.fit_transform(X)
        print('%.2f %.5f' % (time.time() - t0, m.kl_divergence_))
        np.save(sys.argv[3], Y)
    elif cmd == 'eval':
        X = np.load(sys.argv[2])
        P = affinities(X, float(sys.argv[3]))
        for y in sys.argv[4:]:
            print('%s\t%.5f' % (y, kl(P, load_y(y))))


if __name__ == '__main__':
    main()
