/* tok_norm.c - UTF-8 helpers and the normalizers (NFC etc. through
 * utf8proc, Replace, Prepend). */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include "tok/tok_impl.h"
#include "util/utf8.h"

int tok_utf8_valid(const char *s, size_t n, size_t *bad)
{
	for (size_t i = 0, k; i < n; i += k)
		if (!(k = ss_utf8_len(s + i, n - i))) {
			if (bad)
				*bad = i;
			return 0;
		}
	return 1;
}

/* Next code point of valid UTF-8 at *i (advanced). */
uint32_t tok_utf8_next(const char *s, size_t n, size_t *i)
{
	const unsigned char *u = (const unsigned char *)s + *i;
	(void)n;
	uint32_t c = u[0];
	if (c < 0x80) {
		*i += 1;
		return c;
	}
	if (c < 0xe0) {
		*i += 2;
		return (c & 0x1f) << 6 | (u[1] & 0x3f);
	}
	if (c < 0xf0) {
		*i += 3;
		return (c & 0x0f) << 12 | (u[1] & 0x3f) << 6 | (u[2] & 0x3f);
	}
	*i += 4;
	return (c & 0x07) << 18 | (u[1] & 0x3f) << 12 | (u[2] & 0x3f) << 6 | (u[3] & 0x3f);
}

int tok_utf8_put(tok_buf *b, uint32_t cp, ss_err *e)
{
	char x[4];
	size_t k;
	if (cp < 0x80) {
		x[0] = (char)cp;
		k = 1;
	} else if (cp < 0x800) {
		x[0] = (char)(0xc0 | cp >> 6);
		x[1] = (char)(0x80 | (cp & 0x3f));
		k = 2;
	} else if (cp < 0x10000) {
		x[0] = (char)(0xe0 | cp >> 12);
		x[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		x[2] = (char)(0x80 | (cp & 0x3f));
		k = 3;
	} else {
		x[0] = (char)(0xf0 | cp >> 18);
		x[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		x[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		x[3] = (char)(0x80 | (cp & 0x3f));
		k = 4;
	}
	return tok_buf_put(b, x, k, e);
}

/* WHATWG UTF-8 decoder with replacement: an invalid or truncated sequence
 * yields one U+FFFD per maximal subpart (the byte that breaks a sequence
 * is looked at again as a possible start). */
int tok_utf8_lossy(const char *s, size_t n, char **dst, size_t *dn, size_t *dcap, ss_err *e)
{
	tok_buf b = {*dst, *dn, *dcap};
	const unsigned char *u = (const unsigned char *)s;
	static const char fffd[] = "\xef\xbf\xbd";
	size_t i = 0;
	while (i < n) {
		size_t run = i;
		while (run < n && u[run] < 0x80)
			run++;
		if (run > i && tok_buf_put(&b, s + i, run - i, e))
			goto oom;
		i = run;
		if (i >= n)
			break;
		unsigned c = u[i];
		unsigned lo, hi;
		size_t k = ss_utf8_lead(c, &lo, &hi);
		if (!k) {
			if (tok_buf_put(&b, fffd, 3, e))
				goto oom;
			i++;
			continue;
		}
		size_t j = 1;
		for (; j <= k; j++) {
			if (i + j >= n)
				break;
			unsigned x = u[i + j];
			if (x < lo || x > hi)
				break;
			lo = 0x80;
			hi = 0xbf;
		}
		if (j == k + 1) {
			if (tok_buf_put(&b, s + i, k + 1, e))
				goto oom;
			i += k + 1;
		} else {
			if (tok_buf_put(&b, fffd, 3, e))
				goto oom;
			i += j; /* the breaking byte is reconsidered */
		}
	}
	if (tok_buf_grow(&b, 1, e))
		goto oom;
	b.p[b.n] = 0;
	*dst = b.p;
	*dn = b.n;
	*dcap = b.cap;
	return 0;
oom:
	*dst = b.p;
	*dn = b.n;
	*dcap = b.cap;
	return -1;
}

/* JavaScript's String.prototype.trim set (WhiteSpace and LineTerminator),
 * used by lstrip/rstrip as tokenizers.js does. */
int tok_is_js_space(uint32_t c)
{
	return (c >= 9 && c <= 13) || c == 0x20 || c == 0xa0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
	       c == 0x205f || c == 0x3000 || c == 0xfeff;
}

static int unicode_norm(int kind, const char *s, size_t n, tok_buf *out, ss_err *e)
{
	int opt = UTF8PROC_STABLE;
	switch (kind) {
	case NORM_NFC: opt |= UTF8PROC_COMPOSE; break;
	case NORM_NFD: opt |= UTF8PROC_DECOMPOSE; break;
	case NORM_NFKC: opt |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
	default: opt |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
	}
	out->n = 0;
	size_t done = 0, i = 0;
	/* A boundary before an ASCII character is safe (it is a starter that
	 * composes with nothing before it), so only the runs of non-ASCII
	 * text, with the ASCII character before each run, go through
	 * utf8proc; ASCII text is copied. */
	while (i < n) {
		while (i < n && (unsigned char)s[i] < 0x80)
			i++;
		if (i >= n)
			break;
		size_t a = i > done ? i - 1 : i;
		size_t b = i;
		while (b < n && (unsigned char)s[b] >= 0x80)
			b++;
		if (tok_buf_put(out, s + done, a - done, e))
			return -1;
		utf8proc_uint8_t *d = NULL;
		utf8proc_ssize_t k = utf8proc_map((const utf8proc_uint8_t *)s + a, (utf8proc_ssize_t)(b - a), &d, opt);
		if (k < 0)
			return ss_err_set(e, "text: normalization failed: %s", utf8proc_errmsg(k));
		int r = tok_buf_put(out, d, (size_t)k, e);
		free(d);
		if (r)
			return -1;
		done = i = b;
	}
	return tok_buf_put(out, s + done, n - done, e);
}

static int replace_lit(const tok_norm *nm, const char *s, size_t n, tok_buf *out, ss_err *e)
{
	out->n = 0;
	size_t i = 0;
	if (nm->pat_len == 0)
		return tok_buf_put(out, s, n, e);
	while (i < n) {
		const char *p = memmem(s + i, n - i, nm->pat, nm->pat_len);
		if (!p)
			break;
		size_t at = (size_t)(p - s);
		if (tok_buf_put(out, s + i, at - i, e) || tok_buf_put(out, nm->content, nm->content_len, e))
			return -1;
		i = at + nm->pat_len;
	}
	return tok_buf_put(out, s + i, n - i, e);
}

static int replace_re(tok *t, const tok_norm *nm, const char *s, size_t n, tok_buf *out, ss_err *e)
{
	out->n = 0;
	size_t i = 0, done = 0;
	while (i <= n) {
		int rc = pcre2_match(nm->re, (PCRE2_SPTR)s, n, i, PCRE2_NO_UTF_CHECK, t->md, NULL);
		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0)
			return ss_err_set(e, "text: normalizer regex failed (PCRE2 error %d)", rc);
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(t->md);
		if (ov[1] == ov[0]) { /* empty match: step one character */
			if (ov[0] >= n)
				break;
			i = ov[0];
			tok_utf8_next(s, n, &i);
			continue;
		}
		if (tok_buf_put(out, s + done, ov[0] - done, e) ||
		    tok_buf_put(out, nm->content, nm->content_len, e))
			return -1;
		done = i = ov[1];
	}
	return tok_buf_put(out, s + done, n - done, e);
}

/* Apply the normalizer chain to s[0..n) into out (replaced). */
int tok_normalize(tok *t, const char *s, size_t n, tok_buf *out, ss_err *e)
{
	tok_buf tmp = {0};
	if (tok_buf_put(out, "", 0, e))
		return -1;
	out->n = 0;
	if (tok_buf_put(out, s, n, e))
		return -1;
	for (size_t k = 0; k < t->n_norm; k++) {
		const tok_norm *nm = &t->norm[k];
		int r = 0;
		switch (nm->kind) {
		case NORM_PREPEND:
			if (out->n == 0)
				continue;
			tmp.n = 0;
			r = tok_buf_put(&tmp, nm->content, nm->content_len, e) ||
			    tok_buf_put(&tmp, out->p, out->n, e);
			break;
		case NORM_REPLACE:
			r = nm->re ? replace_re(t, nm, out->p, out->n, &tmp, e)
			           : replace_lit(nm, out->p, out->n, &tmp, e);
			break;
		default:
			r = unicode_norm(nm->kind, out->p, out->n, &tmp, e);
			break;
		}
		if (r) {
			free(tmp.p);
			return -1;
		}
		tok_buf sw = *out;
		*out = tmp;
		tmp = sw;
	}
	free(tmp.p);
	return 0;
}
