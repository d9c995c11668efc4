/* tok_input.c - text and JSON Lines input for programs that tokenize, and
 * the per-token strings of /tokens/text. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tok/tok_impl.h"
#include "util/opt.h"

static const char *shown(const char *path) { return strcmp(path, "-") ? path : "<stdin>"; }

static int slurp(const char *path, char **buf, size_t *n, ss_err *e)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!f)
		return ss_err_errno(e, errno, "%s", path);
	tok_buf b = {0};
	int rc = 0;
	for (;;) {
		if (tok_buf_grow(&b, 1 << 16, e)) {
			rc = -1;
			break;
		}
		size_t k = fread(b.p + b.n, 1, b.cap - b.n - 1, f);
		b.n += k;
		if (k == 0)
			break;
	}
	if (!rc && ferror(f))
		rc = ss_err_errno(e, errno, "%s: read error", shown(path));
	if (f != stdin)
		fclose(f);
	if (rc) {
		free(b.p);
		return -1;
	}
	if (!b.p && tok_buf_grow(&b, 1, e))
		return -1;
	b.p[b.n] = 0;
	*buf = b.p;
	*n = b.n;
	return 0;
}

int tok_read_text(const char *path, char **buf, size_t *n, ss_err *e)
{
	char *b;
	size_t k, bad;
	if (slurp(path, &b, &k, e))
		return -1;
	if (!tok_utf8_valid(b, k, &bad)) {
		free(b);
		return ss_err_set(e, "%s: invalid UTF-8 at byte offset %zu", shown(path), bad);
	}
	*buf = b;
	*n = k;
	return 0;
}

void tok_rows_free(tok_rows *rows)
{
	for (size_t i = 0; i < rows->n; i++)
		free(rows->v[i].text);
	free(rows->v);
	rows->v = NULL;
	rows->n = 0;
}

int tok_jsonl_read(const char *path, const char *field, long index, tok_rows *rows, ss_err *e)
{
	char *b;
	size_t n;
	rows->v = NULL;
	rows->n = 0;
	if (slurp(path, &b, &n, e))
		return -1;
	const char *name = shown(path);
	size_t cap = 0, i = 0;
	long line = 0, row = 0;
	int rc = -1;
	while (i < n) {
		size_t j = i;
		while (j < n && b[j] != '\n')
			j++;
		line++;
		size_t a = i, z = j;
		i = j + 1;
		while (a < z && (b[a] == ' ' || b[a] == '\t' || b[a] == '\r'))
			a++;
		if (a == z)
			continue; /* blank line */
		if (index >= 0 && row != index) {
			row++;
			continue;
		}
		json_error_t je;
		json_t *o = json_loadb(b + a, z - a, JSON_ALLOW_NUL, &je);
		if (!o) {
			ss_err_set(e, "%s:%ld: not valid JSON: %s", name, line, je.text);
			goto done;
		}
		json_t *s = json_is_object(o) ? json_object_get(o, field) : NULL;
		if (!json_is_string(s)) {
			json_decref(o);
			ss_err_set(e, "%s:%ld: field '%s' is missing or not a string", name, line, field);
			goto done;
		}
		/* jansson has checked the UTF-8 (invalid bytes: not valid JSON) */
		size_t len = json_string_length(s);
		char *txt = malloc(len + 1);
		if (txt && rows->n == cap) {
			size_t nc = cap ? 2 * cap : 16;
			tok_row *nv = realloc(rows->v, nc * sizeof *nv);
			if (nv) {
				rows->v = nv;
				cap = nc;
			}
		}
		if (!txt || rows->n == cap) {
			free(txt);
			json_decref(o);
			ss_err_set(e, "%s: out of memory", name);
			goto done;
		}
		memcpy(txt, json_string_value(s), len + 1);
		json_decref(o);
		rows->v[rows->n++] = (tok_row){txt, len, row, line};
		row++;
		if (index >= 0)
			break;
	}
	if (index >= 0 && rows->n == 0) {
		ss_err_set(e, "%s: --index %ld out of range (%ld rows)", name, index, row);
		goto done;
	}
	if (rows->n == 0) {
		ss_err_set(e, "%s: no rows", name);
		goto done;
	}
	rc = 0;
done:
	free(b);
	if (rc)
		tok_rows_free(rows);
	return rc;
}

void tok_piece_strings_free(char **s, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		free(s[i]);
	free(s);
}

int tok_piece_strings(const tok *t, const int32_t *ids, size_t n, char ***out, ss_err *e)
{
	size_t *off = malloc((n + 1) * sizeof *off);
	char **v = calloc(n ? n : 1, sizeof *v);
	char *p = off && v ? tok_pieces(t, ids, n, off, e) : NULL;
	if (!p) {
		if (!off || !v)
			ss_err_set(e, "out of memory for %zu token pieces", n);
		free(off);
		free(v);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		tok_buf b = {0};
		const char *s = p + off[i];
		size_t len = off[i + 1] - off[i], k = 0;
		int bad = tok_buf_put(&b, "", 0, e);
		while (!bad && k < len) {
			const char *z = memchr(s + k, 0, len - k);
			size_t m = z ? (size_t)(z - (s + k)) : len - k;
			bad = tok_buf_put(&b, s + k, m, e);
			k += m;
			if (!bad && z) {
				bad = tok_buf_put(&b, "\xef\xbf\xbd", 3, e);
				k++;
			}
		}
		if (bad) {
			free(b.p);
			tok_piece_strings_free(v, n);
			free(p);
			free(off);
			return -1;
		}
		v[i] = b.p;
	}
	free(p);
	free(off);
	*out = v;
	return 0;
}

int tok_read_ids(const char *path, int32_t **ids, long *T, ss_err *e)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	const char *name = shown(path);
	if (!f)
		return ss_err_errno(e, errno, "%s", path);
	long cap = 1024, n = 0, line = 1;
	int32_t *v = ss_malloc((size_t)cap, sizeof *v, "token ids", e);
	int rc = v ? 0 : -1;
	char tok[64];
	while (!rc) {
		int ch;
		while ((ch = getc(f)) != EOF && isspace(ch))
			line += ch == '\n';
		if (ch == EOF)
			break;
		size_t k = 0;
		while (ch != EOF && !isspace(ch)) {
			if (k < sizeof tok - 1)
				tok[k++] = (char)ch;
			ch = getc(f);
		}
		tok[k] = 0;
		if (ch == '\n')
			ungetc(ch, f);
		long x;
		if (ss_parse_long(tok, &x) < 0 || x < 0 || x > INT32_MAX) {
			rc = ss_err_set(e, "%s:%ld: bad token id '%s'", name, line, tok);
			break;
		}
		if (n == cap) {
			int32_t *nv = realloc(v, sizeof *v * (size_t)(cap *= 2));
			if (!nv) {
				rc = ss_err_set(e, "%s: out of memory for token ids", name);
				break;
			}
			v = nv;
		}
		v[n++] = (int32_t)x;
	}
	if (!rc && ferror(f))
		rc = ss_err_errno(e, errno, "%s", name);
	if (!rc && n == 0)
		rc = ss_err_set(e, "%s: no token ids", name);
	if (f != stdin)
		fclose(f);
	if (rc) {
		free(v);
		return -1;
	}
	*ids = v;
	*T = n;
	return 0;
}

int tok_load_for(const char *model_dir, const char *tok_path, int required, tok **t, ss_err *e)
{
	*t = NULL;
	char buf[4096];
	const char *path = tok_path;
	if (!path) {
		snprintf(buf, sizeof buf, "%s/tokenizer.json", model_dir);
		path = buf;
		if (!required && access(path, F_OK) != 0)
			return 0;
	}
	*t = tok_load(path, e);
	if (!*t)
		return -1;
	int applied;
	if (tok_apply_config_beside(*t, path, &applied, e)) {
		tok_free(*t);
		*t = NULL;
		return -1;
	}
	return 0;
}
