/* tsv.h - tab-separated tables with one header line.
 *
 * Fields never contain a raw tab or newline: text is escaped as \t, \n, \r,
 * \\, \" and \xNN (other control bytes, and each byte that is not part of
 * valid UTF-8: a table is always UTF-8), so awk, sort and join work on the
 * tables, and a reader that honours quotes (Python's csv in tab mode,
 * pandas' read_csv(sep='\t')) never sees a quote that opens a field: every
 * reader gets the same cells.  tsv_put_escaped is the one writer of text
 * cells; tsv_field reads the escapes back.  Several tables concatenated
 * with `cat` read as one: a line equal to the header is skipped.
 */
#ifndef SS_TSV_H
#define SS_TSV_H

#include <stdio.h>
#include "util/err.h"

typedef struct ss_tsv ss_tsv;

/* Open PATH ("-" for stdin) and read its header. An empty input is an
 * error ("FILE: empty input, expected a header line"). */
int tsv_open(ss_tsv **out, const char *path, ss_err *e);
void tsv_close(ss_tsv *t);

/* Column index by name, or -1. */
int tsv_col(const ss_tsv *t, const char *name);
/* Look up n required columns; a missing one is "FILE: missing column 'x'". */
int tsv_require(const ss_tsv *t, const char *const *names, int *idx, int n, ss_err *e);
int tsv_ncols(const ss_tsv *t);
const char *tsv_colname(const ss_tsv *t, int i);

/* Read the next row: 1 when a row was read, 0 at end of input, -1 on
 * error (a row whose field count differs from the header's, an I/O error). */
int tsv_next(ss_tsv *t, ss_err *e);
/* Field i of the current row, unescaped (length in *len when non-NULL;
 * the text may contain NUL bytes, it is always NUL-terminated). */
const char *tsv_field(const ss_tsv *t, int i, size_t *len);
/* Typed fields: errors are "FILE:LINE: column 'name': not an integer: 'x'". */
int tsv_long(const ss_tsv *t, int i, long *v, ss_err *e);
int tsv_double(const ss_tsv *t, int i, double *v, ss_err *e);

const char *tsv_path(const ss_tsv *t);
long tsv_lineno(const ss_tsv *t);

/* Writing: escape n bytes of s onto f. */
void tsv_put_escaped(FILE *f, const char *s, size_t n);
/* Print a double the way every table does (%.6g; "nan"/"inf" never appear
 * in our outputs, callers check finiteness first). */
void tsv_put_double(FILE *f, double x);
/* The end of a row: each of the n values after a tab, then the newline. */
void tsv_put_row_end(FILE *f, const double *v, size_t n);

#endif
