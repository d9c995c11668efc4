/* tok_json.c - tokenizer.json read by a streaming parser (yajl).
 *
 * A DOM of the whole file (jansson) costs most of the load of a large
 * tokenizer: model.vocab (150k keys) and model.merges (150k pairs) become
 * half a million small values, each allocated, the keys hashed into
 * jansson's object table, and then all of it read once and dropped.  Here
 * yajl's events for those two go straight into flat arrays (tok_bulk);
 * everything else in the file, a few kilobytes, is built into jansson
 * values from the same events, so that tok_load.c reads the normalizer,
 * pre-tokenizer, added tokens and the rest of the model as before.
 *
 * tok_load reads the file in chunks of about a megabyte (see
 * tok_json_parse_fd), so the input is never in memory whole.
 *
 * The tree is what jansson's own parser would give (duplicate keys: the
 * last wins; depth at most 2048; lone UTF-16 surrogates in \u escapes are
 * invalid, which yajl alone would turn into '?' or CESU-8), except that it
 * has no model.vocab or model.merges where those were an object and an
 * array: they are in the tok_bulk.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>
#include "tok/tok_impl.h"

#define MAXDEPTH 2048 /* jansson's JSON_PARSER_MAX_DEPTH */

enum { F_BUILD, F_VOCAB, F_MERGES, F_PAIR, F_SKIP };

typedef struct jframe {
	int kind;
	json_t *v;      /* F_BUILD: the object or array being filled */
	int is_model;   /* F_BUILD: the root's "model" object */
	int npair, pair_bad; /* F_PAIR: strings seen; a non-string or a third one */
	size_t pair_off;
	uint32_t pair_len[2];
} jframe;

typedef struct jp {
	yajl_handle h;
	const char *in;
	size_t n;
	json_t *root;
	jframe *st;
	size_t depth, cap;
	tok_buf key;    /* the pending object key (F_BUILD) */
	size_t vkey_off, vkey_len; /* the pending vocab key, in bulk->keys */
	tok_bulk *b;
	const char *err; /* why a callback stopped the parse (a JSON error) */
	int oom;
	char errbuf[64];
} jp;

static int oom(jp *P)
{
	P->oom = 1;
	return 0;
}

static int invalid(jp *P, const char *why)
{
	P->err = why;
	return 0;
}

/* A string that yajl decoded (it had escapes) lies in yajl's own buffer;
 * its raw text ends just before the parser's position.  A lone surrogate
 * in its \u escapes is an error, as in jansson. */
static int check_escapes(jp *P, const unsigned char *s)
{
	uintptr_t a = (uintptr_t)s, b = (uintptr_t)P->in;
	if (a >= b && a <= b + P->n)
		return 1; /* no escapes: handed over in place */
	const char *in = P->in;
	size_t q = yajl_get_bytes_consumed(P->h); /* just past the closing quote */
	if (q == 0 || q > P->n || in[--q] != '"')
		return 1;
	size_t start = 0; /* the opening quote: the first one back not escaped */
	for (size_t i = q; i-- > 0;) {
		size_t bs = 0;
		while (in[i] == '"' && bs < i && in[i - 1 - bs] == '\\')
			bs++;
		if (in[i] == '"' && bs % 2 == 0) {
			start = i + 1;
			break;
		}
	}
	unsigned hi = 0; /* a high surrogate waiting for its low half */
	for (size_t i = start; i < q; i++) {
		if (in[i] != '\\')
			continue;
		unsigned u = 0;
		if (in[i + 1] == 'u' && i + 6 <= q) {
			for (int k = 2; k < 6; k++) {
				char c = in[i + k];
				u = u * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
			}
			i += 4;
		}
		i++;
		int lo = u >= 0xdc00 && u <= 0xdfff;
		if (hi && !lo)
			u = hi;
		else if (hi || !lo) {
			hi = !hi && u >= 0xd800 && u <= 0xdbff ? u : 0;
			if (!hi || (i + 2 < q && in[i + 1] == '\\' && in[i + 2] == 'u'))
				continue;
		}
		snprintf(P->errbuf, sizeof P->errbuf, "invalid Unicode '\\u%04X'", u);
		return invalid(P, P->errbuf);
	}
	return 1;
}

static jframe *top(jp *P) { return P->depth ? &P->st[P->depth - 1] : NULL; }

static int push(jp *P, jframe f)
{
	if (P->depth >= MAXDEPTH)
		return invalid(P, "maximum parsing depth reached");
	jframe *s = tok_grow(P->st, &P->cap, P->depth, sizeof *s, 32);
	if (!s)
		return oom(P);
	P->st = s;
	P->st[P->depth++] = f;
	return 1;
}

static int key_is(jp *P, const char *k)
{
	size_t n = strlen(k);
	return P->key.n == n && !memcmp(P->key.p, k, n);
}

/* Attach v (a new reference) at the current position of the tree. */
static int attach(jp *P, json_t *v)
{
	if (!v)
		return oom(P);
	jframe *f = top(P);
	if (!f) {
		P->root = v;
		return 1;
	}
	if (f->is_model && key_is(P, "vocab")) /* the last of duplicate keys wins */
		P->b->has_vocab = 0;
	else if (f->is_model && key_is(P, "merges"))
		P->b->has_merges = 0;
	int rc = json_is_object(f->v) ? json_object_setn_new_nocheck(f->v, P->key.p, P->key.n, v)
	                              : json_array_append_new(f->v, v);
	return rc ? oom(P) : 1;
}

static int merge_push(jp *P, size_t off, uint32_t alen, uint32_t blen, int form)
{
	tok_bulk *b = P->b;
	tok_bulk_merge *m = tok_grow(b->merge, &b->cap_merge, b->n_merge, sizeof *m, 1024);
	if (!m)
		return oom(P);
	b->merge = m;
	b->merge[b->n_merge++] = (tok_bulk_merge){off, alen, blen, form};
	return 1;
}

static int bulk_str(jp *P, const unsigned char *s, size_t n, size_t *off)
{
	ss_err e;
	if (n > UINT32_MAX)
		return invalid(P, "string too long");
	*off = P->b->mstr.n;
	return tok_buf_put(&P->b->mstr, s, n, &e) ? oom(P) : 1;
}

/* A value in a special frame that is not what it holds. */
static void odd_value(jp *P, jframe *f)
{
	if (f->kind == F_VOCAB && !P->b->vocab_bad) {
		P->b->vocab_bad = 1;
		P->b->vocab_bad_key = P->vkey_off;
	} else if (f->kind == F_MERGES)
		merge_push(P, 0, 0, 0, TOK_MERGE_NOT_STR_OR_PAIR);
	else if (f->kind == F_PAIR)
		f->pair_bad = 1;
}

static int vocab_id(jp *P, long long v)
{
	tok_bulk *b = P->b;
	if (v < 0 || v > 0x7ffffff0) {
		odd_value(P, top(P));
		return 1;
	}
	tok_bulk_vocab *p = tok_grow(b->vocab, &b->cap_vocab, b->n_vocab, sizeof *p, 1024);
	if (!p)
		return oom(P);
	b->vocab = p;
	b->vocab[b->n_vocab++] = (tok_bulk_vocab){P->vkey_off, (uint32_t)P->vkey_len, (int32_t)v};
	return 1;
}

/* A scalar: v is its jansson value (built lazily by mk for F_BUILD). */
static int scalar(jp *P, json_t *(*mk)(jp *, const void *), const void *arg)
{
	jframe *f = top(P);
	if (f && f->kind != F_BUILD) {
		if (f->kind != F_SKIP)
			odd_value(P, f);
		return !P->oom;
	}
	return attach(P, mk(P, arg));
}

static json_t *mk_null(jp *P, const void *a) { (void)P; (void)a; return json_null(); }
static json_t *mk_bool(jp *P, const void *a) { (void)P; return json_boolean(*(const int *)a); }
static json_t *mk_real(jp *P, const void *a) { (void)P; return json_real(*(const double *)a); }
static json_t *mk_int(jp *P, const void *a) { (void)P; return json_integer(*(const long long *)a); }

static int y_null(void *c) { return scalar(c, mk_null, NULL); }
static int y_bool(void *c, int v) { return scalar(c, mk_bool, &v); }
static int y_double(void *c, double v) { return scalar(c, mk_real, &v); }

static int y_integer(void *c, long long v)
{
	jp *P = c;
	jframe *f = top(P);
	if (f && f->kind == F_VOCAB)
		return vocab_id(P, v);
	return scalar(P, mk_int, &v);
}

static int y_string(void *c, const unsigned char *s, size_t n)
{
	jp *P = c;
	if (!check_escapes(P, s))
		return 0;
	jframe *f = top(P);
	if (!f || f->kind == F_BUILD)
		return attach(P, json_stringn_nocheck((const char *)s, n));
	size_t off;
	if (f->kind == F_MERGES) {
		/* "left right": stored as left and right back to back */
		const unsigned char *sp = memchr(s, ' ', n);
		if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s)))
			return merge_push(P, 0, 0, 0, TOK_MERGE_NOT_STR);
		size_t al = (size_t)(sp - s);
		if (!bulk_str(P, s, al, &off) || !bulk_str(P, sp + 1, n - al - 1, &(size_t){0}))
			return 0;
		return merge_push(P, off, (uint32_t)al, (uint32_t)(n - al - 1), TOK_MERGE_OK);
	}
	if (f->kind == F_PAIR) {
		if (f->npair == 2) {
			f->pair_bad = 1;
			return 1;
		}
		if (!bulk_str(P, s, n, &off))
			return 0;
		if (f->npair == 0)
			f->pair_off = off;
		f->pair_len[f->npair++] = (uint32_t)n;
		return 1;
	}
	if (f->kind == F_VOCAB)
		odd_value(P, f);
	return 1;
}

static int y_key(void *c, const unsigned char *s, size_t n)
{
	jp *P = c;
	if (!check_escapes(P, s))
		return 0;
	jframe *f = top(P);
	ss_err e;
	if (f->kind == F_VOCAB) {
		if (n > UINT32_MAX)
			return invalid(P, "string too long");
		/* keys are kept NUL-terminated: they become the token strings */
		P->vkey_off = P->b->keys.n;
		P->vkey_len = n;
		if (tok_buf_put(&P->b->keys, s, n, &e))
			return oom(P);
		P->b->keys.n++;
		return 1;
	}
	if (f->kind == F_SKIP)
		return 1;
	P->key.n = 0;
	return tok_buf_put(&P->key, s, n, &e) ? oom(P) : 1;
}

static int start(jp *P, int is_map)
{
	jframe *f = top(P);
	if (f && f->kind != F_BUILD) {
		if (f->kind == F_MERGES && !is_map)
			return push(P, (jframe){.kind = F_PAIR});
		if (f->kind != F_SKIP)
			odd_value(P, f);
		return !P->oom && push(P, (jframe){.kind = F_SKIP});
	}
	tok_bulk *b = P->b;
	int is_model = 0;
	if (f && f->is_model && (key_is(P, "vocab") || key_is(P, "merges"))) {
		/* the last of duplicate keys wins, as in jansson */
		json_object_deln(f->v, P->key.p, P->key.n);
		if (key_is(P, "vocab")) {
			b->has_vocab = 0;
			if (is_map) {
				b->has_vocab = 1;
				b->n_vocab = b->keys.n = 0;
				b->vocab_bad = 0;
				return push(P, (jframe){.kind = F_VOCAB});
			}
		} else {
			b->has_merges = 0;
			if (!is_map) {
				b->has_merges = 1;
				b->n_merge = b->mstr.n = 0;
				return push(P, (jframe){.kind = F_MERGES});
			}
		}
	} else if (f && P->depth == 1 && json_is_object(f->v) && key_is(P, "model")) {
		is_model = is_map;
		b->has_vocab = b->has_merges = 0;
	}
	json_t *v = is_map ? json_object() : json_array();
	if (!attach(P, v))
		return 0;
	return push(P, (jframe){.kind = F_BUILD, .v = v, .is_model = is_model});
}

static int y_start_map(void *c) { return start(c, 1); }
static int y_start_array(void *c) { return start(c, 0); }

static int y_end(void *c)
{
	jp *P = c;
	jframe *f = top(P);
	P->depth--;
	if (f->kind == F_PAIR) {
		if (f->pair_bad || f->npair != 2)
			return merge_push(P, 0, 0, 0, TOK_MERGE_NOT_STR_OR_PAIR);
		return merge_push(P, f->pair_off, f->pair_len[0], f->pair_len[1], TOK_MERGE_OK);
	}
	return 1;
}

static const yajl_callbacks callbacks = {
	y_null, y_bool, y_integer, y_double, NULL, y_string,
	y_start_map, y_key, y_end, y_start_array, y_end,
};

void tok_bulk_free(tok_bulk *b)
{
	free(b->vocab);
	free(b->keys.p);
	free(b->merge);
	free(b->mstr.p);
	memset(b, 0, sizeof *b);
}

/* The error of a parse stopped at byte `at` of the chunk in P->in, after
 * `lines` newlines in the chunks before it. */
static void report(jp *P, size_t lines, size_t at, const char *name, ss_err *e)
{
	if (P->oom) {
		ss_err_set(e, "%s: out of memory parsing JSON", name);
		return;
	}
	char why[200];
	if (P->err)
		snprintf(why, sizeof why, "%s", P->err);
	else {
		unsigned char *m = yajl_get_error(P->h, 0, (const unsigned char *)P->in, P->n);
		snprintf(why, sizeof why, "%s", m ? (char *)m : "parse error");
		why[strcspn(why, "\n")] = 0;
		if (m)
			yajl_free_error(P->h, m);
	}
	/* line, and column of the last character read (as jansson counts
	 * them: characters, not bytes) */
	if (at > P->n)
		at = P->n;
	size_t line = lines + 1, col = 0;
	for (size_t i = 0; i < at; i++) {
		if (P->in[i] == '\n') {
			line++;
			col = 0;
		} else if (((unsigned char)P->in[i] & 0xc0) != 0x80)
			col++;
	}
	ss_err_set(e, "%s:%zu:%zu: not valid JSON: %s", name, line, col, why);
}

/* Newlines in s, eight bytes at a time (a byte loop costs a tenth of the
 * load): t has the high bit of each byte that was '\n' set, exactly. */
static size_t count_newlines(const char *s, size_t n)
{
	const uint64_t lo7 = 0x7f7f7f7f7f7f7f7full, nl = 0x0a0a0a0a0a0a0a0aull;
	size_t k = 0, i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t x;
		memcpy(&x, s + i, 8);
		x ^= nl;
		uint64_t t = ~(((x & lo7) + lo7) | x | lo7);
		k += (size_t)__builtin_popcountll(t);
	}
	for (; i < n; i++)
		k += s[i] == '\n';
	return k;
}

static json_t *finish(jp *P, int ok)
{
	yajl_free(P->h);
	free(P->st);
	free(P->key.p);
	if (!ok) {
		json_decref(P->root);
		tok_bulk_free(P->b);
		return NULL;
	}
	return P->root;
}

static int begin(jp *P, tok_bulk *b, const char *name, ss_err *e)
{
	*P = (jp){.b = b};
	memset(b, 0, sizeof *b);
	P->h = yajl_alloc(&callbacks, NULL, P);
	if (!P->h)
		return ss_err_set(e, "%s: out of memory parsing JSON", name);
	return 0;
}

/* Feed one chunk; after the last, n = 0 and last = 1 completes the parse. */
static int feed(jp *P, const char *s, size_t n, int last, size_t lines, const char *name, ss_err *e)
{
	P->in = s;
	P->n = n;
	yajl_status st = yajl_parse(P->h, (const unsigned char *)s, n);
	size_t at = yajl_get_bytes_consumed(P->h);
	if (st == yajl_status_ok && last) {
		st = yajl_complete_parse(P->h);
		at = n; /* yajl_complete_parse counts from the end */
	}
	if (st == yajl_status_ok)
		return 0;
	report(P, lines, at, name, e);
	return -1;
}

json_t *tok_json_parse(const char *json, size_t len, const char *name, tok_bulk *b, ss_err *e)
{
	jp P;
	if (begin(&P, b, name, e))
		return NULL;
	return finish(&P, feed(&P, json, len, 1, 0, name, e) == 0);
}

/* Chunks of about a megabyte, each ending at a newline: the input is never
 * in memory whole (an 11 MB read into fresh pages cost a tenth of the
 * load), and since a string cannot hold a raw newline, every string of a
 * valid file lies within one chunk, where check_escapes finds its raw
 * text.  A file without newlines is read whole. */
#define CHUNK ((size_t)1 << 20)
json_t *tok_json_parse_fd(int fd, const char *name, tok_bulk *b, ss_err *e)
{
	jp P;
	if (begin(&P, b, name, e))
		return NULL;
	size_t cap = CHUNK, have = 0, lines = 0;
	char *buf = malloc(cap);
	int ok = 0;
	if (!buf) {
		ss_err_set(e, "%s: out of memory", name);
		goto done;
	}
	for (;;) {
		if (have == cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				ss_err_set(e, "%s: out of memory", name);
				goto done;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t k = read(fd, buf + have, cap - have);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			ss_err_errno(e, errno, "%s: read error", name);
			goto done;
		}
		have += (size_t)k;
		if (k == 0) { /* the end: the rest, then complete */
			if (feed(&P, buf, have, 1, lines, name, e))
				goto done;
			break;
		}
		const char *nl = memrchr(buf, '\n', have);
		if (!nl)
			continue;
		size_t use = (size_t)(nl + 1 - buf);
		if (feed(&P, buf, use, 0, lines, name, e))
			goto done;
		lines += count_newlines(buf, use);
		memmove(buf, buf + use, have - use);
		have -= use;
	}
	ok = 1;
done:
	free(buf);
	return finish(&P, ok);
}
