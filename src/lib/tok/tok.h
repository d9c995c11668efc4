/* tok.h - Hugging Face tokenizer.json tokenization (BPE models).
 *
 * Supported, as Hugging Face's tokenizers (Rust) and tokenizers.js define
 * them:
 *   model          BPE: merges applied by rank; byte-level (GPT-2 byte to
 *                  char map, when the pre-tokenizer has ByteLevel) or
 *                  SentencePiece style (code points, byte_fallback to
 *                  <0xNN> pieces, unk_token, fuse_unk); ignore_merges.
 *   normalizer     NFC, NFD, NFKC, NFKD (utf8proc), Replace (String or
 *                  Regex pattern), Prepend, Sequence.
 *   pre_tokenizer  Split (Regex or String pattern, behavior Isolated or
 *                  Removed, invert false; regexes are compiled by PCRE2 with
 *                  UTF, UCP and JIT), ByteLevel (add_prefix_space,
 *                  use_regex), Sequence.
 *   added tokens   matched inside the text, longest match first; lstrip,
 *                  rstrip, single_word, normalized.
 *   post_processor TemplateProcessing (single template), ByteLevel (no-op
 *                  for ids), Sequence.
 *   decoder        ByteLevel, ByteFallback, Replace (String), Strip, Fuse,
 *                  Sequence; none: pieces joined by a space.
 * Any other component or option in the file is an error naming it
 * ("FILE:pre_tokenizer.pretokenizers[1].type: unsupported 'Metaspace'").
 *
 * Text is UTF-8 and length-delimited (U+0000 may occur).  decode() never
 * applies transformers' clean_up_tokenization_spaces.
 * A tok is not safe for concurrent use: encode() uses per-tokenizer
 * scratch space and a word cache.  Separate tok objects are independent.
 */
#ifndef SS_TOK_H
#define SS_TOK_H

#include <stddef.h>
#include <stdint.h>
#include "util/err.h"

typedef struct tok tok;

/* A growable array of token ids (append-only; free v with free()). */
typedef struct tok_ids {
	int32_t *v;
	size_t n, cap;
} tok_ids;

/* Load tokenizer.json.  Errors name the file and the JSON field.  The
 * file is read by a streaming parser (yajl, see tok_json.c); jansson's
 * global state is left alone. */
tok *tok_load(const char *path, ss_err *e);
/* Same from memory; name is used in messages. */
tok *tok_load_mem(const char *json, size_t len, const char *name, ss_err *e);
void tok_free(tok *t);

enum {
	TOK_POST = 1, /* apply the post-processor (e.g. prepend BOS) */
};

/* Encode n bytes of UTF-8 text, appending ids to out.  Invalid UTF-8 is
 * an error "text: invalid UTF-8 at byte offset N". */
int tok_encode(tok *t, const char *text, size_t n, int flags, tok_ids *out, ss_err *e);

/* Decode ids to text as the file's decoder defines it (invalid byte
 * sequences become U+FFFD).  Returns a malloc'd NUL-terminated buffer,
 * its length in *len.  An id outside the vocabulary is an error. */
char *tok_decode(const tok *t, const int32_t *ids, size_t n, size_t *len, ss_err *e);

/* The decoded piece of each token, for display and /tokens/text: the
 * decoder run token by token (Fuse keeps tokens apart, Strip acts only at
 * the start of the first and the end of the last piece).  Bytes of a
 * character split across tokens become U+FFFD in each piece, so every
 * piece is valid UTF-8; otherwise the pieces concatenate to tok_decode().
 * Returns one malloc'd buffer; piece i is buf[off[i] .. off[i+1]) (off has
 * n+1 entries, caller-provided). */
char *tok_pieces(const tok *t, const int32_t *ids, size_t n, size_t *off, ss_err *e);

/* Number of ids (largest id + 1, added tokens included). */
size_t tok_vocab_size(const tok *t);
/* The token's string as written in the file (NULL for a hole). */
const char *tok_token(const tok *t, int32_t id, size_t *len);
/* Id of a token string (added tokens included), or -1. */
int32_t tok_id(const tok *t, const char *s, size_t n);
/* Byte-level vocabularies (GPT-2, Qwen, Llama 3) write each byte b of a
 * token as one printable code point: b itself for '!'..'~', 0xa1..0xac and
 * 0xae..0xff, else 256 + its rank among the other bytes (space is U+0120).
 * tok_id of a byte-level token takes the UTF-8 of these code points. */
uint32_t tok_byte_char(int b);
/* Ids the post-processor puts before / after the sequence. */
const int32_t *tok_post_prefix(const tok *t, size_t *n);
const int32_t *tok_post_suffix(const tok *t, size_t *n);

/* UTF-8 check (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
 * Returns 1 when valid; else 0 and the offset of the first bad byte. */
int tok_utf8_valid(const char *s, size_t n, size_t *bad);
/* Append s with invalid sequences replaced by U+FFFD (one per maximal
 * subpart, as the WHATWG decoder does) to dst (malloc'd, grown as needed).
 * Returns -1 with e set when out of memory. */
int tok_utf8_lossy(const char *s, size_t n, char **dst, size_t *dn, size_t *dcap, ss_err *e);

int tok_ids_push(tok_ids *a, int32_t id, ss_err *e);



/* ---- tokenizer_config.json (tok_config.c) ---- */

/* Apply what transformers takes from tokenizer_config.json that changes ids:
 * for tokenizer_class LlamaTokenizer, CodeLlamaTokenizer or GemmaTokenizer
 * (with or without "Fast") the post-processor becomes [bos_token if
 * add_bos_token (default true)] $A [eos_token if add_eos_token (default
 * false)], as those classes rebuild it; other classes change nothing.
 * *applied tells whether the template was replaced.  Errors name the file
 * and the field ("PATH:bos_token: '<x>' is not a token of the tokenizer"). */
int tok_apply_config(tok *t, const char *path, int *applied, ss_err *e);
/* The same with the tokenizer_config.json in the directory of
 * tokenizer_path, when there is one (none: 0, *applied = 0). */
int tok_apply_config_beside(tok *t, const char *tokenizer_path, int *applied, ss_err *e);

/* ---- input for programs (tok_input.c) ---- */

/* Read a whole UTF-8 text file ("-" = stdin).  Invalid UTF-8 is an error
 * "PATH: invalid UTF-8 at byte offset N".  *buf is malloc'd and
 * NUL-terminated (the text may contain NUL bytes; *n is its length). */
int tok_read_text(const char *path, char **buf, size_t *n, ss_err *e);

/* Token ids, whitespace-separated, from PATH ("-" = stdin): *ids malloc'd,
 * *T >= 1.  Errors: "PATH:LINE: bad token id 'x'", "PATH: no token ids". */
int tok_read_ids(const char *path, int32_t **ids, long *T, ss_err *e);

/* The tokenizer of a model: tok_path, else MODEL_DIR/tokenizer.json, with
 * the tokenizer_config.json beside it applied.  When not required and the
 * model folder has none (and no tok_path), *t = NULL and 0 is returned. */
int tok_load_for(const char *model_dir, const char *tok_path, int required, tok **t, ss_err *e);

/* The option rows (util/opt.h) of a model and its trace input, shared by
 * the programs that run a model over a trace (actdump, kvevict): -m DIR,
 * --ids, --text, --jsonl with --field and --index, --tokenizer, --no-bos.
 * The variables are the programs' own; two help lines are theirs too. */
#define TOK_INPUT_OPTS(model, ids, text, jsonl, field, index, index_seen, tokenizer, no_bos, jsonl_help, index_help) \
	{"model", 'm', SS_OPT_STRING, &(model), "DIR", "Hugging Face model folder", NULL},                        \
	{"ids", 0, SS_OPT_STRING, &(ids), "FILE", "token ids, whitespace-separated (\"-\" = stdin)", NULL},       \
	{"text", 0, SS_OPT_STRING, &(text), "FILE", "UTF-8 text to tokenize (\"-\" = stdin; or FILE operand)", NULL}, \
	{"jsonl", 0, SS_OPT_STRING, &(jsonl), "FILE", jsonl_help, NULL},                                           \
	{"field", 0, SS_OPT_STRING, &(field), "NAME", "--jsonl: the string field holding the text", NULL},        \
	{"index", 0, SS_OPT_INT, &(index), "N", index_help, &(index_seen)},                                        \
	{"tokenizer", 0, SS_OPT_STRING, &(tokenizer), "FILE", "tokenizer.json (default DIR/tokenizer.json)", NULL}, \
	{"no-bos", 0, SS_OPT_FLAG, &(no_bos), NULL, "do not add the post-processor's BOS/EOS", NULL}

/* Rows of a JSON Lines file: the string field NAME of each object. */
typedef struct tok_row {
	char *text;  /* malloc'd, NUL-terminated */
	size_t len;
	long row;    /* 0-based index among the file's non-blank lines */
	long line;   /* 1-based line number */
} tok_row;
typedef struct tok_rows {
	tok_row *v;
	size_t n;
} tok_rows;
/* Read row `index` (or every row when index < 0) of PATH ("-" = stdin).
 * Errors: "PATH:LINE: not valid JSON: ...", "PATH:LINE: field 'NAME' is
 * missing or not a string" (jansson rejects invalid UTF-8 as not valid
 * JSON), "PATH: --index N out of range (R rows)", "PATH: no rows". */
int tok_jsonl_read(const char *path, const char *field, long index, tok_rows *rows, ss_err *e);
void tok_rows_free(tok_rows *rows);

/* The pieces of tok_pieces() as NUL-terminated strings for HDF5
 * (/tokens/text): a NUL byte in a piece becomes U+FFFD.  *out is a
 * malloc'd array of n malloc'd strings (free each, then the array). */
int tok_piece_strings(const tok *t, const int32_t *ids, size_t n, char ***out, ss_err *e);
void tok_piece_strings_free(char **s, size_t n);

#endif
