/* tok_encode.c - the encode pipeline, and the tokenizer's accessors:
 *
 *   text -> split at added tokens (raw contents, longest match)
 *        -> normalizer on each piece between them
 *        -> split at normalized added tokens
 *        -> pre-tokenizer (Split regexes, ByteLevel) -> BPE per pre-token
 *        -> post-processor (TemplateProcessing: BOS/EOS ids)
 *
 * The order and the details (lstrip/rstrip trimming the neighbouring
 * pieces, normalizing each piece separately, fuse_unk across a piece)
 * follow Hugging Face's tokenizers; see tok.h for what is supported and
 * tok_load.c for how the tokenizer is read.
 */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include "tok/tok_impl.h"

typedef struct sec {
	size_t off, len;
	int32_t added; /* index into t->added, or -1 for text */
} sec;

typedef struct secv {
	sec *v;
	size_t n, cap;
} secv;

static int sec_push(secv *s, size_t off, size_t len, int32_t added, ss_err *e)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		sec *p = realloc(s->v, cap * sizeof *p);
		if (!p)
			return ss_err_set(e, "out of memory");
		s->v = p;
		s->cap = cap;
	}
	s->v[s->n++] = (sec){off, len, added};
	return 0;
}

/* Rust's char::is_alphanumeric, for single_word */
static int is_alnum_cp(uint32_t c)
{
	utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
	return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) ||
	       (k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO);
}

static uint32_t prev_cp(const char *s, size_t i)
{
	size_t j = i - 1;
	while (j > 0 && ((unsigned char)s[j] & 0xc0) == 0x80)
		j--;
	size_t k = j;
	return tok_utf8_next(s, i, &k);
}

/* Split s at added tokens of trie tr (longest match at the leftmost
 * position), then apply lstrip/rstrip to the neighbouring text. */
static int split_added(const tok *t, const tok_trie *tr, const char *s, size_t n, secv *out, ss_err *e)
{
	out->n = 0;
	size_t start = 0, i = 0;
	if (tr->n > 1) {
		while (i < n) {
			if (!tr->first[(unsigned char)s[i]]) {
				i++;
				continue;
			}
			int32_t cur = 0, best = -1;
			size_t blen = 0;
			for (size_t j = i; j < n; j++) {
				int32_t c = tr->node[cur].child;
				while (c >= 0 && tr->node[c].byte != (uint8_t)s[j])
					c = tr->node[c].sibling;
				if (c < 0)
					break;
				cur = c;
				if (tr->node[c].tok >= 0) {
					best = tr->node[c].tok;
					blen = j + 1 - i;
				}
			}
			if (best >= 0 && t->added[best].single_word) {
				int l = i > 0 && is_alnum_cp(prev_cp(s, i));
				size_t k = i + blen;
				int r = k < n && is_alnum_cp(tok_utf8_next(s, n, &k));
				if (l || r)
					best = -1;
			}
			if (best < 0) {
				i++;
				continue;
			}
			if (i > start && sec_push(out, start, i - start, -1, e))
				return -1;
			if (sec_push(out, i, blen, best, e))
				return -1;
			i += blen;
			start = i;
		}
	}
	if (start < n && sec_push(out, start, n - start, -1, e))
		return -1;
	for (size_t k = 0; k < out->n; k++) {
		if (out->v[k].added < 0)
			continue;
		const tok_added *a = &t->added[out->v[k].added];
		if (a->lstrip && k > 0 && out->v[k - 1].added < 0) {
			sec *p = &out->v[k - 1];
			while (p->len > 0) {
				uint32_t c = prev_cp(s, p->off + p->len);
				if (!tok_is_js_space(c))
					break;
				size_t j = p->off + p->len - 1;
				while (j > p->off && ((unsigned char)s[j] & 0xc0) == 0x80)
					j--;
				p->len = j - p->off;
			}
		}
		if (a->rstrip && k + 1 < out->n && out->v[k + 1].added < 0) {
			sec *p = &out->v[k + 1];
			while (p->len > 0) {
				size_t j = p->off;
				if (!tok_is_js_space(tok_utf8_next(s, p->off + p->len, &j)))
					break;
				p->len -= j - p->off;
				p->off = j;
			}
		}
	}
	return 0;
}

static int pre_run(tok *t, size_t step, const char *s, size_t n, tok_ids *out, ss_err *e)
{
	if (n == 0)
		return 0;
	if (step == t->n_pre)
		return tok_bpe_word(t, s, n, out, e);
	const tok_pre *p = &t->pre[step];
	char *tmp = NULL;
	int rc = -1;
	if (p->kind == PRE_BYTELEVEL && p->add_prefix_space && s[0] != ' ') {
		tmp = malloc(n + 1);
		if (!tmp)
			return ss_err_set(e, "out of memory");
		tmp[0] = ' ';
		memcpy(tmp + 1, s, n);
		s = tmp;
		n++;
	}
	if (!p->re) { /* ByteLevel without its regex */
		rc = pre_run(t, step + 1, s, n, out, e);
		free(tmp);
		return rc;
	}
	int keep_gaps = p->kind == PRE_SPLIT, keep_matches = !(p->kind == PRE_SPLIT && p->behavior == SPLIT_REMOVED);
	size_t prev = 0, at = 0;
	while (at <= n) {
		int m = p->jit ? pcre2_jit_match(p->re, (PCRE2_SPTR)s, n, at, 0, t->md, t->mctx)
		               : pcre2_match(p->re, (PCRE2_SPTR)s, n, at, PCRE2_NO_UTF_CHECK, t->md, t->mctx);
		if (m == PCRE2_ERROR_NOMATCH)
			break;
		if (m < 0) {
			PCRE2_UCHAR buf[200];
			pcre2_get_error_message(m, buf, sizeof buf);
			ss_err_set(e, "%s: pre-tokenizer regex failed: %s", t->name, (char *)buf);
			goto done;
		}
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(t->md);
		size_t a = ov[0], b = ov[1];
		if (a == b) { /* empty match: skipped, search again one character on */
			if (a >= n)
				break;
			at = a;
			tok_utf8_next(s, n, &at);
			continue;
		}
		if (keep_gaps && a > prev && pre_run(t, step + 1, s + prev, a - prev, out, e))
			goto done;
		if (keep_matches && pre_run(t, step + 1, s + a, b - a, out, e))
			goto done;
		prev = at = b;
	}
	if (keep_gaps && prev < n && pre_run(t, step + 1, s + prev, n - prev, out, e))
		goto done;
	rc = 0;
done:
	free(tmp);
	return rc;
}

static int encode_text(tok *t, const char *s, size_t n, tok_ids *out, ss_err *e)
{
	size_t first = out->n;
	if (pre_run(t, 0, s, n, out, e))
		return -1;
	if (t->fuse_unk && t->unk_id >= 0) {
		size_t k = first;
		for (size_t i = first; i < out->n; i++) {
			if (out->v[i] == t->unk_id && k > first && out->v[k - 1] == t->unk_id)
				continue;
			out->v[k++] = out->v[i];
		}
		out->n = k;
	}
	return 0;
}

/* A piece that is exactly an added token's content is that token
 * (tokenizers.js looks every piece up in its added-token map). */
static int32_t whole_added(const tok *t, const char *s, size_t n)
{
	int32_t id = tok_strmap_get(&t->strs, s, n, t->str, t->len);
	return id >= 0 && t->is_added[id] ? id : -1;
}

int tok_encode(tok *t, const char *text, size_t n, int flags, tok_ids *out, ss_err *e)
{
	size_t tok_bad;
	if (!tok_utf8_valid(text, n, &tok_bad))
		return ss_err_set(e, "text: invalid UTF-8 at byte offset %zu", tok_bad);
	secv A = {0}, B = {0};
	int rc = -1;
	if (flags & TOK_POST)
		for (size_t i = 0; i < t->n_post_pre; i++)
			if (tok_ids_push(out, t->post_pre[i], e))
				goto done;
	if (split_added(t, &t->trie_raw, text, n, &A, e))
		goto done;
	for (size_t k = 0; k < A.n; k++) {
		const sec *a = &A.v[k];
		if (a->added >= 0) {
			if (tok_ids_push(out, t->added[a->added].id, e))
				goto done;
			continue;
		}
		if (a->len == 0)
			continue;
		const char *s = text + a->off;
		int32_t w = whole_added(t, s, a->len);
		if (w >= 0) {
			if (tok_ids_push(out, w, e))
				goto done;
			continue;
		}
		size_t sn = a->len;
		if (t->has_normalizer) {
			if (tok_normalize(t, s, sn, &t->nbuf, e))
				goto done;
			s = t->nbuf.p;
			sn = t->nbuf.n;
		}
		if (sn == 0)
			continue;
		if (split_added(t, &t->trie_norm, s, sn, &B, e))
			goto done;
		for (size_t j = 0; j < B.n; j++) {
			const sec *b = &B.v[j];
			if (b->added >= 0) {
				if (tok_ids_push(out, t->added[b->added].id, e))
					goto done;
				continue;
			}
			if (b->len == 0)
				continue;
			if ((w = whole_added(t, s + b->off, b->len)) >= 0) {
				if (tok_ids_push(out, w, e))
					goto done;
				continue;
			}
			if (encode_text(t, s + b->off, b->len, out, e))
				goto done;
		}
	}
	if (flags & TOK_POST)
		for (size_t i = 0; i < t->n_post_suf; i++)
			if (tok_ids_push(out, t->post_suf[i], e))
				goto done;
	rc = 0;
done:
	free(A.v);
	free(B.v);
	return rc;
}

/* ---------------- accessors ---------------- */

size_t tok_vocab_size(const tok *t) { return t->n_ids; }

const char *tok_token(const tok *t, int32_t id, size_t *len)
{
	if (id < 0 || (size_t)id >= t->n_ids || !t->str[id])
		return NULL;
	if (len)
		*len = t->len[id];
	return t->str[id];
}

int32_t tok_id(const tok *t, const char *s, size_t n)
{
	return tok_strmap_get(&t->strs, s, n, t->str, t->len);
}

const int32_t *tok_post_prefix(const tok *t, size_t *n)
{
	*n = t->n_post_pre;
	return t->post_pre;
}

const int32_t *tok_post_suffix(const tok *t, size_t *n)
{
	*n = t->n_post_suf;
	return t->post_suf;
}
