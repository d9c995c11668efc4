/* pool.c - worker threads; see pool.h.
 *
 * A forward pass hands the pool a few hundred short jobs per layer set
 * (one per projection, norm, attention ...) with little serial work between
 * them.  Waking a sleeping thread through a condition variable costs tens
 * to hundreds of microseconds on a virtual machine (the idle vCPU halts and
 * must be woken by the host), which added up to several percent of a
 * 512-token prefill.  So both sides first spin on an atomic counter for a
 * bounded time (SPIN_NS), yielding the CPU now and then to any other
 * runnable thread, and only then sleep on the condition variable. */
#include "util/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#ifdef __x86_64__
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

#define SPIN_NS 2000000L   /* 2 ms: longer than most gaps between jobs, short next to a layer */

struct ss_pool {
	int nth;
	pthread_t *th;
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	atomic_ulong gen;       /* incremented per job (release: fn, ctx are set) */
	atomic_int pending;     /* workers still running the job */
	atomic_int quit;
	int sleepers;           /* workers waiting on go (under mu) */
	int waiting;            /* the caller waits on done (under mu) */
	ss_pool_fn fn;
	void *ctx;
};

typedef struct { ss_pool *p; int tid; } worker_arg;

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static int gen_moved(ss_pool *p, unsigned long seen)
{
	return atomic_load_explicit(&p->gen, memory_order_acquire) != seen || atomic_load(&p->quit);
}

static int job_done(ss_pool *p, unsigned long unused)
{
	(void)unused;
	return !atomic_load_explicit(&p->pending, memory_order_acquire);
}

/* Spin until ready(p, arg) (1) or SPIN_NS pass (0), yielding the CPU now
 * and then: the workers wait for a job this way, the caller for its end. */
static int spin(ss_pool *p, int (*ready)(ss_pool *, unsigned long), unsigned long arg)
{
	long t0 = now_ns();
	for (unsigned i = 1;; i++) {
		if (ready(p, arg))
			return 1;
		cpu_relax();
		if (!(i & 255)) {
			if (now_ns() - t0 > SPIN_NS)
				return 0;
			sched_yield();   /* a runnable thread may have this CPU */
		}
	}
}

static void *worker(void *arg)
{
	worker_arg *w = arg;
	ss_pool *p = w->p;
	int tid = w->tid;
	free(w);
	unsigned long seen = 0;
	for (;;) {
		if (!spin(p, gen_moved, seen)) {
			pthread_mutex_lock(&p->mu);
			p->sleepers++;
			while (!gen_moved(p, seen))
				pthread_cond_wait(&p->go, &p->mu);
			p->sleepers--;
			pthread_mutex_unlock(&p->mu);
		}
		if (atomic_load(&p->quit))
			break;
		seen = atomic_load_explicit(&p->gen, memory_order_acquire);
		p->fn(p->ctx, tid, p->nth);
		if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
			pthread_mutex_lock(&p->mu);
			if (p->waiting)
				pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->mu);
		}
	}
	return NULL;
}

int pool_create(ss_pool **out, int nth, ss_err *e)
{
	if (nth < 1)
		nth = 1;
	ss_pool *p = ss_calloc(1, sizeof *p, "thread pool", e);
	if (!p)
		return -1;
	p->nth = nth;
	atomic_init(&p->gen, 0);
	atomic_init(&p->pending, 0);
	atomic_init(&p->quit, 0);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	p->th = ss_calloc((size_t)nth, sizeof *p->th, "threads", e);
	if (!p->th) {
		free(p);
		return -1;
	}
	for (int i = 1; i < nth; i++) {
		worker_arg *w = malloc(sizeof *w);
		if (!w || (w->p = p, w->tid = i, pthread_create(&p->th[i], NULL, worker, w))) {
			free(w);
			p->nth = i;
			pool_free(p);
			return ss_err_set(e, "cannot create thread %d", i);
		}
	}
	*out = p;
	return 0;
}

void pool_run(ss_pool *p, ss_pool_fn fn, void *ctx)
{
	if (p->nth == 1) {
		fn(ctx, 0, 1);
		return;
	}
	/* workers read fn and ctx only after seeing the new gen; none is
	 * running now (the previous job's pending reached 0) */
	p->fn = fn;
	p->ctx = ctx;
	atomic_store_explicit(&p->pending, p->nth - 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&p->gen, 1, memory_order_acq_rel);
	pthread_mutex_lock(&p->mu);
	if (p->sleepers)
		pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	fn(ctx, 0, p->nth);
	if (!spin(p, job_done, 0)) {
		pthread_mutex_lock(&p->mu);
		p->waiting = 1;
		while (!job_done(p, 0))
			pthread_cond_wait(&p->done, &p->mu);
		p->waiting = 0;
		pthread_mutex_unlock(&p->mu);
	}
}

int pool_size(const ss_pool *p) { return p->nth; }

void pool_free(ss_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->quit, 1);
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (int i = 1; i < p->nth; i++)
		pthread_join(p->th[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	free(p->th);
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
