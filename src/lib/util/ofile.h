/* ofile.h - outputs that are complete or absent, and never replace what
 * they must not.
 *
 * The one policy for every `-o PATH` of the suite (ss_out_resolve; h5io
 * follows it for HDF5 outputs):
 * - "-": stdout, written directly.
 * - absent or a regular file: written under a temporary name in the same
 *   directory, fsync'ed, and renamed into place only after everything was
 *   written and closed (an existing file keeps its permission bits).
 * - a symlink: followed (every link of a chain); the output replaces the
 *   link's final target as above, in the target's directory; the link
 *   itself stays.  A link whose target is no path but that opens a pipe,
 *   a socket or a device (/dev/stdout on a pipe: "pipe:[N]") is a stream.
 * - a character or block device, a FIFO, a socket: opened (a socket is
 *   connected to) when the output is opened, and the finished output is
 *   written into it at commit (kept in memory until then), never renamed
 *   over: so -o /dev/null stays a device and a FIFO's reader gets it all.
 * - a directory: an error (exit 1), nothing written.
 * Since a file output is renamed into place only at the end, -o naming one
 * of the program's inputs is safe: the input is read before it is replaced.
 *
 * The
 * temporary names are registered so that SIGINT, SIGTERM and SIGHUP remove
 * them before the process dies (with the signal's default status).  SIGPIPE
 * is ignored, so a closed stdout pipe shows up as a write error (EPIPE);
 * ss_err_print then removes the temporaries and ends the process by
 * SIGPIPE without a word, as a filter killed by the signal would.
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

typedef enum ss_out_kind {
	SS_OUT_STDOUT, /* "-" */
	SS_OUT_FILE,   /* temporary file + fsync + rename */
	SS_OUT_STREAM, /* device, FIFO or socket: written into, never renamed */
} ss_out_kind;

/* Follow a chain of symbolic links (up to 40): *real (malloc'd) is the
 * final target's path, or a copy of path when it is no link or does not
 * exist.  A link that cannot be read is an error naming path. */
int ss_path_follow(const char *path, char **real, ss_err *e);
/* Classify an output path by the policy above.  *real (malloc'd) is the
 * path to write: the symlink's final target for a symlink, else a copy of
 * path; NULL for stdout.  A directory, a symlink loop or an unreadable
 * link is an error naming path. */
int ss_out_resolve(const char *path, ss_out_kind *kind, char **real, ss_err *e);
/* Every program checks its outputs with this before it reads any input:
 * an empty path ("" from an unset shell variable) is a usage error naming
 * the option ("-o: an empty path, expected a file name or -"), and two
 * outputs of one run must not be one file: the later rename would
 * silently drop the other output, and two streams on stdout interleave.
 * For the n outputs (NULL: not asked for), each paths[i] given by the
 * option names[i] ("-o", "--text-out"), a pair that is the same file --
 * both "-", or one file through different spellings (./x, a symlink, a
 * hard link, a dangling link and its future target) -- is a usage error
 * naming both options: "--text-out: the same file as -o (x.h5)";
 * a path that is stdout counts as "-" (see ss_out_is_stdout). */
int ss_out_check(const char *const *paths, const char *const *names, int n, ss_err *e);
/* 1 when the output path is stdout: "-", or a name of the file open on
 * descriptor 1 (/dev/stdout, /dev/fd/1, /proc/self/fd/1, the file stdout
 * is redirected to), /dev/null excepted.  ss_out_check counts such a path
 * as "-"; a program whose table goes to stdout refuses it for its other
 * outputs. */
int ss_out_is_stdout(const char *path);
/* Open a SS_OUT_STREAM path for writing (a socket is connected to). */
int ss_out_stream_open(const char *path, int *fd, ss_err *e);
/* write(2) all of b, retrying on EINTR; errors name `name`. */
int ss_write_all(int fd, const void *b, size_t n, const char *name, ss_err *e);
/* fsync(2) a finished temporary file; errors name `name`. */
int ss_fsync_path(const char *tmp, const char *name, ss_err *e);

typedef struct ss_ofile {
	FILE *f;      /* write here */
	char *path;   /* final name (a symlink's target), NULL for stdout */
	char *tmp;    /* temporary name, NULL for stdout and streams */
	int stream;   /* 1: a device, FIFO or socket, written at commit */
	int fd;       /* the stream's descriptor (when stream) */
	char *buf;    /* the stream's output so far (open_memstream) */
	size_t len;
} ss_ofile;

/* Open an output by the policy above: path "-" or NULL means stdout. */
int ss_ofile_open(ss_ofile *o, const char *path, ss_err *e);
/* Flush, check, close and rename into place (or write into the stream). */
int ss_ofile_commit(ss_ofile *o, ss_err *e);
/* Close and remove the temporary file (no-op for stdout). */
void ss_ofile_abort(ss_ofile *o);

#endif
