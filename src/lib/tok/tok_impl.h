/* tok_impl.h - internals shared by tok*.c (not an API; see tok.h). */
#ifndef SS_TOK_IMPL_H
#define SS_TOK_IMPL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <jansson.h>
#include <pcre2.h>
#include <stdint.h>
#include "tok/tok.h"

/* Growable byte buffer. */
typedef struct tok_buf {
	char *p;
	size_t n, cap;
} tok_buf;
int tok_buf_grow(tok_buf *b, size_t extra, ss_err *e);
int tok_buf_put(tok_buf *b, const void *s, size_t n, ss_err *e);

uint64_t tok_hash(const void *p, size_t n);

/* Room for element n of the array p (cap elements of size bytes): doubles
 * cap from `first` when full.  Returns the (maybe moved) array, NULL when
 * out of memory (p is then still valid). */
void *tok_grow(void *p, size_t *cap, size_t n, size_t size, size_t first);

/* Open-addressing map from byte strings to ids; the strings live in the
 * tokenizer (str/len arrays indexed by id), the map holds ids only. */
typedef struct tok_strmap {
	struct tok_sslot {
		int32_t id;    /* -1 when empty */
		uint32_t hash; /* low 32 bits of the hash, to skip most compares */
	} *slot;
	size_t mask;
} tok_strmap;

/* Merge table: (left id, right id) -> rank and merged id. */
typedef struct tok_mergemap {
	uint64_t *key;  /* left << 32 | right; UINT64_MAX = empty */
	uint64_t *val;  /* rank << 32 | merged id */
	size_t mask;
} tok_mergemap;

/* Word cache: pre-token bytes -> ids (cleared when full). */
typedef struct tok_cache {
	struct tok_cslot {
		uint64_t h;
		uint32_t koff, klen, ioff, nid;
	} *slot;
	size_t mask, used;
	tok_buf keys, ids;
} tok_cache;

typedef struct tok_added {
	int32_t id;
	char *content;
	size_t len;
	char *norm; /* normalized content (normalized tokens) */
	size_t norm_len;
	int lstrip, rstrip, single_word, normalized, special;
} tok_added;

/* Byte trie over added-token contents, longest match. */
typedef struct tok_trie {
	struct tok_tnode {
		int32_t child, sibling, tok; /* tok: index into added, or -1 */
		uint8_t byte;
	} *node;
	size_t n, cap;
	uint8_t first[256];
} tok_trie;

enum tok_norm_kind { NORM_NFC, NORM_NFD, NORM_NFKC, NORM_NFKD, NORM_REPLACE, NORM_PREPEND };
typedef struct tok_norm {
	int kind;
	char *pat, *content; /* Replace: literal pattern or regex; Prepend: content */
	size_t pat_len, content_len;
	pcre2_code *re; /* Replace with a Regex pattern */
} tok_norm;

enum tok_pre_kind { PRE_SPLIT, PRE_BYTELEVEL };
enum { SPLIT_ISOLATED, SPLIT_REMOVED };
typedef struct tok_pre {
	int kind;
	pcre2_code *re; /* Split, or ByteLevel with use_regex */
	int behavior;
	int add_prefix_space;
	int jit; /* JIT-compiled: matched with pcre2_jit_match */
} tok_pre;

enum tok_dec_kind { DEC_BYTELEVEL, DEC_BYTEFALLBACK, DEC_REPLACE, DEC_STRIP, DEC_FUSE };
typedef struct tok_dec {
	int kind;
	char *pat, *content;
	size_t pat_len, content_len;
	int start, stop; /* Strip */
	uint32_t strip_cp;
} tok_dec;

struct tok {
	char *name;
	size_t n_ids;        /* largest id + 1 */
	char **str;          /* [n_ids] token string as in the file, NUL-terminated */
	uint32_t *len;       /* [n_ids] */
	unsigned char *is_added; /* [n_ids] */
	int32_t *remap;      /* [n_ids] BPE piece id -> id (added token with the same string) */
	tok_strmap strs;     /* file strings -> id, added tokens winning */
	tok_mergemap merges;
	int byte_level;
	int32_t byte_id[256];  /* byte-level: id of each single byte */
	uint32_t byte_char[256]; /* byte-level: the char standing for each byte */
	int byte_fallback, fuse_unk, ignore_merges;
	int32_t unk_id;      /* -1 when none */
	int32_t fallback_id[256]; /* <0xNN> ids, -1 when missing */

	tok_norm *norm; size_t n_norm;
	tok_pre *pre; size_t n_pre;
	tok_dec *dec; size_t n_dec; int has_decoder;
	tok_added *added; size_t n_added;
	tok_trie trie_raw, trie_norm;
	int32_t *post_pre, *post_suf; size_t n_post_pre, n_post_suf;

	char *vocab_arena;
	tok_buf mapbuf;      /* byte-level: a word as chars */
	int has_normalizer;

	/* scratch */
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	pcre2_jit_stack *jstack;
	tok_cache cache;
	tok_buf nbuf;   /* normalized text */
	struct tok_sym { int32_t id; int32_t prev, next; uint32_t start, len; } *sym;
	size_t sym_cap;
	tok_ids word_ids;
};

/* tok_norm.c */
int tok_normalize(tok *t, const char *s, size_t n, tok_buf *out, ss_err *e);
int tok_is_js_space(uint32_t cp);
uint32_t tok_utf8_next(const char *s, size_t n, size_t *i);
int tok_utf8_put(tok_buf *b, uint32_t cp, ss_err *e);

/* tok_bpe.c */
int tok_strmap_init(tok_strmap *m, size_t n, ss_err *e);
int tok_strmap_put(tok_strmap *m, int32_t id, const char *s, size_t n, char **const strs, const uint32_t *lens);
int32_t tok_strmap_get(const tok_strmap *m, const char *s, size_t n, char **const strs, const uint32_t *lens);
/* The same with h = tok_hash(s, n) computed by the caller (loading
 * computes it ahead, to prefetch the slot). */
int tok_strmap_put_h(tok_strmap *m, uint64_t h, int32_t id, const char *s, size_t n,
                     char **const strs, const uint32_t *lens);
int32_t tok_strmap_get_h(const tok_strmap *m, uint64_t h, const char *s, size_t n,
                         char **const strs, const uint32_t *lens);
int tok_mergemap_init(tok_mergemap *m, size_t n, ss_err *e);
void tok_mergemap_prefetch(const tok_mergemap *m, int32_t a, int32_t b);
void tok_mergemap_put(tok_mergemap *m, int32_t a, int32_t b, uint32_t rank, int32_t id);
void tok_cache_free(tok_cache *c);
/* Encode one pre-token (raw bytes) with the model, appending ids. */
int tok_bpe_word(tok *t, const char *s, size_t n, tok_ids *out, ss_err *e);

/* tok_json.c: model.vocab and model.merges as flat arrays, in file order */
typedef struct tok_bulk_vocab {
	size_t off;     /* key in keys (NUL-terminated) */
	uint32_t len;
	int32_t id;     /* 0 .. 0x7ffffff0 */
} tok_bulk_vocab;
enum { TOK_MERGE_OK, TOK_MERGE_NOT_STR, TOK_MERGE_NOT_STR_OR_PAIR };
typedef struct tok_bulk_merge {
	size_t off;     /* left then right, back to back in mstr */
	uint32_t alen, blen;
	int form;       /* TOK_MERGE_NOT_STR: a string that is not "left right";
	                   TOK_MERGE_NOT_STR_OR_PAIR: neither a string nor [left, right] */
} tok_bulk_merge;
typedef struct tok_bulk {
	int has_vocab, has_merges; /* model.vocab was an object, model.merges an array */
	tok_bulk_vocab *vocab; size_t n_vocab, cap_vocab;
	tok_buf keys;
	int vocab_bad;         /* a value that is not an integer in 0 .. 0x7ffffff0 */
	size_t vocab_bad_key;  /* the first such value's key, in keys */
	tok_bulk_merge *merge; size_t n_merge, cap_merge;
	tok_buf mstr;
} tok_bulk;
/* Parse a tokenizer.json: the tree without model.vocab and model.merges
 * where those are in b (b->has_vocab, b->has_merges); NULL with e set
 * ("NAME:LINE:COL: not valid JSON: ...") when it is not valid JSON. */
json_t *tok_json_parse(const char *json, size_t len, const char *name, tok_bulk *b, ss_err *e);
/* The same reading fd to its end (errors name the file as name). */
json_t *tok_json_parse_fd(int fd, const char *name, tok_bulk *b, ss_err *e);
void tok_bulk_free(tok_bulk *b);

/* Loading (tok_load.c reads the sections in order; errors name the file
 * and the JSON path, e.g. "tokenizer.json:model.merges[3]: ..."). */
#define TOK_PATHMAX 256
typedef struct tok_ld {
	tok *t;           /* being filled */
	const char *name; /* the file, for messages */
	ss_err *e;
} tok_ld;

/* tok_field.c: sets e to "NAME:PATH: " followed by fmt with arg; returns -1 */
int tok_bad(tok_ld *L, const char *path, const char *fmt, const char *arg);
/* o[key] when it is a string, else NULL */
const char *tok_jstr(json_t *o, const char *key);
/* optional boolean o[key] (absent or null = def) */
int tok_jbool(tok_ld *L, json_t *o, const char *key, int def, const char *path, int *out);
/* a malloc'd copy of the string o[key] (required) and its length */
int tok_jcopy(tok_ld *L, json_t *o, const char *key, const char *path, char **out, size_t *n);

/* tok_comp.c: one component at path (a Sequence recursively), appended to
 * the tokenizer's array; cap is that array's capacity (unused by post) */
int tok_parse_normalizer(tok_ld *L, json_t *o, const char *path, size_t *cap);
int tok_parse_pre(tok_ld *L, json_t *o, const char *path, size_t *cap);
int tok_parse_dec(tok_ld *L, json_t *o, const char *path, size_t *cap);
int tok_parse_post(tok_ld *L, json_t *o, const char *path, size_t *cap);

/* tok_vocab.c: root.model (BPE) with its vocabulary and merges from bk,
 * and the added tokens (root.added_tokens, an array or NULL) */
int tok_load_model(tok_ld *L, json_t *root, json_t *added, tok_bulk *bk);

/* tok_dec.c */
int tok_decode_segs(const tok *t, const int32_t *ids, size_t n, int per_token,
                    tok_buf *out, size_t *off, ss_err *e);

#endif
