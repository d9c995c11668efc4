/* decision.h - the decision study (DESIGN.md section 1, "Decision"): which
 * positions are future sinks at a layer, what they are compared with, and
 * the layer from which they separate (tsne(1) --scan).
 *
 * Labels at layer l (decision_label):
 *   FUTURE   a secondary episode of the sinkdetect table starts at the
 *            position after l (l_start > l) and passes the rule (lifetime,
 *            l_start range, levels of sinklevels --assign);
 *   TWIN     else: an occurrence, never a sink (the sink rule at no layer),
 *            of a token that is a future sink elsewhere under the rule (the
 *            same text in a context where it does not become a sink);
 *   CONTROL  else: a non-informative token never a sink (tokclass_controls)
 *            whose text is never a future sink;
 *   OTHER    the rest.
 * FUTURE against TWIN compares like with like: only the context differs,
 * so a decision layer can show.  FUTURE against CONTROL differs by token
 * identity at every layer.
 */
#ifndef SS_DECISION_H
#define SS_DECISION_H

#include <stdint.h>
#include <stdio.h>

#include "util/err.h"
#include "io/matrix.h"
#include "io/trace.h"
#include "sinks/sinks.h"
#include "analysis/knn.h"

enum {
	DECISION_FUTURE = 0,
	DECISION_CONTROL = 1,
	DECISION_OTHER = 2,
	DECISION_TWIN = 3,
	DECISION_NONE = 4, /* no label (a TSV matrix without a label column) */
	DECISION_NLAB
};
/* "future", "control", "other", "twin", "-" */
extern const char *const decision_lab_name[DECISION_NLAB];

/* Which secondary episodes make future sinks. */
typedef struct decision_rule {
	long min_life;        /* lifetime >= min_life */
	long lo, hi;          /* lo <= l_start <= hi */
	const long *levels;   /* level among these (n_levels 0: any) */
	size_t n_levels;
} decision_rule;

typedef struct decision_future {
	int si;               /* source index */
	long pos, l_start, lifetime, level;
} decision_future;

/* The sources with their traces, control masks and future-sink episodes. */
typedef struct decision_set {
	ss_mat_src *S;        /* [ns], borrowed */
	int ns;
	ss_trace *tr;         /* [ns]; tr[k] read by decision_load */
	unsigned char **control; /* [ns][T] */
	unsigned char **twin; /* [ns][T] set by decision_read_episodes */
	unsigned char **never; /* [ns][T] 1: no layer's sink (the sink rule) */
	long L;               /* layers of the traces */
	decision_future *ep;       /* [n_ep] the secondary episodes of the table */
	size_t n_ep;
	decision_rule rule;
} decision_set;

int decision_init(decision_set *d, ss_mat_src *S, int ns, const decision_rule *rule, ss_err *e);
/* Read source k's trace (its file open) and its controls under the sink
 * rule sp and token classes; every trace must have the same layers. */
int decision_load(decision_set *d, int k, const ss_sink_params *sp, unsigned classes, ss_err *e);
/* The sinkdetect (or sinklevels --assign) table at path: episodes of the
 * given traces, checked against them (pos inside, token equal); then the
 * twins of the future sinks. */
int decision_read_episodes(decision_set *d, const char *path, ss_err *e);
void decision_free(decision_set *d);

/* Label of position pos of source si at layer l. */
int decision_label(const decision_set *d, int si, long pos, long l);
/* Allocate and fill m->lab for rows read at layer l. */
int decision_label_rows(const decision_set *d, ss_matrix *m, long l, ss_err *e);
/* Allocate and fill m->lab from the rows' label column m->ltext: a label's
 * name (decision_lab_name), OTHER for any other text, NONE without one. */
int decision_label_text(ss_matrix *m, ss_err *e);

/* A comma-separated list of label names (future, twin, control, other) as
 * a bit mask (1 << label); an unknown name or an empty list is a usage
 * error naming option what. */
int decision_parse_labels(const char *s, const char *what, unsigned *mask, ss_err *e);
/* "K[,K...]", levels 1 and up, into *levels (malloc'd; *n of them); else a
 * usage error naming option what. */
int decision_parse_levels(const char *s, const char *what, long **levels, size_t *n, ss_err *e);

/* One comparison of a layer: FUTURE (class 0) against TWIN or CONTROL
 * (class 1), in the full space of the vectors. */
typedef struct decision_cmp {
	long n0, n1;          /* rows of each class */
	int have;             /* both classes present and n0 + n1 > k */
	double acc;           /* leave-one-out k-NN accuracy (knn.h) */
	double lo, hi;        /* its Wilson 95% interval over n0 + n1 rows */
	double chance;        /* mean accuracy with the labels permuted */
	double chance_hi;     /* 95th percentile of those accuracies */
	double silhouette;    /* knn.h, sklearn's silhouette_score */
	int leaves;           /* lo > chance_hi: separability has left chance */
} decision_cmp;

typedef struct decision_row {
	long layer;
	long n_future, n_twin, n_control;
	decision_cmp same;    /* FUTURE vs TWIN; labels permuted within each token */
	decision_cmp ctrl;    /* FUTURE vs CONTROL; labels permuted over all rows */
} decision_row;

typedef struct decision_scan_params {
	int k;                /* neighbours of the vote */
	int permutations;     /* permutations of the chance level (>= 1) */
	uint64_t seed;
} decision_scan_params;

/* Per selected layer (layers[l] != 0, l = 1..L): both comparisons.
 * *out gets n_out rows; *decision the decision layer (decision_layer_of),
 * 0 when none. */
int decision_scan(const decision_set *d, const unsigned char *layers,
                  const decision_scan_params *p, decision_row **out, long *n_out,
                  long *decision, ss_err *e);

/* The decision layer of a scan: the earliest scanned layer from which on
 * (that layer and every later one with a same-text comparison) the Wilson
 * lower bound of the same-text k-NN accuracy exceeds the 95th percentile
 * of its permutation chance; 0 when no layer qualifies. */
long decision_layer_of(const decision_row *r, long n);

/* The Wilson score interval of a proportion p over n trials at normal
 * quantile z (1.959964 for 95%). */
void decision_wilson(double p, long n, double z, double *lo, double *hi);

/* The scan as a table (tsne(1) --scan); the decision column is 1 on the
 * decision layer's row. */
void decision_scan_write(FILE *f, const decision_row *r, long n, long decision);

#endif
