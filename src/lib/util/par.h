/* par.h - a parallel for over [0, n) with pthreads.
 *
 * The range is cut into `threads` equal contiguous chunks; chunk t runs
 * fn(ctx, lo, hi, t) on its own thread (chunk 0 on the caller's).  Callers
 * that write only their own rows and reduce afterwards in index order get
 * results that do not depend on the number of threads.
 */
#ifndef SS_PAR_H
#define SS_PAR_H

#define SS_PAR_MAX 256

typedef void (*ss_par_fn)(void *ctx, long lo, long hi, int tid);

/* Returns 0; falls back to running a chunk on the caller's thread when a
 * thread cannot be created (same result, less speed). */
int ss_par_for(int threads, long n, ss_par_fn fn, void *ctx);

/* Number of online CPUs (at least 1). */
int ss_ncpu(void);

#endif
