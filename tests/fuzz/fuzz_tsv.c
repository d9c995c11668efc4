/* fuzz_tsv.c - the TSV reader (tsv.c) on arbitrary bytes: open, look up
 * columns, read every row, convert every field as an integer and a number.
 * Checks the reader's promises: fields are NUL-terminated with the reported
 * length, errors carry a message. */
#include "fuzz.h"
#include "io/tsv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_tmpfile("tsv", data, size);
	if (!path)
		return 0;
	ss_tsv *t;
	ss_err e = {0};
	if (tsv_open(&t, path, &e)) {
		if (!e.msg[0])
			abort();
		return 0;
	}
	int nc = tsv_ncols(t);
	static const char *const want[] = {"layer", "pos"};
	int idx[2];
	ss_err e1 = {0};
	(void)tsv_require(t, want, idx, 2, &e1);
	for (int i = 0; i < nc; i++)
		if (tsv_col(t, tsv_colname(t, i)) < 0)
			abort();
	int r;
	while ((r = tsv_next(t, &e)) == 1) {
		for (int i = 0; i < nc; i++) {
			size_t len;
			const char *s = tsv_field(t, i, &len);
			if (s[len] != '\0')
				abort();
			long v;
			double d;
			ss_err e2 = {0};
			(void)tsv_long(t, i, &v, &e2);
			(void)tsv_double(t, i, &d, &e2);
		}
	}
	if (r < 0 && !e.msg[0])
		abort();
	tsv_close(t);
	return 0;
}
