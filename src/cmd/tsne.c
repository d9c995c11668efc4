/* tsne - t-SNE of activations, labelled by future sinks and controls, and a
 * per-layer separability scan.  See tsne(1). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "io/episodes.h"
#include "io/h5io.h"
#include "analysis/knn.h"
#include "util/ofile.h"
#include "util/opt.h"
#include "util/par.h"
#include "util/progress.h"
#include "sinks/sinks.h"
#include "sinks/tokclass.h"
#include "io/trace.h"
#include "analysis/tsne.h"
#include "io/tsv.h"

#define PROG "tsne"

enum { LAB_FUTURE = 0, LAB_CONTROL = 1, LAB_OTHER = 2, LAB_NONE = 3, LAB_N };
static const char *const lab_name[LAB_N] = {"future", "control", "other", "-"};

static long o_layer = -1, o_iter = 1000, o_exag_iter = 250, o_pca = 50, o_seed = 1,
            o_threads = SS_THREADS_UNSET, o_knn = 5, o_min_life = 1;
static double o_perp = 30, o_theta = 0.5, o_exag = 12, o_lr = 0, o_tau_cos = NAN,
              o_tau_norm = NAN;
static int o_exact, o_quiet;
static const char *o_labels, *o_only, *o_classes = "space,punct,digit", *o_out, *o_scan,
                  *o_init = "pca", *o_lstart, *o_level, *o_search = "auto";
static int seen_tau_cos, seen_tau_norm;
static long *want_level; /* --level */
static size_t n_want;

static const ss_opt opts[] = {
	{"layer", 0, SS_OPT_INT, &o_layer, "L", "layer of /acts/COMPONENT to embed", NULL},
	{"labels", 0, SS_OPT_STRING, &o_labels, "SINKS.tsv", "sinkdetect episodes for the labels", NULL},
	{"only", 0, SS_OPT_STRING, &o_only, "LIST", "keep rows of these labels (future,control,other)", NULL},
	{"classes", 0, SS_OPT_STRING, &o_classes, "LIST", "token classes of controls (space,punct,digit)", NULL},
	{"min-lifetime", 0, SS_OPT_INT, &o_min_life, "N", "future: episodes of at least N layers (1)", NULL},
	{"l-start", 0, SS_OPT_STRING, &o_lstart, "A-B", "future: episodes starting in layers A..B", NULL},
	{"level", 0, SS_OPT_STRING, &o_level, "K[,K...]", "future: only episodes of these levels (sinklevels --assign)", NULL},
	{"tau-cos", 'c', SS_OPT_DOUBLE, &o_tau_cos, "X", "sink rule for controls: cosine threshold", &seen_tau_cos},
	{"tau-norm", 'n', SS_OPT_DOUBLE, &o_tau_norm, "X", "sink rule for controls: norm ratio", &seen_tau_norm},
	{"perplexity", 'p', SS_OPT_DOUBLE, &o_perp, "U", "perplexity (30)", NULL},
	{"theta", 0, SS_OPT_DOUBLE, &o_theta, "X", "Barnes-Hut accuracy, 0 = exact (0.5)", NULL},
	{"exact", 0, SS_OPT_FLAG, &o_exact, NULL, "exact O(N^2) t-SNE (small N)", NULL},
	{"iter", 0, SS_OPT_INT, &o_iter, "N", "iterations (1000)", NULL},
	{"exaggeration", 0, SS_OPT_DOUBLE, &o_exag, "X", "early exaggeration (12)", NULL},
	{"exag-iter", 0, SS_OPT_INT, &o_exag_iter, "N", "iterations of early exaggeration (250)", NULL},
	{"learning-rate", 0, SS_OPT_DOUBLE, &o_lr, "X", "step size (0 = max(N/12/4, 50))", NULL},
	{"pca", 0, SS_OPT_INT, &o_pca, "K", "PCA dimensions that guide the neighbour search (50; 0 = off)", NULL},
	{"init", 0, SS_OPT_STRING, &o_init, "pca|random", "initial layout (pca)", NULL},
	{"search", 0, SS_OPT_STRING, &o_search, "auto|vptree|blas", "neighbour search (auto: BLAS scan above 10 dims)", NULL},
	{"seed", 's', SS_OPT_INT, &o_seed, "N", "random seed (1)", NULL},
	SS_OPT_THREADS(o_threads),
	{"output", 'o', SS_OPT_STRING, &o_out, "FILE.h5", "write the embedding to HDF5", NULL},
	{"scan", 0, SS_OPT_STRING, &o_scan, "LAYERS", "separability per layer instead of one embedding", NULL},
	{"knn", 'k', SS_OPT_INT, &o_knn, "K", "neighbours of the k-NN vote (5)", NULL},
	{"quiet", 'q', SS_OPT_FLAG, &o_quiet, NULL, "no summary line on stderr", NULL},
	{0},
};

static const ss_prog prog = {
	PROG,
	"[options] [--layer L] FILE.h5:/DATASET ...\n"
	"[options] < MATRIX.tsv\n"
	"--scan LAYERS --labels SINKS.tsv [options] FILE.h5:/acts/COMPONENT ...",
	"t-SNE of activations, labelled by future sinks and controls",
	opts,
};

/* ------------------------------------------------------------ the rows */

typedef struct src {
	char *file;     /* path as given */
	char *dset;     /* dataset path inside */
	char *name;     /* trace name: file name without directory */
	ss_h5 *h;
	int is_acts;    /* dataset under /acts/: needs a layer */
	char *comp;     /* component name for /acts/ */
	ss_trace tr;    /* stats and tokens, read when labels are asked */
	int have_tr;
	unsigned char *control; /* [T] */
	long T;
} src;

typedef struct rows {
	long n, d;
	float *X;        /* [n * d] */
	int *si;         /* source index, -1 for stdin */
	long *pos;       /* [n] */
	char **tname;    /* stdin only: trace column, or NULL */
	int *lab;        /* [n] */
	char **ltext;    /* stdin only: label column text, or NULL */
} rows;

static void rows_free(rows *r)
{
	free(r->X);
	free(r->si);
	free(r->pos);
	if (r->tname)
		for (long i = 0; i < r->n; i++)
			free(r->tname[i]);
	free(r->tname);
	if (r->ltext)
		for (long i = 0; i < r->n; i++)
			free(r->ltext[i]);
	free(r->ltext);
	free(r->lab);
	memset(r, 0, sizeof *r);
}

static int split_operand(const char *arg, src *s, ss_err *e)
{
	const char *c = strstr(arg, ":/");
	const char *last = NULL;
	while (c) { /* the last ":/" splits: file names may hold colons */
		last = c;
		c = strstr(c + 1, ":/");
	}
	if (!last || last == arg)
		return ss_err_status(e, SS_EXIT_USAGE, "%s: expected FILE.h5:/DATASET", arg);
	s->file = strndup(arg, last - arg);
	s->dset = strdup(last + 1);
	const char *b = strrchr(s->file, '/');
	s->name = strdup(b ? b + 1 : s->file);
	if (!s->file || !s->dset || !s->name)
		return ss_err_set(e, "out of memory");
	if (!strncmp(s->dset, "/acts/", 6) && s->dset[6] && !strchr(s->dset + 6, '/')) {
		s->is_acts = 1;
		s->comp = s->dset + 6;
	}
	return 0;
}

/* future sink episodes from the sinkdetect table */
typedef struct episode {
	int si;
	long pos, l_start, lifetime, level;
} episode;

typedef struct labels {
	episode *ep;
	size_t n;
} labels;

static int read_labels(const char *path, src *S, int ns, labels *out, ss_err *e)
{
	memset(out, 0, sizeof *out);
	ss_eptab t = {0};
	/* --level takes membership from sinklevels' assignment, never from the
	 * (l_start, lifetime) ranges of the level table */
	unsigned need = EP_BIT(EP_TRACE) | EP_BIT(EP_POS) | EP_BIT(EP_KIND) | EP_BIT(EP_L_START) |
	                EP_BIT(EP_LIFETIME) | (n_want ? EP_BIT(EP_LEVEL) : 0);
	if (eptab_read(&t, path, need, e) < 0)
		return -1;
	int rc = -1;
	size_t matched = 0;
	if (!(out->ep = ss_malloc(t.n ? t.n : 1, sizeof *out->ep, "episodes", e)))
		goto done;
	for (size_t i = 0; i < t.n; i++) {
		const ss_episode *p = &t.ep[i];
		const char *tr = t.trace[i];
		int si = -1;
		for (int k = 0; k < ns; k++)
			if (!strcmp(S[k].name, tr) || !strcmp(S[k].file, tr))
				si = k;
		if (si < 0)
			continue; /* an episode of a trace not given */
		matched++;
		if (p->pos >= S[si].T) {
			ss_err_set(e, "%s:%ld: pos %ld outside trace '%s' (%ld tokens): labels do not match the vectors",
			           path, t.line[i], p->pos, tr, S[si].T);
			goto done;
		}
		if ((t.cols & EP_BIT(EP_TOKEN)) && S[si].have_tr && p->token != S[si].tr.ids[p->pos]) {
			ss_err_set(e, "%s:%ld: token %ld at pos %ld, but trace '%s' has %ld there: labels do not match the vectors",
			           path, t.line[i], (long)p->token, p->pos, tr, (long)S[si].tr.ids[p->pos]);
			goto done;
		}
		if (!p->primary)
			out->ep[out->n++] = (episode){si, p->pos, p->l_start, p->lifetime, p->level};
	}
	if (!matched) {
		ss_err_set(e, "%s: no episode names an input trace (%s%s): labels do not match the vectors",
		           path, S[0].name, ns > 1 ? ", ..." : "");
		goto done;
	}
	for (size_t k = 0; k < n_want; k++) {
		size_t i = 0;
		while (i < t.n && t.ep[i].level != want_level[k])
			i++;
		if (i == t.n) {
			ss_err_set(e, "%s: no episode of level %ld", path, want_level[k]);
			goto done;
		}
	}
	rc = 0;
done:
	eptab_free(&t);
	return rc;
}

static int wanted_level(long level)
{
	for (size_t k = 0; k < n_want; k++)
		if (want_level[k] == level)
			return 1;
	return !n_want;
}

/* label of (source si, position pos) when layer L is embedded */
static int label_of(const src *S, int si, long pos, long L, const labels *lb, long lo, long hi)
{
	for (size_t k = 0; k < lb->n; k++) {
		const episode *p = &lb->ep[k];
		if (p->si == si && p->pos == pos && p->l_start > L && p->lifetime >= o_min_life &&
		    p->l_start >= lo && p->l_start <= hi && wanted_level(p->level))
			return LAB_FUTURE;
	}
	if (S[si].control && S[si].control[pos])
		return LAB_CONTROL;
	return LAB_OTHER;
}

/* read the vectors of every source at layer L (ignored for plain datasets) */
static int read_layer(src *S, int ns, long L, rows *R, ss_err *e)
{
	memset(R, 0, sizeof *R);
	for (int k = 0; k < ns; k++) {
		float *x = NULL;
		long T, d;
		if (S[k].is_acts) {
			if (trace_acts_read(S[k].h, S[k].comp, L, &x, &T, &d, e) < 0)
				return -1;
		} else {
			size_t dims[H5IO_MAX_RANK];
			if (h5_read_f32(S[k].h, S[k].dset, 2, NULL, &x, dims, e) < 0)
				return -1;
			T = (long)dims[0];
			d = (long)dims[1];
		}
		if (R->n && d != R->d) {
			free(x);
			return ss_err_set(e, "%s:%s: dimension %ld, but %s has %ld", S[k].file, S[k].dset, d,
			                  S[0].file, R->d);
		}
		if (S[k].have_tr && T != S[k].T) {
			free(x);
			return ss_err_set(e, "%s:%s: %ld rows, but /tokens/ids has %ld", S[k].file,
			                  S[k].dset, T, S[k].T);
		}
		S[k].T = T;
		for (long i = 0; i < T; i++)
			for (long j = 0; j < d; j++)
				if (!isfinite(x[i * d + j])) {
					free(x);
					if (S[k].is_acts)
						return ss_err_set(e, "%s:%s: layer %ld, pos %ld: non-finite value in column %ld",
						                  S[k].file, S[k].dset, L, i, j + 1);
					return ss_err_set(e, "%s:%s: row %ld: non-finite value in column %ld",
					                  S[k].file, S[k].dset, i, j + 1);
				}
		if (R->n == 0) { /* the first source: keep its buffer, no copy */
			free(R->X);
			R->X = x;
			x = NULL;
		}
		float *nx = x ? realloc(R->X, (size_t)(R->n + T) * d * sizeof *nx) : R->X;
		int *nsi = realloc(R->si, (R->n + T) * sizeof *nsi);
		long *np = realloc(R->pos, (R->n + T) * sizeof *np);
		if (nx)
			R->X = nx;
		if (nsi)
			R->si = nsi;
		if (np)
			R->pos = np;
		if (!nx || !nsi || !np) {
			free(x);
			return ss_err_set(e, "out of memory reading %s", S[k].file);
		}
		if (x)
			memcpy(R->X + (size_t)R->n * d, x, (size_t)T * d * sizeof *x);
		for (long i = 0; i < T; i++) {
			R->si[R->n + i] = k;
			R->pos[R->n + i] = i;
		}
		R->n += T;
		R->d = d;
		free(x);
	}
	return 0;
}

/* a TSV matrix on stdin: optional header; columns trace, pos, label are
 * metadata, every other column a coordinate */
static int read_stdin(rows *R, ss_err *e)
{
	memset(R, 0, sizeof *R);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	long lineno = 0, rcap = 0;
	int ncol = -1, ctr = -1, cpos = -1, clab = -1;
	char **hdr = NULL;
	int rc = -1;
	while ((len = getline(&line, &cap, stdin)) >= 0) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (len == 0)
			continue;
		/* split */
		int nf = 1;
		for (char *p = line; *p; p++)
			nf += *p == '\t';
		char **f = malloc(nf * sizeof *f);
		if (!f) {
			ss_err_set(e, "out of memory");
			goto done;
		}
		f[0] = line;
		for (int i = 1; i < nf; i++) {
			f[i] = strchr(f[i - 1], '\t');
			*f[i]++ = 0;
		}
		if (ncol < 0) {
			ncol = nf;
			int numeric = 1;
			double v;
			for (int i = 0; i < nf; i++)
				numeric &= ss_parse_double(f[i], &v) == 0 || !strcmp(f[i], "nan") ||
				            !strcmp(f[i], "NaN");
			if (!numeric) {
				hdr = calloc(nf, sizeof *hdr);
				if (!hdr) {
					free(f);
					ss_err_set(e, "out of memory");
					goto done;
				}
				for (int i = 0; i < nf; i++) {
					hdr[i] = strdup(f[i]);
					if (!strcmp(f[i], "trace"))
						ctr = i;
					else if (!strcmp(f[i], "pos"))
						cpos = i;
					else if (!strcmp(f[i], "label"))
						clab = i;
				}
				R->d = nf - (ctr >= 0) - (cpos >= 0) - (clab >= 0);
				free(f);
				continue;
			}
			R->d = nf;
		}
		if (nf != ncol) {
			free(f);
			ss_err_set(e, "<stdin>:%ld: %d fields, expected %d", lineno, nf, ncol);
			goto done;
		}
		if (R->n == rcap) {
			rcap = rcap ? 2 * rcap : 1024;
			float *nx = realloc(R->X, (size_t)rcap * R->d * sizeof *nx);
			long *np = realloc(R->pos, rcap * sizeof *np);
			char **nt = realloc(R->tname, rcap * sizeof *nt);
			char **nl = realloc(R->ltext, rcap * sizeof *nl);
			if (nx)
				R->X = nx;
			if (np)
				R->pos = np;
			if (nt)
				R->tname = nt;
			if (nl)
				R->ltext = nl;
			if (!nx || !np || !nt || !nl) {
				free(f);
				ss_err_set(e, "out of memory reading <stdin>");
				goto done;
			}
		}
		long r = R->n, j = 0;
		R->pos[r] = r;
		R->tname[r] = NULL;
		R->ltext[r] = NULL;
		R->n++;
		for (int i = 0; i < nf; i++) {
			if (i == ctr) {
				R->tname[r] = strdup(f[i]);
				continue;
			}
			if (i == clab) {
				R->ltext[r] = strdup(f[i]);
				continue;
			}
			if (i == cpos) {
				if (ss_parse_long(f[i], &R->pos[r])) {
					ss_err_set(e, "<stdin>:%ld: column 'pos': not an integer: '%s'", lineno, f[i]);
					free(f);
					goto done;
				}
				continue;
			}
			double v;
			if (ss_parse_double(f[i], &v)) {
				ss_err_set(e, "<stdin>:%ld: column %s%d%s: not a finite number: '%s'", lineno,
				           hdr ? "'" : "", hdr ? 0 : i + 1, hdr ? "'" : "", f[i]);
				if (hdr)
					ss_err_set(e, "<stdin>:%ld: column '%s': not a finite number: '%s'", lineno,
					           hdr[i], f[i]);
				free(f);
				goto done;
			}
			R->X[(size_t)r * R->d + j++] = (float)v;
		}
		free(f);
	}
	if (R->n == 0) {
		ss_err_set(e, "<stdin>: no rows");
		goto done;
	}
	if (R->d < 1) {
		ss_err_set(e, "<stdin>: no numeric columns");
		goto done;
	}
	rc = 0;
done:
	if (hdr)
		for (int i = 0; i < ncol; i++)
			free(hdr[i]);
	free(hdr);
	free(line);
	return rc;
}

/* keep rows whose label is in the mask */
static void select_rows(rows *R, unsigned mask)
{
	long w = 0;
	for (long i = 0; i < R->n; i++) {
		if (!(mask & (1u << R->lab[i]))) {
			if (R->tname)
				free(R->tname[i]);
			if (R->ltext)
				free(R->ltext[i]);
			continue;
		}
		if (w != i) {
			memmove(R->X + (size_t)w * R->d, R->X + (size_t)i * R->d, R->d * sizeof *R->X);
			if (R->si)
				R->si[w] = R->si[i];
			R->pos[w] = R->pos[i];
			R->lab[w] = R->lab[i];
			if (R->tname)
				R->tname[w] = R->tname[i];
			if (R->ltext)
				R->ltext[w] = R->ltext[i];
		}
		w++;
	}
	R->n = w;
}

static int parse_only(const char *s, unsigned *mask, ss_err *e)
{
	*mask = 0;
	char *c = strdup(s), *save = NULL;
	if (!c)
		return ss_err_set(e, "out of memory");
	for (char *t = strtok_r(c, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int k;
		for (k = 0; k < LAB_OTHER + 1; k++)
			if (!strcmp(t, lab_name[k]))
				break;
		if (k > LAB_OTHER) {
			ss_err_status(e, SS_EXIT_USAGE, "--only: unknown label '%s' (future, control, other)", t);
			free(c);
			return -1;
		}
		*mask |= 1u << k;
	}
	free(c);
	if (!*mask)
		return ss_err_status(e, SS_EXIT_USAGE, "--only: empty list");
	return 0;
}

/* ------------------------------------------------------------ progress */

static void on_progress(void *ctx, const char *phase, double done, double total)
{
	ss_progress_update(ctx, done, total, "it");
}

static void params(ss_tsne_params *p, ss_progress *pg)
{
	tsne_params_default(p);
	p->perplexity = o_perp;
	p->theta = o_theta;
	p->exact = o_exact;
	p->max_iter = o_iter;
	p->exag_iter = o_exag_iter;
	p->exaggeration = o_exag;
	p->learning_rate = o_lr;
	p->pca_dims = (int)o_pca;
	p->init = strcmp(o_init, "random") ? SS_TSNE_INIT_PCA : SS_TSNE_INIT_RANDOM;
	p->seed = (uint64_t)o_seed;
	p->knn_method = !strcmp(o_search, "vptree") ? SS_TSNE_KNN_VPTREE
	                : !strcmp(o_search, "blas") ? SS_TSNE_KNN_BLAS : SS_TSNE_KNN_AUTO;
	p->threads = (int)o_threads;
	p->progress = on_progress;
	p->progress_ctx = pg;
}

/* ----------------------------------------------------------------- output */

static const char *row_trace(const rows *R, const src *S, long i)
{
	if (R->si && R->si[i] >= 0)
		return S[R->si[i]].name;
	return R->tname && R->tname[i] ? R->tname[i] : "-";
}

static const char *row_label(const rows *R, long i)
{
	if (R->ltext && R->ltext[i])
		return R->ltext[i];
	return lab_name[R->lab[i]];
}

static int write_tsv(const rows *R, const src *S, const float *Y, ss_err *e)
{
	fputs("trace\tpos\tlabel\tx\ty\n", stdout);
	for (long i = 0; i < R->n; i++) {
		const char *t = row_trace(R, S, i), *l = row_label(R, i);
		tsv_put_escaped(stdout, t, strlen(t));
		printf("\t%ld\t", R->pos[i]);
		tsv_put_escaped(stdout, l, strlen(l));
		putchar('\t');
		tsv_put_double(stdout, Y[2 * i]);
		putchar('\t');
		tsv_put_double(stdout, Y[2 * i + 1]);
		putchar('\n');
	}
	return ss_close_stdout(e);
}

static int write_h5(const char *path, const rows *R, const src *S, const float *Y,
                    const ss_tsne_info *in, ss_err *e)
{
	ss_h5 *f;
	if (h5_create(&f, path, e) < 0)
		return -1;
	size_t n = (size_t)R->n, dims[2] = {n, 2};
	int32_t *pos = malloc((n ? n : 1) * sizeof *pos);
	const char **tr = malloc((n ? n : 1) * sizeof *tr), **lb = malloc((n ? n : 1) * sizeof *lb);
	int rc = -1;
	if (!pos || !tr || !lb) {
		ss_err_set(e, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		pos[i] = (int32_t)R->pos[i];
		tr[i] = row_trace(R, S, (long)i);
		lb[i] = row_label(R, (long)i);
	}
	if (h5_write_f32(f, "/tsne/xy", 2, dims, Y, e) < 0 ||
	    h5_write_i32(f, "/tsne/pos", 1, dims, pos, e) < 0 ||
	    h5_write_strings(f, "/tsne/trace", n, tr, e) < 0 ||
	    h5_write_strings(f, "/tsne/label", n, lb, e) < 0 ||
	    h5_set_attr_f64(f, "/tsne/xy", "kl_divergence", in->kl, e) < 0 ||
	    h5_set_attr_int(f, "/tsne/xy", "kl_exact", in->kl_exact, e) < 0 ||
	    h5_set_attr_f64(f, "/tsne/xy", "perplexity", o_perp, e) < 0 ||
	    h5_set_attr_f64(f, "/tsne/xy", "theta", o_exact ? 0 : o_theta, e) < 0 ||
	    h5_set_attr_int(f, "/tsne/xy", "iterations", in->iters, e) < 0 ||
	    h5_set_attr_int(f, "/tsne/xy", "layer", o_layer, e) < 0 ||
	    h5_set_attr_int(f, "/tsne/xy", "seed", o_seed, e) < 0 ||
	    h5_set_attr_str(f, "/", "generator", PROG " " SS_VERSION, e) < 0)
		goto done;
	free(pos), free(tr), free(lb);
	return h5_commit(f, e);
done:
	free(pos), free(tr), free(lb);
	h5_close(f);
	return rc;
}

/* ------------------------------------------------------------------- scan */

static int scan(src *S, int ns, const labels *lb, long lo, long hi, unsigned only, long L,
                ss_err *e)
{
	unsigned char *mask = calloc(L + 1, 1);
	if (!mask)
		return ss_err_set(e, "out of memory");
	if (ss_parse_layers(o_scan, (int)L, mask, "--scan", e) < 0) {
		free(mask);
		return -1;
	}
	puts("layer\tn\tn_future\tn_control\tn_other\tknn_acc\tknn_bal\tsilhouette\t"
	     "knn_acc_2d\tknn_bal_2d\tsilhouette_2d\tkl");
	ss_progress pg;
	ss_tsne_params p;
	params(&p, &pg);
	int rc = -1;
	for (long l = 1; l <= L; l++) {
		if (!mask[l])
			continue;
		rows R;
		if (read_layer(S, ns, l, &R, e) < 0) {
			rows_free(&R);
			goto done;
		}
		R.lab = malloc(R.n * sizeof *R.lab);
		if (!R.lab) {
			rows_free(&R);
			ss_err_set(e, "out of memory");
			goto done;
		}
		for (long i = 0; i < R.n; i++)
			R.lab[i] = label_of(S, R.si[i], R.pos[i], l, lb, lo, hi);
		select_rows(&R, only);
		long cnt[LAB_N] = {0};
		for (long i = 0; i < R.n; i++)
			cnt[R.lab[i]]++;
		ss_sep so = {0}, s2 = {0};
		ss_tsne_info in = {0};
		int have = 0, have2 = 0;
		int groups = (cnt[0] > 0) + (cnt[1] > 0) + (cnt[2] > 0);
		if (groups >= 2 && R.n > o_knn) {
			if (sep_measure(R.X, R.n, R.d, R.lab, (int)o_knn, &so, e) < 0) {
				rows_free(&R);
				goto done;
			}
			have = 1;
			if ((double)R.n > 3 * o_perp) {
				float *Y = malloc(2 * R.n * sizeof *Y);
				ss_progress_start(&pg, "t-SNE");
				if (!Y || tsne_run(R.X, R.n, R.d, &p, Y, &in, e) < 0 ||
				    sep_measure(Y, R.n, 2, R.lab, (int)o_knn, &s2, e) < 0) {
					if (!Y)
						ss_err_set(e, "out of memory");
					ss_err_prefix(e, "layer %ld", l);
					ss_progress_end(&pg);
					free(Y);
					rows_free(&R);
					goto done;
				}
				ss_progress_end(&pg);
				have2 = 1;
				free(Y);
			}
		}
		printf("%ld\t%ld\t%ld\t%ld\t%ld", l, R.n, cnt[0], cnt[1], cnt[2]);
		double v[7] = {so.knn_acc, so.knn_bal, so.silhouette, s2.knn_acc, s2.knn_bal,
		               s2.silhouette, in.kl};
		int ok[7] = {have, have, have, have2, have2, have2, have2};
		for (int k = 0; k < 7; k++) {
			putchar('\t');
			if (ok[k])
				tsv_put_double(stdout, v[k]);
			else
				fputs("NA", stdout);
		}
		putchar('\n');
		fflush(stdout);
		rows_free(&R);
	}
	rc = ss_close_stdout(e);
done:
	free(mask);
	return rc;
}

/* --level "K[,K...]": levels 1 and up */
static int parse_levels(const char *s, ss_err *e)
{
	size_t m = 1;
	for (const char *p = s; *p; p++)
		m += *p == ',';
	if (!(want_level = ss_malloc(m, sizeof *want_level, "levels", e)))
		return -1;
	for (const char *p = s;; p++) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p || v < 1 || (*end && *end != ','))
			return ss_err_status(e, SS_EXIT_USAGE, "--level '%s': expected levels K[,K...], each >= 1", s);
		want_level[n_want++] = v;
		p = end;
		if (!*p)
			return 0;
	}
}

/* ------------------------------------------------------------------- main */

int main(int argc, char **argv)
{
	ss_err e = {0};
	ss_signals_install(PROG);
	int first = ss_opt_parse(&prog, argc, argv, &e);
	if (first < 0)
		return ss_opt_exit(&prog, first, &e);
	int ns = argc - first, status = SS_EXIT_FAIL;
	src *S = calloc(ns > 0 ? ns : 1, sizeof *S);
	rows R = {0};
	labels lb = {0};
	float *Y = NULL;
	unsigned only = 0, mask = SS_TC_DEFAULT;
	long lo = 0, hi = 1L << 30;
	if (!S) {
		ss_err_set(&e, "out of memory");
		goto fail;
	}
	/* usage checks */
	if (ss_opt_threads(&o_threads, &e) < 0)
		goto fail;
	if (strcmp(o_init, "pca") && strcmp(o_init, "random")) {
		ss_err_status(&e, SS_EXIT_USAGE, "--init: expected pca or random, got '%s'", o_init);
		goto fail;
	}
	if (strcmp(o_search, "auto") && strcmp(o_search, "vptree") && strcmp(o_search, "blas")) {
		ss_err_status(&e, SS_EXIT_USAGE, "--search: expected auto, vptree or blas, got '%s'", o_search);
		goto fail;
	}
	const char *bad = !(o_perp > 0) ? "--perplexity: must be positive"
	                  : !(o_exag > 0) ? "--exaggeration: must be positive"
	                  : o_iter < 1    ? "--iter: must be at least 1"
	                  : o_knn < 1     ? "--knn: must be at least 1"
	                  : o_theta < 0   ? "--theta: must not be negative"
	                  : o_pca < 0     ? "--pca: must not be negative"
	                  : o_exag_iter < 0 ? "--exag-iter: must not be negative"
	                  : o_lr < 0      ? "--learning-rate: must not be negative" : NULL;
	if (bad) {
		ss_err_status(&e, SS_EXIT_USAGE, "%s", bad);
		goto fail;
	}
	if (o_only && parse_only(o_only, &only, &e) < 0)
		goto fail;
	if (tokclass_parse(o_classes, &mask, &e) < 0) {
		e.status = SS_EXIT_USAGE;
		ss_err_prefix(&e, "--classes");
		goto fail;
	}
	if (o_lstart) {
		char *end;
		lo = strtol(o_lstart, &end, 10);
		hi = lo;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		if (*end || lo > hi || end == o_lstart) {
			ss_err_status(&e, SS_EXIT_USAGE, "--l-start: expected A-B, got '%s'", o_lstart);
			goto fail;
		}
	}
	if (o_level && parse_levels(o_level, &e) < 0)
		goto fail;
	if (o_level && !o_labels) {
		ss_err_status(&e, SS_EXIT_USAGE, "--level needs --labels (the table of sinklevels --assign)");
		goto fail;
	}
	if (o_scan && o_out) {
		ss_err_status(&e, SS_EXIT_USAGE, "--output: not with --scan (the scan is a table on stdout: "
		              "redirect it, > FILE)");
		goto fail;
	}
	if (o_scan && (!ns || !o_labels)) {
		ss_err_status(&e, SS_EXIT_USAGE, "--scan needs --labels and FILE.h5:/acts/COMPONENT operands");
		goto fail;
	}
	if (o_labels && !ns) {
		ss_err_status(&e, SS_EXIT_USAGE, "--labels needs FILE.h5 operands (stdin rows carry a label column)");
		goto fail;
	}
	for (int k = 0; k < ns; k++)
		if (split_operand(argv[first + k], &S[k], &e) < 0)
			goto fail;
	for (int k = 0; k < ns; k++)
		if (S[k].is_acts && o_layer < 0 && !o_scan) {
			ss_err_status(&e, SS_EXIT_USAGE, "%s: --layer is required for %s", S[k].file, S[k].dset);
			goto fail;
		}
	/* open inputs; traces' stats for labels */
	long L = 0;
	ss_sink_params sp;
	sink_params_default(&sp);
	if (seen_tau_cos)
		sp.tau_cos = o_tau_cos;
	if (seen_tau_norm)
		sp.tau_norm = o_tau_norm;
	for (int k = 0; k < ns; k++) {
		if (h5_open(&S[k].h, S[k].file, &e) < 0)
			goto fail;
		if (!h5_exists(S[k].h, S[k].dset)) {
			ss_err_set(&e, "%s:%s: no such dataset", S[k].file, S[k].dset);
			goto fail;
		}
		if (o_labels || o_scan) {
			if (trace_read_h5(S[k].h, &S[k].tr, &e) < 0)
				goto fail;
			S[k].have_tr = 1;
			S[k].T = S[k].tr.T;
			if (L && S[k].tr.L != L) {
				ss_err_set(&e, "%s: %ld layers, but %s has %ld", S[k].file, S[k].tr.L, S[0].file, L);
				goto fail;
			}
			L = S[k].tr.L;
			S[k].control = calloc(S[k].T > 0 ? S[k].T : 1, 1);
			if (!S[k].control) {
				ss_err_set(&e, "out of memory");
				goto fail;
			}
			if (tokclass_controls(&S[k].tr, &sp, mask, S[k].control, &e) < 0) {
				ss_err_prefix(&e, "%s", S[k].file);
				goto fail;
			}
		}
	}
	if (o_labels && read_labels(o_labels, S, ns, &lb, &e) < 0)
		goto fail;
	if (o_scan) {
		if (scan(S, ns, &lb, lo, hi, only ? only : (1u << LAB_FUTURE) | (1u << LAB_CONTROL), L,
		         &e) < 0)
			goto fail;
		status = SS_EXIT_OK;
		goto fail;
	}
	/* one embedding */
	if (ns) {
		if (read_layer(S, ns, o_layer, &R, &e) < 0)
			goto fail;
	} else if (read_stdin(&R, &e) < 0) {
		goto fail;
	}
	R.lab = malloc((R.n ? R.n : 1) * sizeof *R.lab);
	if (!R.lab) {
		ss_err_set(&e, "out of memory");
		goto fail;
	}
	for (long i = 0; i < R.n; i++) {
		if (o_labels)
			R.lab[i] = label_of(S, R.si[i], R.pos[i], o_layer, &lb, lo, hi);
		else if (R.ltext && R.ltext[i]) {
			R.lab[i] = LAB_OTHER;
			for (int k = 0; k < LAB_OTHER; k++)
				if (!strcmp(R.ltext[i], lab_name[k]))
					R.lab[i] = k;
		} else
			R.lab[i] = LAB_NONE;
	}
	if (only) {
		if (!o_labels && !R.ltext) {
			ss_err_status(&e, SS_EXIT_USAGE, "--only needs --labels (or a label column on stdin)");
			goto fail;
		}
		select_rows(&R, only);
	}
	Y = malloc((R.n ? R.n : 1) * 2 * sizeof *Y);
	if (!Y) {
		ss_err_set(&e, "out of memory");
		goto fail;
	}
	ss_progress pg;
	ss_tsne_params p;
	params(&p, &pg);
	ss_tsne_info in;
	ss_progress_start(&pg, "t-SNE");
	double t0 = ss_now();
	int r = tsne_run(R.X, R.n, R.d, &p, Y, &in, &e);
	ss_progress_end(&pg);
	if (r < 0) {
		ss_err_prefix(&e, "%s", ns ? S[0].file : "<stdin>");
		goto fail;
	}
	double t1 = ss_now();
	if (in.n_uncalibrated)
		ss_warn(PROG, "warning: %ld of %ld points miss perplexity %g (calibrated %.3g..%.3g): "
		        "their neighbours are equidistant", in.n_uncalibrated, R.n, o_perp, in.perp_min, in.perp_max);
	if (o_out) {
		if (write_h5(o_out, &R, S, Y, &in, &e) < 0)
			goto fail;
		if (ss_close_stdout(&e) < 0)
			goto fail;
	} else if (write_tsv(&R, S, Y, &e) < 0) {
		goto fail;
	}
	if (!o_quiet)
		ss_warn(PROG, "%ld points, %d dims, KL divergence %.5f (%s), %ld iterations, "
		        "perplexity %.3f..%.3f, %.2f s (pca %.2f, knn %.2f, affinities %.2f, optimise %.2f, kl %.2f), %ld threads",
		        R.n, in.dims, in.kl, in.kl_exact ? "exact" : "Barnes-Hut estimate", in.iters,
		        in.perp_min, in.perp_max, t1 - t0, in.t_pca, in.t_knn, in.t_affinity,
		        in.t_optimise, in.t_kl, o_threads);
	status = SS_EXIT_OK;
fail:
	if (status != SS_EXIT_OK)
		ss_err_print(PROG, &e);
	for (int k = 0; k < ns && S; k++) {
		h5_close(S[k].h);
		if (S[k].have_tr)
			trace_free(&S[k].tr);
		free(S[k].control);
		free(S[k].file);
		free(S[k].dset);
		free(S[k].name);
	}
	free(S);
	free(lb.ep);
	free(want_level);
	rows_free(&R);
	free(Y);
	ss_opt_free();
	return status == SS_EXIT_OK ? 0 : (e.status ? e.status : SS_EXIT_FAIL);
}
