/* tokenize - tokenize text with a tokenizer.json (a test and inspection
 * tool for the tok_ library).
 *
 *   tokenize [--no-bos] [--ids] [--bench] TOKENIZER.json [FILE|-]
 *
 * Default output: TSV "i id piece" with a header (piece escaped: \t \n
 * \r \\).  --ids prints the ids on one line.  --bench prints load time,
 * encode throughput (MB/s over the input bytes, best of 3) and counts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util/err.h"
#include "tok/tok.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *slurp(const char *path, size_t *n, ss_err *e)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!f) {
		ss_err_errno(e, errno, "%s", path);
		return NULL;
	}
	size_t cap = 1 << 16, k = 0;
	char *b = malloc(cap);
	size_t r;
	while (b && (r = fread(b + k, 1, cap - k, f)) > 0) {
		k += r;
		if (k == cap) {
			char *nb = realloc(b, cap *= 2);
			if (!nb)
				free(b);
			b = nb;
		}
	}
	if (f != stdin)
		fclose(f);
	if (!b) {
		ss_err_set(e, "%s: out of memory", path);
		return NULL;
	}
	*n = k;
	return b;
}

static void put_piece(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\t') fputs("\\t", stdout);
		else if (c == '\n') fputs("\\n", stdout);
		else if (c == '\r') fputs("\\r", stdout);
		else if (c == '\\') fputs("\\\\", stdout);
		else if (c < 0x20) printf("\\x%02x", c);
		else putchar(c);
	}
}

int main(int argc, char **argv)
{
	int bos = 1, ids_only = 0, bench = 0, i = 1;
	ss_err e = {0};
	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (!strcmp(argv[i], "--no-bos")) bos = 0;
		else if (!strcmp(argv[i], "--ids")) ids_only = 1;
		else if (!strcmp(argv[i], "--bench")) bench = 1;
		else {
			fprintf(stderr, "usage: tokenize [--no-bos] [--ids] [--bench] TOKENIZER.json [FILE|-]\n");
			return 2;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "usage: tokenize [--no-bos] [--ids] [--bench] TOKENIZER.json [FILE|-]\n");
		return 2;
	}
	double t0 = now(), c0 = cpu();
	tok *t = tok_load(argv[i], &e);
	double t1 = now(), c1 = cpu();
	if (!t) {
		ss_err_print("tokenize", &e);
		return 1;
	}
	size_t n;
	char *text = slurp(i + 1 < argc ? argv[i + 1] : "-", &n, &e);
	if (!text) {
		ss_err_print("tokenize", &e);
		return 1;
	}
	tok_ids ids = {0};
	double best = 1e30, bestc = 1e30;
	for (int rep = 0; rep < (bench ? 3 : 1); rep++) {
		ids.n = 0;
		double a = now(), ac = cpu();
		if (tok_encode(t, text, n, bos ? TOK_POST : 0, &ids, &e)) {
			ss_err_print("tokenize", &e);
			return 1;
		}
		double b = now() - a, bc = cpu() - ac;
		if (b < best)
			best = b;
		if (bc < bestc)
			bestc = bc;
	}
	if (bench) {
		printf("load_s\t%.3f\nload_cpu_s\t%.3f\nencode_s\t%.4f\nencode_cpu_s\t%.4f\nMBps\t%.2f\n"
		       "MBps_cpu\t%.2f\nbytes\t%zu\ntokens\t%zu\n", t1 - t0, c1 - c0, best, bestc,
		       n / best / 1e6, n / bestc / 1e6, n, ids.n);
	} else if (ids_only) {
		for (size_t k = 0; k < ids.n; k++)
			printf(k ? " %d" : "%d", ids.v[k]);
		putchar('\n');
	} else {
		size_t *off = malloc((ids.n + 1) * sizeof *off);
		char *p = off ? tok_pieces(t, ids.v, ids.n, off, &e) : NULL;
		if (!p) {
			ss_err_print("tokenize", &e);
			return 1;
		}
		puts("i\tid\tpiece");
		for (size_t k = 0; k < ids.n; k++) {
			printf("%zu\t%d\t", k, ids.v[k]);
			put_piece(p + off[k], off[k + 1] - off[k]);
			putchar('\n');
		}
		free(p);
		free(off);
	}
	free(ids.v);
	free(text);
	tok_free(t);
	if (ss_close_stdout(&e)) {
		ss_err_print("tokenize", &e);
		return 1;
	}
	return 0;
}
