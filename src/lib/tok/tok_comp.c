/* tok_comp.c - the pipeline components of tokenizer.json, parsed into the
 * tokenizer: normalizers (NFC/NFD/NFKC/NFKD, Replace, Prepend),
 * pre-tokenizers (Split, ByteLevel with GPT-2's regex), decoders (ByteLevel,
 * ByteFallback, Fuse, Replace, Strip) and the post-processor
 * (TemplateProcessing's BOS/EOS ids), each possibly a Sequence.  Regexes
 * are compiled here (PCRE2, JIT when available), with \s and \S read as
 * Oniguruma reads them.  Anything else is refused by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tok/tok_impl.h"

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

static int compile_re(tok_ld *L, const char *pat0, size_t n0, int literal, const char *path, pcre2_code **out)
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
		return tok_bad(L, path, "%s", m);
	}
	(void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* else the interpreter runs it */
	*out = re;
	return 0;
}

/* pattern: {"String": s} or {"Regex": r}.  For a String, *lit gets a copy. */
static int parse_pattern(tok_ld *L, json_t *o, const char *path, int want_lit,
                         char **lit, size_t *lit_len, pcre2_code **re)
{
	char p[TOK_PATHMAX];
	snprintf(p, sizeof p, "%s.pattern", path);
	json_t *pat = json_object_get(o, "pattern");
	if (!json_is_object(pat))
		return tok_bad(L, p, "missing or not an object%s", "");
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
			return tok_bad(L, p, "unsupported Regex pattern (only String)%s", "");
		snprintf(p, sizeof p, "%s.pattern.Regex", path);
		return compile_re(L, json_string_value(r), json_string_length(r), 0, p, re);
	}
	return tok_bad(L, p, "expected {\"String\": ...} or {\"Regex\": ...}%s", "");
}

/* Every component of the pipeline is an object with a string "type"; tp
 * gets the path of that member, for messages. */
static int comp_type(tok_ld *L, json_t *o, const char *path, char tp[TOK_PATHMAX], const char **type)
{
	if (!json_is_object(o))
		return tok_bad(L, path, "expected an object%s", "");
	*type = tok_jstr(o, "type");
	snprintf(tp, TOK_PATHMAX, "%s.type", path);
	if (!*type)
		return tok_bad(L, tp, "missing%s", "");
	return 0;
}

/* A component parser; cap is the capacity of the array it appends to. */
typedef int (*comp_fn)(tok_ld *L, json_t *o, const char *path, size_t *cap);

/* {"type": "Sequence", key: [...]}: each element in turn. */
static int parse_seq(tok_ld *L, json_t *o, const char *path, const char *key, comp_fn fn,
                     size_t *cap)
{
	json_t *a = json_object_get(o, key);
	char p[TOK_PATHMAX];
	if (!json_is_array(a)) {
		snprintf(p, sizeof p, "%s.%s", path, key);
		return tok_bad(L, p, "missing or not an array%s", "");
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		snprintf(p, sizeof p, "%s.%s[%zu]", path, key, i);
		if (fn(L, json_array_get(a, i), p, cap))
			return -1;
	}
	return 0;
}

int tok_parse_normalizer(tok_ld *L, json_t *o, const char *path, size_t *cap)
{
	tok *t = L->t;
	const char *type;
	char tp[TOK_PATHMAX];
	if (comp_type(L, o, path, tp, &type))
		return -1;
	if (!strcmp(type, "Sequence"))
		return parse_seq(L, o, path, "normalizers", tok_parse_normalizer, cap);
	tok_norm nm = {0};
	if (!strcmp(type, "NFC")) nm.kind = NORM_NFC;
	else if (!strcmp(type, "NFD")) nm.kind = NORM_NFD;
	else if (!strcmp(type, "NFKC")) nm.kind = NORM_NFKC;
	else if (!strcmp(type, "NFKD")) nm.kind = NORM_NFKD;
	else if (!strcmp(type, "Prepend")) {
		nm.kind = NORM_PREPEND;
		if (tok_jcopy(L, o, "prepend", path, &nm.content, &nm.content_len))
			return -1;
	} else if (!strcmp(type, "Replace")) {
		nm.kind = NORM_REPLACE;
		json_t *pat = json_object_get(o, "pattern");
		int lit = json_is_object(pat) && json_is_string(json_object_get(pat, "String"));
		if (parse_pattern(L, o, path, lit, &nm.pat, &nm.pat_len, &nm.re) ||
		    tok_jcopy(L, o, "content", path, &nm.content, &nm.content_len)) {
			free(nm.pat);
			free(nm.content);
			return -1;
		}
	} else
		return tok_bad(L, tp, "unsupported normalizer '%s'", type);
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

int tok_parse_pre(tok_ld *L, json_t *o, const char *path, size_t *cap)
{
	tok *t = L->t;
	const char *type;
	char tp[TOK_PATHMAX];
	if (comp_type(L, o, path, tp, &type))
		return -1;
	if (t->byte_level)
		return tok_bad(L, tp, "'%s' after ByteLevel is not supported", type);
	if (!strcmp(type, "Sequence"))
		return parse_seq(L, o, path, "pretokenizers", tok_parse_pre, cap);
	tok_pre pr = {0};
	if (!strcmp(type, "Split")) {
		pr.kind = PRE_SPLIT;
		int inv;
		if (tok_jbool(L, o, "invert", 0, path, &inv))
			return -1;
		if (inv) {
			snprintf(tp, sizeof tp, "%s.invert", path);
			return tok_bad(L, tp, "unsupported value true%s", "");
		}
		const char *beh = tok_jstr(o, "behavior");
		snprintf(tp, sizeof tp, "%s.behavior", path);
		if (!beh)
			return tok_bad(L, tp, "missing%s", "");
		if (!strcmp(beh, "Isolated"))
			pr.behavior = SPLIT_ISOLATED;
		else if (!strcmp(beh, "Removed"))
			pr.behavior = SPLIT_REMOVED;
		else
			return tok_bad(L, tp, "unsupported behavior '%s'", beh);
		if (parse_pattern(L, o, path, 0, NULL, NULL, &pr.re))
			return -1;
	} else if (!strcmp(type, "ByteLevel")) {
		pr.kind = PRE_BYTELEVEL;
		int use_regex;
		if (tok_jbool(L, o, "add_prefix_space", 0, path, &pr.add_prefix_space) ||
		    tok_jbool(L, o, "use_regex", 1, path, &use_regex))
			return -1;
		if (use_regex && compile_re(L, gpt2_re, sizeof gpt2_re - 1, 2, path, &pr.re))
			return -1;
		t->byte_level = 1;
	} else
		return tok_bad(L, tp, "unsupported pre-tokenizer '%s'", type);
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

int tok_parse_dec(tok_ld *L, json_t *o, const char *path, size_t *cap)
{
	tok *t = L->t;
	const char *type;
	char tp[TOK_PATHMAX];
	if (comp_type(L, o, path, tp, &type))
		return -1;
	if (!strcmp(type, "Sequence"))
		return parse_seq(L, o, path, "decoders", tok_parse_dec, cap);
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
		    tok_jcopy(L, o, "content", path, &d.content, &d.content_len)) {
			free(d.pat);
			return -1;
		}
	} else if (!strcmp(type, "Strip")) {
		d.kind = DEC_STRIP;
		if (tok_jcopy(L, o, "content", path, &d.content, &d.content_len))
			return -1;
		size_t i = 0;
		d.strip_cp = d.content_len ? tok_utf8_next(d.content, d.content_len, &i) : 0;
		if (i != d.content_len || !d.content_len) {
			free(d.content);
			snprintf(tp, sizeof tp, "%s.content", path);
			return tok_bad(L, tp, "expected one character%s", "");
		}
		json_t *a = json_object_get(o, "start"), *b = json_object_get(o, "stop");
		d.start = json_is_integer(a) ? (int)json_integer_value(a) : 0;
		d.stop = json_is_integer(b) ? (int)json_integer_value(b) : 0;
	} else
		return tok_bad(L, tp, "unsupported decoder '%s'", type);
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
int tok_parse_post(tok_ld *L, json_t *o, const char *path, size_t *cap)
{
	tok *t = L->t;
	const char *type;
	char tp[TOK_PATHMAX];
	if (comp_type(L, o, path, tp, &type))
		return -1;
	if (!strcmp(type, "Sequence"))
		return parse_seq(L, o, path, "processors", tok_parse_post, cap);
	if (!strcmp(type, "ByteLevel"))
		return 0; /* offsets only */
	if (strcmp(type, "TemplateProcessing"))
		return tok_bad(L, tp, "unsupported post-processor '%s'", type);
	json_t *single = json_object_get(o, "single"), *sp = json_object_get(o, "special_tokens");
	if (!json_is_array(single)) {
		snprintf(tp, sizeof tp, "%s.single", path);
		return tok_bad(L, tp, "missing or not an array%s", "");
	}
	int seen_a = 0;
	for (size_t i = 0; i < json_array_size(single); i++) {
		json_t *it = json_array_get(single, i);
		char p[TOK_PATHMAX];
		snprintf(p, sizeof p, "%s.single[%zu]", path, i);
		json_t *st = json_object_get(it, "SpecialToken"), *sq = json_object_get(it, "Sequence");
		if (json_is_object(sq)) {
			const char *id = tok_jstr(sq, "id");
			if (!id || strcmp(id, "A") || seen_a)
				return tok_bad(L, p, "unsupported sequence in the single template%s", "");
			seen_a = 1;
		} else if (json_is_object(st)) {
			const char *id = tok_jstr(st, "id");
			json_t *def = id ? json_object_get(sp, id) : NULL;
			json_t *ids = json_object_get(def, "ids");
			if (!json_is_array(ids))
				return tok_bad(L, p, "special token '%s' not in special_tokens", id ? id : "?");
			for (size_t k = 0; k < json_array_size(ids); k++) {
				json_t *x = json_array_get(ids, k);
				if (!json_is_integer(x) || json_integer_value(x) < 0 ||
				    (size_t)json_integer_value(x) >= t->n_ids)
					return tok_bad(L, p, "special token '%s': id out of range", id);
				int32_t v = (int32_t)json_integer_value(x);
				if (seen_a ? push_id(&t->post_suf, &t->n_post_suf, v, L->e)
				           : push_id(&t->post_pre, &t->n_post_pre, v, L->e))
					return -1;
			}
		} else
			return tok_bad(L, p, "expected SpecialToken or Sequence%s", "");
	}
	return 0;
}
