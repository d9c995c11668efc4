/* tok_config.c - the part of tokenizer_config.json that changes token ids.
 *
 * transformers' LlamaTokenizerFast, CodeLlamaTokenizerFast and
 * GemmaTokenizerFast (the classes AutoTokenizer loads for
 * tokenizer_class "LlamaTokenizer[Fast]" etc.) replace tokenizer.json's
 * post-processor when they are built: the new template is
 * [bos_token if add_bos_token] $A [eos_token if add_eos_token], with
 * add_bos_token defaulting to true and add_eos_token to false.  This is how
 * DeepSeek-V3, DeepSeek-R1 and the R1-Distill models get their
 * <｜begin▁of▁sentence｜> although their tokenizer.json only has a ByteLevel
 * post-processor.  Every other class keeps tokenizer.json's post-processor
 * (Qwen2Tokenizer has no BOS; Llama-3's PreTrainedTokenizerFast has it in
 * tokenizer.json). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tok/tok_impl.h"

static const char *const template_classes[] = {"LlamaTokenizer", "CodeLlamaTokenizer",
                                               "GemmaTokenizer"};

static int is_template_class(const char *c)
{
	size_t n = strlen(c);
	if (n > 4 && !strcmp(c + n - 4, "Fast"))
		n -= 4;
	for (size_t i = 0; i < sizeof template_classes / sizeof *template_classes; i++)
		if (strlen(template_classes[i]) == n && !strncmp(c, template_classes[i], n))
			return 1;
	return 0;
}

/* add_bos_token / add_eos_token: absent or null gives the default. */
static int flag(json_t *root, const char *key, int dflt, const char *path, int *v, ss_err *e)
{
	json_t *x = json_object_get(root, key);
	if (!x || json_is_null(x)) {
		*v = dflt;
		return 0;
	}
	if (!json_is_boolean(x))
		return ss_err_set(e, "%s:%s: expected true, false or null", path, key);
	*v = json_is_true(x);
	return 0;
}

/* The id of bos_token / eos_token: a string or an AddedToken object with a
 * "content" string. */
static int special_id(const tok *t, json_t *root, const char *key, const char *path, int32_t *id,
                      ss_err *e)
{
	json_t *x = json_object_get(root, key);
	if (json_is_object(x))
		x = json_object_get(x, "content");
	if (!json_is_string(x))
		return ss_err_set(e, "%s:%s: missing or not a string, but add_%s is true", path, key, key);
	*id = tok_id(t, json_string_value(x), json_string_length(x));
	if (*id < 0)
		return ss_err_set(e, "%s:%s: '%s' is not a token of the tokenizer", path, key,
		                  json_string_value(x));
	return 0;
}

int tok_apply_config(tok *t, const char *path, int *applied, ss_err *e)
{
	*applied = 0;
	json_error_t je;
	json_t *root = json_load_file(path, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &je);
	if (!root) {
		if (je.line < 0)
			return ss_err_set(e, "%s: %s", path, je.text);
		return ss_err_set(e, "%s:%d:%d: not valid JSON: %s", path, je.line, je.column, je.text);
	}
	int rc = -1;
	if (!json_is_object(root)) {
		ss_err_set(e, "%s: expected a JSON object", path);
		goto done;
	}
	json_t *cls = json_object_get(root, "tokenizer_class");
	if (cls && !json_is_null(cls) && !json_is_string(cls)) {
		ss_err_set(e, "%s:tokenizer_class: expected a string", path);
		goto done;
	}
	if (!json_is_string(cls) || !is_template_class(json_string_value(cls))) {
		rc = 0;
		goto done;
	}
	int bos = 1, eos = 0;
	int32_t bid = -1, eid = -1;
	if (flag(root, "add_bos_token", 1, path, &bos, e) || flag(root, "add_eos_token", 0, path, &eos, e))
		goto done;
	if ((bos && special_id(t, root, "bos_token", path, &bid, e)) ||
	    (eos && special_id(t, root, "eos_token", path, &eid, e)))
		goto done;
	int32_t *pre = bos ? malloc(sizeof *pre) : NULL, *suf = eos ? malloc(sizeof *suf) : NULL;
	if ((bos && !pre) || (eos && !suf)) {
		free(pre);
		free(suf);
		ss_err_set(e, "out of memory");
		goto done;
	}
	if (pre)
		pre[0] = bid;
	if (suf)
		suf[0] = eid;
	free(t->post_pre);
	free(t->post_suf);
	t->post_pre = pre;
	t->n_post_pre = bos ? 1 : 0;
	t->post_suf = suf;
	t->n_post_suf = eos ? 1 : 0;
	*applied = 1;
	rc = 0;
done:
	json_decref(root);
	return rc;
}

int tok_apply_config_beside(tok *t, const char *tokenizer_path, int *applied, ss_err *e)
{
	*applied = 0;
	const char *sl = strrchr(tokenizer_path, '/');
	size_t dn = sl ? (size_t)(sl - tokenizer_path) + 1 : 0;
	size_t n = dn + sizeof "tokenizer_config.json";
	char *p = malloc(n);
	if (!p)
		return ss_err_set(e, "out of memory");
	snprintf(p, n, "%.*stokenizer_config.json", (int)dn, tokenizer_path);
	FILE *f = fopen(p, "rb");
	int rc = 0;
	if (f) {
		fclose(f);
		rc = tok_apply_config(t, p, applied, e);
	}
	free(p);
	return rc;
}
