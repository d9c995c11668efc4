/* mkbig - write a random Qwen2ForCausalLM in Hugging Face layout, fast.
 *
 *   mkbig [options] DIR        writes DIR/config.json,
 *                              DIR/model.safetensors.index.json and
 *                              DIR/model-0000i-of-0000n.safetensors (bf16)
 *   mkbig --size [options]     prints the bytes the shards will take
 *
 * Defaults are Qwen2.5-14B's shapes (hidden 5120, 48 layers, 40 heads,
 * 8 KV heads, head_dim 128, intermediate 13824, vocab 152064, q/k/v bias,
 * untied lm_head, rope_theta 1e6, rms_norm_eps 1e-6): 29.5 GB.  For the
 * larger-than-memory benchmark (tests/bench/big/actdump.sh), where the
 * torch writer (mkmodel.py) would need the whole model in memory.
 *
 * Tensors are generated one at a time and streamed to disk: matrices and
 * biases ~ N(0, 0.02) (sum of four uniforms, Irwin-Hall: close enough to
 * normal for a random model), norm weights 1.  Values depend only on the
 * seed and the tensor's name (splitmix64 of an FNV hash seeds xoshiro256+).
 * Shards follow save_pretrained: tensors in model order, a new shard when
 * one would exceed --shard-bytes; inside a shard, data in name order as
 * the safetensors library writes it.  Written pages are flushed (while the
 * next 256 MB are generated) and dropped from the page cache as it goes, so
 * writing 30 GB leaves memory alone. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/st.h"

#define PROG "mkbig"

typedef struct tdesc {
	char name[96];
	long shape[2];
	int rank;
	int kind;        /* 0 matrix/bias ~N(0, 0.02), 1 ones */
	size_t bytes;
	int shard;
	size_t off;      /* data offset inside its shard */
} tdesc;

static long D = 5120, L = 48, H = 40, KV = 8, HD = 128, F = 13824, V = 152064;
static double shard_max = 4e9;
static uint64_t seed = 1;

static tdesc *T;
static size_t nt;

static void die(const char *fmt, const char *a)
{
	fprintf(stderr, PROG ": ");
	fprintf(stderr, fmt, a);
	fprintf(stderr, "\n");
	exit(1);
}

static void add(int kind, long a, long b, const char *fmt, long l)
{
	tdesc *t = &T[nt++];
	memset(t, 0, sizeof *t);
	snprintf(t->name, sizeof t->name, fmt, l);
	t->kind = kind;
	t->rank = b ? 2 : 1;
	t->shape[0] = a;
	t->shape[1] = b;
	t->bytes = (size_t)a * (size_t)(b ? b : 1) * 2;
}

static void build(void)
{
	T = calloc((size_t)(12 * L + 3), sizeof *T);
	if (!T)
		die("%s", "out of memory");
	long q = H * HD, kv = KV * HD;
	add(0, V, D, "model.embed_tokens.weight", 0);
	for (long l = 0; l < L; l++) {
		add(1, D, 0, "model.layers.%ld.input_layernorm.weight", l);
		add(0, q, D, "model.layers.%ld.self_attn.q_proj.weight", l);
		add(0, q, 0, "model.layers.%ld.self_attn.q_proj.bias", l);
		add(0, kv, D, "model.layers.%ld.self_attn.k_proj.weight", l);
		add(0, kv, 0, "model.layers.%ld.self_attn.k_proj.bias", l);
		add(0, kv, D, "model.layers.%ld.self_attn.v_proj.weight", l);
		add(0, kv, 0, "model.layers.%ld.self_attn.v_proj.bias", l);
		add(0, D, q, "model.layers.%ld.self_attn.o_proj.weight", l);
		add(1, D, 0, "model.layers.%ld.post_attention_layernorm.weight", l);
		add(0, F, D, "model.layers.%ld.mlp.gate_proj.weight", l);
		add(0, F, D, "model.layers.%ld.mlp.up_proj.weight", l);
		add(0, D, F, "model.layers.%ld.mlp.down_proj.weight", l);
	}
	add(1, D, 0, "model.norm.weight", 0);
	add(0, V, D, "lm_head.weight", 0);
	/* shards in model order */
	int sh = 0;
	double cur = 0;
	for (size_t i = 0; i < nt; i++) {
		if (cur > 0 && cur + (double)T[i].bytes > shard_max) {
			sh++;
			cur = 0;
		}
		T[i].shard = sh;
		cur += (double)T[i].bytes;
	}
}

static int nshards(void) { return nt ? T[nt - 1].shard + 1 : 0; }

static int cmp_name(const void *a, const void *b)
{
	return strcmp((*(tdesc *const *)a)->name, (*(tdesc *const *)b)->name);
}

/* ---- random values ------------------------------------------------------ */

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

typedef struct rng { uint64_t s[4]; } rng;

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next(rng *r)   /* xoshiro256+ */
{
	uint64_t *s = r->s, res = s[0] + s[3], t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

static void rng_seed(rng *r, const char *name)
{
	uint64_t h = 1469598103934665603ull ^ seed;
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&h);
}

/* n bf16 values ~ N(0, 0.02): (u1+u2+u3+u4 - 2) * sqrt(3) is N(0,1) to
 * within Irwin-Hall's tails; each u is 16 bits of one 64-bit draw. */
static void fill_normal(uint16_t *dst, size_t n, rng *r)
{
	const float scale = 0.02f * 1.7320508f / 65536.0f;
	for (size_t i = 0; i < n; i++) {
		uint64_t x = next(r);
		int32_t s = (int32_t)(x & 0xffff) + (int32_t)((x >> 16) & 0xffff) +
		            (int32_t)((x >> 32) & 0xffff) + (int32_t)(x >> 48) - 131070;
		float f = (float)s * scale;
		uint32_t u;
		memcpy(&u, &f, 4);
		u += 0x7fffu + ((u >> 16) & 1);   /* round to nearest even */
		dst[i] = (uint16_t)(u >> 16);
	}
}

/* ---- writing ------------------------------------------------------------- */

#define CHUNK (8u << 20)   /* elements per write: 16 MB */
#define SEG ((off_t)256 << 20) /* write-back segment */

static void write_all(int fd, const void *p, size_t n, const char *path)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("%s: write failed (disk full?)", path);
		c += w;
		n -= (size_t)w;
	}
}

static void write_shard(const char *dir, int sh, int ns, uint16_t *buf)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/model-%05d-of-%05d.safetensors", dir, sh + 1, ns);
	tdesc **v = malloc(nt * sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < nt; i++)
		if (T[i].shard == sh)
			v[k++] = &T[i];
	qsort(v, k, sizeof *v, cmp_name);
	json_t *hdr = json_object();
	size_t off = 0;
	for (size_t i = 0; i < k; i++) {
		json_t *shape = json_array();
		for (int d = 0; d < v[i]->rank; d++)
			json_array_append_new(shape, json_integer(v[i]->shape[d]));
		v[i]->off = off;
		json_object_set_new(hdr, v[i]->name,
		                    json_pack("{s:s, s:o, s:[I,I]}", "dtype", "BF16", "shape", shape,
		                              "data_offsets", (json_int_t)off, (json_int_t)(off + v[i]->bytes)));
		off += v[i]->bytes;
	}
	json_object_set_new(hdr, "__metadata__", json_pack("{s:s}", "format", "pt"));
	char *js = json_dumps(hdr, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(hdr);
	size_t hl = strlen(js), pad = (8 - hl % 8) % 8;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die("%s: cannot create", path);
	unsigned char len8[8];
	uint64_t n8 = hl + pad;
	for (int i = 0; i < 8; i++)
		len8[i] = (unsigned char)(n8 >> (8 * i));
	write_all(fd, len8, 8, path);
	write_all(fd, js, hl, path);
	write_all(fd, "        ", pad, path);
	free(js);
	off_t flushed = 0, started = 0, pos = (off_t)(8 + n8);
	for (size_t i = 0; i < k; i++) {
		rng r;
		rng_seed(&r, v[i]->name);
		size_t n = v[i]->bytes / 2;
		for (size_t done = 0; done < n; done += CHUNK) {
			size_t c = n - done < CHUNK ? n - done : CHUNK;
			if (v[i]->kind == 1)
				for (size_t j = 0; j < c; j++)
					buf[j] = 0x3f80;   /* 1.0 */
			else
				fill_normal(buf, c, &r);
			write_all(fd, buf, c * 2, path);
			pos += (off_t)(c * 2);
			if (pos - started >= SEG) {
				/* start writing back this segment; wait for the one
				 * before and drop it from the page cache */
				(void)sync_file_range(fd, started, pos - started, SYNC_FILE_RANGE_WRITE);
				if (started > flushed) {
					if (sync_file_range(fd, flushed, started - flushed, SYNC_FILE_RANGE_WAIT_BEFORE |
					                    SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) < 0)
						die("%s: write-back failed", path);
					(void)posix_fadvise(fd, flushed, started - flushed, POSIX_FADV_DONTNEED);
				}
				flushed = started;
				started = pos;
			}
		}
	}
	if (fdatasync(fd) < 0)
		die("%s: fdatasync failed", path);
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (close(fd) < 0)
		die("%s: close failed", path);
	free(v);
}

static void write_json(const char *dir, const char *name, json_t *o, size_t flags)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (json_dump_file(o, path, JSON_INDENT(2) | flags) < 0)
		die("%s: cannot write", path);
	json_decref(o);
}

static void usage(int st)
{
	fprintf(st ? stderr : stdout,
	        "usage: " PROG " [--size] [--layers N] [--hidden D] [--heads H] [--kv-heads K] "
	        "[--head-dim d] [--inter F] [--vocab V] [--shard-bytes B] [--seed S] DIR\n");
	exit(st);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"size", no_argument, 0, 's'}, {"layers", required_argument, 0, 'l'},
		{"hidden", required_argument, 0, 'd'}, {"heads", required_argument, 0, 'h'},
		{"kv-heads", required_argument, 0, 'k'}, {"head-dim", required_argument, 0, 'e'},
		{"inter", required_argument, 0, 'f'}, {"vocab", required_argument, 0, 'v'},
		{"shard-bytes", required_argument, 0, 'b'}, {"seed", required_argument, 0, 'r'},
		{"help", no_argument, 0, 'H'}, {0, 0, 0, 0}};
	int size_only = 0, c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's': size_only = 1; break;
		case 'l': L = atol(optarg); break;
		case 'd': D = atol(optarg); break;
		case 'h': H = atol(optarg); break;
		case 'k': KV = atol(optarg); break;
		case 'e': HD = atol(optarg); break;
		case 'f': F = atol(optarg); break;
		case 'v': V = atol(optarg); break;
		case 'b': shard_max = atof(optarg); break;
		case 'r': seed = strtoull(optarg, NULL, 10); break;
		case 'H': usage(0); break;
		default: usage(2);
		}
	}
	if (D < 1 || L < 1 || H < 1 || KV < 1 || H % KV || HD < 2 || HD % 2 || F < 1 || V < 1 ||
	    !(shard_max > 0))
		die("%s", "bad shape option");
	build();
	size_t total = 0;
	for (size_t i = 0; i < nt; i++)
		total += T[i].bytes;
	if (size_only) {
		printf("%zu\n", total + (size_t)nshards() * 65536);   /* + headers, generously */
		return 0;
	}
	if (optind != argc - 1)
		usage(2);
	const char *dir = argv[optind];
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		die("%s: cannot create directory", dir);
	uint16_t *buf = malloc((size_t)CHUNK * 2);
	if (!buf)
		die("%s", "out of memory");
	int ns = nshards();
	for (int s = 0; s < ns; s++) {
		write_shard(dir, s, ns, buf);
		fprintf(stderr, PROG ": shard %d of %d written\n", s + 1, ns);
	}
	free(buf);
	/* the index, as save_pretrained writes it */
	json_t *wm = json_object();
	for (size_t i = 0; i < nt; i++) {
		char f[64];
		snprintf(f, sizeof f, "model-%05d-of-%05d.safetensors", T[i].shard + 1, ns);
		json_object_set_new(wm, T[i].name, json_string(f));
	}
	json_t *idx = json_pack("{s:{s:I}, s:o}", "metadata", "total_size", (json_int_t)total,
	                        "weight_map", wm);
	write_json(dir, "model.safetensors.index.json", idx, JSON_SORT_KEYS);
	json_t *cfg = json_pack("{s:[s], s:f, s:i, s:i, s:s, s:i, s:f, s:i, s:I, s:i, s:s, s:i, s:i, s:i,"
	                        " s:f, s:f, s:I, s:b, s:s, s:s, s:b, s:b, s:i}",
	                        "architectures", "Qwen2ForCausalLM", "attention_dropout", 0.0,
	                        "bos_token_id", 151643, "eos_token_id", 151643, "hidden_act", "silu",
	                        "hidden_size", (int)D, "initializer_range", 0.02,
	                        "intermediate_size", (int)F, "max_position_embeddings", (json_int_t)131072,
	                        "max_window_layers", (int)L, "model_type", "qwen2",
	                        "num_attention_heads", (int)H, "num_hidden_layers", (int)L,
	                        "num_key_value_heads", (int)KV, "rms_norm_eps", 1e-6,
	                        "rope_theta", 1000000.0,
	                        "sliding_window", (json_int_t)131072, "tie_word_embeddings", 0,
	                        "torch_dtype", "bfloat16", "transformers_version", "4.43.1",
	                        "use_cache", 1, "use_sliding_window", 0, "vocab_size", (int)V);
	if (!cfg)
		die("%s", "config.json: json_pack failed");
	if (HD * H != D)
		json_object_set_new(cfg, "head_dim", json_integer(HD));
	write_json(dir, "config.json", cfg, JSON_PRESERVE_ORDER);
	return 0;
}
