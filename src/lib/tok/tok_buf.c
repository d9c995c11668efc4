/* tok_buf.c - the growable arrays every part of the tokenizer builds on
 * (a byte buffer, and doubling room for typed arrays); see tok_impl.h.
 * Below the JSON loader, the normaliser and BPE, so none of them needs
 * another for its memory. */
#include <stdlib.h>
#include <string.h>
#include "tok/tok_impl.h"

int tok_buf_grow(tok_buf *b, size_t extra, ss_err *e)
{
	if (b->n + extra <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->n + extra)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p)
		return ss_err_set(e, "out of memory allocating %zu bytes for the tokenizer", cap);
	b->p = p;
	b->cap = cap;
	return 0;
}

int tok_buf_put(tok_buf *b, const void *s, size_t n, ss_err *e)
{
	if (tok_buf_grow(b, n + 1, e))
		return -1;
	if (n)
		memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
	return 0;
}

void *tok_grow(void *p, size_t *cap, size_t n, size_t size, size_t first)
{
	if (n < *cap)
		return p;
	size_t c = *cap ? *cap * 2 : first;
	void *q = realloc(p, c * size);
	if (q)
		*cap = c;
	return q;
}
