/* opt.h - command-line options and YAML config files.
 *
 * A program describes its options once, in a table; ss_opt_parse() reads
 * `--config FILE` (YAML: one mapping per program, keyed by program name;
 * inside it, keys are the long option names), then the command line, which
 * overrides the file.  --help and --version are handled here.  Unknown keys
 * in the program's own section are errors; other programs' sections are
 * ignored, so one file can configure a whole pipeline.
 */
#ifndef SS_OPT_H
#define SS_OPT_H

#include "util/err.h"

#define SS_VERSION "1.0.0"

typedef enum ss_opt_type {
	SS_OPT_FLAG,   /* int *, set to 1 (YAML: true/false) */
	SS_OPT_INT,    /* long * */
	SS_OPT_DOUBLE, /* double * (finite values only) */
	SS_OPT_STRING, /* const char ** (points into argv or owned by opt) */
	SS_OPT_RENAMED, /* an old name, not in --help: given (command line or
	                   config key) it is a usage error naming the new
	                   option, `arg` ("--components: renamed --n-components") */
} ss_opt_type;

typedef struct ss_opt {
	const char *name;  /* long name, also the YAML key */
	int short_name;    /* 0 when none */
	ss_opt_type type;
	void *dst;
	const char *arg;   /* metavariable in --help, e.g. "X"; NULL for flags */
	const char *help;  /* one line */
	int *seen;         /* optional: set to 1 when given (file or argv) */
} ss_opt;

typedef struct ss_prog {
	const char *name;     /* program name */
	const char *synopsis; /* usage lines after the name, '\n'-separated;
	                         must match the man page SYNOPSIS */
	const char *summary;  /* one-line description */
	const ss_opt *opts;   /* terminated by an entry with name == NULL */
} ss_prog;

/* Results of ss_opt_parse(). */
enum {
	SS_OPT_EXIT = -2, /* --help or --version printed: exit 0 */
	SS_OPT_ERR = -1,  /* usage error in e (status SS_EXIT_USAGE) or a bad
	                     config file (status SS_EXIT_FAIL for I/O) */
};

/* Parse options; returns the index in argv of the first operand (>= 1),
 * or SS_OPT_EXIT / SS_OPT_ERR. */
int ss_opt_parse(const ss_prog *p, int argc, char **argv, ss_err *e);

/* For main, after ss_opt_parse() returned r < 0: the exit status (after
 * --help or --version 0, or 1 with a message when stdout could not take
 * them; else e's status, SS_EXIT_USAGE when it has none), the error printed
 * first as "prog: ..." on stderr. */
int ss_opt_exit(const ss_prog *p, int r, const ss_err *e);

/* Print the usage lines ("usage: prog ...") to f. */
void ss_opt_usage(const ss_prog *p, void *f /* FILE * */);

/* The command line as one shell-quoted string (words with blanks or shell
 * characters in single quotes), for a trace's "command" attribute;
 * malloc'd. */
char *ss_command_line(int argc, char **argv, ss_err *e);

/* Threads, one row and one rule suite-wide (sinkscope(7) OPTION LETTERS):
 * declare `long threads = SS_THREADS_UNSET;`, put SS_OPT_THREADS(threads)
 * in the table and call ss_opt_threads(&threads, e) before reading data.
 * Unset means every online CPU; a value outside 1..SS_THREADS_MAX is a
 * usage error "--threads: 0 out of range 1-1024". */
#define SS_THREADS_UNSET (-0x7fffffffL - 1)
#define SS_THREADS_MAX 1024
#define SS_OPT_THREADS(var) \
	{"threads", 't', SS_OPT_INT, &(var), "N", "threads, 1-1024 (default: all processors)", NULL}
int ss_opt_threads(long *threads, ss_err *e);

/* A YAML document (a yaml_document_t *, loaded by yaml_parser_load) with
 * a key twice in one mapping, at any depth, is an error naming the file, the
 * line and the key, status SS_EXIT_FAIL: "exp.yaml: line 7: duplicate key
 * 'layers' (first at line 3)".  Every YAML reader calls it after loading. */
int ss_yaml_dup_keys(const void *doc, const char *path, ss_err *e);

/* Free strings the config file contributed (optional, for leak checkers). */
void ss_opt_free(void);

/* Helpers for option values. */
/* Parse a layer list like "1-10,20" into a 0/1 mask of n+1 entries (index =
 * layer number, 1..n; "all" selects all). Returns -1 with e set on error. */
int ss_parse_layers(const char *s, int n, unsigned char *mask, const char *what, ss_err *e);
/* The same with layers lo..n (lo 0 or 1: 0 admits layer 0, the embeddings;
 * "all" selects lo..n).  Errors (status SS_EXIT_USAGE) start with `what`:
 * "--layers: layer range 3-9 outside 0-5", "--layers: layer -3 outside 0-5",
 * "--layers: layer range 5-2 is reversed (write 2-5)". */
int ss_parse_layers_from(const char *s, int lo, int n, unsigned char *mask, const char *what,
                         ss_err *e);
/* One range of layers, "A" or "A-B" (layers from 1), for options that take
 * a single range (sinkdetect --layers, tsne --l-start).  Errors (status
 * SS_EXIT_USAGE) start with `what`: "--layers: layer range 5-2 is reversed
 * (write 2-5)", "--layers: layer 0: layers start at 1", "--layers: expected A or
 * A-B, got 'x'". */
int ss_parse_range(const char *s, long *a, long *b, const char *what, ss_err *e);
/* A range of layers or positions as messages print it: "3" when a == b,
 * else "5-2" (never "3-3"); returns buf. */
char *ss_format_range(long a, long b, char *buf, size_t n);
/* A size in bytes: "2G", "512M", "1.5G", "1000000" (K, M, G, T binary;
 * a trailing B or iB allowed); positive.  0, or -1 when malformed. */
int ss_parse_size(const char *s, double *v);
/* A size in bytes in the unit that fits, for messages: "512 B", "1 KiB",
 * "1.5 MiB", "2.35 GiB" (three significant digits; binary units).  Returns
 * buf. */
char *ss_format_size(double bytes, char *buf, size_t n);
/* Strict number parsing: whole string, finite.  0 on success, -1 when
 * malformed; ss_parse_long returns -2 for a whole integer too large for a
 * long (ERANGE), so callers can say "out of range". */
int ss_parse_long(const char *s, long *v);
int ss_parse_double(const char *s, double *v);

#endif
