/* ofile.c - atomic outputs and signal clean-up; see ofile.h. */
#define _XOPEN_SOURCE 700
#include "util/ofile.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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
	ss_err_set_cleanup(ss_tmp_remove_all);
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
	/* A replaced file keeps its permission bits; a new one gets 0666 less
	 * the umask, as open(2) would give it. */
	struct stat st;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
		fchmod(f, st.st_mode & 07777);
	} else {
		mode_t um = umask(0);
		umask(um);
		fchmod(f, 0666 & ~um);
	}
	*tmp = t;
	*fd = f;
	return 0;
}

/* dirname(link)/target, or target when it is absolute. */
static char *link_target(const char *link, const char *target)
{
	if (target[0] == '/')
		return strdup(target);
	const char *slash = strrchr(link, '/');
	size_t dn = slash ? (size_t)(slash - link + 1) : 0, n = dn + strlen(target) + 1;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%.*s%s", (int)dn, link, target);
	return p;
}

int ss_path_follow(const char *path, char **real, ss_err *e)
{
	char *p = strdup(path);
	*real = NULL;
	if (!p)
		return ss_err_set(e, "%s: out of memory", path);
	struct stat st;
	for (int hops = 0; lstat(p, &st) == 0 && S_ISLNK(st.st_mode); hops++) {
		char t[4096];
		ssize_t n = hops < 40 ? readlink(p, t, sizeof t - 1) : -1;
		if (n < 0) {
			int err = hops < 40 ? errno : ELOOP;
			free(p);
			return ss_err_errno(e, err, "%s: cannot follow the symbolic link", path);
		}
		t[n] = '\0';
		char *q = link_target(p, t);
		free(p);
		if (!(p = q))
			return ss_err_set(e, "%s: out of memory", path);
	}
	*real = p;
	return 0;
}

int ss_out_resolve(const char *path, ss_out_kind *kind, char **real, ss_err *e)
{
	*real = NULL;
	*kind = SS_OUT_STDOUT;
	if (!path || !strcmp(path, "-"))
		return 0;
	if (!*path) /* -o "" from an unset shell variable */
		return ss_err_status(e, SS_EXIT_USAGE, "an empty output path, expected a file name or -");
	char *p;
	if (ss_path_follow(path, &p, e))
		return -1;
	struct stat st;
	if (lstat(p, &st) < 0 && errno == ENOENT && strcmp(p, path) && stat(path, &st) == 0 &&
	    !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		/* a link whose target is no path but opens all the same: Linux's
		 * /dev/stdout -> /proc/self/fd/1 -> "pipe:[N]" */
		free(p);
		if (!(*real = strdup(path)))
			return ss_err_set(e, "%s: out of memory", path);
		*kind = SS_OUT_STREAM;
		return 0;
	}
	if (lstat(p, &st) < 0) {
		if (errno == ENOENT) { /* a new file; a missing folder shows at creation */
			*kind = SS_OUT_FILE;
			*real = p;
			return 0;
		}
		int err = errno;
		free(p);
		return ss_err_errno(e, err, "%s", path);
	}
	if (S_ISDIR(st.st_mode)) {
		if (strcmp(p, path))
			ss_err_set(e, "%s: a symbolic link to the directory %s, expected a file", path, p);
		else
			ss_err_set(e, "%s: is a directory, expected a file", path);
		free(p);
		return -1;
	}
	*kind = S_ISREG(st.st_mode) ? SS_OUT_FILE : SS_OUT_STREAM;
	*real = p;
	return 0;
}

int ss_out_is_stdout(const char *path)
{
	if (!path)
		return 0;
	if (!strcmp(path, "-"))
		return 1;
	/* stat follows /dev/stdout -> /proc/self/fd/1 -> pipe:[N] to the open
	 * file itself, which no readlink chain names; /dev/null takes any
	 * number of writers unharmed */
	struct stat a, b, nul;
	if (!*path || stat(path, &a) != 0 || fstat(1, &b) != 0)
		return 0;
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return 0;
	return !(S_ISCHR(a.st_mode) && stat("/dev/null", &nul) == 0 && nul.st_rdev == a.st_rdev);
}

/* The identity of an output path: its device and inode when it exists,
 * else the canonical path of its folder and its name.  *key is malloc'd
 * ("" for stdout). */
static int out_key(const char *path, char **key, ss_err *e)
{
	*key = NULL;
	if (ss_out_is_stdout(path)) /* "-", /dev/stdout, /dev/fd/1, a file that is fd 1 */
		return (*key = strdup("")) ? 0 : ss_err_set(e, "%s: out of memory", path);
	char *real;
	if (ss_path_follow(path, &real, e))
		return -1;
	struct stat st;
	size_t n = strlen(real) + PATH_MAX + 64;
	char *k = malloc(n);
	if (!k) {
		free(real);
		return ss_err_set(e, "%s: out of memory", path);
	}
	if (stat(real, &st) == 0) {
		snprintf(k, n, "i%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
	} else {
		char *slash = strrchr(real, '/'), dir[PATH_MAX];
		const char *base = slash ? slash + 1 : real;
		if (slash)
			*slash = '\0';
		if (!realpath(slash ? (*real ? real : "/") : ".", dir))
			snprintf(dir, sizeof dir, "%s", slash ? real : ".");
		snprintf(k, n, "p%s/%s", dir, base);
	}
	free(real);
	*key = k;
	return 0;
}

int ss_out_check(const char *const *paths, const char *const *names, int n, ss_err *e)
{
	char *key[8] = {0};
	int rc = 0;
	if (n > 8)
		n = 8;
	for (int i = 0; i < n && !rc; i++) {
		if (!paths[i])
			continue;
		if (!*paths[i]) {
			rc = ss_err_status(e, SS_EXIT_USAGE, "%s: an empty path, expected a file name or -",
			                   names[i]);
			break;
		}
		if (out_key(paths[i], &key[i], e)) {
			rc = -1;
			break;
		}
		for (int j = 0; j < i; j++)
			if (key[j] && !strcmp(key[i], key[j])) {
				rc = ss_err_status(e, SS_EXIT_USAGE, "%s: the same file as %s (%s)", names[i],
				                   names[j], strcmp(paths[j], "-") ? paths[j] : "stdout");
				if (!*key[i] && strcmp(paths[i], "-")) /* say why /dev/stdout is stdout */
					ss_err_status(e, SS_EXIT_USAGE, "%s: %s is stdout, the same file as %s (%s)",
					              names[i], paths[i], names[j],
					              strcmp(paths[j], "-") ? paths[j] : "stdout");
				break;
			}
	}
	for (int i = 0; i < n; i++)
		free(key[i]);
	return rc;
}

int ss_out_stream_open(const char *path, int *fd, ss_err *e)
{
	struct stat st;
	*fd = -1;
	if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		struct sockaddr_un a;
		memset(&a, 0, sizeof a);
		a.sun_family = AF_UNIX;
		if (strlen(path) >= sizeof a.sun_path)
			return ss_err_set(e, "%s: socket path too long", path);
		memcpy(a.sun_path, path, strlen(path) + 1);
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
			int err = errno;
			if (s >= 0)
				close(s);
			return ss_err_errno(e, err, "%s: cannot connect to the socket", path);
		}
		*fd = s;
		return 0;
	}
	int f = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (f < 0)
		return ss_err_errno(e, errno, "%s: cannot open for writing", path);
	*fd = f;
	return 0;
}

int ss_write_all(int fd, const void *buf, size_t n, const char *name, ss_err *e)
{
	const char *b = buf;
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return ss_err_errno(e, errno, "%s: write error", name);
		}
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

int ss_fsync_path(const char *tmp, const char *name, ss_err *e)
{
	int fd = open(tmp, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ss_err_errno(e, errno, "%s: cannot reopen the finished output", name);
	int bad = fsync(fd) != 0 && errno != EINVAL && errno != EROFS;
	int err = errno;
	close(fd);
	return bad ? ss_err_errno(e, err, "%s: cannot sync to disk", name) : 0;
}

int ss_ofile_open(ss_ofile *o, const char *path, ss_err *e)
{
	memset(o, 0, sizeof *o);
	o->fd = -1;
	ss_out_kind kind;
	char *real;
	if (ss_out_resolve(path, &kind, &real, e))
		return -1;
	if (kind == SS_OUT_STDOUT) {
		o->f = stdout;
		return 0;
	}
	o->path = real;
	if (kind == SS_OUT_STREAM) {
		o->stream = 1;
		if (ss_out_stream_open(real, &o->fd, e)) {
			ss_ofile_abort(o);
			return -1;
		}
		o->f = open_memstream(&o->buf, &o->len);
		if (!o->f) {
			ss_ofile_abort(o);
			return ss_err_set(e, "%s: out of memory", path);
		}
		return 0;
	}
	int fd;
	if (ss_tmp_create(real, &o->tmp, &fd, e)) {
		ss_ofile_abort(o);
		return -1;
	}
	o->f = fdopen(fd, "wb");
	if (!o->f) {
		close(fd);
		ss_ofile_abort(o);
		return ss_err_set(e, "%s: out of memory", path);
	}
	return 0;
}

static int commit_stream(ss_ofile *o, ss_err *e)
{
	int rc = 0;
	if (fclose(o->f) != 0)
		rc = ss_err_errno(e, errno, "%s: out of memory", o->path);
	o->f = NULL;
	if (!rc)
		rc = ss_write_all(o->fd, o->buf, o->len, o->path, e);
	if (close(o->fd) != 0 && !rc)
		rc = ss_err_errno(e, errno, "%s: write error", o->path);
	o->fd = -1;
	ss_ofile_abort(o);
	return rc;
}

int ss_ofile_commit(ss_ofile *o, ss_err *e)
{
	if (o->stream)
		return commit_stream(o, e);
	if (!o->tmp) { /* stdout: flushed and checked by ss_close_stdout */
		if (fflush(stdout) || ferror(stdout))
			return ss_err_errno(e, errno ? errno : EIO, "<stdout>: write error");
		return 0;
	}
	int bad = fflush(o->f) != 0 || ferror(o->f);
	int err = errno;
	if (!bad && fsync(fileno(o->f)) != 0 && errno != EINVAL && errno != EROFS) {
		bad = 1;
		err = errno;
	}
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
	if (o->stream && o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	o->stream = 0;
	free(o->buf);
	o->buf = NULL;
	o->len = 0;
	if (o->tmp) {
		unlink(o->tmp);
		ss_tmp_unregister(o->tmp);
	}
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
}
