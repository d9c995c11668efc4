/* inject.c - LD_PRELOAD fault injector for the fault tests.
 *
 * Built by the tests themselves (cc -shared -fPIC), not by the Makefile:
 * it is a shared object, not a program.
 *
 *   SS_INJECT_ENOSPC_AFTER=N  write, pwrite, pwrite64, writev to regular
 *                             files fail with ENOSPC once N bytes have gone
 *                             to regular files (a partial write reaches the
 *                             limit exactly); fsync, fdatasync then fail too.
 *                             Terminals, pipes and stderr are never touched,
 *                             so the program can still say what happened.
 *   SS_INJECT_MALLOC_FAIL=K   the K-th allocation (1-based) of at least
 *   SS_INJECT_MALLOC_MIN=B    B bytes (default 65536) through malloc,
 *                             calloc, realloc, posix_memalign,
 *                             aligned_alloc returns NULL with ENOMEM; later
 *                             ones succeed (one failure, as when memory is
 *                             short for one large buffer).  Small
 *                             allocations are left alone so that stdio and
 *                             the error path can run.
 *   SS_INJECT_MALLOC_EXE=1    count only allocations called directly from
 *                             the main executable (sinkscope's own code,
 *                             statically linked), not from HDF5, OpenBLAS
 *                             or libc: a failure the program must handle.
 *   SS_INJECT_REPORT=FILE     at exit, append "big_allocs=N bytes_written=M".
 *
 * glibc's stdio writes through internal calls that LD_PRELOAD cannot see,
 * so the full-disk tests use a small tmpfs or RLIMIT_FSIZE first and this
 * only for the write(2)/pwrite(2) paths (HDF5's sec2 driver).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static long long enospc_after = -1;
static _Atomic long long written;
static long malloc_fail = 0;
static size_t malloc_min = 65536;
static _Atomic long big_allocs;
static const char *report;
static int ready;
static int exe_only;
static uintptr_t exe_lo, exe_hi;   /* text of the main executable */

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size; (void)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		if (p->p_type == PT_LOAD && (p->p_flags & PF_X)) {
			exe_lo = info->dlpi_addr + p->p_vaddr;
			exe_hi = exe_lo + p->p_memsz;
		}
	}
	return 1;   /* the first object is the main program */
}

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);

__attribute__((constructor)) static void init(void)
{
	const char *s;
	if ((s = getenv("SS_INJECT_ENOSPC_AFTER")))
		enospc_after = atoll(s);
	if ((s = getenv("SS_INJECT_MALLOC_FAIL")))
		malloc_fail = atol(s);
	if ((s = getenv("SS_INJECT_MALLOC_MIN")))
		malloc_min = (size_t)atoll(s);
	report = getenv("SS_INJECT_REPORT");
	if ((s = getenv("SS_INJECT_MALLOC_EXE")) && *s == '1') {
		exe_only = 1;
		dl_iterate_phdr(first_object, NULL);
	}
	real_write = dlsym(RTLD_NEXT, "write");
	real_pwrite = dlsym(RTLD_NEXT, "pwrite");
	real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
	real_writev = dlsym(RTLD_NEXT, "writev");
	real_fsync = dlsym(RTLD_NEXT, "fsync");
	real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
	ready = 1;
}

__attribute__((destructor)) static void fini(void)
{
	if (!report)
		return;
	FILE *f = fopen(report, "a");
	if (f) {
		fprintf(f, "big_allocs=%ld bytes_written=%lld\n", (long)big_allocs, (long long)written);
		fclose(f);
	}
}

/* Bytes of n that may still be written to fd; -1 (errno ENOSPC) when none. */
static ssize_t allow(int fd, size_t n)
{
	struct stat st;
	if (enospc_after < 0 || fd <= 2 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return (ssize_t)n;
	long long left = enospc_after - written;
	if (left <= 0) {
		errno = ENOSPC;
		return -1;
	}
	return (size_t)left < n ? (ssize_t)left : (ssize_t)n;
}

static void count(int fd, ssize_t r)
{
	struct stat st;
	if (r > 0 && enospc_after >= 0 && fd > 2 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		written += r;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	ssize_t k = allow(fd, n);
	if (k < 0)
		return -1;
	ssize_t r = real_write(fd, buf, (size_t)k);
	count(fd, r);
	return r;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	ssize_t k = allow(fd, n);
	if (k < 0)
		return -1;
	ssize_t r = real_pwrite(fd, buf, (size_t)k, off);
	count(fd, r);
	return r;
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	ssize_t k = allow(fd, n);
	if (k < 0)
		return -1;
	ssize_t r = (real_pwrite64 ? real_pwrite64 : real_pwrite)(fd, buf, (size_t)k, off);
	count(fd, r);
	return r;
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	size_t n = 0;
	for (int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	ssize_t k = allow(fd, n);
	if (k < 0)
		return -1;
	if ((size_t)k < n) {   /* short: write the allowed prefix of the first buffers */
		size_t done = 0;
		for (int i = 0; i < cnt && done < (size_t)k; i++) {
			size_t m = iov[i].iov_len < (size_t)k - done ? iov[i].iov_len : (size_t)k - done;
			ssize_t r = real_write(fd, iov[i].iov_base, m);
			if (r < 0)
				return done ? (ssize_t)done : -1;
			count(fd, r);
			done += (size_t)r;
			if ((size_t)r < m)
				break;
		}
		return (ssize_t)done;
	}
	ssize_t r = real_writev(fd, iov, cnt);
	count(fd, r);
	return r;
}

static int sync_fail(int fd)
{
	struct stat st;
	return enospc_after >= 0 && written >= enospc_after && fd > 2 && fstat(fd, &st) == 0 &&
	       S_ISREG(st.st_mode);
}

int fsync(int fd)
{
	if (sync_fail(fd)) {
		errno = ENOSPC;
		return -1;
	}
	return real_fsync(fd);
}

int fdatasync(int fd)
{
	if (sync_fail(fd)) {
		errno = ENOSPC;
		return -1;
	}
	return real_fdatasync(fd);
}

/* 1 when this allocation of n bytes, called from `caller`, is the one to fail. */
#define fail_now(n) fail_now_((n), (uintptr_t)__builtin_return_address(0))
static int fail_now_(size_t n, uintptr_t caller)
{
	if (!ready || n < malloc_min)
		return 0;
	if (exe_only && (caller < exe_lo || caller >= exe_hi))
		return 0;
	long k = ++big_allocs;
	if (malloc_fail > 0 && k == malloc_fail) {
		errno = ENOMEM;
		return 1;
	}
	return 0;
}

void *malloc(size_t n)
{
	return fail_now(n) ? NULL : __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	size_t n;
	if (__builtin_mul_overflow(a, b, &n))
		n = (size_t)-1;
	return fail_now(n) ? NULL : __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	return fail_now(n) ? NULL : __libc_realloc(p, n);
}

int posix_memalign(void **out, size_t al, size_t n)
{
	if (fail_now(n))
		return ENOMEM;
	void *p = __libc_memalign(al, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t al, size_t n)
{
	return fail_now(n) ? NULL : __libc_memalign(al, n);
}

void *memalign(size_t al, size_t n)
{
	return fail_now(n) ? NULL : __libc_memalign(al, n);
}
