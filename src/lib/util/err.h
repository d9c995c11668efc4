/* err.h - errors as values.
 *
 * The library never exits and never prints to stdout.  A function that can
 * fail takes an `ss_err *` as its last argument, returns -1 (or NULL) on
 * failure and leaves a one-line message in it; main() prints the message,
 * prefixed with the program name, and chooses the exit status.
 *
 * Messages name the file and the field at fault, in the form
 *     FILE:FIELD: what is wrong
 * e.g. "run.h5:/stats/recv: shape 24x14x512, expected 24x14x600".
 */
#ifndef SS_ERR_H
#define SS_ERR_H

#include <stddef.h>

/* Exit statuses of every program (documented in each man page). */
enum ss_exit {
	SS_EXIT_OK = 0,    /* success */
	SS_EXIT_FAIL = 1,  /* failure at run time: bad data, I/O, HDF5 */
	SS_EXIT_USAGE = 2, /* usage error: bad option, missing operand */
};

#define SS_ERR_MAX 1024

typedef struct ss_err {
	int status;           /* an ss_exit value; 0 when no error is set */
	int errnum;           /* the errno of ss_err_errno, else 0 */
	char msg[SS_ERR_MAX]; /* one line, no trailing newline */
} ss_err;

/* Set the error (status SS_EXIT_FAIL) with a printf-style message.
 * Always returns -1 so callers can write `return ss_err_set(e, ...);`. */
int ss_err_set(ss_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Same, appending ": strerror(errnum)". */
int ss_err_errno(ss_err *e, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Same, with an explicit status (e.g. SS_EXIT_USAGE). */
int ss_err_status(ss_err *e, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Prefix the current message with "prefix: " (adds context on the way up). */
int ss_err_prefix(ss_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ss_err_clear(ss_err *e);

/* For main() only: print "prog: msg" to stderr.  An error that is a closed
 * pipe (errnum EPIPE: the reader of `... | head` is gone) is not printed:
 * the cleanup hook runs and the process ends by SIGPIPE, silently, as
 * every Unix filter does. */
void ss_err_print(const char *prog, const ss_err *e);
/* The hook ss_err_print runs before ending by SIGPIPE (ofile.h sets it to
 * remove the temporary outputs). */
void ss_err_set_cleanup(void (*fn)(void));
/* For main() only: print "prog: " + message to stderr (warnings, usage). */
void ss_warn(const char *prog, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Checked allocation helpers: on failure set e ("out of memory allocating N
 * bytes for WHAT") and return NULL.  n*size overflow is an error too. */
void *ss_malloc(size_t n, size_t size, const char *what, ss_err *e);
void *ss_calloc(size_t n, size_t size, const char *what, ss_err *e);
char *ss_strdup(const char *s, ss_err *e);
/* ss_malloc for large working buffers (weights in f32, activations): from
 * 2 MiB up the block is 2 MiB aligned and asks for transparent huge pages,
 * which cut sgemm's TLB misses on packing by several percent.  free() it. */
void *ss_malloc_big(size_t n, size_t size, const char *what, ss_err *e);

/* Flush and check stdout; returns -1 with e set when the write failed
 * (full disk, closed pipe).  Every program calls it before exiting 0. */
int ss_close_stdout(ss_err *e);

/* For main() only: the one ending of every program, `return
 * ss_main_end(prog, rc, &e);`.  rc < 0: prints "prog: msg" and returns
 * e->status (SS_EXIT_FAIL when none was set).  rc >= 0: flushes and checks
 * stdout (ss_close_stdout), printing and returning SS_EXIT_FAIL when that
 * fails, else SS_EXIT_OK. */
int ss_main_end(const char *prog, int rc, ss_err *e);

#endif
