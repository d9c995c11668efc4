/* tok_check - compare the tok_ library with expectations made by Hugging
 * Face's JavaScript tokenizers (tests/tok/gen_expect.mjs).
 *
 *   tok_check TOKENIZER.json CORPUS.jsonl POOL.json EXPECT.jsonl
 *
 * For every string (the corpus, then the random strings drawn from the
 * pool exactly as gen_expect.mjs draws them): ids without the
 * post-processor, ids with it, and decode(ids) must all match.  Prints one
 * line per mismatch (at most 20 in detail) and "N strings, M mismatches";
 * exit 1 on any mismatch.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tok/tok.h"

typedef struct str {
	char *s;
	size_t n;
} str;

static uint32_t rs;
static uint32_t mulberry32(void)
{
	rs += 0x6d2b79f5u;
	uint32_t t = rs;
	t = (t ^ (t >> 15)) * (t | 1u);
	t = (t + (t ^ (t >> 7)) * (t | 61u)) ^ t;
	return t ^ (t >> 14);
}

static char **lines(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(2);
	}
	char **v = NULL, *line = NULL;
	size_t cap = 0, k = 0;
	ssize_t r;
	while ((r = getline(&line, &cap, f)) > 0) {
		if (r == 1 && line[0] == '\n')
			continue;
		v = realloc(v, (k + 1) * sizeof *v);
		v[k++] = strdup(line);
	}
	free(line);
	fclose(f);
	*n = k;
	return v;
}

static json_t *parse(const char *s, const char *what)
{
	json_error_t je;
	json_t *j = json_loads(s, JSON_ALLOW_NUL, &je);
	if (!j) {
		fprintf(stderr, "tok_check: %s: %s\n", what, je.text);
		exit(2);
	}
	return j;
}

static int ids_eq(const int32_t *a, size_t n, json_t *arr)
{
	if (!json_is_array(arr) || json_array_size(arr) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (json_integer_value(json_array_get(arr, i)) != a[i])
			return 0;
	return 1;
}

static void show(const char *what, const int32_t *a, size_t n, json_t *want)
{
	fprintf(stderr, "    %s got:  ", what);
	for (size_t i = 0; i < n && i < 40; i++)
		fprintf(stderr, " %d", a[i]);
	char *w = json_dumps(want, JSON_COMPACT);
	fprintf(stderr, "%s\n    %s want: %.300s\n", n > 40 ? " ..." : "", what, w);
	free(w);
}

/* The one accepted difference: tokenizers.js's ByteFallback decoder uses
 * TextDecoder without ignoreBOM, so it drops a U+FEFF that starts a run of
 * <0xNN> tokens.  We keep it, as Hugging Face's Rust decoder does: accepted
 * when our decode equals the JS text once every U+FEFF is removed from
 * both. */
static size_t strip_bom(const char *s, size_t n, char *o)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (i + 2 < n && (unsigned char)s[i] == 0xef && (unsigned char)s[i + 1] == 0xbb &&
		    (unsigned char)s[i + 2] == 0xbf) {
			i += 2;
			continue;
		}
		o[k++] = s[i];
	}
	return k;
}

static int accepted_bom(const char *d, size_t dl, const char *in, size_t inl, const char *js, size_t jl)
{
	(void)in;
	(void)inl;
	char *a = malloc(dl + 1), *b = malloc(jl + 1);
	size_t an = strip_bom(d, dl, a), bn = strip_bom(js, jl, b);
	int ok = an == bn && memcmp(a, b, an) == 0;
	free(a);
	free(b);
	return ok;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: tok_check TOKENIZER.json CORPUS.jsonl POOL.json EXPECT.jsonl\n");
		return 2;
	}
	ss_err e = {0};
	tok *t = tok_load(argv[1], &e);
	if (!t) {
		ss_err_print("tok_check", &e);
		return 1;
	}
	size_t nc, ne, np;
	char **cl = lines(argv[2], &nc), **el = lines(argv[4], &ne);
	json_t *hdr = parse(el[0], argv[4]);
	size_t nrand = (size_t)json_integer_value(json_object_get(hdr, "n_random"));
	rs = (uint32_t)json_integer_value(json_object_get(hdr, "seed"));
	char **pl = lines(argv[3], &np);
	json_t *pool = parse(pl[0], argv[3]);
	size_t psz = json_array_size(pool);
	str *all = calloc(nc + nrand, sizeof *all);
	for (size_t i = 0; i < nc; i++) {
		json_t *o = parse(cl[i], argv[2]);
		json_t *s = json_object_get(o, "s");
		all[i].n = json_string_length(s);
		all[i].s = malloc(all[i].n + 1);
		memcpy(all[i].s, json_string_value(s), all[i].n + 1);
		json_decref(o);
	}
	for (size_t i = 0; i < nrand; i++) {
		size_t k = 1 + mulberry32() % 24, n = 0;
		char *s = malloc(1);
		for (size_t j = 0; j < k; j++) {
			json_t *f = json_array_get(pool, mulberry32() % psz);
			size_t fl = json_string_length(f);
			s = realloc(s, n + fl + 1);
			memcpy(s + n, json_string_value(f), fl);
			n += fl;
		}
		s[n] = 0;
		all[nc + i] = (str){s, n};
	}
	size_t total = nc + nrand;
	if (ne != total + 1 || (size_t)json_integer_value(json_object_get(hdr, "n_corpus")) != nc) {
		fprintf(stderr, "tok_check: %s: %zu lines for %zu strings (regenerate with gen_expect.mjs)\n",
		        argv[4], ne - 1, total);
		return 1;
	}
	json_t *pre = json_object_get(hdr, "pre"), *suf = json_object_get(hdr, "suf");
	size_t bad = 0, accepted = 0;
	tok_ids ids = {0}, post = {0};
	for (size_t i = 0; i < total; i++) {
		json_t *x = parse(el[i + 1], argv[4]);
		ids.n = post.n = 0;
		int fail = 0;
		if (tok_encode(t, all[i].s, all[i].n, 0, &ids, &e) ||
		    tok_encode(t, all[i].s, all[i].n, TOK_POST, &post, &e)) {
			fprintf(stderr, "string %zu: %s\n", i, e.msg);
			fail = 1;
		} else {
			json_t *want = json_object_get(x, "ids");
			if (!ids_eq(ids.v, ids.n, want)) {
				if (bad < 20)
					fprintf(stderr, "string %zu (%s): ids differ\n", i, i < nc ? "corpus" : "random"),
					show("ids", ids.v, ids.n, want);
				fail = 1;
			}
			json_t *wp = json_object_get(x, "post");
			json_t *built = NULL;
			if (!wp) {
				built = json_array();
				json_array_extend(built, pre);
				json_array_extend(built, want);
				json_array_extend(built, suf);
				wp = built;
			}
			if (!ids_eq(post.v, post.n, wp)) {
				if (bad < 20)
					fprintf(stderr, "string %zu: post-processed ids differ\n", i),
					show("post", post.v, post.n, wp);
				fail = 1;
			}
			json_decref(built);
			size_t dl = 0;
			char *d = ids.n ? tok_decode(t, ids.v, ids.n, &dl, &e) : strdup("");
			json_t *wd = json_object_get(x, "dec");
			const char *ws = wd ? json_string_value(wd) : all[i].s;
			size_t wl = wd ? json_string_length(wd) : all[i].n;
			if (d && (dl != wl || memcmp(d, ws, dl)) && accepted_bom(d, dl, all[i].s, all[i].n, ws, wl)) {
				accepted++;
			} else if (!d || dl != wl || memcmp(d, ws, dl)) {
				if (bad < 20)
					fprintf(stderr, "string %zu: decode differs: got '%.200s' want '%.200s'\n", i,
					        d ? d : e.msg, ws);
				fail = 1;
			}
			free(d);
		}
		bad += fail;
		json_decref(x);
	}
	printf("%s: %zu strings, %zu mismatches, %zu accepted differences\n", argv[1], total, bad, accepted);
	free(ids.v);
	free(post.v);
	for (size_t i = 0; i < total; i++)
		free(all[i].s);
	free(all);
	for (size_t i = 0; i < nc; i++)
		free(cl[i]);
	for (size_t i = 0; i < ne; i++)
		free(el[i]);
	for (size_t i = 0; i < np; i++)
		free(pl[i]);
	free(cl);
	free(el);
	free(pl);
	json_decref(hdr);
	json_decref(pool);
	tok_free(t);
	return bad ? 1 : 0;
}
