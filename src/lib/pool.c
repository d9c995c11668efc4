/* pool.c - worker threads; see pool.h. */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>

struct ss_pool {
	int nth;
	pthread_t *th;
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	unsigned long gen;  /* incremented per job */
	int pending;        /* workers still running the job */
	int quit;
	ss_pool_fn fn;
	void *ctx;
};

typedef struct { ss_pool *p; int tid; } worker_arg;

static void *worker(void *arg)
{
	worker_arg *w = arg;
	ss_pool *p = w->p;
	int tid = w->tid;
	free(w);
	unsigned long seen = 0;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->gen == seen && !p->quit)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->quit)
			break;
		seen = p->gen;
		ss_pool_fn fn = p->fn;
		void *ctx = p->ctx;
		pthread_mutex_unlock(&p->mu);
		fn(ctx, tid, p->nth);
		pthread_mutex_lock(&p->mu);
		if (--p->pending == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
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
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->ctx = ctx;
	p->pending = p->nth - 1;
	p->gen++;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	fn(ctx, 0, p->nth);
	pthread_mutex_lock(&p->mu);
	while (p->pending)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

int pool_size(const ss_pool *p) { return p->nth; }

void pool_free(ss_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->quit = 1;
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
