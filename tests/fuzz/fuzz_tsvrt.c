/* fuzz_tsvrt.c - TSV escaping round trip: any bytes written as one field
 * with tsv_put_escaped() read back identical through tsv_next().  (A row
 * equal to the header, or an empty row, is skipped by design: see tsv.h.) */
#include "fuzz.h"
#include "io/tsv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[256];
	if (!path[0])
		snprintf(path, sizeof path, "%s/ssfuzz-tsvrt-%ld",
		         access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (long)getpid());
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	fputs("field\tn\n", f);
	tsv_put_escaped(f, (const char *)data, size);
	fputs("\t1\n", f);
	if (fclose(f))
		return 0;
	ss_tsv *t;
	ss_err e = {0};
	if (tsv_open(&t, path, &e))
		abort();
	if (tsv_next(t, &e) != 1)
		abort(); /* the row "<escaped>\t1" is never blank nor the header */
	size_t len;
	const char *s = tsv_field(t, 0, &len);
	if (len != size || (size && memcmp(s, data, size)))
		abort();
	if (tsv_next(t, &e) != 0)
		abort();
	tsv_close(t);
	return 0;
}
