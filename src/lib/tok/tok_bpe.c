/* tok_bpe.c - BPE over one pre-token: merges by rank, byte fallback, and
 * the hash maps and word cache behind it.
 *
 * BPE as Hugging Face defines it: start from single symbols (bytes mapped
 * through the byte-level table, or code points), repeatedly merge the
 * adjacent pair with the lowest rank in model.merges, the leftmost one on
 * ties, until no adjacent pair has a rank.  Short words use a linear scan,
 * long ones a binary heap with lazy deletion; both pick the same pair.
 */
#include <stdlib.h>
#include <string.h>
#include "tok/tok_impl.h"

int tok_ids_push(tok_ids *a, int32_t id, ss_err *e)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		int32_t *v = realloc(a->v, cap * sizeof *v);
		if (!v)
			return ss_err_set(e, "out of memory allocating %zu token ids", cap);
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = id;
	return 0;
}

uint64_t tok_hash(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (n * 0xff51afd7ed558ccdull);
	while (n >= 8) {
		uint64_t v;
		memcpy(&v, s, 8);
		h = (h ^ v) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
		s += 8;
		n -= 8;
	}
	uint64_t v = 0;
	memcpy(&v, s, n);
	h = (h ^ v) * 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 29;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 32;
	return h;
}

/* ---- string -> id ---- */

int tok_strmap_init(tok_strmap *m, size_t n, ss_err *e)
{
	size_t cap = 16;
	while (cap < 2 * n + 16)
		cap *= 2;
	m->slot = malloc(cap * sizeof *m->slot);
	if (!m->slot)
		return ss_err_set(e, "out of memory allocating the vocabulary map");
	for (size_t i = 0; i < cap; i++)
		m->slot[i].id = -1;
	m->mask = cap - 1;
	return 0;
}

/* Insert id under key s (the caller keeps it alive in strs[id]).  Returns
 * the id already there for an equal key, else id. */
int tok_strmap_put(tok_strmap *m, int32_t id, const char *s, size_t n,
                   char **const strs, const uint32_t *lens)
{
	return tok_strmap_put_h(m, tok_hash(s, n), id, s, n, strs, lens);
}

/* Linear probing from hash h: the slot holding key s, or the empty slot
 * where it would go (id -1). */
static inline size_t strmap_slot(const tok_strmap *m, uint64_t h, const char *s, size_t n,
                                 char **const strs, const uint32_t *lens)
{
	for (size_t i = h & m->mask;; i = (i + 1) & m->mask) {
		int32_t o = m->slot[i].id;
		if (o < 0 ||
		    (m->slot[i].hash == (uint32_t)h && lens[o] == n && memcmp(strs[o], s, n) == 0))
			return i;
	}
}

int tok_strmap_put_h(tok_strmap *m, uint64_t h, int32_t id, const char *s, size_t n,
                     char **const strs, const uint32_t *lens)
{
	size_t i = strmap_slot(m, h, s, n, strs, lens);
	if (m->slot[i].id >= 0)
		return m->slot[i].id;
	m->slot[i].id = id;
	m->slot[i].hash = (uint32_t)h;
	return id;
}

int32_t tok_strmap_get(const tok_strmap *m, const char *s, size_t n, char **const strs,
                       const uint32_t *lens)
{
	return tok_strmap_get_h(m, tok_hash(s, n), s, n, strs, lens);
}

int32_t tok_strmap_get_h(const tok_strmap *m, uint64_t h, const char *s, size_t n, char **const strs,
                         const uint32_t *lens)
{
	return m->slot[strmap_slot(m, h, s, n, strs, lens)].id;
}

/* ---- merges ---- */

static inline size_t mix64(uint64_t k, size_t mask)
{
	k *= 0x9e3779b97f4a7c15ull;
	return (size_t)(k >> 29) & mask;
}

int tok_mergemap_init(tok_mergemap *m, size_t n, ss_err *e)
{
	size_t cap = 16;
	while (cap < 2 * n + 16)
		cap *= 2;
	m->key = malloc(cap * sizeof *m->key);
	m->val = malloc(cap * sizeof *m->val);
	if (!m->key || !m->val)
		return ss_err_set(e, "out of memory allocating the merge table");
	memset(m->key, 0xff, cap * sizeof *m->key);
	m->mask = cap - 1;
	return 0;
}

void tok_mergemap_prefetch(const tok_mergemap *m, int32_t a, int32_t b)
{
	size_t i = mix64((uint64_t)(uint32_t)a << 32 | (uint32_t)b, m->mask);
	__builtin_prefetch(&m->key[i], 1);
	__builtin_prefetch(&m->val[i], 1);
}

/* A later duplicate of a pair overrides the earlier one, as in Hugging
 * Face's implementations (the rank map is built by plain insertion). */
void tok_mergemap_put(tok_mergemap *m, int32_t a, int32_t b, uint32_t rank, int32_t id)
{
	uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	size_t i = mix64(k, m->mask);
	while (m->key[i] != UINT64_MAX && m->key[i] != k)
		i = (i + 1) & m->mask;
	m->key[i] = k;
	m->val[i] = (uint64_t)rank << 32 | (uint32_t)id;
}

/* rank of the pair (UINT32_MAX when none); merged id in *id. */
static inline uint32_t merge_get(const tok_mergemap *m, int32_t a, int32_t b, int32_t *id)
{
	if (a < 0 || b < 0)
		return UINT32_MAX;
	uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	size_t i = mix64(k, m->mask);
	for (;;) {
		uint64_t kk = m->key[i];
		if (kk == k) {
			*id = (int32_t)(uint32_t)m->val[i];
			return (uint32_t)(m->val[i] >> 32);
		}
		if (kk == UINT64_MAX)
			return UINT32_MAX;
		i = (i + 1) & m->mask;
	}
}

/* ---- word cache ---- */

#define CACHE_SLOTS (1u << 17)
#define CACHE_MAX_WORDS (1u << 16)
#define CACHE_MAX_LEN 255

void tok_cache_free(tok_cache *c)
{
	free(c->slot);
	free(c->keys.p);
	free(c->ids.p);
	memset(c, 0, sizeof *c);
}

static struct tok_cslot *cache_find(tok_cache *c, const char *s, size_t n, uint64_t h)
{
	size_t i = h & c->mask;
	while (c->slot[i].h) {
		struct tok_cslot *sl = &c->slot[i];
		if (sl->h == h && sl->klen == n && memcmp(c->keys.p + sl->koff, s, n) == 0)
			return sl;
		i = (i + 1) & c->mask;
	}
	return &c->slot[i];
}

static int cache_init(tok_cache *c, ss_err *e)
{
	c->slot = calloc(CACHE_SLOTS, sizeof *c->slot);
	if (!c->slot)
		return ss_err_set(e, "out of memory allocating the word cache");
	c->mask = CACHE_SLOTS - 1;
	return 0;
}

/* ---- BPE ---- */

typedef struct hent {
	uint64_t key; /* rank << 32 | left position */
	uint32_t right;
	int32_t idl, idr;
} hent;

static void heap_push(hent *h, size_t *n, hent x)
{
	size_t i = (*n)++;
	while (i) {
		size_t p = (i - 1) / 2;
		if (h[p].key <= x.key)
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = x;
}

static hent heap_pop(hent *h, size_t *n)
{
	hent top = h[0], x = h[--*n];
	size_t i = 0, m = *n;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= m)
			break;
		if (c + 1 < m && h[c + 1].key < h[c].key)
			c++;
		if (x.key <= h[c].key)
			break;
		h[i] = h[c];
		i = c;
	}
	if (m)
		h[i] = x;
	return top;
}

#define SHORT_WORD 48

/* Merge the symbols sym[0..n) in place; returns the number left (the
 * survivors are compacted to the front, in order). */
static size_t merge_short(const tok *t, struct tok_sym *sym, size_t n)
{
	uint32_t r[SHORT_WORD];
	int32_t mid[SHORT_WORD];
	for (size_t i = 0; i + 1 < n; i++)
		r[i] = merge_get(&t->merges, sym[i].id, sym[i + 1].id, &mid[i]);
	while (n > 1) {
		size_t best = 0;
		uint32_t br = r[0];
		for (size_t i = 1; i + 1 < n; i++)
			if (r[i] < br) {
				br = r[i];
				best = i;
			}
		if (br == UINT32_MAX)
			break;
		sym[best].id = mid[best];
		sym[best].len += sym[best + 1].len;
		memmove(&sym[best + 1], &sym[best + 2], (n - best - 2) * sizeof *sym);
		if (n >= best + 3) { /* pairs (best+2 ..) move down one */
			memmove(&r[best + 1], &r[best + 2], (n - best - 3) * sizeof *r);
			memmove(&mid[best + 1], &mid[best + 2], (n - best - 3) * sizeof *mid);
		}
		n--;
		if (best > 0)
			r[best - 1] = merge_get(&t->merges, sym[best - 1].id, sym[best].id, &mid[best - 1]);
		if (best + 1 < n)
			r[best] = merge_get(&t->merges, sym[best].id, sym[best + 1].id, &mid[best]);
	}
	return n;
}

static int merge_long(const tok *t, struct tok_sym *sym, size_t n, size_t *nout, ss_err *e)
{
	size_t cap = 2 * n + 16, hn = 0;
	hent *h = malloc(cap * sizeof *h);
	if (!h)
		return ss_err_set(e, "out of memory merging a %zu-symbol word", n);
	for (size_t i = 0; i < n; i++) {
		sym[i].prev = (int32_t)i - 1;
		sym[i].next = i + 1 < n ? (int32_t)i + 1 : -1;
	}
	for (size_t i = 0; i + 1 < n; i++) {
		int32_t id = -1;
		uint32_t rk = merge_get(&t->merges, sym[i].id, sym[i + 1].id, &id);
		if (rk != UINT32_MAX)
			heap_push(h, &hn, (hent){(uint64_t)rk << 32 | i, (uint32_t)i + 1, sym[i].id, sym[i + 1].id});
	}
	while (hn) {
		hent x = heap_pop(h, &hn);
		uint32_t l = (uint32_t)x.key, r = x.right;
		if (sym[l].id != x.idl || sym[l].next != (int32_t)r || sym[r].id != x.idr)
			continue; /* stale */
		int32_t id = -1;
		merge_get(&t->merges, x.idl, x.idr, &id);
		sym[l].id = id;
		sym[l].len += sym[r].len;
		sym[l].next = sym[r].next;
		if (sym[r].next >= 0)
			sym[sym[r].next].prev = (int32_t)l;
		sym[r].id = -2; /* dead */
		if (hn + 2 > cap) {
			cap *= 2;
			hent *nh = realloc(h, cap * sizeof *h);
			if (!nh) {
				free(h);
				return ss_err_set(e, "out of memory merging a %zu-symbol word", n);
			}
			h = nh;
		}
		if (sym[l].prev >= 0) {
			int32_t p = sym[l].prev, mid;
			uint32_t rk = merge_get(&t->merges, sym[p].id, id, &mid);
			if (rk != UINT32_MAX)
				heap_push(h, &hn, (hent){(uint64_t)rk << 32 | (uint32_t)p, l, sym[p].id, id});
		}
		if (sym[l].next >= 0) {
			int32_t nx = sym[l].next, mid;
			uint32_t rk = merge_get(&t->merges, id, sym[nx].id, &mid);
			if (rk != UINT32_MAX)
				heap_push(h, &hn, (hent){(uint64_t)rk << 32 | l, (uint32_t)nx, id, sym[nx].id});
		}
	}
	free(h);
	size_t k = 0;
	for (int32_t i = 0; i >= 0; i = sym[i].next)
		sym[k++] = sym[i];
	*nout = k;
	return 0;
}

static int emit_syms(tok *t, const char *s, const struct tok_sym *sym, size_t n, tok_ids *out, ss_err *e)
{
	for (size_t i = 0; i < n; i++) {
		if (sym[i].id >= 0) {
			if (tok_ids_push(out, t->remap[sym[i].id], e))
				return -1;
			continue;
		}
		/* a code point not in the vocabulary */
		int ok = t->byte_fallback;
		for (uint32_t k = 0; ok && k < sym[i].len; k++)
			ok = t->fallback_id[(unsigned char)s[sym[i].start + k]] >= 0;
		if (ok) {
			for (uint32_t k = 0; k < sym[i].len; k++)
				if (tok_ids_push(out, t->fallback_id[(unsigned char)s[sym[i].start + k]], e))
					return -1;
		} else if (t->unk_id >= 0) {
			if (tok_ids_push(out, t->unk_id, e))
				return -1;
		} /* else dropped, as both reference implementations do */
	}
	return 0;
}

int tok_bpe_word(tok *t, const char *s, size_t n, tok_ids *out, ss_err *e)
{
	if (n == 0)
		return 0;
	tok_cache *c = &t->cache;
	struct tok_cslot *sl = NULL;
	uint64_t h = 0;
	if (n <= CACHE_MAX_LEN) {
		if (!c->slot && cache_init(c, e))
			return -1;
		h = tok_hash(s, n) | 1;
		sl = cache_find(c, s, n, h);
		if (sl->h) {
			const int32_t *ids = (const int32_t *)(void *)(c->ids.p + sl->ioff);
			for (uint32_t i = 0; i < sl->nid; i++)
				if (tok_ids_push(out, ids[i], e))
					return -1;
			return 0;
		}
	}
	size_t first = out->n;
	if (t->ignore_merges) {
		int32_t id;
		if (t->byte_level) { /* look the word up as byte-level chars */
			t->mapbuf.n = 0;
			for (size_t i = 0; i < n; i++)
				if (tok_utf8_put(&t->mapbuf, t->byte_char[(unsigned char)s[i]], e))
					return -1;
			id = tok_strmap_get(&t->strs, t->mapbuf.p, t->mapbuf.n, t->str, t->len);
		} else
			id = tok_strmap_get(&t->strs, s, n, t->str, t->len);
		if (id >= 0) {
			if (tok_ids_push(out, t->remap[id], e))
				return -1;
			goto store;
		}
	}
	/* initial symbols */
	if (t->sym_cap < n) {
		size_t cap = n < 64 ? 64 : n;
		struct tok_sym *p = realloc(t->sym, cap * sizeof *p);
		if (!p)
			return ss_err_set(e, "out of memory for a %zu-byte word", n);
		t->sym = p;
		t->sym_cap = cap;
	}
	struct tok_sym *sym = t->sym;
	size_t ns = 0;
	if (t->byte_level) {
		for (size_t i = 0; i < n; i++)
			sym[ns++] = (struct tok_sym){t->byte_id[(unsigned char)s[i]], 0, 0, (uint32_t)i, 1};
	} else {
		for (size_t i = 0; i < n;) {
			size_t j = i;
			tok_utf8_next(s, n, &j);
			int32_t id = tok_strmap_get(&t->strs, s + i, j - i, t->str, t->len);
			sym[ns++] = (struct tok_sym){id, 0, 0, (uint32_t)i, (uint32_t)(j - i)};
			i = j;
		}
	}
	if (ns <= SHORT_WORD)
		ns = merge_short(t, sym, ns);
	else if (merge_long(t, sym, ns, &ns, e))
		return -1;
	if (emit_syms(t, s, sym, ns, out, e))
		return -1;
store:
	if (sl) {
		if (c->used >= CACHE_MAX_WORDS) { /* full: start over */
			memset(c->slot, 0, CACHE_SLOTS * sizeof *c->slot);
			c->used = 0;
			c->keys.n = c->ids.n = 0;
			sl = cache_find(c, s, n, h);
		}
		size_t nid = out->n - first;
		uint32_t koff = (uint32_t)c->keys.n;
		if (tok_buf_put(&c->keys, s, n, e))
			return -1;
		size_t pad = (4 - c->ids.n % 4) % 4;
		if (tok_buf_grow(&c->ids, pad + nid * 4 + 1, e))
			return -1;
		c->ids.n += pad;
		uint32_t ioff = (uint32_t)c->ids.n;
		memcpy(c->ids.p + c->ids.n, out->v + first, nid * 4);
		c->ids.n += nid * 4;
		*sl = (struct tok_cslot){h, koff, (uint32_t)n, ioff, (uint32_t)nid};
		c->used++;
	}
	return 0;
}
