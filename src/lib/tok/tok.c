/* tok.c - tokenizer.json loading (tree from tok_json.c) and the encode pipeline:
 *
 *   text -> split at added tokens (raw contents, longest match)
 *        -> normalizer on each piece between them
 *        -> split at normalized added tokens
 *        -> pre-tokenizer (Split regexes, ByteLevel) -> BPE per pre-token
 *        -> post-processor (TemplateProcessing: BOS/EOS ids)
 *
 * The order and the details (lstrip/rstrip trimming the neighbouring
 * pieces, normalizing each piece separately, fuse_unk across a piece)
 * follow Hugging Face's tokenizers; see tok.h for what is supported.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/mman.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utf8proc.h>
#include "tok/tok_impl.h"

#define PATHMAX 256

/* ---------------- loading ---------------- */

typedef struct ld {
	tok *t;
	const char *name;
	ss_err *e;
} ld;

static int bad(ld *L, const char *path, const char *fmt, const char *arg)
{
	char msg[512];
	snprintf(msg, sizeof msg, fmt, arg);
	return ss_err_set(L->e, "%s:%s: %s", L->name, path, msg);
}

static const char *jstr(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Optional boolean member (absent or null = def). */
static int jbool(ld *L, json_t *o, const char *key, int def, const char *path, int *out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		*out = def;
		return 0;
	}
	if (!json_is_boolean(v)) {
		char p[PATHMAX];
		snprintf(p, sizeof p, "%s.%s", path, key);
		return bad(L, p, "expected true or false%s", "");
	}
	*out = json_is_true(v);
	return 0;
}

/* \s and \S as Oniguruma (and tokenizers.js) read them: the Unicode
 * White_Space property.  PCRE2's \s with UCP also matches U+180E. */
static char *rewrite_space(const char *pat, size_t n, size_t *outn)
{
	tok_buf b = {0};
	ss_err e = {0};
	for (size_t i = 0; i < n; i++) {
		if (pat[i] == '\\' && i + 1 < n) {
			const char *rep = pat[i + 1] == 's' ? "\\p{White_Space}" : pat[i + 1] == 'S' ? "\\P{White_Space}" : NULL;
			if (rep ? tok_buf_put(&b, rep, strlen(rep), &e) : tok_buf_put(&b, pat + i, 2, &e))
				goto oom;
			i++;
		} else if (tok_buf_put(&b, pat + i, 1, &e))
			goto oom;
	}
	if (tok_buf_put(&b, "", 0, &e))
		goto oom;
	*outn = b.n;
	return b.p;
oom:
	free(b.p);
	return NULL;
}

static int compile_re(ld *L, const char *pat0, size_t n0, int literal, const char *path, pcre2_code **out)
{
	int err;
	PCRE2_SIZE off;
	size_t n = n0;
	/* literal: 0 a file's regex, 1 a String pattern, 2 our own regex */
	char *pat = literal ? NULL : rewrite_space(pat0, n0, &n);
	if (!literal && !pat)
		return ss_err_set(L->e, "out of memory");
	const char *p = literal ? pat0 : pat;
	uint32_t opt = PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK;
	if (literal == 1)
		opt = PCRE2_UTF | PCRE2_LITERAL;
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)p, n, opt, &err, &off, NULL);
	free(pat);
	if (!re) {
		PCRE2_UCHAR buf[256];
		pcre2_get_error_message(err, buf, sizeof buf);
		char m[400];
		snprintf(m, sizeof m, "regex does not compile at offset %zu: %s", (size_t)off, (char *)buf);
		return bad(L, path, "%s", m);
	}
	(void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* else the interpreter runs it */
	*out = re;
	return 0;
}

/* pattern: {"String": s} or {"Regex": r}.  For a String, *lit gets a copy. */
static int parse_pattern(ld *L, json_t *o, const char *path, int want_lit,
                         char **lit, size_t *lit_len, pcre2_code **re)
{
	char p[PATHMAX];
	snprintf(p, sizeof p, "%s.pattern", path);
	json_t *pat = json_object_get(o, "pattern");
	if (!json_is_object(pat))
		return bad(L, p, "missing or not an object%s", "");
	json_t *s = json_object_get(pat, "String"), *r = json_object_get(pat, "Regex");
	if (json_is_string(s)) {
		if (want_lit) {
			*lit_len = json_string_length(s);
			*lit = malloc(*lit_len + 1);
			if (!*lit)
				return ss_err_set(L->e, "out of memory");
			memcpy(*lit, json_string_value(s), *lit_len + 1);
			return 0;
		}
		return compile_re(L, json_string_value(s), json_string_length(s), 1, p, re);
	}
	if (json_is_string(r)) {
		if (!re)
			return bad(L, p, "unsupported Regex pattern (only String)%s", "");
		snprintf(p, sizeof p, "%s.pattern.Regex", path);
		return compile_re(L, json_string_value(r), json_string_length(r), 0, p, re);
	}
	return bad(L, p, "expected {\"String\": ...} or {\"Regex\": ...}%s", "");
}

static int jcopy(ld *L, json_t *o, const char *key, const char *path, char **out, size_t *n)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_string(v)) {
		char p[PATHMAX];
		snprintf(p, sizeof p, "%s.%s", path, key);
		return bad(L, p, "missing or not a string%s", "");
	}
	*n = json_string_length(v);
	*out = malloc(*n + 1);
	if (!*out)
		return ss_err_set(L->e, "out of memory");
	memcpy(*out, json_string_value(v), *n + 1);
	return 0;
}

/* Every component of the pipeline is an object with a string "type"; tp
 * gets the path of that member, for messages. */
static int comp_type(ld *L, json_t *o, const char *path, char tp[PATHMAX], const char **type)
{
	if (!json_is_object(o))
		return bad(L, path, "expected an object%s", "");
	*type = jstr(o, "type");
	snprintf(tp, PATHMAX, "%s.type", path);
	if (!*type)
		return bad(L, tp, "missing%s", "");
	return 0;
}

/* A component parser; cap is the capacity of the array it appends to. */
typedef int (*comp_fn)(ld *L, json_t *o, const char *path, size_t *cap);

/* {"type": "Sequence", key: [...]}: each element in turn. */
static int parse_seq(ld *L, json_t *o, const char *path, const char *key, comp_fn fn,
                     size_t *cap)
{
	json_t *a = json_object_get(o, key);
	char p[PATHMAX];
	if (!json_is_array(a)) {
		snprintf(p, sizeof p, "%s.%s", path, key);
		return bad(L, p, "missing or not an array%s", "");
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		snprintf(p, sizeof p, "%s.%s[%zu]", path, key, i);
		if (fn(L, json_array_get(a, i), p, cap))
			return -1;
	}
	return 0;
}

static int parse_normalizer(ld *L, json_t *o, const char *path, size_t *cap)
{
	tok *t = L->t;
	const char *type;
	char tp[PATHMAX];
	if (comp_type(L, o, path, tp, &type))
		return -1;
	if (!strcmp(type, "Sequence"))
		return parse_seq(L, o, path, "normalizers", parse_normalizer, cap);
	tok_norm nm = {0};
	if (!strcmp(type, "NFC")) nm.kind = NORM_NFC;
	else if (!strcmp(type, "NFD")) nm.kind = NORM_NFD;
	else if (!strcmp(type, "NFKC")) nm.kind = NORM_NFKC;
	else if (!strcmp(type, "NFKD")) nm.kind = NORM_NFKD;
	else if (!strcmp(type, "Prepend")) {
		nm.kind = NORM_PREPEND;
		if (jcopy(L, o, "prepend", path, &nm.content, &nm.content_len))
			return -1;
	} else if (!strcmp(type, "Replace")) {
		nm.kind = NORM_REPLACE;
		json_t *pat = json_object_get(o, "pattern");
		int lit = json_is_object(pat) && json_is_string(json_object_get(pat, "String"));
		if (parse_pattern(L, o, path, lit, &nm.pat, &nm.pat_len, &nm.re) ||
		    jcopy(L, o, "content", path, &nm.content, &nm.content_len)) {
			free(nm.pat);
			free(nm.content);
			return -1;
		}
	} else
		return bad(L, tp, "unsupported normalizer '%s'", type);
	tok_norm *v = tok_grow(t->norm, cap, t->n_norm, sizeof *v, 4);
	if (!v)
		return ss_err_set(L->e, "out of memory");
	t->norm = v;
	t->norm[t->n_norm++] = nm;
	return 0;
}

/* ByteLevel's own split (GPT-2), as tokenizers.js writes it: a JavaScript
 * regex, whose \s is JS white space (U+FEFF but not U+0085). */
#define JS_S "\\t\\n\\v\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}"
static const char gpt2_re[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" JS_S "\\p{L}\\p{N}]+|[" JS_S "]+(?![^" JS_S "])|[" JS_S "]+";

static int parse_pre(ld *L, json_t *o, const char *path, size_t *cap)
{
	tok *t = L->t;
	const char *type;
	char tp[PATHMAX];
	if (comp_type(L, o, path, tp, &type))
		return -1;
	if (t->byte_level)
		return bad(L, tp, "'%s' after ByteLevel is not supported", type);
	if (!strcmp(type, "Sequence"))
		return parse_seq(L, o, path, "pretokenizers", parse_pre, cap);
	tok_pre pr = {0};
	if (!strcmp(type, "Split")) {
		pr.kind = PRE_SPLIT;
		int inv;
		if (jbool(L, o, "invert", 0, path, &inv))
			return -1;
		if (inv) {
			snprintf(tp, sizeof tp, "%s.invert", path);
			return bad(L, tp, "unsupported value true%s", "");
		}
		const char *beh = jstr(o, "behavior");
		snprintf(tp, sizeof tp, "%s.behavior", path);
		if (!beh)
			return bad(L, tp, "missing%s", "");
		if (!strcmp(beh, "Isolated"))
			pr.behavior = SPLIT_ISOLATED;
		else if (!strcmp(beh, "Removed"))
			pr.behavior = SPLIT_REMOVED;
		else
			return bad(L, tp, "unsupported behavior '%s'", beh);
		if (parse_pattern(L, o, path, 0, NULL, NULL, &pr.re))
			return -1;
	} else if (!strcmp(type, "ByteLevel")) {
		pr.kind = PRE_BYTELEVEL;
		int use_regex;
		if (jbool(L, o, "add_prefix_space", 0, path, &pr.add_prefix_space) ||
		    jbool(L, o, "use_regex", 1, path, &use_regex))
			return -1;
		if (use_regex && compile_re(L, gpt2_re, sizeof gpt2_re - 1, 2, path, &pr.re))
			return -1;
		t->byte_level = 1;
	} else
		return bad(L, tp, "unsupported pre-tokenizer '%s'", type);
	if (pr.re) {
		size_t jsz = 0;
		pr.jit = pcre2_pattern_info(pr.re, PCRE2_INFO_JITSIZE, &jsz) == 0 && jsz > 0;
	}
	tok_pre *v = tok_grow(t->pre, cap, t->n_pre, sizeof *v, 4);
	if (!v)
		return ss_err_set(L->e, "out of memory");
	t->pre = v;
	t->pre[t->n_pre++] = pr;
	return 0;
}

static int parse_dec(ld *L, json_t *o, const char *path, size_t *cap)
{
	tok *t = L->t;
	const char *type;
	char tp[PATHMAX];
	if (comp_type(L, o, path, tp, &type))
		return -1;
	if (!strcmp(type, "Sequence"))
		return parse_seq(L, o, path, "decoders", parse_dec, cap);
	tok_dec d = {0};
	if (!strcmp(type, "ByteLevel"))
		d.kind = DEC_BYTELEVEL;
	else if (!strcmp(type, "ByteFallback"))
		d.kind = DEC_BYTEFALLBACK;
	else if (!strcmp(type, "Fuse"))
		d.kind = DEC_FUSE;
	else if (!strcmp(type, "Replace")) {
		d.kind = DEC_REPLACE;
		if (parse_pattern(L, o, path, 1, &d.pat, &d.pat_len, NULL) ||
		    jcopy(L, o, "content", path, &d.content, &d.content_len)) {
			free(d.pat);
			return -1;
		}
	} else if (!strcmp(type, "Strip")) {
		d.kind = DEC_STRIP;
		if (jcopy(L, o, "content", path, &d.content, &d.content_len))
			return -1;
		size_t i = 0;
		d.strip_cp = d.content_len ? tok_utf8_next(d.content, d.content_len, &i) : 0;
		if (i != d.content_len || !d.content_len) {
			free(d.content);
			snprintf(tp, sizeof tp, "%s.content", path);
			return bad(L, tp, "expected one character%s", "");
		}
		json_t *a = json_object_get(o, "start"), *b = json_object_get(o, "stop");
		d.start = json_is_integer(a) ? (int)json_integer_value(a) : 0;
		d.stop = json_is_integer(b) ? (int)json_integer_value(b) : 0;
	} else
		return bad(L, tp, "unsupported decoder '%s'", type);
	tok_dec *v = tok_grow(t->dec, cap, t->n_dec, sizeof *v, 4);
	if (!v)
		return ss_err_set(L->e, "out of memory");
	t->dec = v;
	t->dec[t->n_dec++] = d;
	return 0;
}

static int push_id(int32_t **v, size_t *n, int32_t id, ss_err *e)
{
	int32_t *p = realloc(*v, (*n + 1) * sizeof *p);
	if (!p)
		return ss_err_set(e, "out of memory");
	p[(*n)++] = id;
	*v = p;
	return 0;
}

/* cap: unused (post-processors are not kept in an array), there for parse_seq */
static int parse_post(ld *L, json_t *o, const char *path, size_t *cap)
{
	tok *t = L->t;
	const char *type;
	char tp[PATHMAX];
	if (comp_type(L, o, path, tp, &type))
		return -1;
	if (!strcmp(type, "Sequence"))
		return parse_seq(L, o, path, "processors", parse_post, cap);
	if (!strcmp(type, "ByteLevel"))
		return 0; /* offsets only */
	if (strcmp(type, "TemplateProcessing"))
		return bad(L, tp, "unsupported post-processor '%s'", type);
	json_t *single = json_object_get(o, "single"), *sp = json_object_get(o, "special_tokens");
	if (!json_is_array(single)) {
		snprintf(tp, sizeof tp, "%s.single", path);
		return bad(L, tp, "missing or not an array%s", "");
	}
	int seen_a = 0;
	for (size_t i = 0; i < json_array_size(single); i++) {
		json_t *it = json_array_get(single, i);
		char p[PATHMAX];
		snprintf(p, sizeof p, "%s.single[%zu]", path, i);
		json_t *st = json_object_get(it, "SpecialToken"), *sq = json_object_get(it, "Sequence");
		if (json_is_object(sq)) {
			const char *id = jstr(sq, "id");
			if (!id || strcmp(id, "A") || seen_a)
				return bad(L, p, "unsupported sequence in the single template%s", "");
			seen_a = 1;
		} else if (json_is_object(st)) {
			const char *id = jstr(st, "id");
			json_t *def = id ? json_object_get(sp, id) : NULL;
			json_t *ids = json_object_get(def, "ids");
			if (!json_is_array(ids))
				return bad(L, p, "special token '%s' not in special_tokens", id ? id : "?");
			for (size_t k = 0; k < json_array_size(ids); k++) {
				json_t *x = json_array_get(ids, k);
				if (!json_is_integer(x) || json_integer_value(x) < 0 ||
				    (size_t)json_integer_value(x) >= t->n_ids)
					return bad(L, p, "special token '%s': id out of range", id);
				int32_t v = (int32_t)json_integer_value(x);
				if (seen_a ? push_id(&t->post_suf, &t->n_post_suf, v, L->e)
				           : push_id(&t->post_pre, &t->n_post_pre, v, L->e))
					return -1;
			}
		} else
			return bad(L, p, "expected SpecialToken or Sequence%s", "");
	}
	return 0;
}

static int trie_add(tok_trie *tr, const char *s, size_t n, int32_t tokidx, ss_err *e)
{
	if (!tr->node) {
		tr->cap = 64;
		tr->node = malloc(tr->cap * sizeof *tr->node);
		if (!tr->node)
			return ss_err_set(e, "out of memory");
		tr->node[0] = (struct tok_tnode){-1, -1, -1, 0};
		tr->n = 1;
	}
	if (n == 0)
		return 0;
	tr->first[(unsigned char)s[0]] = 1;
	int32_t cur = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t b = (uint8_t)s[i];
		int32_t c = tr->node[cur].child;
		while (c >= 0 && tr->node[c].byte != b)
			c = tr->node[c].sibling;
		if (c < 0) {
			if (tr->n == tr->cap) {
				void *p = realloc(tr->node, 2 * tr->cap * sizeof *tr->node);
				if (!p)
					return ss_err_set(e, "out of memory");
				tr->node = p;
				tr->cap *= 2;
			}
			c = (int32_t)tr->n++;
			tr->node[c] = (struct tok_tnode){-1, tr->node[cur].child, -1, b};
			tr->node[cur].child = c;
		}
		cur = c;
	}
	if (tr->node[cur].tok < 0) /* the first of equal contents wins */
		tr->node[cur].tok = tokidx;
	return 0;
}

/* byte-level: the GPT-2 map from bytes to chars */
static uint32_t byte_char(int b)
{
	if ((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff))
		return (uint32_t)b;
	int k = 0;
	for (int c = 0; c < b; c++)
		if (!((c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || (c >= 0xae && c <= 0xff)))
			k++;
	return 0x100 + (uint32_t)k;
}

#define PREFETCH 8

/* Prefetch the string of the id in the first slot for hash h (when that
 * slot's hash matches, it is almost always the one). */
static inline void pf_str(const tok *t, uint64_t h, int deref)
{
	const struct tok_sslot *sl = &t->strs.slot[h & t->strs.mask];
	if (sl->id < 0 || sl->hash != (uint32_t)h)
		return;
	if (deref)
		__builtin_prefetch(t->str[sl->id]);
	else {
		__builtin_prefetch(&t->str[sl->id]);
		__builtin_prefetch(&t->len[sl->id]);
	}
}

/* model.merges resolved to ids, into t->merges.  A lookup misses the cache
 * three times after the slot (the id's length, its string pointer, the
 * string), so the loop is a pipeline: the slots are prefetched D_SLOT
 * merges ahead, the lengths and pointers D_PTR ahead, the strings D_STR
 * ahead; the merge table's slot is prefetched D_PUT merges before its
 * write.  The merged token usually has the id after the previous merge's
 * (vocabularies list merges' results in rank order): checking that guess
 * in order replaces the third lookup. */
#define D_SLOT 16
#define D_PTR 8
#define D_STR 4
#define D_PUT 4
static int resolve_merges(ld *L, const tok_bulk *bk)
{
	tok *t = L->t;
	size_t nm = bk->n_merge, N = t->n_ids;
	if (tok_mergemap_init(&t->merges, nm, L->e))
		return -1;
	const char *ms = bk->mstr.p;
	const tok_bulk_merge *mg = bk->merge;
	uint64_t hr[32][2]; /* hashes of left and right, D_SLOT ahead */
	struct { int32_t a, b, id; } put[8];
	int32_t guess = -1;
	for (size_t j = 0; j < D_SLOT && j < nm; j++)
		if (mg[j].form == TOK_MERGE_OK) {
			hr[j & 31][0] = tok_hash(ms + mg[j].off, mg[j].alen);
			hr[j & 31][1] = tok_hash(ms + mg[j].off + mg[j].alen, mg[j].blen);
		}
	for (size_t i = 0; i < nm; i++) {
		size_t j = i + D_SLOT;
		if (j < nm && mg[j].form == TOK_MERGE_OK) {
			uint64_t *h = hr[j & 31];
			h[0] = tok_hash(ms + mg[j].off, mg[j].alen);
			h[1] = tok_hash(ms + mg[j].off + mg[j].alen, mg[j].blen);
			__builtin_prefetch(&t->strs.slot[h[0] & t->strs.mask]);
			__builtin_prefetch(&t->strs.slot[h[1] & t->strs.mask]);
		}
		if ((j = i + D_PTR) < nm && mg[j].form == TOK_MERGE_OK) {
			pf_str(t, hr[j & 31][0], 0);
			pf_str(t, hr[j & 31][1], 0);
		}
		if ((j = i + D_STR) < nm && mg[j].form == TOK_MERGE_OK) {
			pf_str(t, hr[j & 31][0], 1);
			pf_str(t, hr[j & 31][1], 1);
		}
		char p[PATHMAX];
		if (mg[i].form != TOK_MERGE_OK) {
			snprintf(p, sizeof p, "model.merges[%zu]", i);
			return bad(L, p, mg[i].form == TOK_MERGE_NOT_STR ? "expected \"left right\"%s"
			                                                : "expected \"left right\" or [left, right]%s", "");
		}
		/* left and right lie back to back: their concatenation is the merged token */
		const char *a = ms + mg[i].off, *b = a + mg[i].alen;
		size_t al = mg[i].alen, bl = mg[i].blen;
		int32_t ia = tok_strmap_get_h(&t->strs, hr[i & 31][0], a, al, t->str, t->len);
		int32_t ib = tok_strmap_get_h(&t->strs, hr[i & 31][1], b, bl, t->str, t->len);
		int32_t im = guess;
		if (im < 0 || (size_t)im >= N || !t->str[im] || t->len[im] != al + bl || memcmp(t->str[im], a, al + bl))
			im = tok_strmap_get(&t->strs, a, al + bl, t->str, t->len);
		guess = im >= 0 && (size_t)im + 1 < N ? im + 1 : -1;
		if (ia < 0 || ib < 0 || im < 0) {
			char q[300];
			size_t cl = al + bl;
			snprintf(q, sizeof q, "'%.*s'", (int)(ia < 0 ? al : ib < 0 ? bl : cl > 200 ? 200 : cl),
			         ia < 0 ? a : ib < 0 ? b : a);
			snprintf(p, sizeof p, "model.merges[%zu]", i);
			return bad(L, p, "%s is not in the vocabulary", q);
		}
		/* the writes in rank order: a later duplicate pair wins */
		tok_mergemap_prefetch(&t->merges, ia, ib);
		put[i & 7].a = ia;
		put[i & 7].b = ib;
		put[i & 7].id = im;
		if (i >= D_PUT) {
			size_t k = i - D_PUT;
			tok_mergemap_put(&t->merges, put[k & 7].a, put[k & 7].b, (uint32_t)k, put[k & 7].id);
		}
	}
	for (size_t k = nm > D_PUT ? nm - D_PUT : 0; k < nm; k++)
		tok_mergemap_put(&t->merges, put[k & 7].a, put[k & 7].b, (uint32_t)k, put[k & 7].id);
	return 0;
}

static int load_model(ld *L, json_t *root, json_t *added, tok_bulk *bk)
{
	tok *t = L->t;
	ss_err *e = L->e;
	json_t *m = json_object_get(root, "model");
	if (!json_is_object(m))
		return bad(L, "model", "missing or not an object%s", "");
	const char *type = jstr(m, "type");
	if (!type) {
		/* old files have no model.type; they are BPE when they have merges */
		if (!bk->has_merges && !json_object_get(m, "merges"))
			return bad(L, "model.type", "missing%s", "");
	} else if (strcmp(type, "BPE"))
		return bad(L, "model.type", "unsupported model '%s' (only BPE)", type);
	json_t *x = json_object_get(m, "dropout");
	if (x && !json_is_null(x))
		return bad(L, "model.dropout", "unsupported (dropout makes encoding random)%s", "");
	static const char *const empty_only[] = {"continuing_subword_prefix", "end_of_word_suffix"};
	for (int i = 0; i < 2; i++) {
		x = json_object_get(m, empty_only[i]);
		if (x && !json_is_null(x) && !(json_is_string(x) && json_string_length(x) == 0)) {
			char p[PATHMAX];
			snprintf(p, sizeof p, "model.%s", empty_only[i]);
			return bad(L, p, "unsupported non-empty value%s", "");
		}
	}
	if (jbool(L, m, "byte_fallback", 0, "model", &t->byte_fallback) ||
	    jbool(L, m, "fuse_unk", 0, "model", &t->fuse_unk) ||
	    jbool(L, m, "ignore_merges", 0, "model", &t->ignore_merges))
		return -1;
	if (!bk->has_vocab)
		return bad(L, "model.vocab", "missing or not an object%s", "");
	if (bk->vocab_bad)
		return bad(L, "model.vocab", "id of '%s' is not a valid integer", bk->keys.p + bk->vocab_bad_key);
	/* id range */
	long long maxid = -1;
	for (size_t i = 0; i < bk->n_vocab; i++)
		if (bk->vocab[i].id > maxid)
			maxid = bk->vocab[i].id;
	for (size_t i = 0; i < json_array_size(added); i++) {
		json_t *a = json_array_get(added, i);
		json_t *id = json_object_get(a, "id");
		char p[PATHMAX];
		snprintf(p, sizeof p, "added_tokens[%zu]", i);
		if (!json_is_object(a) || !json_is_integer(id) || json_integer_value(id) < 0 ||
		    json_integer_value(id) > 0x7ffffff0 || !json_is_string(json_object_get(a, "content")))
			return bad(L, p, "expected an object with an integer id and a string content%s", "");
		if (json_integer_value(id) > maxid)
			maxid = json_integer_value(id);
	}
	t->n_ids = (size_t)(maxid + 1);
	size_t N = t->n_ids;
	t->str = calloc(N, sizeof *t->str);
	t->len = calloc(N, sizeof *t->len);
	t->is_added = calloc(N, 1);
	t->remap = malloc(N * sizeof *t->remap);
	if (!t->str || !t->len || !t->is_added || !t->remap)
		return ss_err_set(e, "%s: out of memory for %zu tokens", L->name, N);
	for (size_t i = 0; i < N; i++)
		t->remap[i] = (int32_t)i;
	size_t nv = bk->n_vocab;
	if (tok_strmap_init(&t->strs, nv + json_array_size(added), e))
		return -1;
	/* the keys, NUL-terminated, become the token strings */
	t->vocab_arena = bk->keys.p;
	bk->keys = (tok_buf){0};
	uint64_t hr[16]; /* hashes, PREFETCH ahead */
	for (size_t j = 0; j < PREFETCH && j < nv; j++)
		hr[j] = tok_hash(t->vocab_arena + bk->vocab[j].off, bk->vocab[j].len);
	for (size_t j = 0; j < nv; j++) {
		const tok_bulk_vocab *v = &bk->vocab[j];
		uint64_t h = hr[j % 16];
		if (j + PREFETCH < nv) { /* the slots miss the cache: prefetch a few ahead */
			const tok_bulk_vocab *x = &bk->vocab[j + PREFETCH];
			uint64_t hx = tok_hash(t->vocab_arena + x->off, x->len);
			hr[(j + PREFETCH) % 16] = hx;
			__builtin_prefetch(&t->strs.slot[hx & t->strs.mask], 1);
		}
		char *k = t->vocab_arena + v->off;
		if (t->str[v->id]) {
			if (t->len[v->id] == v->len && !memcmp(t->str[v->id], k, v->len))
				continue; /* the same key and id again */
			return bad(L, "model.vocab", "id of '%s' is used twice", k);
		}
		t->str[v->id] = k;
		t->len[v->id] = v->len;
		int32_t o = tok_strmap_put_h(&t->strs, h, v->id, k, v->len, t->str, t->len);
		if (o != v->id) {
			/* a key given twice: the last value wins, as in JSON.parse */
			t->str[o] = NULL;
			t->len[o] = 0;
			for (size_t sl = h & t->strs.mask; t->strs.slot[sl].id >= 0; sl = (sl + 1) & t->strs.mask)
				if (t->strs.slot[sl].id == o) {
					t->strs.slot[sl].id = v->id;
					break;
				}
		}
	}
	if (t->byte_level) {
		for (int b = 0; b < 256; b++) {
			tok_buf c = {0};
			t->byte_char[b] = byte_char(b);
			if (tok_utf8_put(&c, t->byte_char[b], e))
				return -1;
			t->byte_id[b] = tok_strmap_get(&t->strs, c.p, c.n, t->str, t->len);
			free(c.p);
			if (t->byte_id[b] < 0) {
				char hx[8];
				snprintf(hx, sizeof hx, "0x%02X", b);
				return bad(L, "model.vocab", "no token for byte %s (byte-level BPE needs all 256)", hx);
			}
		}
	}
	if (!bk->has_merges)
		return bad(L, "model.merges", "missing or not an array%s", "");
	if (resolve_merges(L, bk))
		return -1;
	/* added tokens: they own their id's string and win over a vocabulary
	 * entry with the same string (as in tokenizers.js's id lookup) */
	t->n_added = json_array_size(added);
	t->added = calloc(t->n_added ? t->n_added : 1, sizeof *t->added);
	if (!t->added)
		return ss_err_set(e, "out of memory");
	for (size_t i = 0; i < t->n_added; i++) {
		json_t *a = json_array_get(added, i);
		tok_added *ad = &t->added[i];
		char p[PATHMAX];
		snprintf(p, sizeof p, "added_tokens[%zu]", i);
		ad->id = (int32_t)json_integer_value(json_object_get(a, "id"));
		if (jcopy(L, a, "content", p, &ad->content, &ad->len) ||
		    jbool(L, a, "special", 0, p, &ad->special) ||
		    jbool(L, a, "lstrip", 0, p, &ad->lstrip) ||
		    jbool(L, a, "rstrip", 0, p, &ad->rstrip) ||
		    jbool(L, a, "single_word", 0, p, &ad->single_word) ||
		    jbool(L, a, "normalized", !ad->special, p, &ad->normalized))
			return -1;
		if (ad->len == 0)
			return bad(L, p, "empty content%s", "");
		int32_t old = tok_strmap_get(&t->strs, ad->content, ad->len, t->str, t->len);
		if (old >= 0 && old != ad->id)
			t->remap[old] = ad->id;
		t->str[ad->id] = ad->content;
		t->len[ad->id] = (uint32_t)ad->len;
		t->is_added[ad->id] = 1;
		tok_strmap_put(&t->strs, ad->id, ad->content, ad->len, t->str, t->len);
		/* overwrite: the slot holding `old` must now answer ad->id */
		if (old >= 0 && old != ad->id) {
			uint64_t h = tok_hash(ad->content, ad->len);
			for (size_t s = h & t->strs.mask; t->strs.slot[s].id >= 0; s = (s + 1) & t->strs.mask)
				if (t->strs.slot[s].id == old) {
					t->strs.slot[s].id = ad->id;
					break;
				}
		}
	}
	/* unk, byte fallback */
	t->unk_id = -1;
	x = json_object_get(m, "unk_token");
	if (json_is_string(x)) {
		t->unk_id = tok_strmap_get(&t->strs, json_string_value(x), json_string_length(x), t->str, t->len);
		if (t->unk_id < 0)
			return bad(L, "model.unk_token", "'%s' is not in the vocabulary", json_string_value(x));
	} else if (x && !json_is_null(x))
		return bad(L, "model.unk_token", "expected a string or null%s", "");
	for (int b = 0; b < 256; b++) {
		char s[8];
		snprintf(s, sizeof s, "<0x%02X>", b);
		t->fallback_id[b] = tok_strmap_get(&t->strs, s, 6, t->str, t->len);
	}
	return 0;
}

static tok *load_root(json_t *root, tok_bulk *bk, const char *name, ss_err *e);

static tok *load_tree(json_t *root, tok_bulk *bk, const char *name, ss_err *e)
{
	if (!root)
		return NULL;
	tok *t = load_root(root, bk, name, e);
	/* load_root has copied everything it keeps out of the tree */
	json_decref(root);
	tok_bulk_free(bk);
	return t;
}

tok *tok_load_mem(const char *json, size_t len, const char *name, ss_err *e)
{
	tok_bulk bk;
	return load_tree(tok_json_parse(json, len, name, &bk, e), &bk, name, e);
}

tok *tok_load(const char *path, ss_err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ss_err_errno(e, errno, "%s", path);
		return NULL;
	}
	tok_bulk bk;
	json_t *root = tok_json_parse_fd(fd, path, &bk, e);
	close(fd);
	return load_tree(root, &bk, path, e);
}

static tok *load_root(json_t *root, tok_bulk *bk, const char *name, ss_err *e)
{
	tok *t = calloc(1, sizeof *t);
	if (!t) {
		ss_err_set(e, "out of memory");
		return NULL;
	}
	ld L = {t, name, e};
	t->name = ss_strdup(name, e);
	if (!t->name)
		goto fail;
	t->md = pcre2_match_data_create(32, NULL);
	t->mctx = pcre2_match_context_create(NULL);
	t->jstack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, NULL);
	if (!t->md || !t->mctx || !t->jstack) {
		ss_err_set(e, "out of memory");
		goto fail;
	}
	pcre2_jit_stack_assign(t->mctx, NULL, t->jstack);
	if (!json_is_object(root)) {
		ss_err_set(e, "%s: expected a JSON object", name);
		goto fail;
	}
	json_t *added = json_object_get(root, "added_tokens");
	if (added && !json_is_array(added) && !json_is_null(added)) {
		bad(&L, "added_tokens", "expected an array%s", "");
		goto fail;
	}
	size_t cap = 0;
	json_t *x = json_object_get(root, "normalizer");
	t->has_normalizer = x && !json_is_null(x);
	if (t->has_normalizer && parse_normalizer(&L, x, "normalizer", &cap))
		goto fail;
	cap = 0;
	x = json_object_get(root, "pre_tokenizer");
	if (x && !json_is_null(x) && parse_pre(&L, x, "pre_tokenizer", &cap))
		goto fail;
	if (load_model(&L, root, added, bk))
		goto fail;
	x = json_object_get(root, "post_processor");
	if (x && !json_is_null(x) && parse_post(&L, x, "post_processor", NULL))
		goto fail;
	cap = 0;
	x = json_object_get(root, "decoder");
	t->has_decoder = x && !json_is_null(x);
	if (t->has_decoder && parse_dec(&L, x, "decoder", &cap))
		goto fail;
	/* added-token tries */
	if (trie_add(&t->trie_raw, "", 0, -1, e) || trie_add(&t->trie_norm, "", 0, -1, e))
		goto fail;
	for (size_t i = 0; i < t->n_added; i++) {
		tok_added *a = &t->added[i];
		if (a->normalized && t->has_normalizer) {
			tok_buf nb = {0};
			if (tok_normalize(t, a->content, a->len, &nb, e))
				goto fail;
			a->norm = nb.p;
			a->norm_len = nb.n;
			if (nb.n && trie_add(&t->trie_norm, a->norm, a->norm_len, (int32_t)i, e))
				goto fail;
		} else if (trie_add(&t->trie_raw, a->content, a->len, (int32_t)i, e))
			goto fail;
	}
	return t;
fail:
	tok_free(t);
	return NULL;
}

void tok_free(tok *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_norm; i++) {
		free(t->norm[i].pat);
		free(t->norm[i].content);
		pcre2_code_free(t->norm[i].re);
	}
	free(t->norm);
	for (size_t i = 0; i < t->n_pre; i++)
		pcre2_code_free(t->pre[i].re);
	free(t->pre);
	for (size_t i = 0; i < t->n_dec; i++) {
		free(t->dec[i].pat);
		free(t->dec[i].content);
	}
	free(t->dec);
	for (size_t i = 0; t->added && i < t->n_added; i++) {
		free(t->added[i].content);
		free(t->added[i].norm);
	}
	free(t->added);
	free(t->trie_raw.node);
	free(t->trie_norm.node);
	free(t->post_pre);
	free(t->post_suf);
	free(t->str);
	free(t->len);
	free(t->is_added);
	free(t->remap);
	free(t->vocab_arena);
	free(t->strs.slot);
	free(t->mapbuf.p);
	free(t->merges.key);
	free(t->merges.val);
	if (t->md)
		pcre2_match_data_free(t->md);
	if (t->mctx)
		pcre2_match_context_free(t->mctx);
	if (t->jstack)
		pcre2_jit_stack_free(t->jstack);
	tok_cache_free(&t->cache);
	free(t->nbuf.p);
	free(t->sym);
	free(t->name);
	free(t);
}

/* ---------------- encoding ---------------- */

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
	size_t bad;
	if (!tok_utf8_valid(text, n, &bad))
		return ss_err_set(e, "text: invalid UTF-8 at byte offset %zu", bad);
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
