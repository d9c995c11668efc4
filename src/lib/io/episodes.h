/* episodes.h - the sink-episode table: the one reader and the one writer of
 * its TSV form (sinkdetect(1); sinklevels(1) --assign adds a level column)
 * and of its HDF5 form (/sinks, sinkscope-h5(5)).
 *
 * What an episode is and how its fields are computed belongs to the sink
 * rule (sinks/sinks.h); this module only moves the records in and out, so
 * that every program reads the table by the same column rules.
 */
#ifndef SS_EPISODES_H
#define SS_EPISODES_H

#include <stdint.h>
#include <stdio.h>

#include "util/err.h"
#include "io/h5io.h"

/* One sink episode: a maximal run l_start..l_end (layers 1..L) in which pos
 * is a sink.  Norms and cosines are of h[l] (resid row l). */
typedef struct ss_episode {
	long pos;
	int32_t token;
	int primary;          /* 1 primary, 0 secondary */
	long l_start, l_end, lifetime;
	double peak_norm;     /* max over the episode of ||h[l][pos]|| */
	double norm_ratio;    /* max over the episode of ||h[l][pos]|| / median_j ||h[l][j]|| */
	double cos0;          /* mean over the episode of cos(h[l][pos], h[l][0]) */
	/* Scores of the attention that reads the sink's states: the sink-score
	 * of layers l_start+1 .. min(l_end+1, L) (recv rows l_start .. ), 0 when
	 * l_start = L.  Layer l's own attention reads h[l-1]. */
	double score;         /* mean over those layers */
	double score_start;   /* sink-score of layer l_start+1 (recv row l_start) */
	double mlp_norm_start;/* ||m[l_start][pos]|| (mlp_out_norm row l_start-1) */
	long level;           /* sinklevels' level, 1-based; 0: in no level, or not assigned */
	char experts[96];     /* mixtures of experts: the experts of m[l_start][pos] (the
	                         router's choice, /stats/moe_experts), "3,7"; "" otherwise */
} ss_episode;

/* The columns of the table, in the order the writer prints them (the
 * level column only with --assign). */
enum ss_ep_col {
	EP_TRACE, EP_POS, EP_TOKEN, EP_TEXT, EP_KIND, EP_L_START, EP_L_END, EP_LIFETIME,
	EP_PEAK_NORM, EP_NORM_RATIO, EP_COS0, EP_SCORE, EP_SCORE_START, EP_MLP_NORM_START,
	EP_LEVEL, EP_EXPERTS, EP_NCOL
};
#define EP_BIT(c) (1u << (c))
#define EP_ALL (EP_BIT(EP_LEVEL) - 1) /* every column sinkdetect writes */
extern const char *const episode_cols[EP_NCOL];

/* Writing: the header line, and one row (trace name and token text are
 * escaped by tsv_put_escaped; numbers as tsv_put_double).  with: EP_WITH_LEVEL
 * adds the level column, EP_WITH_EXPERTS the experts column after it
 * (mixtures of experts; "-" in a row without experts). */
#define EP_WITH_LEVEL 1
#define EP_WITH_EXPERTS 2
void episodes_put_header(FILE *f, int with);
void episodes_put_row(FILE *f, const char *trace, const char *text, const ss_episode *p,
                      int with);

/* Rows read from one or more tables. */
typedef struct ss_eptab {
	size_t n, cap;
	ss_episode *ep;    /* [n] absent columns read as 0 (kind absent: secondary), experts
	                      as "" */
	char **trace;      /* [n] "" when the table has no trace column */
	char **text;       /* [n] "" when it has no text column */
	long *line;        /* [n] line of the row in its file */
	unsigned cols;     /* EP_BIT of the columns present in every table read */
	int files;         /* tables read */
} ss_eptab;

/* Append the rows of the table PATH ("-": stdin) to t (zeroed before the
 * first call).  need: the columns that must be present (EP_BIT mask); the
 * first missing one is "FILE: missing column 'x'".  Every known column
 * present is parsed and checked, whatever the caller needs:
 *   kind        primary or secondary (without it, a column primary, 0 or
 *               1, when present; else every row is secondary);
 *   pos         an integer >= 0;   token  an integer 0..2^31-1;
 *   l_start, lifetime  integers 1..1000000;   l_end  an integer;
 *   level       an integer >= 0;   experts  comma-separated integers >= 0, or "-";
 *   the rest finite numbers, and mlp_norm_start >= 0.
 * Errors name the file, the line and the column; on error t keeps the rows
 * of earlier tables only. */
int eptab_read(ss_eptab *t, const char *path, unsigned need, ss_err *e);
void eptab_free(ss_eptab *t);

/* /sinks in an HDF5 file (sinkscope-h5(5)): one 1-D dataset per field
 * (pos, token, primary, l_start, l_end, lifetime: int32; peak_norm,
 * norm_ratio, cos0, score, score_start, mlp_norm_start: float32).  The
 * rule's parameters are the group's attributes (sink_params_write_h5). */
int episodes_write_h5(ss_h5 *f, const ss_episode *eps, size_t n, ss_err *e);
int episodes_read_h5(ss_h5 *f, ss_episode **eps, size_t *n, ss_err *e);

#endif
