/* gen.h - text generation: prompt formats, stop ids, and the decoding
 * loop on the KV cache (decode.h) with a sampler (sample.h).
 *
 * Prompt formats wrap a problem the way each family's chat template does
 * for one user turn with the generation prompt added (the special tokens
 * are part of the text; the wrapped text is then encoded without the
 * tokenizer's post-processor, as transformers' apply_chat_template does):
 *   raw          the text as given (encoded with the post-processor, so a
 *                tokenizer that adds BOS adds it)
 *   chatml       <|im_start|>user\nTEXT<|im_end|>\n<|im_start|>assistant\n
 *                (Qwen2, Qwen2.5, Qwen3, QwQ; no system turn)
 *   deepseek-r1  <｜begin▁of▁sentence｜><｜User｜>TEXT<｜Assistant｜><think>\n
 *                (DeepSeek-R1 and its Qwen/Llama distills)
 *   llama3       <|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n
 *                TEXT<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n
 */
#ifndef SS_GEN_H
#define SS_GEN_H

#include <stddef.h>
#include <stdint.h>
#include "engine/decode.h"
#include "util/err.h"

typedef enum ss_prompt_fmt {
	SS_PF_RAW = 0, SS_PF_CHATML, SS_PF_DEEPSEEK_R1, SS_PF_LLAMA3, SS_PF_CHATML_THINK,
	SS_PF_LLAMA2_INST, SS_PF_PHI4, SS_PF_N
} ss_prompt_fmt;

/* The one list of prompt formats (actdump(1) --prompt-format, the
 * pipeline's `prompt` key, sinkscope(7)): "raw, chatml, ..." */
extern const char ss_prompt_fmt_list[];
int prompt_fmt_parse(const char *s, ss_prompt_fmt *f, ss_err *e);
/* The wrapped text (malloc'd, NUL-terminated, length in *len). */
char *prompt_wrap(ss_prompt_fmt f, const char *text, size_t n, size_t *len, ss_err *e);

/* Wrap text in format f and encode it with t, appending to out: raw text
 * with the tokenizer's post-processor (its BOS), a chat format without it
 * (the template carries its own special tokens). */
struct tok;
struct tok_ids;
int gen_encode_prompt(struct tok *t, ss_prompt_fmt f, const char *text, size_t n,
                      struct tok_ids *out, ss_err *e);

/* Stop ids: eos_token_id (an integer or a list) of DIR/config.json and,
 * when present, of DIR/generation_config.json.  *ids is malloc'd. */
int gen_eos_ids(const char *dir, int32_t **ids, size_t *n, ss_err *e);

typedef struct ss_gen_opts {
	long max_new;         /* tokens to generate at most */
	double temperature;   /* 0 = greedy */
	double top_p;         /* 1 = off */
	uint64_t seed;
	const int32_t *eos;   /* stop after generating one of these (kept) */
	size_t n_eos;
	long n_ids;           /* sample only ids below this (the tokenizer's
	                       * vocabulary: a model's padded rows beyond it have
	                       * no text); 0 or >= the model's vocab = all */
} ss_gen_opts;

/* Prefill the prompt, then generate up to max_new tokens one at a time
 * (stopping after an EOS id, which is kept).  *out (malloc'd) receives
 * prompt and continuation, *n_out their count, *n_new the continuation's;
 * d must hold n_prompt + max_new positions.  With a recorder on d
 * (dec_record) the last token is run too: it then holds the statistics of
 * all *n_out positions. */
int gen_run(ss_dec *d, const int32_t *prompt, long n_prompt, const ss_gen_opts *o,
            int32_t **out, long *n_out, long *n_new, ss_err *e);

/* Continue *ids (*T of them) with M's KV cache: a decoder made with o for
 * *T + g->max_new positions, the stop ids of M's folder (gen_eos_ids; g's
 * eos and n_eos are ignored), gen_run.  *ids (malloc'd) is then replaced by
 * the whole sequence, *T its length, *n_new the continuation's; st, when
 * not NULL, is initialised and records the statistics of every position
 * while generating (dec_record); *secs: the generation's wall time. */
int gen_continue(const ss_model *M, int32_t **ids, long *T, const ss_dec_opts *o,
                 const ss_gen_opts *g, ss_genstats *st, double *secs, long *n_new, ss_err *e);

#endif
