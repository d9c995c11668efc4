/* fuzz_matrix.c - the TSV matrix reader (io/matrix.c, tsne(1)'s stdin) on
 * arbitrary bytes.  Checks its promises: an accepted matrix has rows and
 * numeric columns, every coordinate finite; an error carries a message;
 * selecting by label keeps a subset. */
#include <math.h>

#include "fuzz.h"
#include "io/matrix.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fmemopen(size ? (void *)data : (void *)"", size, "r");
	if (!f)
		return 0;
	ss_matrix m;
	ss_err e = {0};
	int r = matrix_read_tsv(f, "<fuzz>", &m, &e);
	fclose(f);
	if (r < 0) {
		if (!e.msg[0])
			abort();
		matrix_free(&m);
		return 0;
	}
	if (m.n < 1 || m.d < 1 || m.si)
		abort();
	for (long i = 0; i < m.n * m.d; i++)
		if (!isfinite(m.X[i]))
			abort();
	if (!(m.lab = malloc(m.n * sizeof *m.lab)))
		abort();
	for (long i = 0; i < m.n; i++)
		m.lab[i] = (int)(i % 3);
	long n = m.n;
	matrix_select(&m, 1u << 1);
	if (m.n != n / 3 + (n % 3 > 1))
		abort();
	for (long i = 0; i < m.n; i++)
		if (m.lab[i] != 1)
			abort();
	matrix_free(&m);
	return 0;
}
