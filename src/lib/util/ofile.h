/* ofile.h - outputs that are complete or absent.
 *
 * An output file is written under a temporary name in the same directory
 * and renamed into place only after everything was written and closed.  The
 * temporary names are registered so that SIGINT, SIGTERM and SIGHUP remove
 * them before the process dies (with the signal's default status).  SIGPIPE
 * is ignored, so a closed stdout pipe shows up as a write error (EPIPE)
 * that the program reports and turns into exit status 1.
 */
#ifndef SS_OFILE_H
#define SS_OFILE_H

#include <stdio.h>
#include "util/err.h"

/* Install the handlers once, early in main(). prog is used in the message
 * "prog: interrupted (SIGINT); partial output removed". */
void ss_signals_install(const char *prog);

/* Register/unregister a temporary path for removal on a signal.
 * ss_tmp_register copies the path; returns -1 when the table is full. */
int ss_tmp_register(const char *path, ss_err *e);
/* Remove every registered temporary (async-signal-safe: for handlers of
 * fatal signals such as SIGBUS). */
void ss_tmp_remove_all(void);
void ss_tmp_unregister(const char *path);

/* Make a fresh temporary name next to `path` ("DIR/.NAME.tmp.XXXXXX"),
 * create it (mode 0644 modulo umask) and register it. *tmp is malloc'd. */
int ss_tmp_create(const char *path, char **tmp, int *fd, ss_err *e);

typedef struct ss_ofile {
	FILE *f;      /* write here */
	char *path;   /* final name, NULL for stdout */
	char *tmp;    /* temporary name, NULL for stdout */
} ss_ofile;

/* Open an output: path "-" or NULL means stdout (written directly). */
int ss_ofile_open(ss_ofile *o, const char *path, ss_err *e);
/* Flush, check, close and rename into place. */
int ss_ofile_commit(ss_ofile *o, ss_err *e);
/* Close and remove the temporary file (no-op for stdout). */
void ss_ofile_abort(ss_ofile *o);

#endif
