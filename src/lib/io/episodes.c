/* episodes.c - the sink-episode table, TSV and /sinks; see episodes.h. */
#include "io/episodes.h"

#include <stdlib.h>
#include <string.h>

#include "io/tsv.h"

const char *const episode_cols[EP_NCOL] = {
	"trace", "pos", "token", "text", "kind", "l_start", "l_end", "lifetime", "peak_norm",
	"norm_ratio", "cos0", "score", "score_start", "mlp_norm_start", "level", "experts",
};

void episodes_put_header(FILE *f, int with)
{
	for (int c = 0; c < EP_NCOL; c++) {
		if ((c == EP_LEVEL && !(with & EP_WITH_LEVEL)) || (c == EP_EXPERTS && !(with & EP_WITH_EXPERTS)))
			continue;
		if (c)
			fputc('\t', f);
		fputs(episode_cols[c], f);
	}
	fputc('\n', f);
}

void episodes_put_row(FILE *f, const char *trace, const char *text, const ss_episode *p,
                      int with)
{
	int with_level = with & EP_WITH_LEVEL;
	tsv_put_escaped(f, trace, strlen(trace));
	fprintf(f, "\t%ld\t%d\t", p->pos, p->token);
	tsv_put_escaped(f, text, strlen(text));
	fprintf(f, "\t%s\t%ld\t%ld\t%ld", p->primary ? "primary" : "secondary", p->l_start,
	        p->l_end, p->lifetime);
	/* the level, a small integer, prints the same through %.6g */
	const double v[7] = {p->peak_norm, p->norm_ratio, p->cos0, p->score, p->score_start,
	                     p->mlp_norm_start, (double)p->level};
	if (!(with & EP_WITH_EXPERTS)) {
		tsv_put_row_end(f, v, with_level ? 7 : 6);
		return;
	}
	for (int k = 0; k < (with_level ? 7 : 6); k++) {
		fputc('\t', f);
		tsv_put_double(f, v[k]);
	}
	fprintf(f, "\t%s\n", p->experts[0] ? p->experts : "-");
}

#define MAX_LAYER 1000000

/* One row of the table into *p, by the column rules of episodes.h. */
static int parse_row(const ss_tsv *t, const int *ix, int iprim, ss_episode *p, ss_err *e)
{
	const char *path = tsv_path(t);
	long ln = tsv_lineno(t);
	memset(p, 0, sizeof *p);
	if (ix[EP_KIND] >= 0) {
		const char *kind = tsv_field(t, ix[EP_KIND], NULL);
		if (!strcmp(kind, "primary"))
			p->primary = 1;
		else if (strcmp(kind, "secondary"))
			return ss_err_set(e, "%s:%ld: column 'kind': expected primary or secondary, got '%s'",
			                  path, ln, kind);
	} else if (iprim >= 0) {
		long v;
		if (tsv_long(t, iprim, &v, e))
			return -1;
		if (v != 0 && v != 1)
			return ss_err_set(e, "%s:%ld: column 'primary': expected 0 or 1, got %ld", path, ln,
			                  v);
		p->primary = (int)v;
	}
	long tok = 0;
	struct { int c; long *dst; } iv[] = {
		{EP_POS, &p->pos}, {EP_TOKEN, &tok}, {EP_L_START, &p->l_start},
		{EP_L_END, &p->l_end}, {EP_LIFETIME, &p->lifetime}, {EP_LEVEL, &p->level},
	};
	for (size_t k = 0; k < sizeof iv / sizeof *iv; k++)
		if (ix[iv[k].c] >= 0 && tsv_long(t, ix[iv[k].c], iv[k].dst, e))
			return -1;
	if (p->pos < 0)
		return ss_err_set(e, "%s:%ld: column 'pos': %ld is not a position", path, ln, p->pos);
	if (tok < 0 || tok > INT32_MAX)
		return ss_err_set(e, "%s:%ld: column 'token': %ld is not a token id", path, ln, tok);
	p->token = (int32_t)tok;
	int have_s = ix[EP_L_START] >= 0, have_t = ix[EP_LIFETIME] >= 0;
	int bad_s = have_s && (p->l_start < 1 || p->l_start > MAX_LAYER);
	int bad_t = have_t && (p->lifetime < 1 || p->lifetime > MAX_LAYER);
	if (bad_s || bad_t) {
		if (have_s && have_t)
			return ss_err_set(e, "%s:%ld: l_start %ld, lifetime %ld: must be positive layer numbers",
			                  path, ln, p->l_start, p->lifetime);
		return ss_err_set(e, "%s:%ld: %s %ld: must be a positive layer number", path, ln,
		                  have_s ? "l_start" : "lifetime", have_s ? p->l_start : p->lifetime);
	}
	if (p->level < 0)
		return ss_err_set(e, "%s:%ld: column 'level': %ld: expected 0 (no level) or a level number",
		                  path, ln, p->level);
	double *dv[] = {&p->peak_norm, &p->norm_ratio, &p->cos0, &p->score, &p->score_start,
	                &p->mlp_norm_start};
	for (int c = EP_PEAK_NORM; c <= EP_MLP_NORM_START; c++)
		if (ix[c] >= 0 && tsv_double(t, ix[c], dv[c - EP_PEAK_NORM], e))
			return -1;
	if (!(p->mlp_norm_start >= 0))
		return ss_err_set(e, "%s:%ld: column 'mlp_norm_start': %g is not a norm", path, ln,
		                  p->mlp_norm_start);
	if (ix[EP_EXPERTS] >= 0) {
		const char *x = tsv_field(t, ix[EP_EXPERTS], NULL);
		size_t len = strlen(x);
		int ok = len < sizeof p->experts && len > 0;
		for (size_t k = 0; ok && k < len; k++)
			ok = (x[k] >= '0' && x[k] <= '9') || (x[k] == ',' && k && x[k - 1] != ',' && k + 1 < len);
		if (!ok && strcmp(x, "-"))
			return ss_err_set(e, "%s:%ld: column 'experts': expected expert numbers like 3,7 or -, "
			                  "got '%s'", path, ln, x);
		if (ok)
			memcpy(p->experts, x, len + 1);
	}
	return 0;
}

static int grow(ss_eptab *t, ss_err *e)
{
	if (t->n < t->cap)
		return 0;
	size_t c = t->cap ? 2 * t->cap : 256;
	ss_episode *ep = realloc(t->ep, c * sizeof *ep);
	if (ep)
		t->ep = ep;
	char **tr = realloc(t->trace, c * sizeof *tr);
	if (tr)
		t->trace = tr;
	char **tx = realloc(t->text, c * sizeof *tx);
	if (tx)
		t->text = tx;
	long *ln = realloc(t->line, c * sizeof *ln);
	if (ln)
		t->line = ln;
	if (!ep || !tr || !tx || !ln)
		return ss_err_set(e, "out of memory reading episodes");
	t->cap = c;
	return 0;
}

static void drop_from(ss_eptab *t, size_t n0)
{
	for (size_t i = n0; i < t->n; i++) {
		free(t->trace[i]);
		free(t->text[i]);
	}
	t->n = n0;
}

int eptab_read(ss_eptab *t, const char *path, unsigned need, ss_err *e)
{
	ss_tsv *ts;
	if (tsv_open(&ts, path, e))
		return -1;
	size_t n0 = t->n;
	int ix[EP_NCOL], got, rc = -1;
	unsigned have = 0;
	for (int c = 0; c < EP_NCOL; c++) {
		ix[c] = tsv_col(ts, episode_cols[c]);
		if (ix[c] >= 0)
			have |= EP_BIT(c);
		else if (need & EP_BIT(c)) {
			ss_err_set(e, "%s: missing column '%s'", tsv_path(ts), episode_cols[c]);
			goto done;
		}
	}
	int iprim = ix[EP_KIND] < 0 ? tsv_col(ts, "primary") : -1;
	while ((got = tsv_next(ts, e)) == 1) {
		if (grow(t, e))
			goto done;
		size_t i = t->n;
		if (parse_row(ts, ix, iprim, &t->ep[i], e))
			goto done;
		t->trace[i] = strdup(ix[EP_TRACE] >= 0 ? tsv_field(ts, ix[EP_TRACE], NULL) : "");
		t->text[i] = strdup(ix[EP_TEXT] >= 0 ? tsv_field(ts, ix[EP_TEXT], NULL) : "");
		t->line[i] = tsv_lineno(ts);
		t->n++;
		if (!t->trace[i] || !t->text[i]) {
			ss_err_set(e, "out of memory reading episodes");
			goto done;
		}
	}
	if (got < 0)
		goto done;
	t->cols = t->files++ ? t->cols & have : have;
	rc = 0;
done:
	if (rc)
		drop_from(t, n0);
	tsv_close(ts);
	return rc;
}

void eptab_free(ss_eptab *t)
{
	drop_from(t, 0);
	free(t->ep);
	free(t->trace);
	free(t->text);
	free(t->line);
	memset(t, 0, sizeof *t);
}

static const char *const int_fields[] = {"pos", "token", "primary", "l_start", "l_end",
                                         "lifetime"};
static const char *const flt_fields[] = {"peak_norm", "norm_ratio", "cos0", "score",
                                         "score_start", "mlp_norm_start"};

static void ep_get(const ss_episode *p, int32_t *iv, float *fv)
{
	iv[0] = (int32_t)p->pos;
	iv[1] = p->token;
	iv[2] = p->primary;
	iv[3] = (int32_t)p->l_start;
	iv[4] = (int32_t)p->l_end;
	iv[5] = (int32_t)p->lifetime;
	fv[0] = (float)p->peak_norm;
	fv[1] = (float)p->norm_ratio;
	fv[2] = (float)p->cos0;
	fv[3] = (float)p->score;
	fv[4] = (float)p->score_start;
	fv[5] = (float)p->mlp_norm_start;
}

int episodes_write_h5(ss_h5 *f, const ss_episode *eps, size_t n, ss_err *e)
{
	int32_t *iv = ss_malloc(6 * (n ? n : 1), sizeof(int32_t), "/sinks", e);
	float *fv = ss_malloc(6 * (n ? n : 1), sizeof(float), "/sinks", e);
	int rc = -1;
	if (!iv || !fv)
		goto done;
	for (size_t i = 0; i < n; i++) {
		int32_t a[6];
		float b[6];
		ep_get(&eps[i], a, b);
		for (int k = 0; k < 6; k++) {
			iv[k * n + i] = a[k];
			fv[k * n + i] = b[k];
		}
	}
	char path[64];
	size_t dims[1] = {n};
	for (int k = 0; k < 6; k++) {
		snprintf(path, sizeof path, "/sinks/%s", int_fields[k]);
		if (h5_write_i32(f, path, 1, dims, iv + k * n, e))
			goto done;
		snprintf(path, sizeof path, "/sinks/%s", flt_fields[k]);
		if (h5_write_f32(f, path, 1, dims, fv + k * n, e))
			goto done;
	}
	rc = 0;
done:
	free(iv);
	free(fv);
	return rc;
}

int episodes_read_h5(ss_h5 *f, ss_episode **eps, size_t *n, ss_err *e)
{
	*eps = NULL;
	*n = 0;
	int32_t *iv[6] = {0};
	float *fv[6] = {0};
	size_t cnt = 0;
	int rc = -1;
	char path[64];
	for (int k = 0; k < 6; k++) {
		size_t d[1], want[1] = {cnt};
		snprintf(path, sizeof path, "/sinks/%s", int_fields[k]);
		if (h5_read_i32(f, path, 1, k ? want : NULL, &iv[k], d, e))
			goto done;
		if (!k)
			cnt = d[0];
		want[0] = cnt;
		snprintf(path, sizeof path, "/sinks/%s", flt_fields[k]);
		if (h5_read_f32(f, path, 1, want, &fv[k], d, e))
			goto done;
	}
	ss_episode *out = ss_calloc(cnt ? cnt : 1, sizeof *out, "/sinks", e);
	if (!out)
		goto done;
	for (size_t i = 0; i < cnt; i++) {
		ss_episode *p = &out[i];
		p->pos = iv[0][i];
		p->token = iv[1][i];
		p->primary = iv[2][i] != 0;
		p->l_start = iv[3][i];
		p->l_end = iv[4][i];
		p->lifetime = iv[5][i];
		p->peak_norm = fv[0][i];
		p->norm_ratio = fv[1][i];
		p->cos0 = fv[2][i];
		p->score = fv[3][i];
		p->score_start = fv[4][i];
		p->mlp_norm_start = fv[5][i];
	}
	*eps = out;
	*n = cnt;
	rc = 0;
done:
	for (int k = 0; k < 6; k++) {
		free(iv[k]);
		free(fv[k]);
	}
	return rc;
}
