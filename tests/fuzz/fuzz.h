/* fuzz.h - shared helpers for the libFuzzer harnesses in tests/fuzz/.
 *
 * Each harness defines LLVMFuzzerTestOneInput().  Built with
 * clang -fsanitize=fuzzer,address,undefined by `make fuzz`; built with the
 * ordinary compiler and tests/fuzz/replay.c as a plain program that replays
 * tests/fuzz/regress/ in `make check`.
 *
 * Parsers that take a path get the input through a private temp file
 * (tmpfs when there is one): the harness tests the same code path users
 * hit, without changing the library's API.
 */
#ifndef SS_FUZZ_H
#define SS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Write data to the harness's temp file (same path for every run of a
 * process) and return its path, or NULL when the write failed. */
static inline const char *fuzz_tmpfile(const char *tag, const uint8_t *data, size_t size)
{
	static char path[256];
	if (!path[0]) {
		const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		snprintf(path, sizeof path, "%s/ssfuzz-%s-%ld", dir, tag, (long)getpid());
	}
	FILE *f = fopen(path, "wb");
	if (!f)
		return NULL;
	if (size && fwrite(data, 1, size, f) != size) {
		fclose(f);
		return NULL;
	}
	if (fclose(f))
		return NULL;
	return path;
}

#endif
