/* actdump - run a Hugging Face model folder over a token sequence and write
 * the sinkscope HDF5 trace (DESIGN.md section 2): /tokens, /stats always,
 * /acts for the components and layers asked for.  See actdump(1). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "util/err.h"
#include "engine/forward.h"
#include "engine/gen.h"
#include "io/h5io.h"
#include "engine/model.h"
#include "util/ofile.h"
#include "util/opt.h"
#include "util/progress.h"
#include "tok/tok.h"
#include "io/trace.h"
#include "io/tsv.h"

#define PROG "actdump"

static const char *model_dir, *ids_path, *out_path, *acts_opt, *layers_opt = "all",
                  *max_mem_opt, *positions_opt = "warn";
static const char *text_path, *jsonl_path, *field_opt, *tok_path;
static long threads, index_opt, max_tokens;
static int timings, index_seen, no_bos, tokens_only;
/* --generate (gen.h) */
static long gen_n, gen_seed;
static double gen_temp = 0, gen_top_p = 1;
static const char *gen_kv = "f32", *text_out, *prompt_fmt_opt = "raw";
static ss_prompt_fmt prompt_fmt;
static const ss_opt opts[] = {
	TOK_INPUT_OPTS(model_dir, ids_path, text_path, jsonl_path, field_opt, index_opt, index_seen, tok_path, no_bos,
	               "JSON Lines collection: tokenize --field of each row",
	               "--jsonl: row N only (0-based; default every row)"),
	{"max-tokens", 0, SS_OPT_INT, &max_tokens, "N", "keep the first N tokens of each sequence (0 = all)", NULL},
	{"tokens-only", 0, SS_OPT_FLAG, &tokens_only, NULL, "print the tokens as TSV (i id piece) and stop", NULL},
	{"output", 'o', SS_OPT_STRING, &out_path, "OUT.h5", "output file; with several rows a pattern with %d or {row}", NULL},
	{"acts", 0, SS_OPT_STRING, &acts_opt, "LIST", "store resid,attn_out,mlp_in,mlp_out", NULL},
	{"layers", 0, SS_OPT_STRING, &layers_opt, "LIST", "layers of --acts, e.g. 0-10,20 (default all)", NULL},
	{"threads", 't', SS_OPT_INT, &threads, "N", "threads (default: all processors)", NULL},
	{"max-memory", 0, SS_OPT_STRING, &max_mem_opt, "SIZE", "refuse runs needing more (default 90% of RAM)", NULL},
	{"positions", 0, SS_OPT_STRING, &positions_opt, "warn|refuse", "when T > max_position_embeddings", NULL},
	{"timings", 0, SS_OPT_FLAG, &timings, NULL, "print times and tokens/s on stderr", NULL},
	{"prompt-format", 0, SS_OPT_STRING, &prompt_fmt_opt, "F", "wrap text as raw, chatml, deepseek-r1 or llama3", NULL},
	{"generate", 0, SS_OPT_INT, &gen_n, "N", "first continue the sequence by up to N tokens (stops at EOS)", NULL},
	{"temperature", 0, SS_OPT_DOUBLE, &gen_temp, "X", "--generate: sampling temperature (default 0: greedy)", NULL},
	{"top-p", 0, SS_OPT_DOUBLE, &gen_top_p, "P", "--generate: nucleus sampling mass (default 1: off)", NULL},
	{"seed", 0, SS_OPT_INT, &gen_seed, "N", "--generate: seed of the sampler (default 0)", NULL},
	{"kv", 0, SS_OPT_STRING, &gen_kv, "f32|bf16", "--generate: KV cache type (default f32)", NULL},
	{"text-out", 0, SS_OPT_STRING, &text_out, "FILE", "--generate: write the continuation as text", NULL},
	{0},
};
static const ss_prog prog = {
	PROG,
	"-m DIR (--ids FILE | --text FILE | --jsonl FILE --field NAME [--index N] | FILE) "
	"[-o OUT.h5] [--tokenizer FILE] [--no-bos] [--max-tokens N] [--acts LIST] [--layers LIST] [-t N] "
	"[--max-memory SIZE] [--positions warn|refuse] [--timings]\n"
	"--tokens-only (-m DIR | --tokenizer FILE) [--no-bos] "
	"(--ids FILE | --text FILE | --jsonl FILE --field NAME [--index N] | FILE)\n"
	"-m DIR (--text FILE | --jsonl FILE --field NAME --index N | --ids FILE | FILE) "
	"--generate N [--prompt-format F] [--temperature X] [--top-p P] [--seed N] [--kv f32|bf16] "
	"[--text-out FILE] [-o OUT.h5] [options]",
	"record the activations of a model over a token sequence", opts};

/* ---- input --------------------------------------------------------------- */

/* One token sequence to run: from --ids, a text, or one JSON Lines row. */
typedef struct seq {
	int32_t *ids;
	long T;
	char *name; /* for messages and /tokens: the file, or FILE:ROW */
	char *out;  /* output path (NULL: stdout) */
	long row;   /* JSON Lines row, -1 otherwise */
} seq;

static void seqs_free(seq *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].ids);
		free(v[i].name);
		free(v[i].out);
	}
	free(v);
}

/* The tokenizer (tok_load_for): --tokens-only without -m or --tokenizer
 * is a usage error. */
static int load_tok(int required, tok **t, ss_err *e)
{
	*t = NULL;
	if (!tok_path && !model_dir)
		return ss_err_status(e, 2, "--tokens-only needs -m DIR or --tokenizer FILE");
	return tok_load_for(model_dir, tok_path, required, t, e);
}

/* "%d" or "{row}" in the -o pattern replaced by the row number. */
static char *out_name(const char *pat, long row, ss_err *e)
{
	const char *a = strstr(pat, "%d"), *b = strstr(pat, "{row}");
	const char *at = a && (!b || a < b) ? a : b;
	size_t skip = at == a ? 2 : 5;
	char num[32];
	snprintf(num, sizeof num, "%ld", row);
	size_t n = strlen(pat) + sizeof num;
	char *s = ss_malloc(n, 1, "output name", e);
	if (s)
		snprintf(s, n, "%.*s%s%s", (int)(at - pat), pat, num, at + skip);
	return s;
}

static int add_seq(seq **v, size_t *n, const tok_ids *ids, const char *name, long row, ss_err *e)
{
	seq *nv = realloc(*v, (*n + 1) * sizeof *nv);
	if (!nv)
		return ss_err_set(e, "out of memory");
	*v = nv;
	seq *q = &nv[(*n)++];
	memset(q, 0, sizeof *q);
	q->row = row;
	char nb[4200];
	if (row >= 0)
		snprintf(nb, sizeof nb, "%s:%ld", name, row);
	else
		snprintf(nb, sizeof nb, "%s", name);
	q->name = ss_strdup(nb, e);
	q->ids = ss_malloc(ids->n ? ids->n : 1, sizeof *q->ids, "token ids", e);
	if (!q->name || !q->ids)
		return -1;
	q->T = (long)ids->n;
	if (max_tokens > 0 && q->T > max_tokens)
		q->T = max_tokens;
	if (q->T == 0)
		return ss_err_set(e, "%s: no tokens (empty text%s)", q->name, no_bos ? " and --no-bos" : "");
	memcpy(q->ids, ids->v, ids->n * sizeof *ids->v);
	return 0;
}

/* Every sequence of the run, and the tokenizer (for /tokens/text). */
static int gather(int argc, char **argv, int opi, seq **v, size_t *n, tok **t, ss_err *e)
{
	*v = NULL;
	*n = 0;
	*t = NULL;
	const char *operand = opi < argc ? argv[opi] : NULL;
	if (opi + 1 < argc)
		return ss_err_status(e, 2, "unexpected operand '%s'", argv[opi + 1]);
	int k = !!ids_path + !!text_path + !!jsonl_path + !!operand;
	if (k != 1)
		return ss_err_status(e, 2, k ? "give one input: --ids, --text, --jsonl or a FILE operand"
		                             : "missing input: --ids FILE, --text FILE, --jsonl FILE or FILE");
	if (jsonl_path && !field_opt)
		return ss_err_status(e, 2, "--jsonl needs --field NAME");
	if (!jsonl_path && (field_opt || index_seen))
		return ss_err_status(e, 2, "--field and --index go with --jsonl");
	if (index_seen && index_opt < 0)
		return ss_err_status(e, 2, "--index: %ld is negative", index_opt);
	if (!tokens_only && !model_dir)
		return ss_err_status(e, 2, "missing -m DIR");
	if (ids_path) {
		int32_t *ids = NULL;
		long T = 0;
		if (tok_read_ids(ids_path, &ids, &T, e) < 0)
			return -1;
		tok_ids a = {ids, (size_t)T, (size_t)T};
		int r = add_seq(v, n, &a, strcmp(ids_path, "-") ? ids_path : "-", -1, e);
		free(ids);
		if (r < 0)
			return -1;
		return load_tok(tokens_only, t, e);
	}
	if (load_tok(1, t, e) < 0)
		return -1;
	int flags = no_bos ? 0 : TOK_POST;
	tok_ids ids = {0};
	int rc = 0;
	if (jsonl_path) {
		tok_rows rows;
		if (tok_jsonl_read(jsonl_path, field_opt, index_seen ? index_opt : -1, &rows, e) < 0)
			return -1;
		const char *nm = strcmp(jsonl_path, "-") ? jsonl_path : "<stdin>";
		for (size_t i = 0; i < rows.n && !rc; i++) {
			ids.n = 0;
			if ((prompt_fmt == SS_PF_RAW
			         ? tok_encode(*t, rows.v[i].text, rows.v[i].len, flags, &ids, e)
			         : gen_encode_prompt(*t, prompt_fmt, rows.v[i].text, rows.v[i].len, &ids, e)) < 0) {
				ss_err_prefix(e, "%s:%ld: field '%s'", nm, rows.v[i].line, field_opt);
				rc = -1;
			} else
				rc = add_seq(v, n, &ids, nm, rows.v[i].row, e);
		}
		tok_rows_free(&rows);
	} else {
		const char *path = text_path ? text_path : operand;
		char *buf;
		size_t len;
		if (tok_read_text(path, &buf, &len, e) < 0)
			return -1;
		rc = prompt_fmt == SS_PF_RAW ? tok_encode(*t, buf, len, flags, &ids, e)
		                             : gen_encode_prompt(*t, prompt_fmt, buf, len, &ids, e);
		free(buf);
		if (!rc)
			rc = add_seq(v, n, &ids, strcmp(path, "-") ? path : "<stdin>", -1, e);
	}
	free(ids.v);
	if (rc)
		return -1;
	/* outputs: several rows need a pattern */
	int all_rows = jsonl_path && !index_seen;
	if (!tokens_only && all_rows) {
		if (!out_path || (!strstr(out_path, "%d") && !strstr(out_path, "{row}")))
			return ss_err_status(e, 2, "--jsonl without --index writes one file per row: "
			                     "give -o PATTERN with %%d or {row}");
		for (size_t i = 0; i < *n; i++)
			if (!((*v)[i].out = out_name(out_path, (*v)[i].row, e)))
				return -1;
	}
	return 0;
}

/* --tokens-only: "i id piece" (or "row i id piece" for every row). */
static int print_tokens(const seq *v, size_t n, const tok *t, int with_row, ss_err *e)
{
	fputs(with_row ? "row\ti\tid\tpiece\n" : "i\tid\tpiece\n", stdout);
	for (size_t k = 0; k < n; k++) {
		size_t *off = ss_malloc((size_t)v[k].T + 1, sizeof *off, "token pieces", e);
		char *p = off ? tok_pieces(t, v[k].ids, (size_t)v[k].T, off, e) : NULL;
		if (!p) {
			free(off);
			return ss_err_prefix(e, "%s", v[k].name);
		}
		for (long i = 0; i < v[k].T; i++) {
			if (with_row)
				printf("%ld\t", v[k].row);
			printf("%ld\t%d\t", i, v[k].ids[i]);
			tsv_put_escaped(stdout, p + off[i], off[i + 1] - off[i]);
			putchar('\n');
		}
		free(p);
		free(off);
	}
	return 0;
}

/* ---- options --------------------------------------------------------------- */

/* "0-10,20" or "all" into mask[0..L] (0 = embeddings, for resid only). */
static int parse_layers(const char *s, long L, unsigned char *mask, ss_err *e)
{
	memset(mask, 0, (size_t)L + 1);
	if (!strcmp(s, "all")) {
		memset(mask, 1, (size_t)L + 1);
		return 0;
	}
	const char *p = s;
	while (*p) {
		char *end;
		errno = 0;
		long a = strtol(p, &end, 10), b;
		if (end == p || errno)
			return ss_err_status(e, 2, "--layers: bad layer list '%s'", s);
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtol(p, &end, 10);
			if (end == p || errno)
				return ss_err_status(e, 2, "--layers: bad layer list '%s'", s);
		}
		if (a < 0 || b > L || a > b)
			return ss_err_status(e, 2, "--layers: layer range %ld-%ld outside 0-%ld", a, b, L);
		for (long l = a; l <= b; l++)
			mask[l] = 1;
		if (*end == ',')
			end++;
		else if (*end)
			return ss_err_status(e, 2, "--layers: bad layer list '%s'", s);
		p = end;
	}
	return 0;
}

static int parse_acts(const char *s, int on[SS_HOOK_N], ss_err *e)
{
	memset(on, 0, sizeof(int) * SS_HOOK_N);
	if (!s)
		return 0;
	char buf[256];
	snprintf(buf, sizeof buf, "%s", s);
	for (char *sv, *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		int k = -1;
		for (int i = 0; i < SS_HOOK_N; i++)
			if (!strcmp(t, ss_hook_names[i]))
				k = i;
		if (!strcmp(t, "all"))
			for (int i = 0; i < SS_HOOK_N; i++)
				on[i] = 1;
		else if (k < 0)
			return ss_err_status(e, 2, "--acts: unknown component '%s' (resid, attn_out, mlp_in, mlp_out)", t);
		else
			on[k] = 1;
	}
	return 0;
}

/* "2G", "512M", "1.5G", "1000000" (bytes; K, M, G, T binary). */
static int parse_size(const char *s, double *v)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (end == s || errno || !(x > 0))
		return 0;
	double mul = 1;
	switch (toupper((unsigned char)*end)) {
	case 'K': mul = 1024.0; end++; break;
	case 'M': mul = 1048576.0; end++; break;
	case 'G': mul = 1073741824.0; end++; break;
	case 'T': mul = 1099511627776.0; end++; break;
	}
	if (*end == 'B' || *end == 'b' || (*end == 'i' && end[1] == 'B' && (end += 1)))
		end++;
	*v = x * mul;
	return *end == 0;
}

/* ---- capture through the hook --------------------------------------------------- */

typedef struct capture {
	ss_h5 *h5;
	long T, D;
	int on[SS_HOOK_N];
	unsigned char *mask[SS_HOOK_N]; /* [L+1] layers stored */
	long *index[SS_HOOK_N];         /* [L+1] row in /acts/<c> */
	float *buf[SS_HOOK_N];          /* [T, D] the current layer */
	double write_s;
	ss_err err;
} capture;

static int capture_hook(void *ctx, int layer, ss_hook_point what, long t0, long n, float *x, long d)
{
	capture *c = ctx;
	if (c->on[what] && c->mask[what][layer])
		memcpy(c->buf[what] + t0 * c->D, x, sizeof(float) * (size_t)(n * d));
	/* resid of the last block ends the layer: every component is complete */
	if (what != SS_HOOK_RESID || t0 + n != c->T)
		return 0;
	double t = ss_now();
	for (int k = 0; k < SS_HOOK_N; k++)
		if (c->on[k] && c->mask[k][layer] &&
		    trace_acts_write(c->h5, ss_hook_names[k], (size_t)c->index[k][layer], c->buf[k], &c->err) < 0)
			return -1;
	c->write_s += ss_now() - t;
	return 0;
}

typedef struct prog_ctx { ss_progress p; long T; char what[64]; } prog_ctx;

static void on_layer(void *ctx, int done, int L)
{
	prog_ctx *pc = ctx;
	snprintf(pc->what, sizeof pc->what, PROG ": layer %d/%d", done, L);
	pc->p.what = pc->what;
	ss_progress_update(&pc->p, (double)done * (double)pc->T / L, (double)pc->T, "tok");
}

static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
	       (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static double gib(double b) { return b / 1073741824.0; }

/* The weights are mapped: a model file cut short (or unreadable) while we
 * run faults on the next read.  Say which file, remove the temporary
 * output, exit 1. */
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	const char *p = st_fault_path(si->si_addr);
	const char *m1 = PROG ": ", *m2 = p ? p : "model file",
	           *m3 = ": file truncated or unreadable while mapped (SIGBUS); partial output removed\n";
	ssize_t r = write(2, m1, strlen(m1));
	r = write(2, m2, strlen(m2));
	r = write(2, m3, strlen(m3));
	(void)r;
	ss_tmp_remove_all();
	_exit(1);
}

/* ---- main ------------------------------------------------------------------------- */

/* Options every run shares; checked before any input is read. */
static int on[SS_HOOK_N];
static double max_mem;

static int check_opts(ss_err *e)
{
	if (parse_acts(acts_opt, on, e) < 0)
		return -1;
	if (max_mem_opt && !parse_size(max_mem_opt, &max_mem))
		return ss_err_status(e, 2, "--max-memory: bad size '%s' (e.g. 20G, 512M)", max_mem_opt);
	if (strcmp(positions_opt, "warn") && strcmp(positions_opt, "refuse"))
		return ss_err_status(e, 2, "--positions: expected warn or refuse, not '%s'", positions_opt);
	if (max_tokens < 0)
		return ss_err_status(e, 2, "--max-tokens: %ld is negative", max_tokens);
	if (threads < 0 || threads > 1024)
		return ss_err_status(e, 2, "--threads: %ld out of range 1-1024", threads);
	if (prompt_fmt_parse(prompt_fmt_opt, &prompt_fmt, e) < 0)
		return -1;
	if (prompt_fmt != SS_PF_RAW && ids_path)
		return ss_err_status(e, 2, "--prompt-format %s wraps text: not with --ids", prompt_fmt_opt);
	if (gen_n < 0 || !(gen_temp >= 0) || !(gen_top_p > 0 && gen_top_p <= 1) ||
	    (strcmp(gen_kv, "f32") && strcmp(gen_kv, "bf16")) || (text_out && !gen_n))
		return ss_err_status(e, 2, "--generate %ld, --temperature %g, --top-p %g, --kv %s%s: "
		                     "need N >= 0, X >= 0, 0 < P <= 1, f32 or bf16, --text-out with "
		                     "--generate", gen_n, gen_temp, gen_top_p, gen_kv,
		                     text_out ? ", --text-out" : "");
	if (gen_n && jsonl_path && !index_seen)
		return ss_err_status(e, 2, "--generate continues one sequence: give --jsonl with --index N");
	if (!max_mem_opt) {
		long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
		max_mem = pages > 0 && psz > 0 ? 0.9 * (double)pages * (double)psz : 1e18;
	}
	if (threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		threads = n > 0 ? n : 1;
	}
	return 0;
}

/* ---- --generate -------------------------------------------------------- */

/* Continue q's ids with the KV cache (gen.h): q then holds the whole
 * sequence, *n_new the continuation's length. */
static int generate(const ss_model *M, seq *q, long *n_new, ss_err *e)
{
	ss_dec_opts o = {.threads = (int)threads};
	if (kv_dtype_parse(gen_kv, &o.kv_dtype, e) < 0)
		return -1;
	/* every layer's f32 weights kept when they fit easily: decoding then
	 * converts nothing per token */
	o.resident = dec_resident_bytes(M) < 0.5 * max_mem;
	ss_gen_opts g = {.max_new = gen_n, .temperature = gen_temp, .top_p = gen_top_p,
	                 .seed = (uint64_t)gen_seed};
	int32_t *eos = NULL, *out = NULL;
	size_t ne = 0;
	long n = 0;
	ss_dec d;
	if (gen_eos_ids(model_dir, &eos, &ne, e) < 0)
		return -1;
	g.eos = eos;
	g.n_eos = ne;
	int rc = dec_create(&d, M, q->T + gen_n, &o, e);
	if (rc == 0) {
		rc = gen_run(&d, q->ids, q->T, &g, &out, &n, n_new, e);
		dec_free(&d);
	}
	free(eos);
	if (rc < 0)
		return ss_err_prefix(e, "%s", q->name);
	free(q->ids);
	q->ids = out;
	q->T = n;
	return 0;
}

/* The continuation as text, decoded by the tokenizer. */
static int write_text_out(const tok *t, const int32_t *ids, long n, ss_err *e)
{
	size_t len;
	char *s = tok_decode(t, ids, (size_t)n, &len, e);
	if (!s)
		return -1;
	ss_ofile of;
	int rc = ss_ofile_open(&of, text_out, e);
	if (rc == 0) {
		fwrite(s, 1, len, of.f);
		rc = ss_ofile_commit(&of, e);
	}
	free(s);
	return rc;
}

/* One sequence through the loaded model into one HDF5 file. */
static int run_one(int argc, char **argv, ss_model *Mp, const seq *q, const tok *tk, ss_err *e)
{
	const char *opath = q->out ? q->out : out_path;
	int to_stdout = !opath || !strcmp(opath, "-");
	if (to_stdout && isatty(1))
		return ss_err_status(e, 2, "refusing to write HDF5 to a terminal: use -o FILE or a pipe");
	int rc = -1;
	ss_model M = *Mp; /* shallow copy, read only */
	ss_trace tr;
	const int32_t *ids = q->ids;
	long T = q->T;
	ss_h5 *h5 = NULL;
	ss_fwd *fwd = NULL;
	capture cap;
	memset(&cap, 0, sizeof cap);
	memset(&tr, 0, sizeof tr);
	char *cmd = NULL;
	char **pieces = NULL;
	const ss_config *c = &M.c;
	long L = c->n_layers, D = c->dim, H = c->n_heads;
	for (long j = 0; j < T; j++)
		if (ids[j] >= c->vocab) {
			ss_err_set(e, "%s: token id %d at position %ld outside the vocabulary (0-%ld)",
			           q->name, ids[j], j, c->vocab - 1);
			goto done;
		}
	if (c->max_pos > 0 && T > c->max_pos) {
		if (!strcmp(positions_opt, "refuse")) {
			ss_err_set(e, "%s/config.json:max_position_embeddings: %ld tokens exceed %ld", model_dir, T, c->max_pos);
			goto done;
		}
		ss_warn(PROG, "warning: %ld tokens exceed max_position_embeddings %ld of %s", T, c->max_pos, model_dir);
	}
	if (tk && tok_piece_strings(tk, ids, (size_t)T, &pieces, e) < 0) {
		ss_err_prefix(e, "%s", q->name);
		goto done;
	}
	unsigned char *mask = ss_malloc((size_t)L + 1, 1, "layers", e);
	if (!mask)
		goto done;
	if (parse_layers(layers_opt, L, mask, e) < 0) {
		free(mask);
		goto done;
	}
	/* memory: forward state, trace, capture buffers, an in-memory image */
	int n_on = 0;
	double acts_bytes = 0;
	for (int k = 0; k < SS_HOOK_N; k++) {
		if (!on[k])
			continue;
		long n_sel = 0;
		for (long l = k == SS_HOOK_RESID ? 0 : 1; l <= L; l++)
			n_sel += mask[l];
		if (!n_sel) {
			free(mask);
			ss_err_status(e, 2, "--layers: no layer of %s selected (layer 0 exists only for resid)", ss_hook_names[k]);
			goto done;
		}
		n_on++;
		acts_bytes += (double)n_sel * (double)T * (double)D * 4;
	}
	double need = fwd_memory_estimate(c, T, (int)threads, 0) +
	              4.0 * (double)T * (double)(4 * L + 2 + L * H) + 4.0 * n_on * (double)T * (double)D +
	              (to_stdout ? 4.0 * (double)T * (double)(4 * L + 2 + L * H) + acts_bytes : 0);
	if (need > max_mem) {
		free(mask);
		ss_err_set(e, "%s: %ld tokens need about %.2f GiB besides the mapped weights (%.2f GiB), more than --max-memory %.2f GiB",
		           model_dir, T, gib(need), gib(M.weight_bytes), gib(max_mem));
		goto done;
	}
	/* the trace */
	if (trace_alloc(&tr, L, T, H, e) < 0) {
		free(mask);
		goto done;
	}
	memcpy(tr.ids, ids, sizeof(int32_t) * (size_t)T);
	if (pieces) { /* /tokens/text: the decoded piece of each token */
		for (long j = 0; j < T; j++) {
			free(tr.text[j]);
			tr.text[j] = pieces[j];
			pieces[j] = NULL;
		}
	}
	tr.name = ss_strdup(q->name, e);
	cmd = ss_command_line(argc, argv, e);
	ss_meta *m = &tr.meta;
	m->format = SS_FORMAT;
	m->model = ss_strdup(model_dir, e);
	m->architecture = ss_strdup(c->arch, e);
	m->weight_dtype = ss_strdup(M.weight_dtype, e);
	m->generator = ss_strdup(PROG " " SS_VERSION, e);
	m->command = cmd ? ss_strdup(cmd, e) : NULL;
	m->n_layers = L;
	m->d_model = D;
	m->n_heads = H;
	m->n_kv_heads = c->n_kv_heads;
	m->head_dim = c->head_dim;
	if (!tr.name || !m->model || !m->architecture || !m->weight_dtype || !m->generator || !m->command) {
		free(mask);
		goto done;
	}
	if (h5_create(&h5, to_stdout ? "-" : opath, e) < 0) {
		free(mask);
		goto done;
	}
	/* capture: /acts/<c> created up front, one layer written at a time */
	cap.h5 = h5;
	cap.T = T;
	cap.D = D;
	for (int k = 0; k < SS_HOOK_N && n_on; k++) {
		cap.on[k] = on[k];
		if (!on[k])
			continue;
		cap.mask[k] = ss_calloc((size_t)L + 1, 1, "layers", e);
		cap.index[k] = ss_calloc((size_t)L + 1, sizeof(long), "layers", e);
		cap.buf[k] = ss_malloc((size_t)(T * D), sizeof(float), "activations", e);
		long *sel = ss_malloc((size_t)L + 1, sizeof(long), "layers", e);
		if (!cap.mask[k] || !cap.index[k] || !cap.buf[k] || !sel) {
			free(sel);
			free(mask);
			goto done;
		}
		size_t n_sel = 0;
		for (long l = k == SS_HOOK_RESID ? 0 : 1; l <= L; l++)
			if (mask[l]) {
				cap.mask[k][l] = 1;
				cap.index[k][l] = (long)n_sel;
				sel[n_sel++] = l;
			}
		int r = trace_acts_create(h5, ss_hook_names[k], sel, n_sel, T, D, e);
		free(sel);
		if (r < 0) {
			free(mask);
			goto done;
		}
	}
	free(mask);

	prog_ctx pc = {.T = T};
	ss_progress_start(&pc.p, PROG);
	ss_fwd_opts fo = {.threads = (int)threads, .hook = n_on ? capture_hook : NULL,
	                  .hook_ctx = &cap, .progress = on_layer, .progress_ctx = &pc};
	double t0 = ss_now(), c0 = cpu_seconds();
	if (fwd_create(&fwd, &M, &fo, T, e) < 0)
		goto done;
	if (c->n_experts) {   /* /stats/moe_experts, /stats/moe_weights */
		tr.K = c->top_k;
		tr.n_experts = c->n_experts;
		if (!(tr.moe_experts = ss_calloc((size_t)(L * T * tr.K), sizeof(int32_t), "/stats/moe_experts", e)) ||
		    !(tr.moe_weights = ss_calloc((size_t)(L * T * tr.K), sizeof(float), "/stats/moe_weights", e)))
			goto done;
	}
	ss_stats st = {tr.resid_norm, tr.resid_cos0, tr.attn_out_norm, tr.mlp_out_norm, tr.recv,
	               tr.moe_experts, tr.moe_weights};
	if (fwd_prefill(fwd, ids, T, &st, NULL, e) < 0) {
		ss_progress_end(&pc.p);
		if (cap.err.status)   /* the capture hook's own message */
			*e = cap.err;
		goto done;
	}
	double t1 = ss_now(), c1 = cpu_seconds();
	ss_progress_end(&pc.p);
	if (trace_write_h5(h5, &tr, e) < 0)
		goto done;
	ss_h5 *hh = h5;
	h5 = NULL;
	if (h5_commit(hh, e) < 0)
		goto done;
	double t2 = ss_now();
	if (timings)
		fprintf(stderr, PROG ": %ld tokens, %ld layers, %ld threads: forward %.3f s (%.2f tok/s), "
		        "of which writing activations %.3f s; compute %.3f s (%.2f tok/s); final write %.3f s; "
		        "cpu %.3f s (%.2f tok/s per %ld threads)\n",
		        T, L, threads, t1 - t0, (double)T / (t1 - t0), cap.write_s, t1 - t0 - cap.write_s,
		        (double)T / (t1 - t0 - cap.write_s), t2 - t1, c1 - c0,
		        (double)T * (double)threads / (c1 - c0), threads);
	if (timings) {
		ss_fwd_times ft;
		fwd_times(fwd, &ft);
		double rest = t1 - t0 - fwd_times_parts(&ft);
		fprintf(stderr, PROG ": time: projections %.3f s (%.6g GFLOP, %.1f GFLOP/s), attention %.3f s "
		        "(%.6g GFLOP, %.1f GFLOP/s), weight conversion %.3f s, row kernels %.3f s, paging %.3f s, "
		        "rest %.3f s\n",
		        ft.linear, ft.linear_flop / 1e9, ft.linear_flop / ft.linear / 1e9, ft.attention,
		        ft.attention_flop / 1e9, ft.attention_flop / ft.attention / 1e9, ft.convert, ft.rows,
		        ft.pages, rest);
	}
	rc = 0;
done:
	fwd_free(fwd);
	h5_close(h5);
	for (int k = 0; k < SS_HOOK_N; k++) {
		free(cap.mask[k]);
		free(cap.index[k]);
		free(cap.buf[k]);
	}
	if (tr.ids)
		trace_free(&tr);
	free(cmd);
	tok_piece_strings_free(pieces, pieces ? (size_t)T : 0);
	return rc;
}

static int run(int argc, char **argv, int opi, ss_err *e)
{
	if (check_opts(e) < 0)
		return -1;
	seq *v;
	size_t n;
	tok *tk;
	int rc = gather(argc, argv, opi, &v, &n, &tk, e);
	if (!rc && tokens_only) {
		if (!tk)
			rc = ss_err_status(e, 2, "--tokens-only needs a tokenizer: %s/tokenizer.json is absent (use --tokenizer FILE)",
			                   model_dir);
		else
			rc = print_tokens(v, n, tk, jsonl_path && !index_seen, e);
	} else if (!rc) {
		ss_model M;
		if (model_load(&M, model_dir, e) < 0)
			rc = -1;
		else {
			if (gen_n && text_out && !tk)
				rc = ss_err_set(e, "--text-out needs a tokenizer: %s/tokenizer.json is absent "
				                "(use --tokenizer FILE)", model_dir);
			for (size_t i = 0; !rc && i < n; i++) {
				long n_new = 0;
				if (gen_n && generate(&M, &v[i], &n_new, e) < 0) {
					rc = -1;
					break;
				}
				rc = run_one(argc, argv, &M, &v[i], tk, e);
				if (!rc && text_out)
					rc = write_text_out(tk, v[i].ids + v[i].T - n_new, n_new, e);
			}
			model_free(&M);
		}
	}
	seqs_free(v, n);
	tok_free(tk);
	return rc;
}

int main(int argc, char **argv)
{
	ss_err e = {0};
	ss_signals_install(PROG);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	int i = ss_opt_parse(&prog, argc, argv, &e);
	if (i == SS_OPT_EXIT)
		return ss_close_stdout(&e) < 0 ? (ss_err_print(PROG, &e), 1) : 0;
	if (i < 0) {
		ss_err_print(PROG, &e);
		return e.status ? e.status : 2;
	}
	if (run(argc, argv, i, &e) < 0) {
		ss_err_print(PROG, &e);
		return e.status ? e.status : 1;
	}
	if (ss_close_stdout(&e) < 0) {
		ss_err_print(PROG, &e);
		return 1;
	}
	ss_opt_free();
	return 0;
}
