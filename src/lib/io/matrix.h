/* matrix.h - a matrix of labelled rows: the vectors tsne(1) embeds and
 * scans, read from HDF5 datasets (a 2-D dataset, or one layer of
 * /acts/COMPONENT of a trace) or from a TSV matrix, and an embedding of
 * them written as HDF5 (/tsne, tsne(1)).
 *
 * Row i is position pos[i] of source si[i] (the i-th FILE.h5:/DATASET
 * operand), or line i of a TSV matrix (si NULL; its trace and label columns
 * kept as text).  lab[i] is the caller's small integer label (the decision
 * study's future/control/other, analysis/decision.h); this module only
 * carries and selects by it.
 */
#ifndef SS_MATRIX_H
#define SS_MATRIX_H

#include <stdio.h>

#include "util/err.h"
#include "io/h5io.h"

/* One FILE.h5:/DATASET operand. */
typedef struct ss_mat_src {
	char *file;     /* path as given */
	char *dset;     /* dataset path inside */
	char *name;     /* trace name: file name without directory */
	ss_h5 *h;       /* open after matrix_src_open */
	int is_acts;    /* dataset /acts/COMPONENT: rows of one layer */
	const char *comp; /* COMPONENT (inside dset) */
	long T;         /* rows; when T_known, a read must find this many */
	int T_known;
} ss_mat_src;

typedef struct ss_matrix {
	long n, d;
	float *X;        /* [n * d], row-major */
	int *si;         /* [n] source index; NULL for a TSV matrix */
	long *pos;       /* [n] */
	char **tname;    /* TSV only: the trace column's text, or NULL */
	int *lab;        /* [n] the caller's labels (NULL until set) */
	char **ltext;    /* TSV only: the label column's text, or NULL */
} ss_matrix;

/* Split "FILE.h5:/DATASET" at its last ":/" (file names may hold colons);
 * a missing dataset is a usage error. */
int matrix_src_parse(ss_mat_src *s, const char *arg, ss_err *e);
/* Open the file and check that the dataset exists. */
int matrix_src_open(ss_mat_src *s, ss_err *e);
void matrix_src_free(ss_mat_src *s);

/* The rows of every source, in order: layer L of /acts/ datasets (L is
 * ignored for plain 2-D datasets).  Every value must be finite and every
 * source have the same dimension; sets each source's T. */
int matrix_read_h5(ss_mat_src *S, int ns, long L, ss_matrix *m, ss_err *e);

/* A TSV matrix from f (messages name it `name`): an optional header line
 * (any field not a number); the columns named trace, pos and label are
 * metadata, every other column a coordinate.  Without a pos column a row's
 * pos is its index.  Blank lines are skipped. */
int matrix_read_tsv(FILE *f, const char *name, ss_matrix *m, ss_err *e);

/* Keep the rows whose label's bit is set in mask (1u << lab[i]). */
void matrix_select(ss_matrix *m, unsigned mask);
void matrix_free(ss_matrix *m);

/* What /tsne/xy's attributes record of the run that made it. */
typedef struct ss_embed_meta {
	double kl;        /* final KL divergence */
	int kl_exact;     /* 1 exact, 0 Barnes-Hut estimate */
	double perplexity, theta;
	long iterations, layer, seed;
	const char *generator; /* "tsne VERSION" */
} ss_embed_meta;

/* Row i's texts: its trace (the source's name, the TSV trace column, or
 * "-") and its label (the TSV label column, else lab_names[lab[i]]). */
const char *matrix_row_trace(const ss_matrix *m, const ss_mat_src *S, long i);
const char *matrix_row_label(const ss_matrix *m, const char *const *lab_names, long i);

/* The 2-D embedding Y [n * 2] of m's rows as a table on f: trace, pos,
 * label, x, y (tsne(1)). */
void matrix_write_embedding_tsv(FILE *f, const ss_matrix *m, const ss_mat_src *S,
                                const char *const *lab_names, const float *Y);
/* The same as a new HDF5 file (path, or "-" for stdout): /tsne/xy,
 * /tsne/pos, /tsne/trace and /tsne/label, with meta as attributes. */
int matrix_write_embedding_h5(const char *path, const ss_matrix *m, const ss_mat_src *S,
                              const char *const *lab_names, const float *Y,
                              const ss_embed_meta *meta, ss_err *e);

#endif
