/* tsv.c - TSV tables; see tsv.h. */
#include "io/tsv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/opt.h"
#include "util/utf8.h"

struct ss_tsv {
	FILE *f;
	int own;        /* close f at the end */
	char *path;
	char *header;   /* raw header line, for skipping repeats */
	char **names;
	int ncols;
	char *line;     /* current raw line */
	size_t cap;
	char **fields;  /* unescaped fields of the current row */
	size_t *lens;
	long lineno;
};

static int unescape(char *s, size_t *outlen)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (*r != '\\') {
			*w++ = *r;
			continue;
		}
		r++;
		switch (*r) {
		case 't': *w++ = '\t'; break;
		case 'n': *w++ = '\n'; break;
		case 'r': *w++ = '\r'; break;
		case '\\': *w++ = '\\'; break;
		case '"': *w++ = '"'; break;
		case 'x': {
			int v = 0;
			for (int k = 1; k <= 2; k++) {
				char c = r[k];
				int d = c >= '0' && c <= '9' ? c - '0'
				      : c >= 'a' && c <= 'f' ? c - 'a' + 10
				      : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
				if (d < 0)
					return -1;
				v = v * 16 + d;
			}
			*w++ = (char)v;
			r += 2;
			break;
		}
		default:
			return -1; /* includes a trailing lone backslash */
		}
	}
	*w = '\0';
	*outlen = (size_t)(w - s);
	return 0;
}

/* Read one line into t->line without its newline; 1 ok, 0 EOF, -1 error. */
static int read_line(ss_tsv *t, ss_err *e)
{
	ssize_t n = getline(&t->line, &t->cap, t->f);
	if (n < 0) {
		if (ferror(t->f))
			return ss_err_errno(e, errno, "%s: read error", t->path);
		return 0;
	}
	t->lineno++;
	if (n > 0 && t->line[n - 1] == '\n')
		t->line[--n] = '\0';
	if (n > 0 && t->line[n - 1] == '\r')
		t->line[--n] = '\0';
	if (strlen(t->line) != (size_t)n)
		return ss_err_set(e, "%s:%ld: NUL byte in a table row", t->path, t->lineno);
	return 1;
}

/* Split t->line in place into fields; returns the count. */
static int split(ss_tsv *t, char **out, int max)
{
	int n = 0;
	char *p = t->line;
	for (;;) {
		char *tab = strchr(p, '\t');
		if (n < max)
			out[n] = p;
		n++;
		if (!tab)
			break;
		*tab = '\0';
		p = tab + 1;
	}
	return n;
}

int tsv_open(ss_tsv **out, const char *path, ss_err *e)
{
	*out = NULL;
	ss_tsv *t = calloc(1, sizeof *t);
	if (!t)
		return ss_err_set(e, "%s: out of memory", path);
	int isstdin = !strcmp(path, "-");
	t->path = strdup(isstdin ? "<stdin>" : path);
	t->f = isstdin ? stdin : fopen(path, "rb");
	t->own = !isstdin;
	if (!t->path || !t->f) {
		ss_err_errno(e, errno, "%s", path);
		if (t->f && t->own)
			fclose(t->f);
		t->f = NULL;
		tsv_close(t);
		return -1;
	}
	int r;
	do /* skip blank lines before the header */
		r = read_line(t, e);
	while (r == 1 && t->line[0] == '\0');
	if (r <= 0) {
		if (r == 0)
			ss_err_set(e, "%s: empty input, expected a header line", t->path);
		tsv_close(t);
		return -1;
	}
	t->header = strdup(t->line);
	int nc = 1;
	for (char *p = t->line; *p; p++)
		nc += *p == '\t';
	t->names = calloc((size_t)nc, sizeof *t->names);
	t->fields = calloc((size_t)nc, sizeof *t->fields);
	t->lens = calloc((size_t)nc, sizeof *t->lens);
	if (!t->header || !t->names || !t->fields || !t->lens) {
		ss_err_set(e, "%s: out of memory", t->path);
		tsv_close(t);
		return -1;
	}
	t->ncols = split(t, t->fields, nc);
	for (int i = 0; i < nc; i++) {
		t->names[i] = strdup(t->fields[i]);
		if (!t->names[i]) {
			ss_err_set(e, "%s: out of memory", t->path);
			tsv_close(t);
			return -1;
		}
		if (!t->names[i][0]) {
			ss_err_set(e, "%s:%ld: empty column name in the header (column %d)", t->path,
			           t->lineno, i + 1);
			tsv_close(t);
			return -1;
		}
	}
	*out = t;
	return 0;
}

void tsv_close(ss_tsv *t)
{
	if (!t)
		return;
	if (t->f && t->own)
		fclose(t->f);
	if (t->names)
		for (int i = 0; i < t->ncols; i++)
			free(t->names[i]);
	free(t->names);
	free(t->fields);
	free(t->lens);
	free(t->header);
	free(t->line);
	free(t->path);
	free(t);
}

int tsv_col(const ss_tsv *t, const char *name)
{
	for (int i = 0; i < t->ncols; i++)
		if (!strcmp(t->names[i], name))
			return i;
	return -1;
}

int tsv_require(const ss_tsv *t, const char *const *names, int *idx, int n, ss_err *e)
{
	for (int i = 0; i < n; i++) {
		idx[i] = tsv_col(t, names[i]);
		if (idx[i] < 0)
			return ss_err_set(e, "%s: missing column '%s'", t->path, names[i]);
	}
	return 0;
}

int tsv_ncols(const ss_tsv *t) { return t->ncols; }
const char *tsv_colname(const ss_tsv *t, int i) { return t->names[i]; }
const char *tsv_path(const ss_tsv *t) { return t->path; }
long tsv_lineno(const ss_tsv *t) { return t->lineno; }

int tsv_next(ss_tsv *t, ss_err *e)
{
	for (;;) {
		int r = read_line(t, e);
		if (r <= 0)
			return r;
		if (t->line[0] == '\0' || !strcmp(t->line, t->header))
			continue; /* blank line, or the header of a concatenated table */
		int n = split(t, t->fields, t->ncols);
		if (n != t->ncols)
			return ss_err_set(e, "%s:%ld: %d fields, the header has %d", t->path, t->lineno, n,
			                  t->ncols);
		for (int i = 0; i < n; i++)
			if (unescape(t->fields[i], &t->lens[i]))
				return ss_err_set(e, "%s:%ld: column '%s': bad escape sequence", t->path,
				                  t->lineno, t->names[i]);
		return 1;
	}
}

const char *tsv_field(const ss_tsv *t, int i, size_t *len)
{
	if (len)
		*len = t->lens[i];
	return t->fields[i];
}

int tsv_long(const ss_tsv *t, int i, long *v, ss_err *e)
{
	if (ss_parse_long(t->fields[i], v))
		return ss_err_set(e, "%s:%ld: column '%s': not an integer: '%s'", t->path, t->lineno,
		                  t->names[i], t->fields[i]);
	return 0;
}

int tsv_double(const ss_tsv *t, int i, double *v, ss_err *e)
{
	if (ss_parse_double(t->fields[i], v))
		return ss_err_set(e, "%s:%ld: column '%s': not a finite number: '%s'", t->path,
		                  t->lineno, t->names[i], t->fields[i]);
	return 0;
}

void tsv_put_escaped(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '\t': fputs("\\t", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\\': fputs("\\\\", f); break;
		case '"': fputs("\\\"", f); break;
		default:
			if (c < 0x20 || c == 0x7f) {
				fprintf(f, "\\x%02x", c);
			} else if (c >= 0x80) {
				/* a valid sequence as it is; a byte of none as \xNN,
				 * so the table stays UTF-8 for csv and pandas */
				size_t k = ss_utf8_len(s + i, n - i);
				if (k)
					fwrite(s + i, 1, k, f), i += k - 1;
				else
					fprintf(f, "\\x%02x", c);
			} else {
				fputc(c, f);
			}
		}
	}
}

void tsv_put_double(FILE *f, double x)
{
	fprintf(f, "%.6g", x);
}

void tsv_put_row_end(FILE *f, const double *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		fputc('\t', f);
		tsv_put_double(f, v[i]);
	}
	fputc('\n', f);
}
