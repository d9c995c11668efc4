/* pool.h - a fixed set of worker threads for the forward pass.
 *
 * pool_run(p, fn, ctx) calls fn(ctx, tid, nth) once on each of the nth
 * threads (the caller is tid 0) and returns when all are done.  Work is
 * divided statically by tid, so results are deterministic for a fixed
 * thread count.  The threads are OpenMP's (one `omp parallel` region per
 * pool_run), the team oneDNN's products run on; so call pool_run outside
 * any parallel region (inside one, OpenMP runs it on one thread: the same
 * results, slower). */
#ifndef SS_POOL_H
#define SS_POOL_H

#include "util/err.h"

typedef struct ss_pool ss_pool;
typedef void (*ss_pool_fn)(void *ctx, int tid, int nth);

int pool_create(ss_pool **out, int nth, ss_err *e);
void pool_run(ss_pool *p, ss_pool_fn fn, void *ctx);
int pool_size(const ss_pool *p);
void pool_free(ss_pool *p);

/* The [lo, hi) share of n items (contiguous) of thread tid of nth, with
 * boundaries rounded to multiples of `align`. */
void pool_share(long n, long align, int tid, int nth, long *lo, long *hi);

#endif
