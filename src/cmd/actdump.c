/* actdump - run a Hugging Face model folder over a token sequence and write
 * the sinkscope HDF5 trace (DESIGN.md section 2): /tokens, /stats always,
 * /acts for the components and layers asked for.  See actdump(1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/config.h"
#include "engine/gen.h"
#include "engine/record.h"
#include "engine/seqs.h"
#include "io/st.h"
#include "tok/tok.h"
#include "util/err.h"
#include "util/mem.h"
#include "util/ofile.h"
#include "util/opt.h"
#include "util/progress.h"

#define PROG "actdump"

static const char *model_dir, *ids_path, *out_path, *acts_opt, *layers_opt = "all",
                  *max_mem_opt, *positions_opt = "refuse";
static const char *text_path, *jsonl_path, *field_opt, *tok_path;
static long threads = SS_THREADS_UNSET, index_opt, max_tokens;
static const char *compute_opt = "f32";
static ss_compute compute;
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
	{"layers", 'l', SS_OPT_STRING, &layers_opt, "LIST", "layers of --acts, e.g. 0-10,20 (default all)", NULL},
	SS_OPT_THREADS(threads),
	SS_COMPUTE_OPT(compute_opt),
	SS_OPT_MAX_MEMORY(max_mem_opt),
	{"positions", 0, SS_OPT_STRING, &positions_opt, "warn|refuse", "when T > max_position_embeddings (default refuse)", NULL},
	{"timings", 0, SS_OPT_FLAG, &timings, NULL, "print times and tokens/s on stderr", NULL},
	{"prompt-format", 0, SS_OPT_STRING, &prompt_fmt_opt, "F", "wrap text: raw, chatml, deepseek-r1, llama3, chatml-think, llama2-inst, phi4", NULL},
	{"generate", 0, SS_OPT_INT, &gen_n, "N", "first continue the sequence by up to N tokens (stops at EOS)", NULL},
	{"temperature", 0, SS_OPT_DOUBLE, &gen_temp, "X", "--generate: sampling temperature (default 0: greedy)", NULL},
	{"top-p", 0, SS_OPT_DOUBLE, &gen_top_p, "P", "--generate: nucleus sampling mass (default 1: off)", NULL},
	{"seed", 's', SS_OPT_INT, &gen_seed, "N", "--generate: seed of the sampler (default 0)", NULL},
	{"kv", 0, SS_OPT_STRING, &gen_kv, "f32|bf16", "--generate: KV cache type (default f32)", NULL},
	{"text-out", 0, SS_OPT_STRING, &text_out, "FILE", "--generate: write the continuation as text", NULL},
	{0},
};
static const ss_prog prog = {
	PROG,
	"-m DIR (--ids FILE | --text FILE | --jsonl FILE --field NAME [--index N] | FILE) "
	"[-o OUT.h5] [--tokenizer FILE] [--no-bos] [--max-tokens N] [--acts LIST] [--layers LIST] [-t N] "
	"[--compute f32|bf16] [--max-memory SIZE] [--positions warn|refuse] [--timings]\n"
	"--tokens-only (-m DIR | --tokenizer FILE) [--no-bos] "
	"(--ids FILE | --text FILE | --jsonl FILE --field NAME [--index N] | FILE)\n"
	"-m DIR (--text FILE | --jsonl FILE --field NAME --index N | --ids FILE | FILE) "
	"--generate N [--prompt-format F] [--temperature X] [--top-p P] [--seed N] [--kv f32|bf16] "
	"[--text-out FILE] [-o OUT.h5] [options]",
	"record the activations of a model over a token sequence", opts};

/* Options every run shares; checked before any input is read. */
static int on[SS_HOOK_N];
static double max_mem;

static int check_opts(int argc, char **argv, int opi, ss_err *e)
{
	if (rec_acts_parse(acts_opt, on, e) < 0)
		return -1;
	if (ss_max_memory(max_mem_opt, &max_mem, e) < 0)
		return -1;
	if (strcmp(positions_opt, "warn") && strcmp(positions_opt, "refuse"))
		return ss_err_status(e, SS_EXIT_USAGE, "--positions: expected warn or refuse, not '%s'", positions_opt);
	if (max_tokens < 0)
		return ss_err_status(e, SS_EXIT_USAGE, "--max-tokens: %ld is negative", max_tokens);
	if (ss_opt_threads(&threads, e) < 0)
		return -1;
	if (mm_compute_parse(compute_opt, &compute, e) < 0)
		return -1;
	if (prompt_fmt_parse(prompt_fmt_opt, &prompt_fmt, e) < 0)
		return -1;
	if (prompt_fmt != SS_PF_RAW && ids_path)
		return ss_err_status(e, SS_EXIT_USAGE, "--prompt-format %s wraps text: not with --ids", prompt_fmt_opt);
	if (gen_n < 0)
		return ss_err_status(e, SS_EXIT_USAGE, "--generate: %ld is negative", gen_n);
	if (!(gen_temp >= 0))
		return ss_err_status(e, SS_EXIT_USAGE, "--temperature: %g is negative", gen_temp);
	if (!(gen_top_p > 0 && gen_top_p <= 1))
		return ss_err_status(e, SS_EXIT_USAGE, "--top-p: %g outside (0, 1]", gen_top_p);
	if (strcmp(gen_kv, "f32") && strcmp(gen_kv, "bf16"))
		return ss_err_status(e, SS_EXIT_USAGE, "--kv: expected f32 or bf16, got '%s'", gen_kv);
	if (text_out && !gen_n)
		return ss_err_status(e, SS_EXIT_USAGE, "--text-out: goes with --generate N");
	if (!tokens_only) {
		const char *outs[2] = {out_path ? out_path : "-", text_out}, *names[2] = {"-o", "--text-out"};
		if (ss_out_check(outs, names, 2, e) < 0)
			return -1;
	}
	if (gen_n && jsonl_path && !index_seen)
		return ss_err_status(e, SS_EXIT_USAGE, "--generate continues one sequence: give --jsonl with --index N");
	/* the input */
	const char *operand = opi < argc ? argv[opi] : NULL;
	if (opi + 1 < argc)
		return ss_err_status(e, SS_EXIT_USAGE, "unexpected operand '%s'", argv[opi + 1]);
	int k = !!ids_path + !!text_path + !!jsonl_path + !!operand;
	if (k != 1)
		return ss_err_status(e, SS_EXIT_USAGE, k ? "give one input: --ids, --text, --jsonl or a FILE operand"
		                                        : "missing input: --ids FILE, --text FILE, --jsonl FILE or FILE");
	if (jsonl_path && !field_opt)
		return ss_err_status(e, SS_EXIT_USAGE, "--jsonl needs --field NAME");
	if (!jsonl_path && (field_opt || index_seen))
		return ss_err_status(e, SS_EXIT_USAGE, "--field and --index go with --jsonl");
	if (index_seen && index_opt < 0)
		return ss_err_status(e, SS_EXIT_USAGE, "--index: %ld is negative", index_opt);
	if (!tokens_only && !model_dir)
		return ss_err_status(e, SS_EXIT_USAGE, "missing -m DIR");
	if (tokens_only && !model_dir && !tok_path)
		return ss_err_status(e, SS_EXIT_USAGE, "--tokens-only needs -m DIR or --tokenizer FILE");
	/* several rows, one file each: a pattern */
	if (!tokens_only && jsonl_path && !index_seen &&
	    (!out_path || (!strstr(out_path, "%d") && !strstr(out_path, "{row}"))))
		return ss_err_status(e, SS_EXIT_USAGE, "--jsonl without --index writes one file per row: "
		                     "give -o PATTERN with %%d or {row}");
	if (!text_path && operand)
		text_path = operand;
	return 0;
}

/* Every sequence of the run, and the tokenizer (for /tokens/text): --ids
 * are read first and need no tokenizer unless --tokens-only. */
static int gather(ss_seqs *s, tok **t, ss_err *e)
{
	ss_seq_src src = {.ids = ids_path, .text = text_path, .jsonl = jsonl_path, .field = field_opt,
	                  .index = index_seen ? index_opt : -1, .no_post = no_bos, .fmt = prompt_fmt,
	                  .max_tokens = max_tokens, .allow_empty = tokens_only,
	                  .out_pattern = !tokens_only && jsonl_path && !index_seen ? out_path : NULL};
	*t = NULL;
	if (ids_path)
		return seqs_read(s, &src, NULL, e) < 0 ? -1 : tok_load_for(model_dir, tok_path, tokens_only, t, e);
	memset(s, 0, sizeof *s);
	if (tok_load_for(model_dir, tok_path, 1, t, e) < 0)
		return -1;
	return seqs_read(s, &src, *t, e);
}

/* --generate's statistics, recorded while generating (genstats.h) when the
 * trace needs nothing else: no /acts, an f32 cache (a bf16 cache's rounded
 * keys would be in them), a dense model.  Otherwise run_one's prefill. */
static ss_genstats gen_st;
static int gen_rec;
static double gen_s;

/* --generate: continue q's ids with the KV cache (gen_continue); q then
 * holds the whole sequence, *n_new the continuation's length. */
static int generate(const ss_model *M, ss_seq *q, const tok *tk, long *n_new, ss_err *e)
{
	ss_dec_opts o = {.threads = (int)threads, .compute = compute};
	if (kv_dtype_parse(gen_kv, &o.kv_dtype, e) < 0)
		return -1;
	/* every layer's f32 weights kept when they fit easily: decoding then
	 * converts nothing per token */
	o.resident = dec_resident_bytes(M) < 0.5 * max_mem;
	ss_gen_opts g = {.max_new = gen_n, .temperature = gen_temp, .top_p = gen_top_p,
	                 .seed = (uint64_t)gen_seed, .n_ids = tk ? (long)tok_vocab_size(tk) : 0};
	gen_rec = !on[0] && !on[1] && !on[2] && !on[3] && o.kv_dtype == SS_KV_F32 && !M->c.n_experts;
	if (gen_continue(M, &q->ids, &q->T, &o, &g, gen_rec ? &gen_st : NULL, &gen_s, n_new, e) < 0)
		return ss_err_prefix(e, "%s", q->name);
	return 0;
}

/* --text-out: the continuation as text, decoded by the tokenizer. */
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
static int run_one(int argc, char **argv, const ss_model *M, const ss_seq *q, const tok *tk,
                   ss_fwd_keep **keep, ss_err *e)
{
	const char *opath = q->out ? q->out : out_path;
	int to_stdout = !opath || !strcmp(opath, "-");
	/* stdout in any spelling (-o /dev/stdout, /dev/fd/1, the terminal's own name) */
	if ((to_stdout || ss_out_is_stdout(opath)) && isatty(1))
		return ss_err_status(e, SS_EXIT_USAGE, "refusing to write HDF5 to a terminal: use -o FILE or a pipe");
	const ss_config *c = &M->c;
	long L = c->n_layers, T = q->T;
	if (config_check_ids(c, q->name, q->ids, T, e) < 0 ||
	    config_check_positions(c, model_dir, q->name, T, !strcmp(positions_opt, "refuse"), PROG, e) < 0)
		return -1;
	int rc = -1;
	char **pieces = NULL, *cmd = NULL;
	unsigned char *layers = NULL;
	ss_rec_acts acts = {0};
	ss_trace tr = {0};
	ss_h5 *h5 = NULL;
	if (tk && tok_piece_strings(tk, q->ids, (size_t)T, &pieces, e) < 0) {
		ss_err_prefix(e, "%s", q->name);
		goto done;
	}
	if (!(layers = ss_malloc((size_t)L + 1, 1, "layers", e)) ||
	    ss_parse_layers_from(layers_opt, 0, (int)L, layers, "--layers", e) < 0)
		goto done;
	if (rec_acts_plan(&acts, on, layers, L, e) < 0) {
		if (e->status == SS_EXIT_USAGE)
			ss_err_prefix(e, "--layers");
		goto done;
	}
	double need = rec_memory(c, &acts, T, (int)threads, to_stdout);
	if (*keep && need + fwd_keep_bytes(M, compute) > max_mem) {   /* this sequence needs the room */
		fwd_keep_free(*keep);
		*keep = NULL;
	}
	if (ss_mem_check(need + (*keep ? fwd_keep_bytes(M, compute) : 0), M->weight_bytes, max_mem, PROG,
	                 M->dir, q->name, T, e) < 0)
		goto done;
	ss_rec_times times;
	if (!(cmd = ss_command_line(argc, argv, e)) ||
	    rec_trace_init(&tr, M, q->ids, T, pieces, q->name, model_dir, PROG " " SS_VERSION, cmd, e) < 0 ||
	    !(tr.meta.compute = ss_strdup(mm_compute_name(compute), e)) ||
	    h5_create(&h5, to_stdout ? "-" : opath, e) < 0)
		goto done;
	if (gen_rec) {   /* the statistics of the generation itself */
		ss_stats st = {tr.resid_norm, tr.resid_cos0, tr.attn_out_norm, tr.mlp_out_norm, tr.recv,
		               NULL, NULL};
		if (gst_fill(&gen_st, T, &st, e) < 0)
			goto done;
	} else if (rec_run(M, q->ids, T, (int)threads, compute, *keep, &acts, &tr, h5, PROG, &times, e) < 0) {
		goto done;
	}
	double t1 = ss_now();
	if (trace_write_h5(h5, &tr, e) < 0)
		goto done;
	ss_h5 *hh = h5;
	h5 = NULL;
	if (h5_commit(hh, e) < 0)
		goto done;
	if (timings && gen_rec)
		fprintf(stderr, "%s: %ld tokens, %ld layers, %ld threads: generated with statistics "
		        "recorded in %.3f s (no second pass); final write %.3f s\n", PROG, T, L, threads,
		        gen_s, ss_now() - t1);
	else if (timings)
		rec_times_print(stderr, PROG, T, L, (int)threads, &times, ss_now() - t1);
	rc = 0;
done:
	h5_close(h5);
	rec_acts_free(&acts);
	if (tr.ids)
		trace_free(&tr);
	free(cmd);
	free(layers);
	tok_piece_strings_free(pieces, pieces ? (size_t)T : 0);
	return rc;
}

/* Every sequence through the model: --generate first when asked, then the trace. */
static int run_model(int argc, char **argv, ss_seqs *s, const tok *tk, ss_err *e)
{
	ss_model M;
	if (model_load(&M, model_dir, e) < 0)
		return -1;
	int rc = 0;
	/* several sequences: the first one's packed weights serve the rest
	 * when they take at most half of --max-memory (forward.h) */
	ss_fwd_keep *keep = NULL;
	if (s->n > 1 && fwd_keep_bytes(&M, compute) <= 0.5 * max_mem)
		rc = fwd_keep_create(&keep, &M, compute, (int)threads, e);
	if (!rc && gen_n && text_out && !tk)
		rc = ss_err_set(e, "--text-out needs a tokenizer: %s/tokenizer.json is absent "
		                "(use --tokenizer FILE)", model_dir);
	for (size_t i = 0; !rc && i < s->n; i++) {
		long n_new = 0;
		if (gen_n)
			rc = generate(&M, &s->v[i], tk, &n_new, e);
		if (!rc)
			rc = run_one(argc, argv, &M, &s->v[i], tk, &keep, e);
		if (gen_rec)
			gst_free(&gen_st);
		gen_rec = 0;
		if (!rc && text_out)
			rc = write_text_out(tk, s->v[i].ids + s->v[i].T - n_new, n_new, e);
	}
	fwd_keep_free(keep);
	model_free(&M);
	return rc;
}

static int run(int argc, char **argv, int opi, ss_err *e)
{
	if (check_opts(argc, argv, opi, e) < 0 ||
	    (!tokens_only && config_check_layers(model_dir, layers_opt, e) < 0))
		return -1;
	ss_seqs s;
	tok *tk;
	int rc = gather(&s, &tk, e);
	if (!rc && tokens_only && !tk)
		rc = ss_err_status(e, SS_EXIT_USAGE, "--tokens-only needs a tokenizer: %s/tokenizer.json is "
		                   "absent (use --tokenizer FILE)", model_dir);
	else if (!rc)
		rc = tokens_only ? seqs_print_tokens(stdout, &s, tk, jsonl_path && !index_seen, e)
		                 : run_model(argc, argv, &s, tk, e);
	seqs_free(&s);
	tok_free(tk);
	return rc;
}

int main(int argc, char **argv)
{
	ss_err e = {0};
	ss_signals_install(PROG);
	st_sigbus_install(PROG); /* a model file cut short while mapped */
	int i = ss_opt_parse(&prog, argc, argv, &e);
	if (i < 0)
		return ss_opt_exit(&prog, i, &e);
	int rc = run(argc, argv, i, &e);
	ss_opt_free();
	return ss_main_end(PROG, rc, &e);
}
