/* ofile.c - atomic outputs and signal clean-up; see ofile.h. */
#define _POSIX_C_SOURCE 200809L
#include "util/ofile.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_TMP 64
#define TMP_LEN 4096

/* Fixed storage: the handler may only touch async-signal-safe state. */
static char tmp_paths[MAX_TMP][TMP_LEN];
static volatile sig_atomic_t tmp_used[MAX_TMP];
static char prog_name[64] = "sinkscope";

static void put(const char *s)
{
	ssize_t r = write(2, s, strlen(s));
	(void)r;
}

void ss_tmp_remove_all(void)
{
	for (int i = 0; i < MAX_TMP; i++)
		if (tmp_used[i])
			unlink(tmp_paths[i]);
}

static void on_signal(int sig)
{
	ss_tmp_remove_all();
	put(prog_name);
	put(sig == SIGINT ? ": interrupted (SIGINT)" : sig == SIGTERM ? ": terminated (SIGTERM)"
	                                                              : ": hung up (SIGHUP)");
	put("; partial output removed\n");
	signal(sig, SIG_DFL);
	raise(sig);
}

void ss_signals_install(const char *prog)
{
	const char *slash = strrchr(prog, '/');
	snprintf(prog_name, sizeof prog_name, "%s", slash ? slash + 1 : prog);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int ss_tmp_register(const char *path, ss_err *e)
{
	if (strlen(path) >= TMP_LEN)
		return ss_err_set(e, "%s: path too long", path);
	for (int i = 0; i < MAX_TMP; i++)
		if (!tmp_used[i]) {
			memcpy(tmp_paths[i], path, strlen(path) + 1);
			tmp_used[i] = 1;
			return 0;
		}
	return ss_err_set(e, "%s: too many open outputs", path);
}

void ss_tmp_unregister(const char *path)
{
	for (int i = 0; i < MAX_TMP; i++)
		if (tmp_used[i] && !strcmp(tmp_paths[i], path))
			tmp_used[i] = 0;
}

int ss_tmp_create(const char *path, char **tmp, int *fd, ss_err *e)
{
	*tmp = NULL;
	*fd = -1;
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path + 1) : 0;
	const char *base = slash ? slash + 1 : path;
	size_t n = strlen(path) + 32;
	char *t = malloc(n);
	if (!t)
		return ss_err_set(e, "%s: out of memory", path);
	snprintf(t, n, "%.*s.%s.tmp.XXXXXX", (int)dlen, path, base);
	/* Block the signals while the name is created and registered, so a
	 * signal cannot strand an unregistered temporary file. */
	sigset_t all, old;
	sigemptyset(&all);
	sigaddset(&all, SIGINT);
	sigaddset(&all, SIGTERM);
	sigaddset(&all, SIGHUP);
	sigprocmask(SIG_BLOCK, &all, &old);
	int f = mkstemp(t);
	if (f < 0) {
		int err = errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		free(t);
		return ss_err_errno(e, err, "%s: cannot create output", path);
	}
	if (ss_tmp_register(t, e)) {
		close(f);
		unlink(t);
		sigprocmask(SIG_SETMASK, &old, NULL);
		free(t);
		return -1;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	mode_t um = umask(0);
	umask(um);
	fchmod(f, 0666 & ~um);
	*tmp = t;
	*fd = f;
	return 0;
}

int ss_ofile_open(ss_ofile *o, const char *path, ss_err *e)
{
	memset(o, 0, sizeof *o);
	if (!path || !strcmp(path, "-")) {
		o->f = stdout;
		return 0;
	}
	int fd;
	if (ss_tmp_create(path, &o->tmp, &fd, e))
		return -1;
	o->f = fdopen(fd, "wb");
	o->path = strdup(path);
	if (!o->f || !o->path) {
		if (o->f)
			fclose(o->f);
		else
			close(fd);
		o->f = NULL;
		ss_ofile_abort(o);
		return ss_err_set(e, "%s: out of memory", path);
	}
	return 0;
}

int ss_ofile_commit(ss_ofile *o, ss_err *e)
{
	if (!o->tmp) { /* stdout: flushed and checked by ss_close_stdout */
		if (fflush(stdout) || ferror(stdout))
			return ss_err_errno(e, errno ? errno : EIO, "<stdout>: write error");
		return 0;
	}
	int bad = fflush(o->f) != 0 || ferror(o->f);
	int err = errno;
	if (fclose(o->f) != 0 && !bad) {
		bad = 1;
		err = errno;
	}
	o->f = NULL;
	if (bad) {
		ss_err_errno(e, err ? err : EIO, "%s: write error", o->path);
		ss_ofile_abort(o);
		return -1;
	}
	if (rename(o->tmp, o->path)) {
		ss_err_errno(e, errno, "%s: cannot rename the finished output into place", o->path);
		ss_ofile_abort(o);
		return -1;
	}
	ss_tmp_unregister(o->tmp);
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
	return 0;
}

void ss_ofile_abort(ss_ofile *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	o->f = NULL;
	if (o->tmp) {
		unlink(o->tmp);
		ss_tmp_unregister(o->tmp);
	}
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
}
