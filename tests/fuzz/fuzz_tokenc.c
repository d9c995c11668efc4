/* fuzz_tokenc.c - the encoder on arbitrary bytes, with two real
 * tokenizers loaded once: Qwen3's (byte-level BPE, NFC, a pre-split regex)
 * and Mistral's (SentencePiece style with byte fallback); the first byte
 * chooses.  Invalid UTF-8 must be refused with a message; valid text must
 * give ids inside the vocabulary that decode, and whose pieces are valid
 * UTF-8.
 * Tokenizers: $SS_ROOT/tests/data/tokenizers/ (SS_ROOT defaults to "."). */
#include "fuzz.h"
#include "tok/tok.h"

static tok *load(const char *name)
{
	const char *root = getenv("SS_ROOT");
	char path[1024];
	snprintf(path, sizeof path, "%s/tests/data/tokenizers/%s/tokenizer.json", root ? root : ".", name);
	ss_err e = {0};
	tok *t = tok_load(path, &e);
	if (!t) {
		fprintf(stderr, "fuzz_tokenc: %s\n", e.msg);
		abort();
	}
	return t;
}

static tok *tk[2];

/* Loading takes seconds under ASan: once, before the fuzzing clock starts. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	tk[0] = load("qwen3");
	tk[1] = load("mistral");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	tok *t = tk[data[0] & 1];
	const char *s = (const char *)data + 1;
	size_t n = size - 1;
	tok_ids ids = {0};
	ss_err e = {0};
	size_t bad;
	int valid = tok_utf8_valid(s, n, &bad);
	int r = tok_encode(t, s, n, 0, &ids, &e);
	if (!valid && r == 0)
		abort(); /* invalid UTF-8 must be refused */
	if (r && !e.msg[0])
		abort(); /* a refusal says why */
	if (r == 0) {
		size_t V = tok_vocab_size(t);
		for (size_t i = 0; i < ids.n; i++)
			if (ids.v[i] < 0 || (size_t)ids.v[i] >= V)
				abort();
		size_t len;
		char *d = tok_decode(t, ids.v, ids.n, &len, &e);
		if (!d)
			abort();
		size_t *off = malloc((ids.n + 1) * sizeof *off);
		char *p = off ? tok_pieces(t, ids.v, ids.n, off, &e) : NULL;
		if (off && !p)
			abort();
		if (p && !tok_utf8_valid(p, off[ids.n], &bad))
			abort(); /* every piece is valid UTF-8 */
		free(p);
		free(off);
		free(d);
	}
	free(ids.v);
	return 0;
}
