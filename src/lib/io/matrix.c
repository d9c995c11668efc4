/* matrix.c - labelled rows from HDF5 datasets or a TSV matrix, and their
 * embedding written out.  See matrix.h. */
#include "io/matrix.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "util/opt.h"
#include "io/trace.h"
#include "io/tsv.h"

int matrix_src_parse(ss_mat_src *s, const char *arg, ss_err *e)
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
	const char *b = strrchr(s->file ? s->file : "", '/');
	s->name = s->file ? strdup(b ? b + 1 : s->file) : NULL;
	if (!s->file || !s->dset || !s->name)
		return ss_err_set(e, "out of memory");
	if (!strncmp(s->dset, "/acts/", 6) && s->dset[6] && !strchr(s->dset + 6, '/')) {
		s->is_acts = 1;
		s->comp = s->dset + 6;
	}
	return 0;
}

int matrix_src_open(ss_mat_src *s, ss_err *e)
{
	if (h5_open(&s->h, s->file, e) < 0)
		return -1;
	if (!h5_exists(s->h, s->dset))
		return ss_err_set(e, "%s:%s: no such dataset", s->file, s->dset);
	return 0;
}

void matrix_src_free(ss_mat_src *s)
{
	h5_close(s->h);
	free(s->file);
	free(s->dset);
	free(s->name);
	memset(s, 0, sizeof *s);
}

void matrix_free(ss_matrix *m)
{
	free(m->X);
	free(m->si);
	free(m->pos);
	if (m->tname)
		for (long i = 0; i < m->n; i++)
			free(m->tname[i]);
	free(m->tname);
	if (m->ltext)
		for (long i = 0; i < m->n; i++)
			free(m->ltext[i]);
	free(m->ltext);
	free(m->lab);
	memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------ HDF5 rows */

int matrix_read_h5(ss_mat_src *S, int ns, long L, ss_matrix *R, ss_err *e)
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
		if (S[k].T_known && T != S[k].T) {
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

/* ------------------------------------------------------------- TSV rows */

/* grow the row arrays to rcap rows */
static int grow(ss_matrix *R, long rcap)
{
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
	return nx && np && nt && nl ? 0 : -1;
}

/* the header's metadata columns; returns -1 out of memory */
static int header(char **f, int nf, char ***hdr, int *ctr, int *cpos, int *clab)
{
	if (!(*hdr = calloc(nf, sizeof **hdr)))
		return -1;
	for (int i = 0; i < nf; i++) {
		(*hdr)[i] = strdup(f[i]);
		if (!strcmp(f[i], "trace"))
			*ctr = i;
		else if (!strcmp(f[i], "pos"))
			*cpos = i;
		else if (!strcmp(f[i], "label"))
			*clab = i;
	}
	return 0;
}

int matrix_read_tsv(FILE *in, const char *name, ss_matrix *R, ss_err *e)
{
	memset(R, 0, sizeof *R);
	char *line = NULL, **f = NULL, **hdr = NULL;
	size_t cap = 0;
	ssize_t len;
	long lineno = 0, rcap = 0;
	int ncol = -1, ctr = -1, cpos = -1, clab = -1;
	int rc = -1;
	while ((len = getline(&line, &cap, in)) >= 0) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (len == 0)
			continue;
		int nf = 1;
		for (char *p = line; *p; p++)
			nf += *p == '\t';
		free(f);
		if (!(f = malloc(nf * sizeof *f))) {
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
			/* a number, finite or not (nan, inf, 1e999): a data row, whose
			 * non-finite value is then an error, not a header */
			for (int i = 0; i < nf; i++) {
				char *end;
				numeric &= *f[i] && (strtod(f[i], &end), !*end);
			}
			if (!numeric) {
				if (header(f, nf, &hdr, &ctr, &cpos, &clab) < 0) {
					ss_err_set(e, "out of memory");
					goto done;
				}
				R->d = nf - (ctr >= 0) - (cpos >= 0) - (clab >= 0);
				continue;
			}
			R->d = nf;
		}
		if (nf != ncol) {
			ss_err_set(e, "%s:%ld: %d fields, expected %d", name, lineno, nf, ncol);
			goto done;
		}
		if (R->n == rcap) {
			rcap = rcap ? 2 * rcap : 1024;
			if (grow(R, rcap) < 0) {
				ss_err_set(e, "out of memory reading %s", name);
				goto done;
			}
		}
		long r = R->n, j = 0;
		R->pos[r] = r;
		R->tname[r] = NULL;
		R->ltext[r] = NULL;
		R->n++;
		for (int i = 0; i < nf; i++) {
			double v;
			if (i == ctr)
				R->tname[r] = strdup(f[i]);
			else if (i == clab)
				R->ltext[r] = strdup(f[i]);
			else if (i == cpos) {
				if (ss_parse_long(f[i], &R->pos[r])) {
					ss_err_set(e, "%s:%ld: column 'pos': not an integer: '%s'", name, lineno, f[i]);
					goto done;
				}
			} else if (ss_parse_double(f[i], &v)) {
				if (hdr)
					ss_err_set(e, "%s:%ld: column '%s': not a finite number: '%s'", name, lineno,
					           hdr[i], f[i]);
				else
					ss_err_set(e, "%s:%ld: column %d: not a finite number: '%s'", name, lineno,
					           i + 1, f[i]);
				goto done;
			} else if (!isfinite((float)v)) { /* tsne computes in float */
				if (hdr)
					ss_err_set(e, "%s:%ld: column '%s': outside the float range: '%s'", name,
					           lineno, hdr[i], f[i]);
				else
					ss_err_set(e, "%s:%ld: column %d: outside the float range: '%s'", name,
					           lineno, i + 1, f[i]);
				goto done;
			} else {
				R->X[(size_t)r * R->d + j++] = (float)v;
			}
		}
	}
	if (R->n == 0) {
		ss_err_set(e, "%s: no rows", name);
		goto done;
	}
	if (R->d < 1) {
		ss_err_set(e, "%s: no numeric columns", name);
		goto done;
	}
	rc = 0;
done:
	if (hdr)
		for (int i = 0; i < ncol; i++)
			free(hdr[i]);
	free(hdr);
	free(f);
	free(line);
	return rc;
}

/* --------------------------------------------------------------- select */

void matrix_select(ss_matrix *R, unsigned mask)
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

/* --------------------------------------------------------------- output */

const char *matrix_row_trace(const ss_matrix *R, const ss_mat_src *S, long i)
{
	if (R->si && R->si[i] >= 0)
		return S[R->si[i]].name;
	return R->tname && R->tname[i] ? R->tname[i] : "-";
}

const char *matrix_row_label(const ss_matrix *R, const char *const *lab_names, long i)
{
	if (R->ltext && R->ltext[i])
		return R->ltext[i];
	return lab_names[R->lab[i]];
}

void matrix_write_embedding_tsv(FILE *f, const ss_matrix *R, const ss_mat_src *S,
                                const char *const *lab_names, const float *Y)
{
	fputs("trace\tpos\tlabel\tx\ty\n", f);
	for (long i = 0; i < R->n; i++) {
		const char *t = matrix_row_trace(R, S, i), *l = matrix_row_label(R, lab_names, i);
		tsv_put_escaped(f, t, strlen(t));
		fprintf(f, "\t%ld\t", R->pos[i]);
		tsv_put_escaped(f, l, strlen(l));
		putc('\t', f);
		tsv_put_double(f, Y[2 * i]);
		putc('\t', f);
		tsv_put_double(f, Y[2 * i + 1]);
		putc('\n', f);
	}
}

int matrix_write_embedding_h5(const char *path, const ss_matrix *R, const ss_mat_src *S,
                              const char *const *lab_names, const float *Y,
                              const ss_embed_meta *m, ss_err *e)
{
	ss_h5 *f;
	if (h5_create(&f, path, e) < 0)
		return -1;
	size_t n = (size_t)R->n, dims[2] = {n, 2};
	int32_t *pos = malloc((n ? n : 1) * sizeof *pos);
	const char **tr = malloc((n ? n : 1) * sizeof *tr), **lb = malloc((n ? n : 1) * sizeof *lb);
	if (!pos || !tr || !lb) {
		ss_err_set(e, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		pos[i] = (int32_t)R->pos[i];
		tr[i] = matrix_row_trace(R, S, (long)i);
		lb[i] = matrix_row_label(R, lab_names, (long)i);
	}
	if (h5_write_f32(f, "/tsne/xy", 2, dims, Y, e) < 0 ||
	    h5_write_i32(f, "/tsne/pos", 1, dims, pos, e) < 0 ||
	    h5_write_strings(f, "/tsne/trace", n, tr, e) < 0 ||
	    h5_write_strings(f, "/tsne/label", n, lb, e) < 0 ||
	    h5_set_attr_f64(f, "/tsne/xy", "kl_divergence", m->kl, e) < 0 ||
	    h5_set_attr_int(f, "/tsne/xy", "kl_exact", m->kl_exact, e) < 0 ||
	    h5_set_attr_f64(f, "/tsne/xy", "perplexity", m->perplexity, e) < 0 ||
	    h5_set_attr_f64(f, "/tsne/xy", "theta", m->theta, e) < 0 ||
	    h5_set_attr_int(f, "/tsne/xy", "iterations", m->iterations, e) < 0 ||
	    h5_set_attr_int(f, "/tsne/xy", "layer", m->layer, e) < 0 ||
	    h5_set_attr_int(f, "/tsne/xy", "seed", m->seed, e) < 0 ||
	    h5_set_attr_str(f, "/", "generator", m->generator, e) < 0)
		goto fail;
	free(pos), free(tr), free(lb);
	return h5_commit(f, e);
fail:
	free(pos), free(tr), free(lb);
	h5_close(f);
	return -1;
}
