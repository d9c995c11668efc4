/* fuzz_stindex.c - a sharded model's model.safetensors.index.json (st.c,
 * st_open_dir) on arbitrary bytes, next to two small valid shards
 * (model-00001-of-00002.safetensors: tensor "a", ...-00002-...: tensor
 * "b").  A weight_map naming missing shards, tensors absent from their
 * shard, or tensors of a shard left out must be refused with a message. */
#include <sys/stat.h>
#include "fuzz.h"
#include "io/st.h"

static void shard(const char *dir, const char *name, const char *tensor)
{
	char hdr[128], path[512];
	int n = snprintf(hdr, sizeof hdr,
	                 "{\"%s\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", tensor);
	while (n % 8)
		hdr[n++] = ' ';
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	uint64_t len = (uint64_t)n; /* little-endian on every machine we build on */
	float v[2] = {1.0f, -2.0f};
	fwrite(&len, 8, 1, f);
	fwrite(hdr, 1, (size_t)n, f);
	fwrite(v, sizeof v, 1, f);
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[256], idx[300];
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "%s/ssfuzz-stindex-%ld",
		         access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (long)getpid());
		mkdir(dir, 0700);
		shard(dir, "model-00001-of-00002.safetensors", "a");
		shard(dir, "model-00002-of-00002.safetensors", "b");
		snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", dir);
	}
	FILE *f = fopen(idx, "wb");
	if (!f)
		return 0;
	if (size)
		fwrite(data, 1, size, f);
	fclose(f);
	st_set s;
	memset(&s, 0, sizeof s);
	ss_err e = {0};
	if (st_open_dir(&s, dir, &e)) {
		if (!e.msg[0])
			abort();
		return 0;
	}
	for (size_t i = 0; i < s.n; i++) {
		float x;
		if (s.t[i].n > 0)
			st_to_f32(&x, &s.t[i], s.t[i].n - 1, 1);
	}
	st_close(&s);
	return 0;
}
