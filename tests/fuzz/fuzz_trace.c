/* fuzz_trace.c - the HDF5 contract checks (trace.c, h5io.c) on mutated
 * small files: trace_read() must accept a file or refuse it with a
 * message, never crash; an accepted trace then goes through the sink rule
 * (sink_mask, sink_episodes, sink_score), which must hold for any accepted
 * shapes and values.
 *
 * libhdf5 itself is not instrumented.  On corrupt files it leaks its own
 * metadata-cache and conversion buffers, and it has memory errors of its
 * own (stacks wholly inside libhdf5, see tests/fuzz/README.md).  So leak
 * detection is off for this harness and it runs in fork mode, going on
 * past crashes; tests/fuzz/run then replays each crash and fails only when
 * the faulting frame is in our code.
 * Seeds: small contract files written by h5py at run time (tests/fuzz/run).
 * fuzz-opts: -detect_leaks=0 -fork=1 -ignore_crashes=1
 */
#include "fuzz.h"
#include "sinks/sinks.h"
#include "io/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_tmpfile("trace", data, size);
	if (!path)
		return 0;
	ss_trace tr;
	memset(&tr, 0, sizeof tr);
	ss_err e = {0};
	if (trace_read(path, &tr, &e)) {
		if (!e.msg[0])
			abort();
		trace_free(&tr);
		return 0;
	}
	ss_sink_params p;
	sink_params_default(&p);
	unsigned char *mask = calloc((size_t)(tr.L + 1) * (size_t)tr.T + 1, 1);
	if (mask) {
		ss_err e2 = {0};
		(void)sink_mask(&tr, &p, mask, &e2);
		free(mask);
	}
	ss_episode *eps = NULL;
	size_t n = 0;
	ss_err e3 = {0};
	if (sink_episodes(&tr, &p, &eps, &n, &e3) == 0) {
		for (size_t i = 0; i < n; i++)
			if (eps[i].l_start < 1 || eps[i].l_end > tr.L || eps[i].l_start > eps[i].l_end ||
			    eps[i].pos < 0 || eps[i].pos >= tr.T)
				abort(); /* an episode outside the trace */
		free(eps);
	} else if (!e3.msg[0]) {
		abort();
	}
	for (long l = 1; l <= tr.L; l++)
		(void)sink_score(&tr, l, tr.T - 1);
	trace_free(&tr);
	return 0;
}
