/* par.c - parallel for; see par.h. */
#include "util/par.h"

#include <pthread.h>
#include <unistd.h>

typedef struct job {
	ss_par_fn fn;
	void *ctx;
	long lo, hi;
	int tid;
} job;

static void *run(void *a)
{
	job *j = a;
	j->fn(j->ctx, j->lo, j->hi, j->tid);
	return NULL;
}

int ss_ncpu(void)
{
	long c = sysconf(_SC_NPROCESSORS_ONLN);
	return c < 1 ? 1 : (int)c;
}

int ss_par_for(int threads, long n, ss_par_fn fn, void *ctx)
{
	if (threads < 1)
		threads = 1;
	if (threads > SS_PAR_MAX)
		threads = SS_PAR_MAX;
	if (threads > n)
		threads = n > 0 ? (int)n : 1;
	if (threads == 1) {
		fn(ctx, 0, n, 0);
		return 0;
	}
	job jobs[SS_PAR_MAX];
	pthread_t th[SS_PAR_MAX];
	int started[SS_PAR_MAX];
	for (int t = 0; t < threads; t++) {
		jobs[t] = (job){fn, ctx, n * t / threads, n * (t + 1) / threads, t};
		started[t] = t > 0 && pthread_create(&th[t], NULL, run, &jobs[t]) == 0;
	}
	run(&jobs[0]);
	for (int t = 1; t < threads; t++) {
		if (started[t])
			pthread_join(th[t], NULL);
		else
			run(&jobs[t]);
	}
	return 0;
}
