/* fuzz_st.c - the safetensors container (st.c) on arbitrary bytes: the
 * 8-byte header length, the JSON header and every entry's checks (dtype,
 * shape times size equals the byte range, ranges inside the file, no
 * overlap).  Whatever st_open_file() accepts must be safe to read: every
 * tensor's first and last element are converted to f32. */
#include "fuzz.h"
#include "io/st.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_tmpfile("st", data, size);
	if (!path)
		return 0;
	st_set s;
	memset(&s, 0, sizeof s);
	ss_err e = {0};
	if (st_open_file(&s, path, &e)) {
		if (!e.msg[0])
			abort();
		return 0;
	}
	for (size_t i = 0; i < s.n; i++) {
		const st_tensor *t = &s.t[i];
		if (t->n < 0 || !t->name || (t->n > 0 && !t->data))
			abort();
		float x[2];
		if (t->n > 0) {
			st_to_f32(x, t, 0, 1);
			st_to_f32(x + 1, t, t->n - 1, 1);
		}
		if (st_find(&s, t->name) == NULL)
			abort(); /* every tensor can be found by its name */
	}
	st_close(&s);
	return 0;
}
