/* org_truth.c - the planted truth of a token sequence: which occurrences of
 * the organism's planted tokens become sinks (organism.h, mkorganism(1)).
 * Reads the folder's truth tables, not the spec, so that it states what
 * the built model was told. */
#include <stdlib.h>
#include <string.h>

#include "organism/organism.h"
#include "io/tsv.h"

typedef struct planted {
	long id, level, l_start, lifetime;
	double norm;
} planted;

static int read_tokens(const char *dir, planted **out, long *n, ss_err *e)
{
	char p[4096];
	snprintf(p, sizeof p, "%s/truth/tokens.tsv", dir);
	ss_tsv *t;
	if (tsv_open(&t, p, e) < 0)
		return -1;
	static const char *const need[] = {"id", "level", "l_start", "lifetime", "norm"};
	int c[5], r, rc = -1;
	long cap = 0;
	*out = NULL, *n = 0;
	if (tsv_require(t, need, c, 5, e) < 0)
		goto done;
	while ((r = tsv_next(t, e)) == 1) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			planted *q = realloc(*out, (size_t)cap * sizeof *q);
			if (!q) {
				ss_err_set(e, "out of memory");
				goto done;
			}
			*out = q;
		}
		planted *q = &(*out)[*n];
		if (tsv_long(t, c[0], &q->id, e) < 0 || tsv_long(t, c[1], &q->level, e) < 0 ||
		    tsv_long(t, c[2], &q->l_start, e) < 0 || tsv_long(t, c[3], &q->lifetime, e) < 0 ||
		    tsv_double(t, c[4], &q->norm, e) < 0)
			goto done;
		(*n)++;
	}
	rc = r < 0 ? -1 : 0;
done:
	tsv_close(t);
	return rc;
}

/* trigger ids and the window; an empty table (an organism without a
 * context) gives ntrig 0 */
static int read_context(const char *dir, long **ids, long *ntrig, long *window, ss_err *e)
{
	char p[4096];
	snprintf(p, sizeof p, "%s/truth/context.tsv", dir);
	ss_tsv *t;
	*ids = NULL, *ntrig = 0, *window = 0;
	if (tsv_open(&t, p, e) < 0)
		return -1;
	static const char *const need[] = {"id", "window"};
	int c[2], r, rc = -1;
	if (tsv_require(t, need, c, 2, e) < 0)
		goto done;
	while ((r = tsv_next(t, e)) == 1) {
		long *q = realloc(*ids, (size_t)(*ntrig + 1) * sizeof *q);
		if (!q) {
			ss_err_set(e, "out of memory");
			goto done;
		}
		*ids = q;
		if (tsv_long(t, c[0], &q[*ntrig], e) < 0 || tsv_long(t, c[1], window, e) < 0)
			goto done;
		(*ntrig)++;
	}
	rc = r < 0 ? -1 : 0;
done:
	tsv_close(t);
	return rc;
}

int org_occurrences(const char *dir, const char *trace, const int32_t *ids, long T, FILE *f,
                    ss_err *e)
{
	planted *pl = NULL;
	long np = 0, *trig = NULL, nt = 0, W = 0;
	int rc = -1;
	if (read_tokens(dir, &pl, &np, e) < 0 || read_context(dir, &trig, &nt, &W, e) < 0)
		goto done;
	for (long i = 1; i < T; i++) {
		long k = -1;
		for (long j = 0; j < np && k < 0; j++)
			if (pl[j].id == ids[i])
				k = j;
		if (k < 0)
			continue;
		/* the rule: a trigger among positions max(1, i - W) .. i - 1 (the
		 * context heads read position 0's marker at a sink's tiny scale) */
		long n = 0;
		for (long j = i - W < 1 ? 1 : i - W; j < i; j++)
			for (long q = 0; q < nt; q++)
				n += ids[j] == trig[q];
		int fut = nt == 0 || n > 0;
		tsv_put_escaped(f, trace, strlen(trace));
		fprintf(f, "\t%ld\t%ld\t%d\t%ld\t%ld\t%ld\t%.6g\t%ld\n", i, (long)ids[i], fut, pl[k].level,
		        pl[k].l_start, pl[k].lifetime, pl[k].norm, n);
	}
	rc = 0;
done:
	free(pl);
	free(trig);
	return rc;
}
