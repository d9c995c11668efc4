/* err.c - errors as values; see err.h. */
#include "util/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>

static void vset(ss_err *e, int status, const char *fmt, va_list ap)
{
	if (!e)
		return;
	e->status = status;
	e->errnum = 0;
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	/* keep messages on one line */
	for (char *p = e->msg; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

int ss_err_set(ss_err *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(e, SS_EXIT_FAIL, fmt, ap);
	va_end(ap);
	return -1;
}

int ss_err_status(ss_err *e, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(e, status, fmt, ap);
	va_end(ap);
	return -1;
}

int ss_err_errno(ss_err *e, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(e, SS_EXIT_FAIL, fmt, ap);
	va_end(ap);
	if (e) {
		size_t n = strlen(e->msg);
		snprintf(e->msg + n, sizeof e->msg - n, ": %s", strerror(errnum));
		e->errnum = errnum;
	}
	return -1;
}

int ss_err_prefix(ss_err *e, const char *fmt, ...)
{
	if (!e)
		return -1;
	char pre[SS_ERR_MAX], old[SS_ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof pre, fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof old);
	if (snprintf(e->msg, sizeof e->msg, "%s: %s", pre, old) < 0)   /* truncation is fine */
		e->msg[0] = '\0';
	if (!e->status)
		e->status = SS_EXIT_FAIL;
	return -1;
}

void ss_err_clear(ss_err *e)
{
	if (e) {
		e->status = 0;
		e->msg[0] = '\0';
	}
}

static void (*cleanup)(void);

void ss_err_set_cleanup(void (*fn)(void)) { cleanup = fn; }

void ss_err_print(const char *prog, const ss_err *e)
{
	if (e && e->errnum == EPIPE) {
		if (cleanup)
			cleanup();
		signal(SIGPIPE, SIG_DFL);
		raise(SIGPIPE);
	}
	fprintf(stderr, "%s: %s\n", prog, e && e->msg[0] ? e->msg : "unknown error");
}

void ss_warn(const char *prog, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void *ss_malloc(size_t n, size_t size, const char *what, ss_err *e)
{
	if (size && n > SIZE_MAX / size) {
		ss_err_set(e, "%s: size overflow (%zu x %zu bytes)", what, n, size);
		return NULL;
	}
	size_t bytes = n * size;
	void *p = malloc(bytes ? bytes : 1);
	if (!p)
		ss_err_set(e, "%s: out of memory allocating %zu bytes", what, bytes);
	return p;
}

void *ss_calloc(size_t n, size_t size, const char *what, ss_err *e)
{
	if (size && n > SIZE_MAX / size) {
		ss_err_set(e, "%s: size overflow (%zu x %zu bytes)", what, n, size);
		return NULL;
	}
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		ss_err_set(e, "%s: out of memory allocating %zu bytes", what, n * size);
	return p;
}

void *ss_malloc_big(size_t n, size_t size, const char *what, ss_err *e)
{
	const size_t H = (size_t)2 << 20;
	if (size && n > SIZE_MAX / size)
		return ss_malloc(n, size, what, e);   /* reports the overflow */
	size_t bytes = n * size;
	if (bytes < H)
		return ss_malloc(n, size, what, e);
	void *p = NULL;
	int r = posix_memalign(&p, H, bytes);
	if (r) {
		ss_err_set(e, "%s: out of memory allocating %zu bytes", what, bytes);
		return NULL;
	}
#ifdef MADV_HUGEPAGE
	madvise(p, bytes & ~(H - 1), MADV_HUGEPAGE);   /* a hint: failure is harmless */
#endif
	return p;
}

char *ss_strdup(const char *s, ss_err *e)
{
	size_t n = strlen(s) + 1;
	char *p = ss_malloc(n, 1, "string", e);
	if (p)
		memcpy(p, s, n);
	return p;
}

int ss_close_stdout(ss_err *e)
{
	int bad = fflush(stdout) != 0 || ferror(stdout);
	int errnum = errno;
	if (fclose(stdout) != 0 && !bad) {
		bad = 1;
		errnum = errno;
	}
	if (bad)
		return ss_err_errno(e, errnum ? errnum : EIO, "<stdout>: write error");
	return 0;
}

int ss_main_end(const char *prog, int rc, ss_err *e)
{
	if (rc >= 0 && ss_close_stdout(e) == 0)
		return SS_EXIT_OK;
	ss_err_print(prog, e);
	return rc >= 0 || !e->status ? SS_EXIT_FAIL : e->status;
}
