/* tok_field.c - reading members of the tokenizer.json tree for the loader:
 * strings, booleans and copies, every error naming the file and the JSON
 * path of the member ("tokenizer.json:model.fuse_unk: expected true or
 * false").  Shared by tok_comp.c, tok_vocab.c and tok_load.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tok/tok_impl.h"

int tok_bad(tok_ld *L, const char *path, const char *fmt, const char *arg)
{
	char msg[512];
	snprintf(msg, sizeof msg, fmt, arg);
	return ss_err_set(L->e, "%s:%s: %s", L->name, path, msg);
}

const char *tok_jstr(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Optional boolean member (absent or null = def). */
int tok_jbool(tok_ld *L, json_t *o, const char *key, int def, const char *path, int *out)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		*out = def;
		return 0;
	}
	if (!json_is_boolean(v)) {
		char p[TOK_PATHMAX];
		snprintf(p, sizeof p, "%s.%s", path, key);
		return tok_bad(L, p, "expected true or false%s", "");
	}
	*out = json_is_true(v);
	return 0;
}

int tok_jcopy(tok_ld *L, json_t *o, const char *key, const char *path, char **out, size_t *n)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_string(v)) {
		char p[TOK_PATHMAX];
		snprintf(p, sizeof p, "%s.%s", path, key);
		return tok_bad(L, p, "missing or not a string%s", "");
	}
	*n = json_string_length(v);
	*out = malloc(*n + 1);
	if (!*out)
		return ss_err_set(L->e, "out of memory");
	memcpy(*out, json_string_value(v), *n + 1);
	return 0;
}
