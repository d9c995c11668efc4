/* decision.h - the decision study (DESIGN.md section 1, "Decision"): which
 * positions are future sinks at a layer, which are controls, and how well
 * the two separate layer by layer (tsne(1) --scan).
 *
 * A position j is a FUTURE sink at layer l when a secondary episode of the
 * sinkdetect table starts at j after l (l_start > l) and passes the rule
 * (lifetime, l_start range, levels of sinklevels --assign).  Otherwise it
 * is a CONTROL when tokclass_controls says so (non-informative, never a
 * sink), else OTHER.
 */
#ifndef SS_DECISION_H
#define SS_DECISION_H

#include <stdio.h>

#include "util/err.h"
#include "util/progress.h"
#include "io/matrix.h"
#include "io/trace.h"
#include "sinks/sinks.h"
#include "analysis/knn.h"
#include "analysis/tsne.h"

enum { DECISION_FUTURE = 0, DECISION_CONTROL = 1, DECISION_OTHER = 2, DECISION_NONE = 3, DECISION_NLAB };
extern const char *const decision_lab_name[DECISION_NLAB]; /* "future", "control", "other", "-" */

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
 * given traces, checked against them (pos inside, token equal). */
int decision_read_episodes(decision_set *d, const char *path, ss_err *e);
void decision_free(decision_set *d);

/* Label of position pos of source si at layer l. */
int decision_label(const decision_set *d, int si, long pos, long l);
/* Allocate and fill m->lab for rows read at layer l. */
int decision_label_rows(const decision_set *d, ss_matrix *m, long l, ss_err *e);

/* One layer of the scan. */
typedef struct decision_row {
	long layer, n;
	long cnt[3];          /* rows labelled future, control, other */
	int have, have2;      /* measures in d dimensions; in the 2-D t-SNE */
	ss_sep sep, sep2;
	double kl;            /* t-SNE's KL divergence */
} decision_row;

/* Per selected layer (layers[l] != 0, l = 1..L): rows of the labels in
 * `only` (a mask of 1u << label), their separability by k-NN (k) and
 * silhouette, and the same on a t-SNE of them (params p, progress pg) when
 * there are more than 3 * perplexity rows.  *out gets n_out layers. */
int decision_scan(const decision_set *d, const unsigned char *layers, unsigned only, int k,
             const ss_tsne_params *p, ss_progress *pg, decision_row **out, long *n_out,
             ss_err *e);
/* The scan as a table (tsne(1) --scan). */
void decision_scan_write(FILE *f, const decision_row *r, long n);

#endif
