/* tok_load.c - tok_load and tok_load_mem: tokenizer.json parsed (tok_json.c)
 * and its sections read in the file's logical order (normalizer,
 * pre-tokenizer, model, post-processor, decoder: tok_comp.c and
 * tok_vocab.c), then the tries of added-token contents that encoding
 * splits the text at; and tok_free. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tok/tok_impl.h"

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
	tok_ld L = {t, name, e};
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
		tok_bad(&L, "added_tokens", "expected an array%s", "");
		goto fail;
	}
	size_t cap = 0;
	json_t *x = json_object_get(root, "normalizer");
	t->has_normalizer = x && !json_is_null(x);
	if (t->has_normalizer && tok_parse_normalizer(&L, x, "normalizer", &cap))
		goto fail;
	cap = 0;
	x = json_object_get(root, "pre_tokenizer");
	if (x && !json_is_null(x) && tok_parse_pre(&L, x, "pre_tokenizer", &cap))
		goto fail;
	if (tok_load_model(&L, root, added, bk))
		goto fail;
	x = json_object_get(root, "post_processor");
	if (x && !json_is_null(x) && tok_parse_post(&L, x, "post_processor", NULL))
		goto fail;
	cap = 0;
	x = json_object_get(root, "decoder");
	t->has_decoder = x && !json_is_null(x);
	if (t->has_decoder && tok_parse_dec(&L, x, "decoder", &cap))
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
