/* test_pool.c - the thread pool on OpenMP's threads: every tid of 0..nth-1
 * runs exactly once per pool_run, with nth threads, and also when OpenMP
 * gives the region fewer (inside a parallel region: a team of one); the
 * environment main sees is the one the program was started with (the
 * kernel's copy, /proc/self/environ), although libgomp was lent
 * GOMP_SPINCOUNT before it started; and the threads are distinct. */
#include <omp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/pool.h"

#define MAXT 16

typedef struct {
	int count[MAXT];        /* runs of each tid */
	int nth_seen[MAXT];
	pthread_t self[MAXT];
	pthread_mutex_t mu;
} job;

static void task(void *ctx, int tid, int nth)
{
	job *j = ctx;
	pthread_mutex_lock(&j->mu);
	j->count[tid]++;
	j->nth_seen[tid] = nth;
	j->self[tid] = pthread_self();
	pthread_mutex_unlock(&j->mu);
}

static void run_check(ss_pool *p, int nth, int distinct)
{
	job j;
	memset(&j, 0, sizeof j);
	pthread_mutex_init(&j.mu, NULL);
	pool_run(p, task, &j);
	for (int t = 0; t < MAXT; t++) {
		assert_int_equal(j.count[t], t < nth ? 1 : 0);
		if (t < nth)
			assert_int_equal(j.nth_seen[t], nth);
	}
	assert_true(pthread_equal(j.self[0], pthread_self()));   /* the caller is tid 0 */
	if (distinct)
		for (int a = 0; a < nth; a++)
			for (int b = a + 1; b < nth; b++)
				assert_false(pthread_equal(j.self[a], j.self[b]));
	pthread_mutex_destroy(&j.mu);
}

static void test_tids(void **st)
{
	for (int nth = 1; nth <= 7; nth++) {
		ss_pool *p = NULL;
		ss_err e = {0};
		assert_int_equal(pool_create(&p, nth, &e), 0);
		assert_int_equal(pool_size(p), nth);
		for (int r = 0; r < 3; r++)
			run_check(p, nth, 1);
		pool_free(p);
	}
}

static void test_fewer_threads(void **st)
{
	ss_pool *p = NULL;
	ss_err e = {0};
	assert_int_equal(pool_create(&p, 5, &e), 0);
	int ok = 1;
#pragma omp parallel num_threads(2)
	{
#pragma omp master
		{
			/* nested: OpenMP runs the inner region on this thread alone */
			job j;
			memset(&j, 0, sizeof j);
			pthread_mutex_init(&j.mu, NULL);
			pool_run(p, task, &j);
			for (int t = 0; t < 5; t++)
				ok &= j.count[t] == 1 && j.nth_seen[t] == 5 && pthread_equal(j.self[t], pthread_self());
			pthread_mutex_destroy(&j.mu);
		}
	}
	assert_true(ok);
	pool_free(p);
}

/* environ against the kernel's copy of the start-up environment */
static void test_environment(void **st)
{
	FILE *f = fopen("/proc/self/environ", "rb");
	if (!f)
		skip();
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	extern char **environ;
	int start = 0, had_spin = 0;
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1, start++) {
		int found = 0;
		for (char **e = environ; *e; e++)
			found |= !strcmp(*e, buf + i);
		if (!found)
			fail_msg("start-up entry '%s' missing from environ", buf + i);
		had_spin |= !strncmp(buf + i, "GOMP_SPINCOUNT=", 15);
	}
	int now = 0;
	for (char **e = environ; *e; e++)
		now++;
	assert_int_equal(now, start);
	if (!had_spin)
		assert_null(getenv("GOMP_SPINCOUNT"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tids),
		cmocka_unit_test(test_fewer_threads),
		cmocka_unit_test(test_environment),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
