/* gen.c - prompt formats, stop ids and the generation loop (see gen.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "engine/gen.h"
#include "engine/genstats.h"
#include "engine/sample.h"
#include "util/progress.h"
#include "tok/tok.h"

static const struct {
	const char *name, *pre, *post;
} formats[] = {
	[SS_PF_RAW] = {"raw", "", ""},
	[SS_PF_CHATML] = {"chatml", "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n"},
	[SS_PF_DEEPSEEK_R1] = {"deepseek-r1",
	                       "<\xef\xbd\x9c" "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"
	                       "<\xef\xbd\x9cUser\xef\xbd\x9c>",
	                       "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c><think>\n"},
	[SS_PF_LLAMA3] = {"llama3",
	                  "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n",
	                  "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
	[SS_PF_CHATML_THINK] = {"chatml-think", "<|im_start|>user\n",
	                        "<|im_end|>\n<|im_start|>assistant\n<think>\n"},
	[SS_PF_LLAMA2_INST] = {"llama2-inst", "<s>[INST] ", " [/INST] "},
	[SS_PF_PHI4] = {"phi4", "<|im_start|>user<|im_sep|>", "<|im_end|><|im_start|>assistant<|im_sep|>"},
};

const char ss_prompt_fmt_list[] = "raw, chatml, deepseek-r1, llama3, chatml-think, llama2-inst or phi4";

int prompt_fmt_parse(const char *s, ss_prompt_fmt *f, ss_err *e)
{
	for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
		if (!strcmp(s, formats[i].name)) {
			*f = (ss_prompt_fmt)i;
			return 0;
		}
	return ss_err_status(e, SS_EXIT_USAGE,
	                     "--prompt-format: '%s', expected %s", s, ss_prompt_fmt_list);
}

char *prompt_wrap(ss_prompt_fmt f, const char *text, size_t n, size_t *len, ss_err *e)
{
	size_t a = strlen(formats[f].pre), b = strlen(formats[f].post);
	char *s = ss_malloc(a + n + b + 1, 1, "prompt", e);
	if (!s)
		return NULL;
	memcpy(s, formats[f].pre, a);
	memcpy(s + a, text, n);
	memcpy(s + a + n, formats[f].post, b);
	s[a + n + b] = 0;
	*len = a + n + b;
	return s;
}

/* Every special-token marker of the format ("<|im_start|>", "<\xef\xbd\x9cUser\xef\xbd\x9c>":
 * '<' then '|' or U+FF5C, up to the closing pair) must be one token of t;
 * else the template would be encoded as plain text, which is not the
 * prompt the model was trained on. */
static int check_markers(const tok *t, ss_prompt_fmt f, ss_err *e)
{
	static const char bar[] = "\xef\xbd\x9c"; /* U+FF5C FULLWIDTH VERTICAL LINE */
	const char *parts[2] = {formats[f].pre, formats[f].post};
	for (int k = 0; k < 2; k++)
		for (const char *p = parts[k]; (p = strchr(p, '<')); p++) {
			const char *close;
			if (p[1] == '|')
				close = strstr(p + 2, "|>");
			else if (!strncmp(p + 1, bar, 3))
				close = strstr(p + 4, "\xef\xbd\x9c>");
			else
				continue;
			if (!close)
				continue;
			size_t n = (size_t)(close - p) + (p[1] == '|' ? 2 : 4);
			if (tok_id(t, p, n) < 0)
				return ss_err_set(e, "--prompt-format %s: the tokenizer has no %.*s token "
				                  "(the template would be encoded as plain text)",
				                  formats[f].name, (int)n, p);
			p += n - 1;
		}
	return 0;
}

int gen_encode_prompt(struct tok *t, ss_prompt_fmt f, const char *text, size_t n,
                      struct tok_ids *out, ss_err *e)
{
	if (check_markers(t, f, e) < 0)
		return -1;
	size_t len;
	char *s = prompt_wrap(f, text, n, &len, e);
	if (!s)
		return -1;
	int rc = tok_encode(t, s, len, f == SS_PF_RAW ? TOK_POST : 0, out, e);
	free(s);
	return rc;
}

static int add_eos(const char *path, json_t *v, int32_t **ids, size_t *n, ss_err *e)
{
	size_t cnt = json_is_array(v) ? json_array_size(v) : 1;
	for (size_t i = 0; i < cnt; i++) {
		json_t *x = json_is_array(v) ? json_array_get(v, i) : v;
		if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX)
			return ss_err_set(e, "%s:eos_token_id: expected a token id or a list of them", path);
		int32_t id = (int32_t)json_integer_value(x), *g;
		int seen = 0;
		for (size_t k = 0; k < *n; k++)
			seen |= (*ids)[k] == id;
		if (seen)
			continue;
		if (!(g = realloc(*ids, (*n + 1) * sizeof *g)))
			return ss_err_set(e, "out of memory reading %s", path);
		*ids = g;
		g[(*n)++] = id;
	}
	return 0;
}

int gen_eos_ids(const char *dir, int32_t **ids, size_t *n, ss_err *e)
{
	static const char *const files[] = {"config.json", "generation_config.json"};
	*ids = NULL;
	*n = 0;
	for (int f = 0; f < 2; f++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, files[f]);
		if (f == 1 && access(path, F_OK) != 0)
			continue;
		json_error_t je;
		json_t *o = json_load_file(path, 0, &je);
		if (!o) {
			free(*ids);
			*ids = NULL;
			*n = 0;
			return ss_err_set(e, "%s:%d: %s", path, je.line, je.text);
		}
		json_t *v = json_object_get(o, "eos_token_id");
		int rc = v && !json_is_null(v) ? add_eos(path, v, ids, n, e) : 0;
		json_decref(o);
		if (rc < 0) {
			free(*ids);
			*ids = NULL;
			*n = 0;
			return -1;
		}
	}
	return 0;
}

int gen_run(ss_dec *d, const int32_t *prompt, long n_prompt, const ss_gen_opts *o,
            int32_t **out, long *n_out, long *n_new, ss_err *e)
{
	long V = d->m->c.vocab;
	ss_sampler s;
	*out = NULL;
	*n_out = *n_new = 0;
	if (n_prompt < 1)
		return ss_err_set(e, "%s: an empty prompt: nothing to continue", d->m->dir);
	/* the sampler reads the first n of the V logits */
	if (sampler_init(&s, o->n_ids > 0 && o->n_ids < V ? o->n_ids : V, o->temperature, o->top_p, o->seed, e) < 0)
		return -1;
	int32_t *ids = ss_malloc((size_t)n_prompt + o->max_new, sizeof *ids, "generated ids", e);
	float *logits = ss_malloc(V, sizeof *logits, "logits", e);
	int rc = -1;
	if (!ids || !logits)
		goto done;
	memcpy(ids, prompt, n_prompt * sizeof *ids);
	long n = n_prompt;
	if (dec_prefill(d, prompt, n_prompt, NULL, o->max_new > 0 ? logits : NULL, e) < 0)
		goto done;
	for (long k = 0; k < o->max_new; k++) {
		int32_t id = (int32_t)sampler_next(&s, logits);
		ids[n++] = id;
		int stop = 0;
		for (size_t q = 0; q < o->n_eos; q++)
			stop |= id == o->eos[q];
		if (stop || k + 1 == o->max_new) {
			/* recording: the last token through the model too, for its stats */
			if (d->gs && dec_step(d, id, NULL, e) < 0)
				goto done;
			break;
		}
		if (dec_step(d, id, logits, e) < 0)
			goto done;
	}
	*out = ids;
	ids = NULL;
	*n_out = n;
	*n_new = n - n_prompt;
	rc = 0;
done:
	sampler_free(&s);
	free(ids);
	free(logits);
	return rc;
}

int gen_continue(const ss_model *M, int32_t **ids, long *T, const ss_dec_opts *o,
                 const ss_gen_opts *g, ss_genstats *st, double *secs, long *n_new, ss_err *e)
{
	ss_gen_opts go = *g;
	int32_t *eos = NULL, *out = NULL;
	long n = 0;
	ss_dec d;
	if (gen_eos_ids(M->dir, &eos, &go.n_eos, e) < 0)
		return -1;
	go.eos = eos;
	int rc = dec_create(&d, M, *T + go.max_new, o, e);
	if (rc == 0 && st && (rc = gst_init(st, &M->c, *T + go.max_new, e)) == 0)
		dec_record(&d, st);
	if (rc == 0) {
		double t0 = ss_now();
		rc = gen_run(&d, *ids, *T, &go, &out, &n, n_new, e);
		*secs = ss_now() - t0;
		dec_free(&d);
	}
	free(eos);
	if (rc < 0)
		return -1;
	free(*ids);
	*ids = out;
	*T = n;
	return 0;
}
