/* kvevict - KV-cache eviction policies measured on a trace: the next-token
 * NLL, KL and top-1 agreement of each policy and budget against the full
 * cache, and per layer the attention mass the full cache puts on what the
 * policy evicted.  See kvevict(1) and interv/kvevict.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/model.h"
#include "interv/kvevict.h"
#include "tok/tok.h"
#include "util/err.h"
#include "util/mem.h"
#include "util/ofile.h"
#include "util/opt.h"
#include "util/progress.h"

#define PROG "kvevict"
#define MAX_PAIRS 256

static const char *model_dir, *ids_path, *text_path, *jsonl_path, *field_opt, *tok_path, *out_path;
static const char *policies_opt = "full,window,streaming,sinks,heavy,random", *budgets_opt = "64,128,256";
static const char *episodes_path, *per_layer_path, *masks_path;
static long index_opt, threads = SS_THREADS_UNSET, first_opt = 4, seed_opt;
static const char *compute_opt = "f32", *max_mem_opt;
static double max_mem;
static ss_compute compute;
static int index_seen, no_bos;
static ss_sink_params sp;
static const ss_opt opts[] = {
	TOK_INPUT_OPTS(model_dir, ids_path, text_path, jsonl_path, field_opt, index_opt, index_seen, tok_path, no_bos,
	               "JSON Lines collection: --field of row --index", "--jsonl: the row (0-based)"),
	{"policies", 0, SS_OPT_STRING, &policies_opt, "LIST", "full,window,streaming,sinks,heavy,random (default all)", NULL},
	{"budgets", 0, SS_OPT_STRING, &budgets_opt, "LIST", "cached keys per layer besides the query's own (64,128,256)", NULL},
	{"first", 0, SS_OPT_INT, &first_opt, "K", "first keys kept by streaming and sinks (4)", NULL},
	{"episodes", 0, SS_OPT_STRING, &episodes_path, "FILE", "sinkdetect table of this trace (default: the rule online)", NULL},
	{"tau-cos", 'c', SS_OPT_DOUBLE, &sp.tau_cos, "X", "online rule: cosine to position 0 above X (0.95)", NULL},
	{"tau-norm", 'n', SS_OPT_DOUBLE, &sp.tau_norm, "X", "online rule: norm at least X times the median (5)", NULL},
	{"seed", 's', SS_OPT_INT, &seed_opt, "N", "seed of the random policy (0)", NULL},
	{"per-layer", 0, SS_OPT_STRING, &per_layer_path, "FILE", "also write the mass lost per layer to FILE", NULL},
	{"masks", 0, SS_OPT_STRING, &masks_path, "FILE", "also write every query's visible keys to FILE", NULL},
	{"output", 'o', SS_OPT_STRING, &out_path, "FILE", "the totals (default stdout)", NULL},
	SS_OPT_THREADS(threads),
	SS_COMPUTE_OPT(compute_opt),
	SS_OPT_MAX_MEMORY(max_mem_opt),
	{0},
};
static const ss_prog prog = {
	PROG,
	"-m DIR (--ids FILE | --text FILE | --jsonl FILE --field NAME --index N | FILE) "
	"[--tokenizer FILE] [--no-bos] [--policies LIST] [--budgets LIST] [--first K] "
	"[--episodes FILE] [--tau-cos X] [--tau-norm X] [--seed N] [--per-layer FILE] [--masks FILE] "
	"[-o FILE] [-t N] [--max-memory SIZE]",
	"measure KV-cache eviction policies on a trace", opts};

static kv_pair pairs[MAX_PAIRS];
static size_t n_pairs;

/* --policies x --budgets, checked before any input is read */
static int parse_pairs(ss_err *e)
{
	kv_policy pol[KV_NPOL];
	long bud[MAX_PAIRS];
	int np = 0, nb = 0;
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", policies_opt);
	for (char *sv, *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		if (np == KV_NPOL)
			return ss_err_status(e, SS_EXIT_USAGE, "--policies: a policy named twice in '%s'", policies_opt);
		if (kv_policy_parse(t, &pol[np], e) < 0)
			return -1;
		for (int i = 0; i < np; i++)
			if (pol[i] == pol[np])
				return ss_err_status(e, SS_EXIT_USAGE, "--policies: '%s' named twice", t);
		np++;
	}
	snprintf(buf, sizeof buf, "%s", budgets_opt);
	for (char *sv, *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		long b;
		if (ss_parse_long(t, &b) < 0 || b < 1)
			return ss_err_status(e, SS_EXIT_USAGE, "--budgets: '%s' is not a budget (a whole number >= 1)", t);
		if (nb == MAX_PAIRS / KV_NPOL)
			return ss_err_status(e, SS_EXIT_USAGE, "--budgets: more than %d budgets", MAX_PAIRS / KV_NPOL);
		bud[nb++] = b;
	}
	if (!np || !nb)
		return ss_err_status(e, SS_EXIT_USAGE, "--policies and --budgets need at least one entry each");
	for (int p = 0; p < np; p++)
		for (int b = 0; b < nb; b++)
			pairs[n_pairs++] = (kv_pair){pol[p], bud[b]};
	return 0;
}

static int check_opts(int argc, int opi, ss_err *e)
{
	int k = !!ids_path + !!text_path + !!jsonl_path + (opi < argc);
	if (opi + 1 < argc)
		return ss_err_status(e, SS_EXIT_USAGE, "unexpected operand");
	if (k != 1)
		return ss_err_status(e, SS_EXIT_USAGE, k ? "give one input: --ids, --text, --jsonl or a FILE operand"
		                                        : "missing input: --ids FILE, --text FILE, --jsonl FILE or FILE");
	if (!model_dir)
		return ss_err_status(e, SS_EXIT_USAGE, "missing -m DIR");
	if (jsonl_path && (!field_opt || !index_seen))
		return ss_err_status(e, SS_EXIT_USAGE, "--jsonl needs --field NAME and --index N (one trace)");
	if (!jsonl_path && (field_opt || index_seen))
		return ss_err_status(e, SS_EXIT_USAGE, "--field and --index go with --jsonl");
	if (index_seen && index_opt < 0)
		return ss_err_status(e, SS_EXIT_USAGE, "--index: %ld is negative", index_opt);
	if (first_opt < 0)
		return ss_err_status(e, SS_EXIT_USAGE, "--first: %ld is negative", first_opt);
	const char *outs[3] = {out_path ? out_path : "-", per_layer_path, masks_path},
	           *names[3] = {"-o", "--per-layer", "--masks"};
	if (ss_out_check(outs, names, 3, e) < 0)
		return -1;
	if (ss_opt_threads(&threads, e) < 0)
		return -1;
	if (mm_compute_parse(compute_opt, &compute, e) < 0)
		return -1;
	if (ss_max_memory(max_mem_opt, &max_mem, e) < 0)
		return -1;
	if (!(sp.tau_cos > -1 && sp.tau_cos < 1))
		return ss_err_status(e, SS_EXIT_USAGE, "--tau-cos: %g outside (-1, 1)", sp.tau_cos);
	if (!(sp.tau_norm > 0))
		return ss_err_status(e, SS_EXIT_USAGE, "--tau-norm: %g must be positive", sp.tau_norm);
	return parse_pairs(e);
}

/* The trace's ids and its name (as actdump names it in /tokens and
 * sinkdetect in its table's trace column). */
static int read_trace(const char *operand, int32_t **ids, long *T, char *name, size_t nn, ss_err *e)
{
	if (ids_path) {
		snprintf(name, nn, "%s", ids_path);
		return tok_read_ids(ids_path, ids, T, e);
	}
	tok *t;
	if (tok_load_for(model_dir, tok_path, 1, &t, e) < 0)
		return -1;
	tok_ids v = {0};
	int rc;
	if (jsonl_path) {
		tok_rows rows;
		const char *nm = strcmp(jsonl_path, "-") ? jsonl_path : "<stdin>";
		rc = tok_jsonl_read(jsonl_path, field_opt, index_opt, &rows, e);
		if (!rc) {
			snprintf(name, nn, "%s:%ld", nm, rows.v[0].row);
			if (!rows.v[0].len) /* "" is no text, even for a tokenizer that adds a BOS */
				rc = ss_err_set(e, "%s:%ld: field '%s': empty text, nothing to run", nm,
				                rows.v[0].line, field_opt);
			else if ((rc = tok_encode(t, rows.v[0].text, rows.v[0].len, no_bos ? 0 : TOK_POST, &v, e)) < 0)
				ss_err_prefix(e, "%s:%ld: field '%s'", nm, rows.v[0].line, field_opt);
			tok_rows_free(&rows);
		}
	} else {
		const char *path = text_path ? text_path : operand;
		char *buf;
		size_t len;
		snprintf(name, nn, "%s", strcmp(path, "-") ? path : "<stdin>");
		if (!(rc = tok_read_text(path, &buf, &len, e))) {
			rc = len ? tok_encode(t, buf, len, no_bos ? 0 : TOK_POST, &v, e)
			         : ss_err_set(e, "%s: empty text, nothing to run", name);
			free(buf);
		}
	}
	tok_free(t);
	if (!rc && v.n == 0)
		rc = ss_err_set(e, "%s: no tokens (empty text%s)", name, no_bos ? " and --no-bos" : "");
	if (rc) {
		free(v.v);
		return -1;
	}
	*ids = v.v;
	*T = (long)v.n;
	return 0;
}

typedef struct prog_ctx { ss_progress p; char what[96]; } prog_ctx;

static void on_progress(void *ctx, int pass, int n_pass, int layer, int L)
{
	prog_ctx *pc = ctx;
	snprintf(pc->what, sizeof pc->what, PROG ": pass %d/%d, layer %d/%d", pass, n_pass, layer, L);
	pc->p.what = pc->what;
	ss_progress_update(&pc->p, (double)(pass - 1) * L + layer, (double)n_pass * L, "layers");
}

/* the tables, each complete or absent */
static int write_all(const char *name, const kv_result *r, ss_err *e)
{
	const char *paths[3] = {out_path, per_layer_path, masks_path};
	ss_ofile of[3];
	int open[3] = {0, 0, 0}, rc = 0;
	for (int k = 0; k < 3 && !rc; k++) {
		if (k && !paths[k])
			continue;
		if (ss_ofile_open(&of[k], paths[k], e) < 0) {
			rc = -1;
			break;
		}
		open[k] = 1;
		if (k == 0)
			kv_totals_write(of[k].f, name, r);
		else if (k == 1)
			kv_layers_write(of[k].f, name, r);
		else
			kv_masks_write(of[k].f, r);
	}
	for (int k = 0; k < 3; k++)
		if (open[k] && (rc || ss_ofile_commit(&of[k], e) < 0)) {
			if (!rc)
				rc = -1;
			else
				ss_ofile_abort(&of[k]);
		}
	return rc;
}

static int run(int argc, char **argv, int opi, ss_err *e)
{
	if (check_opts(argc, opi, e) < 0)
		return -1;
	int32_t *ids = NULL;
	long T = 0;
	char name[4200];
	ss_model M;
	kv_episode *eps = NULL;
	size_t n_eps = 0;
	kv_result *res = NULL;
	if (read_trace(opi < argc ? argv[opi] : NULL, &ids, &T, name, sizeof name, e) < 0)
		return -1;
	if (model_load(&M, model_dir, e) < 0) {
		free(ids);
		return -1;
	}
	int rc = -1;
	if (config_check_ids(&M.c, name, ids, T, e) < 0)
		goto done;
	if (episodes_path && kv_episodes_read(episodes_path, name, ids, T, M.c.n_layers, &eps, &n_eps, e) < 0)
		goto done;
	prog_ctx pc;
	kv_opts o = {.first = first_opt, .seed = (uint64_t)seed_opt, .sp = sp, .eps = eps, .n_eps = n_eps,
	             .per_layer = !!per_layer_path, .masks = !!masks_path, .threads = (int)threads, .compute = compute,
	             .progress = on_progress, .progress_ctx = &pc};
	if (ss_mem_check(kv_memory(&M, T, pairs, n_pairs, &o), M.weight_bytes, max_mem, PROG, M.dir, name, T,
	                 e) < 0)
		goto done;
	ss_progress_start(&pc.p, PROG);
	int r = kv_run(&M, ids, T, pairs, n_pairs, &o, &res, e);
	ss_progress_end(&pc.p);
	if (r < 0 || write_all(name, res, e) < 0)
		goto done;
	rc = 0;
done:
	kv_result_free(res);
	free(eps);
	model_free(&M);
	free(ids);
	return rc;
}

int main(int argc, char **argv)
{
	ss_err e = {0};
	ss_signals_install(PROG);
	sink_params_default(&sp);
	int i = ss_opt_parse(&prog, argc, argv, &e);
	if (i < 0)
		return ss_opt_exit(&prog, i, &e);
	int rc = run(argc, argv, i, &e);
	ss_opt_free();
	return ss_main_end(PROG, rc, &e);
}
