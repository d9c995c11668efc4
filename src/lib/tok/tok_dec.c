/* tok_dec.c - decoders: ids -> text, and ids -> one piece per token.
 *
 * A decoder is a chain of steps over a list of strings (Hugging Face's
 * decode_chain): it starts with one string per token and ends with the
 * strings that are joined into the text.
 */
#include <stdlib.h>
#include <string.h>
#include "tok/tok_impl.h"

typedef struct segs {
	tok_buf data;
	size_t *off, *len;
	size_t n, cap;
} segs;

static int seg_add(segs *s, const char *p, size_t n, ss_err *e)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		size_t *o = realloc(s->off, cap * sizeof *o);
		if (!o)
			return ss_err_set(e, "out of memory decoding");
		s->off = o;
		size_t *l = realloc(s->len, cap * sizeof *l);
		if (!l)
			return ss_err_set(e, "out of memory decoding");
		s->len = l;
		s->cap = cap;
	}
	s->off[s->n] = s->data.n;
	s->len[s->n] = n;
	s->n++;
	return tok_buf_put(&s->data, p, n, e);
}

/* Extend the last segment by p[0..n). */
static int seg_cat(segs *s, const char *p, size_t n, ss_err *e)
{
	s->len[s->n - 1] += n;
	return tok_buf_put(&s->data, p, n, e);
}

static void segs_reset(segs *s) { s->n = 0; s->data.n = 0; }
static void segs_free(segs *s) { free(s->data.p); free(s->off); free(s->len); }
#define SEG(s, i) ((s)->data.p + (s)->off[i])

static int byte_of_char(uint32_t cp)
{
	/* inverse of the GPT-2 byte-to-unicode map */
	if ((cp >= 0x21 && cp <= 0x7e) || (cp >= 0xa1 && cp <= 0xac) || (cp >= 0xae && cp <= 0xff))
		return (int)cp;
	if (cp >= 0x100 && cp < 0x100 + 68) {
		int k = (int)cp - 0x100, b;
		for (b = 0; b < 256; b++) {
			if ((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff))
				continue;
			if (k-- == 0)
				return b;
		}
	}
	return -1;
}

static unsigned char cp2byte[0x144];
static int cp2byte_ready;

static void init_cp2byte(void)
{
	if (cp2byte_ready)
		return;
	for (uint32_t c = 0; c < 0x144; c++) {
		int b = byte_of_char(c);
		cp2byte[c] = b < 0 ? 0 : (unsigned char)b;
	}
	cp2byte_ready = 1;
}

/* map byte-level chars to bytes; a char outside the map becomes 0 as in
 * tokenizers.js (a Uint8Array of undefined). */
static int unmap_bytes(const char *s, size_t n, tok_buf *b, ss_err *e)
{
	for (size_t i = 0; i < n;) {
		uint32_t cp = tok_utf8_next(s, n, &i);
		char c = (char)(cp < 0x144 ? cp2byte[cp] : 0);
		if (tok_buf_put(b, &c, 1, e))
			return -1;
	}
	return 0;
}

static int lossy_seg(segs *o, const char *s, size_t n, int add, ss_err *e)
{
	char *d = NULL;
	size_t dn = 0, dc = 0;
	if (tok_utf8_lossy(s, n, &d, &dn, &dc, e)) {
		free(d);
		return -1;
	}
	int r = add ? seg_add(o, d, dn, e) : seg_cat(o, d, dn, e);
	free(d);
	return r;
}

static int byte_token(const char *s, size_t n)
{
	/* "<0xNN>" as tokenizers.js reads it: parseInt of the two chars */
	if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>')
		return -1;
	int v = 0, k = 0;
	for (int i = 3; i < 5; i++) {
		int c = (unsigned char)s[i], d;
		if (c >= '0' && c <= '9') d = c - '0';
		else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
		else break;
		v = v * 16 + d;
		k++;
	}
	return k ? v : -1;
}

/* When token s stands for bytes (ByteFallback: "<0xNN>"; ByteLevel: any
 * token but an added one), append them to b and return 1; else 0; -1 out
 * of memory.  A run of such tokens is then decoded as UTF-8 at once. */
static int byte_piece(const tok *t, int kind, const char *s, size_t n, tok_buf *b, ss_err *e)
{
	if (kind == DEC_BYTEFALLBACK) {
		int v = byte_token(s, n);
		if (v < 0)
			return 0;
		char c = (char)v;
		return tok_buf_put(b, &c, 1, e) ? -1 : 1;
	}
	int32_t id = tok_strmap_get(&t->strs, s, n, t->str, t->len);
	if (id >= 0 && t->is_added[id])
		return 0;
	return unmap_bytes(s, n, b, e) ? -1 : 1;
}

static int replace_seg(const tok_dec *d, const char *s, size_t n, segs *o, ss_err *e)
{
	if (seg_add(o, "", 0, e))
		return -1;
	size_t i = 0;
	while (d->pat_len && i < n) {
		const char *p = memmem(s + i, n - i, d->pat, d->pat_len);
		if (!p)
			break;
		size_t at = (size_t)(p - s);
		if (seg_cat(o, s + i, at - i, e) || seg_cat(o, d->content, d->content_len, e))
			return -1;
		i = at + d->pat_len;
	}
	return seg_cat(o, s + i, n - i, e);
}

static void strip_range(const tok_dec *d, const char *s, size_t n, int do_start, int do_stop,
                        size_t *a, size_t *b)
{
	size_t i = 0;
	for (int k = 0; do_start && k < d->start && i < n; k++) {
		size_t j = i;
		if (tok_utf8_next(s, n, &j) != d->strip_cp)
			break;
		i = j;
	}
	size_t end = n;
	for (int k = 0; do_stop && k < d->stop && end > i; k++) {
		size_t j = end - 1;
		while (j > i && ((unsigned char)s[j] & 0xc0) == 0x80)
			j--;
		size_t x = j;
		if (tok_utf8_next(s, n, &x) != d->strip_cp)
			break;
		end = j;
	}
	*a = i;
	*b = end;
}

int tok_decode_segs(const tok *t, const int32_t *ids, size_t n, int per_token,
                    tok_buf *out, size_t *off, ss_err *e)
{
	segs A = {0}, B = {0}, *cur = &A, *nxt = &B;
	tok_buf tmp = {0};
	int fused = 0, rc = -1;
	init_cp2byte();
	for (size_t i = 0; i < n; i++) {
		if (ids[i] < 0 || (size_t)ids[i] >= t->n_ids || !t->str[ids[i]]) {
			ss_err_set(e, "ids[%zu]: %ld is not in the vocabulary of %s (size %zu)", i,
			           (long)ids[i], t->name, t->n_ids);
			goto done;
		}
		if (seg_add(cur, t->str[ids[i]], t->len[ids[i]], e))
			goto done;
	}
	if (!t->has_decoder) {
		/* tokenizers.js: tokens joined by a space */
		segs_reset(nxt);
		for (size_t i = 0; i < cur->n; i++) {
			if (per_token || i == 0) {
				if (seg_add(nxt, SEG(cur, i), cur->len[i], e))
					goto done;
			} else if (seg_cat(nxt, " ", 1, e) || seg_cat(nxt, SEG(cur, i), cur->len[i], e))
				goto done;
		}
		segs *sw = cur; cur = nxt; nxt = sw;
	}
	for (size_t k = 0; t->has_decoder && k < t->n_dec; k++) {
		const tok_dec *d = &t->dec[k];
		segs_reset(nxt);
		switch (d->kind) {
		case DEC_REPLACE:
			for (size_t i = 0; i < cur->n; i++)
				if (replace_seg(d, SEG(cur, i), cur->len[i], nxt, e))
					goto done;
			break;
		case DEC_FUSE:
			if (per_token) { /* pieces stay apart; Strip now acts on the ends */
				fused = 1;
				continue;
			}
			if (seg_add(nxt, "", 0, e))
				goto done;
			for (size_t i = 0; i < cur->n; i++)
				if (seg_cat(nxt, SEG(cur, i), cur->len[i], e))
					goto done;
			break;
		case DEC_STRIP:
			for (size_t i = 0; i < cur->n; i++) {
				size_t a, b;
				int s0 = !fused || i == 0, s1 = !fused || i + 1 == cur->n;
				strip_range(d, SEG(cur, i), cur->len[i], s0, s1, &a, &b);
				if (seg_add(nxt, SEG(cur, i) + a, b - a, e))
					goto done;
			}
			break;
		case DEC_BYTEFALLBACK:
		case DEC_BYTELEVEL: {
			int open = 0; /* a run of byte pieces is pending in tmp */
			tmp.n = 0;
			for (size_t i = 0; i <= cur->n; i++) {
				int b = 0; /* 1: token i is a byte piece, now in tmp */
				if (i < cur->n)
					b = byte_piece(t, d->kind, SEG(cur, i), cur->len[i], &tmp, e);
				if (b < 0)
					goto done;
				if (b) {
					open = 1;
					if (!per_token)
						continue;
				}
				if (open) {
					if (lossy_seg(nxt, tmp.p, tmp.n, 1, e))
						goto done;
					tmp.n = 0;
					open = 0;
					if (b)
						continue;
				}
				if (i < cur->n && seg_add(nxt, SEG(cur, i), cur->len[i], e))
					goto done;
			}
			break;
		}
		}
		segs *sw = cur; cur = nxt; nxt = sw;
	}
	out->n = 0;
	if (tok_buf_put(out, "", 0, e))
		goto done;
	for (size_t i = 0; i < cur->n; i++) {
		if (off)
			off[i] = out->n;
		if (tok_buf_put(out, SEG(cur, i), cur->len[i], e))
			goto done;
	}
	if (off)
		off[cur->n] = out->n;
	rc = 0;
done:
	segs_free(&A);
	segs_free(&B);
	free(tmp.p);
	return rc;
}

char *tok_decode(const tok *t, const int32_t *ids, size_t n, size_t *len, ss_err *e)
{
	tok_buf b = {0};
	if (tok_decode_segs(t, ids, n, 0, &b, NULL, e)) {
		free(b.p);
		return NULL;
	}
	if (len)
		*len = b.n;
	return b.p;
}

char *tok_pieces(const tok *t, const int32_t *ids, size_t n, size_t *off, ss_err *e)
{
	tok_buf b = {0};
	if (tok_decode_segs(t, ids, n, 1, &b, off, e)) {
		free(b.p);
		return NULL;
	}
	return b.p;
}
