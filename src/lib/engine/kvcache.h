/* kvcache.h - keys and values of past positions, per layer, for decoding
 * one token at a time and for re-running single positions (swaps).
 *
 * Layout: layer l (1..L) holds k and v as [cap, n_kv_heads * head_dim]
 * rows, one per position, in f32 or bf16 (half the memory; values are
 * rounded to nearest even on the way in and widened exactly on the way
 * out).  Keys are stored after RoPE (and after Qwen3's k_norm), so a row
 * is what the attention of any later query reads.
 */
#ifndef SS_KVCACHE_H
#define SS_KVCACHE_H

#include <stdint.h>
#include "util/err.h"

typedef enum ss_kv_dtype { SS_KV_F32 = 0, SS_KV_BF16 = 1 } ss_kv_dtype;

typedef struct ss_kvcache {
	ss_kv_dtype dtype;
	long n_layers, cap;          /* layers 1..n_layers, positions 0..cap-1 */
	long n_kv_heads, head_dim, kv_dim; /* kv_dim = n_kv_heads * head_dim */
	void **k, **v;               /* [n_layers] -> [cap, kv_dim] */
} ss_kvcache;

/* Parse "f32" / "bf16". */
int kv_dtype_parse(const char *s, ss_kv_dtype *dt, ss_err *e);
/* Bytes kv_init would allocate. */
double kv_bytes(long n_layers, long cap, long kv_dim, ss_kv_dtype dt);
int kv_init(ss_kvcache *kv, long n_layers, long cap, long n_kv_heads, long head_dim,
            ss_kv_dtype dt, ss_err *e);
void kv_free(ss_kvcache *kv);

/* Store n rows (kv_dim floats each) at positions pos..pos+n-1 of layer. */
void kv_put(ss_kvcache *kv, long layer, long pos, long n, const float *k, const float *v);
/* Read one row back as f32. */
void kv_get(const ss_kvcache *kv, long layer, long pos, float *k, float *v);

/* Pointers to f32 keys and values of layer rows 0..n-1 ([n, kv_dim]),
 * for fwd_layer(): the storage itself for f32, else rows widened into
 * the caller's scratch kbuf, vbuf ([n, kv_dim] each). */
void kv_layer_f32(const ss_kvcache *kv, long layer, long n, float *kbuf, float *vbuf,
                  float **k, float **v);

/* bf16 -> f32 is exact (a shift); the other way is st_f32_to_bf16(). */
static inline float kv_bf16_to_f32(uint16_t h)
{
	union { uint32_t u; float f; } c = {(uint32_t)h << 16};
	return c.f;
}

#endif
