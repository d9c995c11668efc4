/* replay.c - run a harness's LLVMFuzzerTestOneInput() on files, without
 * libFuzzer: `replay_NAME FILE...` (used by make check on
 * tests/fuzz/regress/NAME/ and the seed corpora).  Exit 0 when every input
 * was processed; a sanitizer or a crash ends it non-zero. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* optional, as in libFuzzer: one-time set-up before the first input */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

int main(int argc, char **argv)
{
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		if (!f) {
			perror(argv[i]);
			return 1;
		}
		size_t cap = 4096, n = 0, r;
		uint8_t *buf = malloc(cap);
		while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
			n += r;
			if (n == cap) {
				uint8_t *nb = realloc(buf, cap *= 2);
				if (!nb) {
					free(buf);
					buf = NULL;
				}
				buf = nb;
			}
		}
		fclose(f);
		if (!buf) {
			fprintf(stderr, "%s: out of memory\n", argv[i]);
			return 1;
		}
		LLVMFuzzerTestOneInput(buf, n);
		free(buf);
	}
	return 0;
}
