/* seqs.c - the token sequences of a run; see seqs.h. */
#include "engine/seqs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/tsv.h"

void seqs_free(ss_seqs *s)
{
	for (size_t i = 0; s->v && i < s->n; i++) {
		free(s->v[i].ids);
		free(s->v[i].name);
		free(s->v[i].out);
	}
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

/* "%d" or "{row}" in the pattern replaced by the row number. */
static char *out_name(const char *pat, long row, ss_err *e)
{
	const char *a = strstr(pat, "%d"), *b = strstr(pat, "{row}");
	const char *at = a && (!b || a < b) ? a : b;
	size_t skip = at == a ? 2 : 5;
	char num[32];
	snprintf(num, sizeof num, "%ld", row);
	size_t n = strlen(pat) + sizeof num;
	char *s = ss_malloc(n, 1, "output name", e);
	if (s)
		snprintf(s, n, "%.*s%s%s", (int)(at - pat), pat, num, at + skip);
	return s;
}

static int add_seq(ss_seqs *s, const ss_seq_src *src, const tok_ids *ids, const char *name,
                   long row, ss_err *e)
{
	ss_seq *nv = realloc(s->v, (s->n + 1) * sizeof *nv);
	if (!nv)
		return ss_err_set(e, "out of memory");
	s->v = nv;
	ss_seq *q = &nv[s->n++];
	memset(q, 0, sizeof *q);
	q->row = row;
	char nb[4200];
	if (row >= 0)
		snprintf(nb, sizeof nb, "%s:%ld", name, row);
	else
		snprintf(nb, sizeof nb, "%s", name);
	q->name = ss_strdup(nb, e);
	q->ids = ss_malloc(ids->n ? ids->n : 1, sizeof *q->ids, "token ids", e);
	if (!q->name || !q->ids)
		return -1;
	q->T = (long)ids->n;
	if (src->max_tokens > 0 && q->T > src->max_tokens)
		q->T = src->max_tokens;
	if (q->T == 0 && !src->allow_empty)
		return ss_err_set(e, "%s: no tokens (empty text%s)", q->name,
		                  src->no_post ? " and --no-bos" : "");
	if (ids->n) /* ids->v is NULL for an empty text */
		memcpy(q->ids, ids->v, ids->n * sizeof *ids->v);
	return 0;
}

static int encode(tok *t, const ss_seq_src *src, const char *text, size_t n, tok_ids *ids, ss_err *e)
{
	ids->n = 0;
	if (n == 0) /* "" is no tokens, even for a tokenizer that adds a BOS */
		return src->allow_empty ? 0 : ss_err_set(e, "empty text, nothing to run");
	return src->fmt == SS_PF_RAW ? tok_encode(t, text, n, src->no_post ? 0 : TOK_POST, ids, e)
	                             : gen_encode_prompt(t, src->fmt, text, n, ids, e);
}

static int read_all(ss_seqs *s, const ss_seq_src *src, tok *t, ss_err *e)
{
	if (src->ids) {
		int32_t *ids = NULL;
		long T = 0;
		if (tok_read_ids(src->ids, &ids, &T, e) < 0)
			return -1;
		tok_ids a = {ids, (size_t)T, (size_t)T};
		int r = add_seq(s, src, &a, src->ids, -1, e);
		free(ids);
		return r;
	}
	tok_ids ids = {0};
	int rc = 0;
	if (src->jsonl) {
		tok_rows rows;
		if (tok_jsonl_read(src->jsonl, src->field, src->index, &rows, e) < 0)
			return -1;
		const char *nm = strcmp(src->jsonl, "-") ? src->jsonl : "<stdin>";
		for (size_t i = 0; i < rows.n && !rc; i++) {
			if (encode(t, src, rows.v[i].text, rows.v[i].len, &ids, e) < 0)
				rc = ss_err_prefix(e, "%s:%ld: field '%s'", nm, rows.v[i].line, src->field);
			else
				rc = add_seq(s, src, &ids, nm, rows.v[i].row, e);
		}
		tok_rows_free(&rows);
	} else {
		char *buf;
		size_t len;
		if (tok_read_text(src->text, &buf, &len, e) < 0)
			return -1;
		if (len == 0 && !src->allow_empty)
			rc = ss_err_set(e, "%s: empty text, nothing to run", strcmp(src->text, "-") ? src->text : "<stdin>");
		else
			rc = encode(t, src, buf, len, &ids, e);
		free(buf);
		if (!rc)
			rc = add_seq(s, src, &ids, strcmp(src->text, "-") ? src->text : "<stdin>", -1, e);
	}
	free(ids.v);
	return rc;
}

int seqs_read(ss_seqs *s, const ss_seq_src *src, tok *t, ss_err *e)
{
	memset(s, 0, sizeof *s);
	if (read_all(s, src, t, e) < 0)
		return -1;
	for (size_t i = 0; src->out_pattern && i < s->n; i++)
		if (!(s->v[i].out = out_name(src->out_pattern, s->v[i].row, e)))
			return -1;
	return 0;
}

int seqs_print_tokens(FILE *f, const ss_seqs *s, const tok *t, int with_row, ss_err *e)
{
	fputs(with_row ? "row\ti\tid\tpiece\n" : "i\tid\tpiece\n", f);
	for (size_t k = 0; k < s->n; k++) {
		const ss_seq *q = &s->v[k];
		size_t *off = ss_malloc((size_t)q->T + 1, sizeof *off, "token pieces", e);
		char *p = off ? tok_pieces(t, q->ids, (size_t)q->T, off, e) : NULL;
		if (!p) {
			free(off);
			return ss_err_prefix(e, "%s", q->name);
		}
		for (long i = 0; i < q->T; i++) {
			if (with_row)
				fprintf(f, "%ld\t", q->row);
			fprintf(f, "%ld\t%d\t", i, q->ids[i]);
			tsv_put_escaped(f, p + off[i], off[i + 1] - off[i]);
			fputc('\n', f);
		}
		free(p);
		free(off);
	}
	return 0;
}
