/* mem.c - a run's memory against --max-memory; see mem.h. */
#include "util/mem.h"

#include <unistd.h>

#include "util/progress.h"

int ss_max_memory(const char *s, double *max, ss_err *e)
{
	if (s) {
		if (ss_parse_size(s, max) < 0)
			return ss_err_status(e, SS_EXIT_USAGE, "--max-memory: bad size '%s' (e.g. 20G, 512M)", s);
		return 0;
	}
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	*max = pages > 0 && psz > 0 ? 0.9 * (double)pages * (double)psz : 1e18;
	return 0;
}

int ss_mem_check(double need, double mapped, double max, const char *prog, const char *who,
                 const char *name, long T, ss_err *e)
{
	char s_need[32], s_w[32], s_max[32];
	ss_format_size(need, s_need, sizeof s_need);
	ss_format_size(mapped, s_w, sizeof s_w);
	ss_format_size(max, s_max, sizeof s_max);
	if (need > max)
		return ss_err_set(e, "%s: %ld tokens need about %s besides the mapped weights (%s), "
		                  "more than --max-memory %s", who, T, s_need, s_w, s_max);
	ss_progress pg; /* only to ask whether progress lines are on (a terminal) */
	ss_progress_start(&pg, prog);
	if (pg.on || need >= 1073741824.0)
		ss_warn(prog, "%s: %ld tokens: about %s of memory besides the mapped weights (%s)", name, T,
		        s_need, s_w);
	return 0;
}
