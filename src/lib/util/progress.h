/* progress.h - progress lines on stderr, only when stderr is a terminal. */
#ifndef SS_PROGRESS_H
#define SS_PROGRESS_H

typedef struct ss_progress {
	int on;          /* stderr is a terminal and not disabled */
	double t0;       /* start time, seconds */
	double last;     /* time of the last line */
	const char *what;
} ss_progress;

/* Monotonic seconds. */
double ss_now(void);
void ss_progress_start(ss_progress *p, const char *what);
/* Report done of total units (rate and ETA derived); rate-limited to 5/s. */
void ss_progress_update(ss_progress *p, double done, double total, const char *unit);
/* Clear the line. */
void ss_progress_end(ss_progress *p);

#endif
