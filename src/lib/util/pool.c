/* pool.c - worker threads; see pool.h.
 *
 * The pool's threads are OpenMP's: pool_run is one `omp parallel` region of
 * the pool's thread count.  oneDNN (Debian's libdnnl is built with OpenMP)
 * runs the matrix products on the same libgomp team, so one set of threads
 * serves both.  A pthread pool of our own next to it made two sets take
 * turns on the cores: after each product libgomp's threads spin-wait for
 * the next region while the pool's threads need the cores, and the pool's
 * own spinners did the same to oneDNN's (perf, gpt2-small on 2 cores:
 * 29.6% of cycles in libgomp in the f32 mode, 50.5% in bf16).
 *
 * OpenMP may give a region fewer threads than asked (OMP_THREAD_LIMIT,
 * OMP_DYNAMIC, a region already running): each thread then runs every tid
 * that is its index modulo the team's size, so every tid of 0..nth-1 runs
 * once and the work, divided by tid, is the same at any team size.
 *
 * libgomp's idle threads spin GOMP_SPINCOUNT rounds before they sleep on a
 * futex: 300000 (about 4.5 ms here) unless OMP_WAIT_POLICY or
 * GOMP_SPINCOUNT say otherwise.  On a machine shared with other work that
 * is the costliest choice: a thread spinning for its partner uses up its
 * share of the CPU, then is preempted in the middle of the next product,
 * where a thread that slept would have been woken ahead of the other
 * processes.  Measured on 2 loaded cores (load 3-7), Qwen2.5-0.5B-shaped
 * model, T=512, stats only, tok/s medians: 300000 rounds 410 f32 / 690
 * bf16; 3000 rounds 530-670 / 1580-1750; 20000 rounds 610-690 / 1320.
 * libgomp reads the variable once, in its constructor, before main; so
 * when neither is set, spin_preinit (run from the program's .preinit_array,
 * before any library's constructor) lends libgomp SPIN_ENV in the place of
 * one environment entry no library's constructor reads, and spin_restore
 * (a constructor of the program's own, run after every library's) puts that
 * entry back: main and child processes see the environment as it was.
 * (preinit runs before libc's own start, which resets environ to the
 * kernel's array, so setenv there is lost; the array itself is kept.) */
#include "util/pool.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define SPIN_ENV "GOMP_SPINCOUNT=10000"   /* about 150 us of spinning, then the futex */

struct ss_pool {
	int nth;
};

/* ---- libgomp's default wait ---------------------------------------------- */

extern char **environ;
static char spin_env[] = SPIN_ENV;
static char *spin_saved;   /* the entry spin_env stands in for */

/* the entries lent: read by nothing before main (the shell's own) */
static int spin_lendable(const char *s)
{
	static const char *const ok[] = {"_=", "PWD=", "OLDPWD=", "SHLVL=", "HOSTNAME=", "TERM="};
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
		if (!strncmp(s, ok[i], strlen(ok[i])))
			return 1;
	return 0;
}

static void spin_preinit(int argc, char **argv, char **envp)
{
	(void)argc, (void)argv;
	int lend = -1;
	for (int i = 0; envp && envp[i]; i++) {
		if (!strncmp(envp[i], "OMP_WAIT_POLICY=", 16) || !strncmp(envp[i], "GOMP_SPINCOUNT=", 15))
			return;   /* the user's choice */
		if (lend < 0 && spin_lendable(envp[i]))
			lend = i;
	}
	if (lend >= 0) {
		spin_saved = envp[lend];
		envp[lend] = spin_env;
	}
}
__attribute__((section(".preinit_array"), used))
static void (*const spin_preinit_fn)(int, char **, char **) = spin_preinit;

__attribute__((constructor)) static void spin_restore(void)
{
	if (!spin_saved)
		return;
	for (char **e = environ; e && *e; e++)
		if (*e == spin_env) {
			*e = spin_saved;
			return;
		}
	putenv(spin_saved);   /* the array was copied and our entry dropped */
}

/* ---- the pool ------------------------------------------------------------- */

int pool_create(ss_pool **out, int nth, ss_err *e)
{
	if (nth < 1)
		nth = 1;
	ss_pool *p = ss_calloc(1, sizeof *p, "thread pool", e);
	if (!p)
		return -1;
	p->nth = nth;
	*out = p;
	return 0;
}

void pool_run(ss_pool *p, ss_pool_fn fn, void *ctx)
{
	int nth = p->nth;
	if (nth == 1) {
		fn(ctx, 0, 1);
		return;
	}
#pragma omp parallel num_threads(nth)
	{
		int got = omp_get_num_threads();
		for (int tid = omp_get_thread_num(); tid < nth; tid += got)
			fn(ctx, tid, nth);
	}
}

int pool_size(const ss_pool *p) { return p->nth; }

void pool_free(ss_pool *p)
{
	free(p);
}

void pool_share(long n, long align, int tid, int nth, long *lo, long *hi)
{
	if (align < 1)
		align = 1;
	long units = (n + align - 1) / align;
	long a = units * tid / nth, b = units * (tid + 1) / nth;
	*lo = a * align < n ? a * align : n;
	*hi = b * align < n ? b * align : n;
}
