/* cli.h - the options pcaprobe and swapexp share.
 *
 * Both programs rerun a model over a trace and its episode table, with the
 * same model, output, control classes, sink rule and threads: one set of
 * rows (INTERV_CLI_OPTS) and one check, so the two cannot drift apart.
 * Letters follow sinkscope(7) OPTION LETTERS.
 */
#ifndef SS_INTERV_CLI_H
#define SS_INTERV_CLI_H

#include "sinks/sinks.h"
#include "util/err.h"
#include "util/mem.h"
#include "util/opt.h"
#include "engine/matmul.h"

typedef struct ss_interv_cli {
	const char *model_dir; /* -m DIR (required) */
	const char *out_path;  /* -o FILE ("-" = stdout) */
	const char *classes_s; /* --classes LIST */
	ss_sink_params sp;     /* --tau-cos, --tau-norm */
	long threads;          /* -t N (SS_THREADS_UNSET = all CPUs) */
	unsigned classes;      /* parsed --classes (tokclass.h mask) */
	const char *compute_s; /* --compute f32|bf16 (default f32) */
	ss_compute compute;    /* parsed --compute */
	const char *max_mem_s; /* --max-memory SIZE (default 90% of RAM) */
	double max_mem;        /* parsed --max-memory, bytes (util/mem.h) */
} ss_interv_cli;

/* Defaults: stdout, classes space,punct,digit, the default sink rule, all
 * CPUs. */
void interv_cli_default(ss_interv_cli *c);

#define INTERV_CLI_OPTS(c)                                                                                   \
	{"model", 'm', SS_OPT_STRING, &(c).model_dir, "DIR", "model folder (config.json, *.safetensors)", NULL}, \
	{"output", 'o', SS_OPT_STRING, &(c).out_path, "FILE", "write the table to FILE (default stdout)", NULL}, \
	{"classes", 0, SS_OPT_STRING, &(c).classes_s, "LIST", "control token classes (default space,punct,digit)", NULL}, \
	{"tau-cos", 'c', SS_OPT_DOUBLE, &(c).sp.tau_cos, "X", "sink rule: cosine threshold (0.95)", NULL},       \
	{"tau-norm", 'n', SS_OPT_DOUBLE, &(c).sp.tau_norm, "X", "sink rule: norm over the layer median (5)", NULL}, \
	SS_OPT_THREADS((c).threads),                                                                         \
	SS_COMPUTE_OPT((c).compute_s),                                                                       \
	SS_OPT_MAX_MEMORY((c).max_mem_s)

/* Usage checks before any data is read: -m given, `operands` == 2
 * (TRACE.h5 EPISODES.tsv), threads, --compute, --max-memory, the sink rule and
 * --classes.  Errors
 * have status SS_EXIT_USAGE and name the option. */
int interv_cli_check(ss_interv_cli *c, int operands, ss_err *e);

#endif
