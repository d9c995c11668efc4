/* mem.h - a run's memory against --max-memory (sinkscope(7), #16 s4).
 *
 * Every program whose run can outgrow the machine (actdump, swapexp,
 * kvevict, pcaprobe) estimates, before the run, the bytes it will allocate
 * besides the mapped weights (file pages the kernel can drop and reread),
 * with its own estimate from the library (rec_memory, swap_memory,
 * kv_memory, probe_memory), and hands it to ss_mem_check: one message,
 * one limit, one way of printing sizes for all of them.
 */
#ifndef SS_MEM_H
#define SS_MEM_H

#include "util/err.h"
#include "util/opt.h"

/* The option row: `const char *max_mem_opt;` then SS_OPT_MAX_MEMORY(max_mem_opt). */
#define SS_OPT_MAX_MEMORY(var) \
	{"max-memory", 0, SS_OPT_STRING, &(var), "SIZE", "refuse runs needing more (default 90% of RAM)", NULL}

/* The limit of --max-memory s (ss_parse_size: "20G", "512M", "1K"); s NULL:
 * 90% of the physical memory.  A bad size is the usage error
 * "--max-memory: bad size 'x' (e.g. 20G, 512M)", before any data is read. */
int ss_max_memory(const char *s, double *max, ss_err *e);

/* A run over T tokens of `name` that needs `need` bytes besides `mapped`
 * bytes of mapped weights, against the limit max: more is the error
 * "WHO: T tokens need about X besides the mapped weights (W), more than
 * --max-memory M" (who: the model folder or the file the run is refused
 * for); else the estimate is printed under prog's name as "PROG: NAME: T
 * tokens: about X of memory besides the mapped weights (W)" on a terminal
 * (where progress lines are on, progress.h) or when it reaches 1 GiB.
 * Sizes in the unit that fits (ss_format_size). */
int ss_mem_check(double need, double mapped, double max, const char *prog, const char *who,
                 const char *name, long T, ss_err *e);

#endif
