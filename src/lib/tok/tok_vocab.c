/* tok_vocab.c - the model section of tokenizer.json (BPE): the vocabulary
 * into the id -> string arrays and the string -> id map, the merges
 * resolved to (left id, right id) -> (rank, merged id), the byte-level
 * alphabet, the added tokens (which win over a vocabulary entry with the
 * same string), the unknown token and the <0xNN> byte-fallback ids.  The
 * vocabulary and merges arrive as flat arrays from tok_json.c's streaming
 * parser; the loops prefetch their hash slots ahead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tok/tok_impl.h"

/* byte-level: the GPT-2 map from bytes to chars */
uint32_t tok_byte_char(int b)
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
static int resolve_merges(tok_ld *L, const tok_bulk *bk)
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
		char p[TOK_PATHMAX];
		if (mg[i].form != TOK_MERGE_OK) {
			snprintf(p, sizeof p, "model.merges[%zu]", i);
			return tok_bad(L, p, mg[i].form == TOK_MERGE_NOT_STR ? "expected \"left right\"%s"
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
			return tok_bad(L, p, "%s is not in the vocabulary", q);
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

int tok_load_model(tok_ld *L, json_t *root, json_t *added, tok_bulk *bk)
{
	tok *t = L->t;
	ss_err *e = L->e;
	json_t *m = json_object_get(root, "model");
	if (!json_is_object(m))
		return tok_bad(L, "model", "missing or not an object%s", "");
	const char *type = tok_jstr(m, "type");
	if (!type) {
		/* old files have no model.type; they are BPE when they have merges */
		if (!bk->has_merges && !json_object_get(m, "merges"))
			return tok_bad(L, "model.type", "missing%s", "");
	} else if (strcmp(type, "BPE"))
		return tok_bad(L, "model.type", "unsupported model '%s' (only BPE)", type);
	json_t *x = json_object_get(m, "dropout");
	if (x && !json_is_null(x))
		return tok_bad(L, "model.dropout", "unsupported (dropout makes encoding random)%s", "");
	static const char *const empty_only[] = {"continuing_subword_prefix", "end_of_word_suffix"};
	for (int i = 0; i < 2; i++) {
		x = json_object_get(m, empty_only[i]);
		if (x && !json_is_null(x) && !(json_is_string(x) && json_string_length(x) == 0)) {
			char p[TOK_PATHMAX];
			snprintf(p, sizeof p, "model.%s", empty_only[i]);
			return tok_bad(L, p, "unsupported non-empty value%s", "");
		}
	}
	if (tok_jbool(L, m, "byte_fallback", 0, "model", &t->byte_fallback) ||
	    tok_jbool(L, m, "fuse_unk", 0, "model", &t->fuse_unk) ||
	    tok_jbool(L, m, "ignore_merges", 0, "model", &t->ignore_merges))
		return -1;
	if (!bk->has_vocab)
		return tok_bad(L, "model.vocab", "missing or not an object%s", "");
	if (bk->vocab_bad)
		return tok_bad(L, "model.vocab", "id of '%s' is not a valid integer", bk->keys.p + bk->vocab_bad_key);
	/* id range */
	long long maxid = -1;
	for (size_t i = 0; i < bk->n_vocab; i++)
		if (bk->vocab[i].id > maxid)
			maxid = bk->vocab[i].id;
	for (size_t i = 0; i < json_array_size(added); i++) {
		json_t *a = json_array_get(added, i);
		json_t *id = json_object_get(a, "id");
		char p[TOK_PATHMAX];
		snprintf(p, sizeof p, "added_tokens[%zu]", i);
		if (!json_is_object(a) || !json_is_integer(id) || json_integer_value(id) < 0 ||
		    json_integer_value(id) > 0x7ffffff0 || !json_is_string(json_object_get(a, "content")))
			return tok_bad(L, p, "expected an object with an integer id and a string content%s", "");
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
			return tok_bad(L, "model.vocab", "id of '%s' is used twice", k);
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
			t->byte_char[b] = tok_byte_char(b);
			if (tok_utf8_put(&c, t->byte_char[b], e))
				return -1;
			t->byte_id[b] = tok_strmap_get(&t->strs, c.p, c.n, t->str, t->len);
			free(c.p);
			if (t->byte_id[b] < 0) {
				char hx[8];
				snprintf(hx, sizeof hx, "0x%02X", b);
				return tok_bad(L, "model.vocab", "no token for byte %s (byte-level BPE needs all 256)", hx);
			}
		}
	}
	if (!bk->has_merges)
		return tok_bad(L, "model.merges", "missing or not an array%s", "");
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
		char p[TOK_PATHMAX];
		snprintf(p, sizeof p, "added_tokens[%zu]", i);
		ad->id = (int32_t)json_integer_value(json_object_get(a, "id"));
		if (tok_jcopy(L, a, "content", p, &ad->content, &ad->len) ||
		    tok_jbool(L, a, "special", 0, p, &ad->special) ||
		    tok_jbool(L, a, "lstrip", 0, p, &ad->lstrip) ||
		    tok_jbool(L, a, "rstrip", 0, p, &ad->rstrip) ||
		    tok_jbool(L, a, "single_word", 0, p, &ad->single_word) ||
		    tok_jbool(L, a, "normalized", !ad->special, p, &ad->normalized))
			return -1;
		if (ad->len == 0)
			return tok_bad(L, p, "empty content%s", "");
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
			return tok_bad(L, "model.unk_token", "'%s' is not in the vocabulary", json_string_value(x));
	} else if (x && !json_is_null(x))
		return tok_bad(L, "model.unk_token", "expected a string or null%s", "");
	for (int b = 0; b < 256; b++) {
		char s[8];
		snprintf(s, sizeof s, "<0x%02X>", b);
		t->fallback_id[b] = tok_strmap_get(&t->strs, s, 6, t->str, t->len);
	}
	return 0;
}
