/* fuzz_tokjson.c - tokenizer.json (tok_load.c and tok_encode.c: model, normalizer,
 * pre-tokenizer regexes, added tokens, post-processor, decoder) on
 * arbitrary bytes through tok_load_mem().  A tokenizer that loads must
 * encode, decode and split into pieces a fixed mixed text without error
 * beyond a message, and every id it produces must lie in its vocabulary. */
#include "fuzz.h"
#include "tok/tok.h"

static const char text[] = "Hello, world! 3(1+3) = 12\n\n  caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 <s>";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ss_err e = {0};
	tok *t = tok_load_mem((const char *)data, size, "fuzz.json", &e);
	if (!t) {
		if (!e.msg[0])
			abort();
		return 0;
	}
	tok_ids ids = {0};
	ss_err e2 = {0};
	if (tok_encode(t, text, sizeof text - 1, TOK_POST, &ids, &e2) == 0) {
		size_t V = tok_vocab_size(t);
		for (size_t i = 0; i < ids.n; i++)
			if (ids.v[i] < 0 || (size_t)ids.v[i] >= V)
				abort();
		size_t len;
		char *s = tok_decode(t, ids.v, ids.n, &len, &e2);
		free(s);
		size_t *off = malloc((ids.n + 1) * sizeof *off);
		if (off) {
			char *p = tok_pieces(t, ids.v, ids.n, off, &e2);
			free(p);
			free(off);
		}
	} else if (!e2.msg[0]) {
		abort();
	}
	free(ids.v);
	tok_free(t);
	return 0;
}
