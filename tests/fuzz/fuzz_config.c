/* fuzz_config.c - config.json through the architecture table (model.c,
 * config_load) on arbitrary bytes.  An accepted configuration must be
 * self-consistent: positive sizes, heads dividing evenly, a rotary
 * dimension that fits the head. */
#include <sys/stat.h>
#include "fuzz.h"
#include "engine/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[256], cfg[300];
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "%s/ssfuzz-config-%ld",
		         access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (long)getpid());
		mkdir(dir, 0700);
		snprintf(cfg, sizeof cfg, "%s/config.json", dir);
	}
	FILE *f = fopen(cfg, "wb");
	if (!f)
		return 0;
	if (size)
		fwrite(data, 1, size, f);
	fclose(f);
	ss_config c;
	memset(&c, 0, sizeof c);
	ss_err e = {0};
	if (config_load(&c, dir, &e)) {
		if (!e.msg[0])
			abort();
		return 0;
	}
	if (c.dim <= 0 || c.n_layers <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.head_dim <= 0 ||
	    c.n_heads % c.n_kv_heads || c.rotary_dim > c.head_dim || c.rotary_dim < 0 || c.vocab <= 0 ||
	    !config_arch_supported(c.arch))
		abort();
	return 0;
}
