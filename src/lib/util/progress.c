/* progress.c - see progress.h. */
#define _POSIX_C_SOURCE 200809L
#include "util/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

double ss_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void ss_progress_start(ss_progress *p, const char *what)
{
	p->on = isatty(2) && !getenv("SINKSCOPE_NO_PROGRESS");
	p->t0 = p->last = ss_now();
	p->what = what;
}

void ss_progress_update(ss_progress *p, double done, double total, const char *unit)
{
	if (!p->on)
		return;
	double t = ss_now();
	if (t - p->last < 0.2 && done < total)
		return;
	p->last = t;
	double el = t - p->t0, rate = el > 0 ? done / el : 0;
	double eta = rate > 0 ? (total - done) / rate : 0;
	fprintf(stderr, "\r%s: %.0f/%.0f %s, %.1f %s/s, ETA %.0f s   ", p->what, done, total, unit,
	        rate, unit, eta);
}

void ss_progress_end(ss_progress *p)
{
	if (p->on)
		fprintf(stderr, "\r%60s\r", "");
}
