/* seqs.h - the token sequences a program runs: the ids of a file, a text,
 * or the rows of a JSON Lines collection, texts tokenized as given (with
 * the tokenizer's post-processor) or wrapped in a prompt format (gen.h);
 * each with a name for messages and /tokens and, for the rows of a whole
 * collection, an output path of its own made from a pattern. */
#ifndef SS_SEQS_H
#define SS_SEQS_H

#include <stdint.h>
#include <stdio.h>
#include "engine/gen.h"
#include "tok/tok.h"
#include "util/err.h"

typedef struct ss_seq {
	int32_t *ids;
	long T;
	char *name; /* the file ("-" for --ids from stdin, "<stdin>" for text), or FILE:ROW */
	char *out;  /* its own output path, or NULL */
	long row;   /* JSON Lines row, -1 otherwise */
} ss_seq;

typedef struct ss_seqs {
	ss_seq *v;
	size_t n;
} ss_seqs;

/* Where the sequences come from: exactly one of ids, text, jsonl. */
typedef struct ss_seq_src {
	const char *ids;       /* token ids, whitespace-separated ("-" = stdin) */
	const char *text;      /* UTF-8 text ("-" = stdin) */
	const char *jsonl;     /* JSON Lines ("-" = stdin) ... */
	const char *field;     /* ... its string field */
	long index;            /* ... row index, or -1: every row */
	int no_post;           /* raw text without the post-processor's ids (BOS) */
	ss_prompt_fmt fmt;     /* text wrapped in this prompt format */
	long max_tokens;       /* keep the first max_tokens of each sequence (0 = all) */
	const char *out_pattern; /* NULL, or "%d" / "{row}" replaced by each row */
	int allow_empty;       /* an empty text is an empty sequence (tokens-only) */
} ss_seq_src;

/* Read and tokenize (t: the tokenizer; unused for ids).  An empty text is
 * an error "NAME: empty text, nothing to run" even where the tokenizer
 * would add a BOS (a BOS-only trace means nothing), and so is an empty
 * sequence ("NAME: no tokens"); with allow_empty an empty text is a
 * sequence of no tokens (as Hugging Face tokenizes "" to []). */
int seqs_read(ss_seqs *s, const ss_seq_src *src, tok *t, ss_err *e);
void seqs_free(ss_seqs *s);

/* The sequences' tokens as a TSV table to f: "i id piece", or with
 * with_row "row i id piece" (every row of a collection); the pieces are t's
 * decoded text of each id, escaped (tsv_put_escaped). */
int seqs_print_tokens(FILE *f, const ss_seqs *s, const tok *t, int with_row, ss_err *e);

#endif
