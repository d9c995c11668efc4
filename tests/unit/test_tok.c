/* test_tok.c - tokenizer: the real stories260k ids, UTF-8 handling,
 * added-token options, pieces, and errors naming the unsupported part.
 * Expected values are hand-derived (or, for stories260k, llama2.c's). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "tok/tok.h"

#define STORY "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, r"

static const char *root(void)
{
	const char *r = getenv("SS_ROOT");
	return r ? r : ".";
}

static tok *load(const char *rel)
{
	char p[1024];
	snprintf(p, sizeof p, "%s/%s", root(), rel);
	ss_err e = {0};
	tok *t = tok_load(p, &e);
	if (!t)
		fprintf(stderr, "# %s\n", e.msg);
	assert_non_null(t);
	return t;
}

/* A byte-level tokenizer with a few merges, written here; {ADDED} and
 * {PRE} are filled in by each test. */
static char *tiny_json(const char *added, const char *pre, const char *dec)
{
	static const char *bytes_ascii = "!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~";
	char *v = malloc(1 << 16);
	size_t n = 0;
	int id = 0;
	n += (size_t)sprintf(v + n, "{\"added_tokens\": [%s], \"normalizer\": null, \"pre_tokenizer\": %s,"
	                     " \"post_processor\": null, \"decoder\": %s, \"model\": {\"type\": \"BPE\", \"vocab\": {",
	                     added, pre, dec);
	/* all 256 bytes in GPT-2 order: printable ASCII, then the rest mapped */
	for (const char *c = bytes_ascii; *c; c++) {
		if (*c == '"' || *c == '\\')
			n += (size_t)sprintf(v + n, "\"\\%c\": %d, ", *c, id++);
		else
			n += (size_t)sprintf(v + n, "\"%c\": %d, ", *c, id++);
	}
	for (int b = 0xa1; b <= 0xff; b++)
		if (b != 0xad)
			n += (size_t)sprintf(v + n, "\"\\u%04x\": %d, ", b, id++);
	for (int k = 0; k < 68; k++)
		n += (size_t)sprintf(v + n, "\"\\u%04x\": %d, ", 0x100 + k, id++);
	n += (size_t)sprintf(v + n, "\"ab\": %d, \"abc\": %d, \"\\u0120a\": %d}, \"merges\": [\"a b\", \"ab c\", \"\\u0120 a\"]}}",
	                     id, id + 1, id + 2);
	return v;
}

static void encode_str(tok *t, const char *s, int flags, tok_ids *ids)
{
	ss_err e = {0};
	ids->n = 0;
	int rc = tok_encode(t, s, strlen(s), flags, ids, &e);
	if (rc)
		fprintf(stderr, "# %s\n", e.msg);
	assert_int_equal(rc, 0);
}

static void test_stories260k(void **st)
{
	static const int32_t want[] = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426,
	                               338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322, 265, 282, 295, 433,
	                               426, 385, 328, 432, 358, 394, 261, 370, 432, 352};
	tok *t = load("examples/models/stories260k/tokenizer.json");
	tok_ids ids = {0};
	encode_str(t, STORY, TOK_POST, &ids);
	assert_int_equal(ids.n, sizeof want / sizeof *want);
	assert_memory_equal(ids.v, want, sizeof want);
	ss_err e = {0};
	size_t n;
	char *d = tok_decode(t, want + 1, ids.n - 1, &n, &e);
	assert_non_null(d);
	assert_string_equal(d, STORY);
	free(d);
	/* pieces: Strip removes the first piece's leading space only */
	size_t off[64];
	char *p = tok_pieces(t, want + 1, 3, off, &e);
	assert_non_null(p);
	assert_int_equal(off[1] - off[0], 4);
	assert_memory_equal(p + off[0], "Once", 4);
	assert_memory_equal(p + off[1], " upon", off[2] - off[1]);
	free(p);
	/* byte fallback: a character outside the 512 pieces, and U+0000 */
	encode_str(t, "\xe4\xbd\xa0", 0, &ids); /* U+4F60 */
	assert_int_equal(ids.n, 4);             /* U+2581 (410) then 3 bytes */
	assert_int_equal(ids.v[0], 410);
	assert_int_equal(ids.v[1], 3 + 0xe4);
	assert_int_equal(ids.v[3], 3 + 0xa0);
	p = tok_pieces(t, ids.v, ids.n, off, &e);
	assert_non_null(p);
	for (int i = 1; i < 4; i++) /* a lone byte of a character is U+FFFD */
		assert_memory_equal(p + off[i], "\xef\xbf\xbd", off[i + 1] - off[i]);
	free(p);
	d = tok_decode(t, ids.v, ids.n, &n, &e);
	assert_string_equal(d, "\xe4\xbd\xa0");
	free(d);
	ids.n = 0;
	assert_int_equal(tok_encode(t, "a\0b", 3, 0, &ids, &e), 0);
	d = tok_decode(t, ids.v, ids.n, &n, &e);
	assert_int_equal(n, 3);
	assert_memory_equal(d, "a\0b", 3);
	free(d);
	free(ids.v);
	tok_free(t);
}

static void test_utf8(void **st)
{
	size_t bad = 99;
	assert_int_equal(tok_utf8_valid("abc", 3, &bad), 1);
	assert_int_equal(tok_utf8_valid("ab\xc3", 3, &bad), 0);
	assert_int_equal(bad, 2);
	assert_int_equal(tok_utf8_valid("a\xc0\xafz", 4, &bad), 0); /* overlong */
	assert_int_equal(bad, 1);
	assert_int_equal(tok_utf8_valid("\xed\xa0\x80", 3, &bad), 0); /* surrogate */
	assert_int_equal(bad, 0);
	assert_int_equal(tok_utf8_valid("\xf4\x90\x80\x80", 4, &bad), 0); /* > U+10FFFF */
	assert_int_equal(tok_utf8_valid("\xf0\x9f\x98\x80", 4, &bad), 1);
	/* WHATWG replacement: one U+FFFD per maximal subpart */
	char *d = NULL;
	size_t dn = 0, dc = 0;
	ss_err e = {0};
	assert_int_equal(tok_utf8_lossy("a\xf0\x9f\x98z\x80\xe2\x82", 8, &d, &dn, &dc, &e), 0);
	assert_string_equal(d, "a\xef\xbf\xbdz\xef\xbf\xbd\xef\xbf\xbd");
	dn = 0;
	assert_int_equal(tok_utf8_lossy("\xed\xa0\x80", 3, &d, &dn, &dc, &e), 0);
	assert_string_equal(d, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	free(d);
	tok *t = load("tests/data/tokenizers/qwen3/tokenizer.json");
	tok_ids ids = {0};
	assert_int_equal(tok_encode(t, "ok\xff", 3, 0, &ids, &e), -1);
	assert_string_equal(e.msg, "text: invalid UTF-8 at byte offset 2");
	free(ids.v);
	tok_free(t);
}

static void test_added_options(void **st)
{
	char *j = tiny_json(
		"{\"id\": 500, \"content\": \"<L>\", \"lstrip\": true, \"special\": true},"
		"{\"id\": 501, \"content\": \"<R>\", \"rstrip\": true, \"special\": true},"
		"{\"id\": 502, \"content\": \"<W>\", \"single_word\": true, \"special\": true},"
		"{\"id\": 503, \"content\": \"<W>x\", \"special\": true}",
		"{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}",
		"{\"type\": \"ByteLevel\"}");
	ss_err e = {0};
	tok *t = tok_load_mem(j, strlen(j), "tiny", &e);
	if (!t)
		fprintf(stderr, "# %s\n", e.msg);
	assert_non_null(t);
	int32_t a = tok_id(t, "a", 1), b = tok_id(t, "b", 1), sp = tok_id(t, "\xc4\xa0", 2);
	int32_t ab = tok_id(t, "ab", 2), abc = tok_id(t, "abc", 3), spa = tok_id(t, "\xc4\xa0" "a", 3);
	assert_true(a >= 0 && b >= 0 && sp >= 0 && ab >= 0 && abc >= 0 && spa >= 0);
	tok_ids ids = {0};
	/* lstrip eats the spaces before, rstrip the spaces after */
	encode_str(t, "a  <L>  b", 0, &ids);
	int32_t w1[] = {a, 500, sp, sp, b};
	assert_int_equal(ids.n, 5);
	assert_memory_equal(ids.v, w1, sizeof w1);
	encode_str(t, "a  <R>  b", 0, &ids);
	int32_t w2[] = {a, sp, sp, 501, b};
	assert_int_equal(ids.n, 5);
	assert_memory_equal(ids.v, w2, sizeof w2);
	/* single_word: only between non-word characters; merges apply around */
	encode_str(t, "ab <W> c", 0, &ids);
	int32_t w3[] = {ab, sp, 502, sp, tok_id(t, "c", 1)};
	assert_int_equal(ids.n, 5);
	assert_memory_equal(ids.v, w3, sizeof w3);
	encode_str(t, "a<W> abc", 0, &ids); /* "a" before: not a single word */
	assert_int_equal(ids.n, 6);
	assert_int_equal(ids.v[1], tok_id(t, "<", 1));
	assert_int_equal(ids.v[4], sp);
	assert_int_equal(ids.v[5], abc);
	/* longest match wins: <W>x over <W> */
	encode_str(t, "<W>x", 0, &ids);
	assert_int_equal(ids.n, 1);
	assert_int_equal(ids.v[0], 503);
	free(ids.v);
	tok_free(t);
	free(j);
}

static void expect_error(const char *added, const char *pre, const char *dec, const char *want)
{
	char *j = tiny_json(added, pre, dec);
	ss_err e = {0};
	tok *t = tok_load_mem(j, strlen(j), "x.json", &e);
	assert_null(t);
	if (!strstr(e.msg, want))
		fprintf(stderr, "# got: %s\n# want: %s\n", e.msg, want);
	assert_non_null(strstr(e.msg, want));
	free(j);
}

static void test_errors(void **st)
{
	expect_error("", "{\"type\": \"Metaspace\"}", "null",
	             "x.json:pre_tokenizer.type: unsupported pre-tokenizer 'Metaspace'");
	expect_error("", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\"}]}", "null",
	             "x.json:pre_tokenizer.pretokenizers[0].type: unsupported pre-tokenizer 'Digits'");
	expect_error("", "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"a\"}, \"behavior\": \"MergedWithNext\"}", "null",
	             "x.json:pre_tokenizer.behavior: unsupported behavior 'MergedWithNext'");
	expect_error("", "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(a\"}, \"behavior\": \"Isolated\"}", "null",
	             "x.json:pre_tokenizer.pattern.Regex: regex does not compile");
	expect_error("", "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"a\"}, \"behavior\": \"Isolated\", \"invert\": true}",
	             "null", "x.json:pre_tokenizer.invert: unsupported value true");
	expect_error("", "null", "{\"type\": \"WordPiece\"}", "x.json:decoder.type: unsupported decoder 'WordPiece'");
	expect_error("", "null", "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Fuse\"}, {\"type\": \"CTC\"}]}",
	             "x.json:decoder.decoders[1].type: unsupported decoder 'CTC'");
	expect_error("{\"id\": 3}", "null", "null", "x.json:added_tokens[0]: expected an object");
	const char *bads[][2] = {
		{"{\"normalizer\": {\"type\": \"Lowercase\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}",
		 "x.json:normalizer.type: unsupported normalizer 'Lowercase'"},
		{"{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}", "x.json:model.type: unsupported model 'Unigram'"},
		{"{\"model\": {\"type\": \"BPE\", \"dropout\": 0.1, \"vocab\": {}, \"merges\": []}}", "x.json:model.dropout: unsupported"},
		{"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a b\"]}}",
		 "x.json:model.merges[0]: 'b' is not in the vocabulary"},
		{"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"unk_token\": \"<unk>\"}}",
		 "x.json:model.unk_token: '<unk>' is not in the vocabulary"},
		{"{\"post_processor\": {\"type\": \"RobertaProcessing\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}",
		 "x.json:post_processor.type: unsupported post-processor 'RobertaProcessing'"},
		{"{\"pre_tokenizer\": {\"type\": \"ByteLevel\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
		 "x.json:model.vocab: no token for byte 0x00"},
		{"{\"model\": ", "x.json:1:"},
	};
	for (size_t i = 0; i < sizeof bads / sizeof *bads; i++) {
		ss_err e = {0};
		tok *t = tok_load_mem(bads[i][0], strlen(bads[i][0]), "x.json", &e);
		assert_null(t);
		if (!strstr(e.msg, bads[i][1]))
			fprintf(stderr, "# got: %s\n# want: %s\n", e.msg, bads[i][1]);
		assert_non_null(strstr(e.msg, bads[i][1]));
	}
	ss_err e = {0};
	assert_null(tok_load("/nonexistent/tokenizer.json", &e));
	assert_non_null(strstr(e.msg, "/nonexistent/tokenizer.json: No such file"));
	/* decoding an id outside the vocabulary */
	tok *t = load("examples/models/stories260k/tokenizer.json");
	int32_t id = 512;
	size_t n;
	assert_null(tok_decode(t, &id, 1, &n, &e));
	assert_non_null(strstr(e.msg, "ids[0]: 512 is not in the vocabulary"));
	tok_free(t);
}

/* The streaming reader (tok_json.c): model.vocab and model.merges in every
 * shape the file may give them, and JSON errors with their position. */
static void test_json_stream(void **st)
{
#define M(v, m) "{\"model\": {\"type\": \"BPE\", \"vocab\": " v ", \"merges\": " m "}}"
	const char *bads[][2] = {
		{M("{\"a\": 0, \"b\": 1, \"ab\": 2}", "[\"a b\", \"ab\"]"), "x.json:model.merges[1]: expected \"left right\""},
		{M("{\"a\": 0}", "[\"a  a\"]"), "x.json:model.merges[0]: expected \"left right\""},
		{M("{\"a\": 0, \"aa\": 1}", "[[\"a\", \"a\"], 7]"), "x.json:model.merges[1]: expected \"left right\" or [left, right]"},
		{M("{\"a\": 0, \"aa\": 1}", "[[\"a\", \"a\", \"a\"]]"), "x.json:model.merges[0]: expected \"left right\" or [left, right]"},
		{M("{\"a\": 0, \"aa\": 1}", "[[\"a\"]]"), "x.json:model.merges[0]: expected \"left right\" or [left, right]"},
		{M("{\"a\": 0, \"aa\": 1}", "[[\"a\", 1]]"), "x.json:model.merges[0]: expected \"left right\" or [left, right]"},
		{M("{\"a\": 0, \"aa\": 1}", "[[\"a\", [\"a\"]]]"), "x.json:model.merges[0]: expected \"left right\" or [left, right]"},
		{M("{\"a\": 0, \"aa\": 1}", "[{\"a\": \"a\"}]"), "x.json:model.merges[0]: expected \"left right\" or [left, right]"},
		{M("{\"a\": 0, \"b\": 1}", "[[\"a\", \"b\"]]"), "x.json:model.merges[0]: 'ab' is not in the vocabulary"},
		{M("{\"a\": 0, \"b\": \"1\"}", "[]"), "x.json:model.vocab: id of 'b' is not a valid integer"},
		{M("{\"a\": 0, \"b\": -1}", "[]"), "x.json:model.vocab: id of 'b' is not a valid integer"},
		{M("{\"a\": 0, \"b\": 1.0}", "[]"), "x.json:model.vocab: id of 'b' is not a valid integer"},
		{M("{\"a\": 0, \"b\": [1]}", "[]"), "x.json:model.vocab: id of 'b' is not a valid integer"},
		{M("{\"a\": 0, \"b\": 0}", "[]"), "x.json:model.vocab: id of 'b' is used twice"},
		{M("[\"a\"]", "[]"), "x.json:model.vocab: missing or not an object"},
		{M("{\"a\": 0}", "{}"), "x.json:model.merges: missing or not an array"},
		{"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"vocab\": 3}}",
		 "x.json:model.vocab: missing or not an object"},
		{"{\"model\": {\"vocab\": {\"a\": 0}}}", "x.json:model.type: missing"},
		{"[1, 2]", "x.json: expected a JSON object"},
		{"{\"model\": {\"type\": \"BPE\",\n  \"vocab\": {\"a\": 0,}}}", "x.json:2:20: not valid JSON: parse error: invalid object key"},
		{"{\"model\": {\"vocab\": {\"\\ud800\": 0}}}", "x.json:1:29: not valid JSON: invalid Unicode '\\uD800'"},
		{"{\"model\": {\"vocab\": {\"a\\udc00\": 0}}}", "not valid JSON: invalid Unicode '\\uDC00'"},
		{"{\"model\": {\"merges\": [\"\\ud83d\\u0041 b\"]}}", "not valid JSON: invalid Unicode '\\uD83D'"},
		{"{\"normalizer\": \"\\\\\\ud800\\\"\"}", "not valid JSON: invalid Unicode '\\uD800'"},
		{"{\"model\": {}} {}", "x.json:1:15: not valid JSON: "},
		{"", "x.json:1:0: not valid JSON: "},
		{"{\"a\": \"\xff\"}", "x.json:1:8: not valid JSON: "},
	};
	for (size_t i = 0; i < sizeof bads / sizeof *bads; i++) {
		ss_err e = {0};
		tok *t = tok_load_mem(bads[i][0], strlen(bads[i][0]), "x.json", &e);
		if (t || !strstr(e.msg, bads[i][1]))
			fprintf(stderr, "# case %zu got: %s\n# want: %s\n", i, t ? "(loaded)" : e.msg, bads[i][1]);
		assert_null(t);
		assert_non_null(strstr(e.msg, bads[i][1]));
	}
	/* nesting deeper than jansson's 2048 levels, in the tree and inside the vocabulary */
	for (int where = 0; where < 2; where++) {
		size_t n = 0, d = 3000;
		char *j = malloc(2 * d + 100);
		n += (size_t)sprintf(j, where ? "{\"model\": {\"vocab\": {\"a\": " : "{\"normalizer\": ");
		for (size_t k = 0; k < d; k++)
			j[n++] = '[';
		for (size_t k = 0; k < d; k++)
			j[n++] = ']';
		n += (size_t)sprintf(j + n, where ? "}}}" : "}");
		ss_err e = {0};
		assert_null(tok_load_mem(j, n, "x.json", &e));
		assert_non_null(strstr(e.msg, "not valid JSON: maximum parsing depth reached"));
		free(j);
	}
	/* escapes in keys and merges, a surrogate pair, U+0000 inside a token,
	 * both merge forms, duplicate keys (the last one wins), and a second
	 * "model" replacing the first */
	const char *good = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"x\": 9}, \"merges\": [\"x x\"]},"
	                   " \"model\": {\"type\": \"BPE\", \"merges\": [\"a \\\"\", [\"\\ud83d\\ude00\", \"\\u0000\"], \"a\\\" \\ud83d\\ude00\\u0000\"],"
	                   " \"vocab\": {\"a\": 0, \"\\\"\": 1, \"a\\\"\": 2, \"\\ud83d\\ude00\": 3, \"\\u0000\": 4,"
	                   " \"\\ud83d\\ude00\\u0000\": 5, \"a\\\"\\ud83d\\ude00\\u0000\": 6, \"z\": 7, \"a\": 8}}}";
	ss_err e = {0};
	tok *t = tok_load_mem(good, strlen(good), "x.json", &e);
	if (!t)
		fprintf(stderr, "# %s\n", e.msg);
	assert_non_null(t);
	assert_int_equal(tok_vocab_size(t), 9);
	assert_int_equal(tok_id(t, "a", 1), 8);
	assert_null(tok_token(t, 0, NULL));
	assert_int_equal(tok_id(t, "x", 1), -1);
	assert_int_equal(tok_id(t, "\xf0\x9f\x98\x80\0", 5), 5);
	tok_ids ids = {0};
	assert_int_equal(tok_encode(t, "a\"\xf0\x9f\x98\x80\0z", 8, 0, &ids, &e), 0);
	assert_int_equal(ids.n, 2);
	assert_int_equal(ids.v[0], 6);
	assert_int_equal(ids.v[1], 7);
	free(ids.v);
	tok_free(t);
#undef M
}

static void test_bos_and_long(void **st)
{
	tok *t = load("tests/data/tokenizers/llama3_1/tokenizer.json");
	size_t np;
	const int32_t *p = tok_post_prefix(t, &np);
	assert_int_equal(np, 1);
	assert_int_equal(p[0], 128000);
	tok_ids ids = {0};
	encode_str(t, "", TOK_POST, &ids);
	assert_int_equal(ids.n, 1);
	/* a 100000-byte word goes through the heap merge; decode gives it back */
	size_t n = 100000;
	char *s = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		s[i] = (char)('a' + (i * 7 + i / 13) % 26);
	s[n] = 0;
	ss_err e = {0};
	ids.n = 0;
	assert_int_equal(tok_encode(t, s, n, 0, &ids, &e), 0);
	size_t dn;
	char *d = tok_decode(t, ids.v, ids.n, &dn, &e);
	assert_int_equal(dn, n);
	assert_memory_equal(d, s, n);
	free(d);
	free(s);
	free(ids.v);
	tok_free(t);
}


static char *tmpfile_with(const char *s, size_t n)
{
	static char path[64];
	strcpy(path, "/tmp/sstok.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "wb");
	assert_int_equal(fwrite(s, 1, n, f), n);
	fclose(f);
	return path;
}

/* tok_load reads in chunks ending at newlines: a large file with an error
 * far in names its line and column, a lone surrogate there is found, and a
 * file without any newline (read whole) loads. */
static void test_json_chunks(void **st)
{
	size_t nv = 150000, cap = nv * 24 + 200, n = 0;
	char *j = malloc(cap);
	for (int one_line = 0; one_line < 2; one_line++) {
		const char *sep = one_line ? " " : "\n";
		n = (size_t)sprintf(j, "{\"model\": {\"type\": \"BPE\", \"merges\": [], \"vocab\": {%s", sep);
		for (size_t i = 0; i < nv; i++)
			n += (size_t)sprintf(j + n, "\"t%zu\": %zu%s%s", i, i, i + 1 < nv ? "," : "", sep);
		n += (size_t)sprintf(j + n, "}}}%s", sep);
		char *p = tmpfile_with(j, n);
		ss_err e = {0};
		tok *t = tok_load(p, &e);
		if (!t)
			fprintf(stderr, "# %s\n", e.msg);
		assert_non_null(t);
		assert_int_equal(tok_vocab_size(t), nv);
		assert_int_equal(tok_id(t, "t123456", 7), 123456);
		tok_free(t);
		unlink(p);
	}
	/* line 1 is the header, entry i is on line i + 2 */
	n = (size_t)sprintf(j, "{\"model\": {\"type\": \"BPE\", \"merges\": [], \"vocab\": {\n");
	for (size_t i = 0; i < nv; i++)
		n += (size_t)sprintf(j + n, i == 120000 ? "  \"a\\u00e9\\ud800\": %zu,\n" : "  \"t%zu\": %zu,\n", i, i);
	char *p = tmpfile_with(j, n);
	ss_err e = {0};
	assert_null(tok_load(p, &e));
	char want[256];
	snprintf(want, sizeof want, "%s:120002:17: not valid JSON: invalid Unicode '\\uD800'", p);
	if (strcmp(e.msg, want))
		fprintf(stderr, "# got: %s\n# want: %s\n", e.msg, want);
	assert_string_equal(e.msg, want);
	unlink(p);
	/* cut short: premature EOF on the line after the last newline */
	j[120002 * 12] = 0;
	size_t lines = 0, cut = strlen(j);
	for (size_t i = 0; i < cut; i++)
		lines += j[i] == '\n';
	size_t col = cut - (size_t)(strrchr(j, '\n') - j) - 1;
	p = tmpfile_with(j, cut);
	assert_null(tok_load(p, &e));
	snprintf(want, sizeof want, "%s:%zu:%zu: not valid JSON: ", p, lines + 1, col);
	if (strncmp(e.msg, want, strlen(want)))
		fprintf(stderr, "# got: %s\n# want: %s\n", e.msg, want);
	assert_true(strncmp(e.msg, want, strlen(want)) == 0);
	unlink(p);
	free(j);
}

static void test_input(void **st)
{
	ss_err e = {0};
	char *b;
	size_t n;
	char *p = tmpfile_with("caf\xc3\xa9 ok\xc3(", 10);
	assert_int_equal(tok_read_text(p, &b, &n, &e), -1);
	char want[128];
	snprintf(want, sizeof want, "%s: invalid UTF-8 at byte offset 8", p);
	assert_string_equal(e.msg, want);
	unlink(p);
	p = tmpfile_with("a\0b", 3);
	assert_int_equal(tok_read_text(p, &b, &n, &e), 0);
	assert_int_equal(n, 3);
	free(b);
	unlink(p);
	const char *jl = "{\"q\": \"one\", \"n\": 1}\n\n{\"q\": \"two\\u0000x\"}\n{\"n\": 3}\n";
	p = tmpfile_with(jl, strlen(jl));
	tok_rows r;
	assert_int_equal(tok_jsonl_read(p, "q", 1, &r, &e), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.v[0].len, 5);
	assert_int_equal(r.v[0].line, 3);
	assert_memory_equal(r.v[0].text, "two\0x", 5);
	tok_rows_free(&r);
	assert_int_equal(tok_jsonl_read(p, "q", -1, &r, &e), -1);
	snprintf(want, sizeof want, "%s:4: field 'q' is missing or not a string", p);
	assert_string_equal(e.msg, want);
	assert_int_equal(tok_jsonl_read(p, "q", 7, &r, &e), -1);
	snprintf(want, sizeof want, "%s: --index 7 out of range (3 rows)", p);
	assert_string_equal(e.msg, want);
	unlink(p);
	p = tmpfile_with("{\"q\": 1\n", 9);
	assert_int_equal(tok_jsonl_read(p, "q", -1, &r, &e), -1);
	snprintf(want, sizeof want, "%s:1: not valid JSON", p);
	assert_non_null(strstr(e.msg, want));
	unlink(p);
	/* /tokens/text strings: NUL becomes U+FFFD */
	tok *t = load("tests/data/tokenizers/qwen3/tokenizer.json");
	tok_ids ids = {0};
	assert_int_equal(tok_encode(t, "a\0", 2, 0, &ids, &e), 0);
	char **ps;
	assert_int_equal(tok_piece_strings(t, ids.v, ids.n, &ps, &e), 0);
	assert_int_equal(ids.n, 2);
	assert_string_equal(ps[0], "a");
	assert_string_equal(ps[1], "\xef\xbf\xbd");
	tok_piece_strings_free(ps, ids.n);
	free(ids.v);
	tok_free(t);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_stories260k),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_added_options),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_json_stream),
		cmocka_unit_test(test_json_chunks),
		cmocka_unit_test(test_bos_and_long),
		cmocka_unit_test(test_input),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
