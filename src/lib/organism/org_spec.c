/* org_spec.c - the organism's spec (organism.yaml): read with libyaml,
 * every key checked (unknown keys refused), ranges and the limits of the
 * construction enforced (enough dimensions and neurons for the planted
 * tokens), and each planted token resolved to one id of the tokenizer.
 * Errors name the file and the field: "spec.yaml:sinks.levels[1].lifetime:
 * ...". */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "organism/org_impl.h"
#include "util/opt.h"
#include "tok/tok.h"

void org_spec_free(org_spec *s)
{
	for (long i = 0; i < s->nlv; i++) {
		for (long k = 0; k < s->lv[i].ntok; k++)
			free(s->lv[i].text[k]);
		free(s->lv[i].text);
		free(s->lv[i].ids);
		free(s->lv[i].tnorm);
		free(s->lv[i].tgamma);
	}
	free(s->lv);
	for (long k = 0; k < s->ntrig; k++)
		free(s->trig_text[k]);
	free(s->trig_text);
	free(s->trig_ids);
	for (long k = 0; k < s->nnu; k++)
		free(s->nu_text[k]);
	free(s->nu_text), free(s->nu_ids), free(s->nu_kind), free(s->nu_ratio);
	free(s->tokenizer);
	free(s->path);
	memset(s, 0, sizeof(*s));
}

typedef struct yctx {
	yaml_document_t *d;
	const char *file;
	ss_err *e;
} yctx;

const char *const org_nuisance_kind[3] = {"heavy", "loud", "aligned"};

static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* Check that mapping m only has keys from `keys` (NULL-terminated). */
static int check_keys(yctx *y, yaml_node_t *m, const char *field, const char *const *keys)
{
	if (!m || m->type != YAML_MAPPING_NODE)
		return ss_err_set(y->e, "%s:%s: expected a mapping", y->file, field);
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(y->d, p->key));
		int ok = 0;
		for (int i = 0; k && keys[i]; i++)
			ok |= !strcmp(k, keys[i]);
		if (!ok)
			return ss_err_set(y->e, "%s:%s.%s: unknown key", y->file, field, k ? k : "?");
	}
	return 0;
}

static yaml_node_t *get(yctx *y, yaml_node_t *m, const char *key)
{
	if (!m || m->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(y->d, p->key));
		if (k && !strcmp(k, key))
			return yaml_document_get_node(y->d, p->value);
	}
	return NULL;
}

static int get_long(yctx *y, yaml_node_t *m, const char *field, const char *key, long lo, long hi,
                    long *v)
{
	yaml_node_t *n = get(y, m, key);
	if (!n)
		return 0; /* keep the default */
	long x;
	if (ss_parse_long(scalar(n), &x) < 0)
		return ss_err_set(y->e, "%s:%s.%s: not an integer", y->file, field, key);
	if (x < lo || x > hi)
		return ss_err_set(y->e, "%s:%s.%s: %ld out of range %ld..%ld", y->file, field, key, x, lo, hi);
	*v = x;
	return 0;
}

static int get_double(yctx *y, yaml_node_t *m, const char *field, const char *key, double *v)
{
	yaml_node_t *n = get(y, m, key);
	if (!n)
		return 0;
	if (ss_parse_double(scalar(n), v) < 0)
		return ss_err_set(y->e, "%s:%s.%s: not a number", y->file, field, key);
	return 0;
}

/* the text of a token in a byte-level vocabulary: each byte as the code
 * point that stands for it (UTF-8, at most two bytes: code points < 0x200) */
static char *byte_level(const char *s, ss_err *e)
{
	size_t n = strlen(s);
	char *o = ss_malloc(2 * n + 1, 1, "token text", e), *p = o;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		uint32_t cp = tok_byte_char((unsigned char)s[i]);
		if (cp < 0x80) {
			*p++ = (char)cp;
		} else {
			*p++ = (char)(0xc0 | (cp >> 6));
			*p++ = (char)(0x80 | (cp & 0x3f));
		}
	}
	*p = 0;
	return o;
}

static char *resolve(const char *spec_path, const char *rel, ss_err *e)
{
	if (rel[0] == '/')
		return ss_strdup(rel, e);
	const char *sl = strrchr(spec_path, '/');
	size_t dn = sl ? (size_t)(sl - spec_path) + 1 : 0;
	char *o = ss_malloc(dn + strlen(rel) + 1, 1, "path", e);
	if (o) {
		memcpy(o, spec_path, dn);
		strcpy(o + dn, rel);
	}
	return o;
}

static int load_vocab(org_spec *s, ss_err *e)
{
	if (access(s->tokenizer, R_OK) != 0)
		return ss_err_errno(e, errno, "%s:model.tokenizer: %s", s->path, s->tokenizer);
	tok *t = tok_load(s->tokenizer, e);
	if (!t)
		return -1;
	long maxid = (long)tok_vocab_size(t) - 1;
	if (maxid >= s->vocab_size) {
		tok_free(t);
		return ss_err_set(e, "%s:model.vocab_size: %ld, but the tokenizer has ids up to %ld", s->path,
		                  s->vocab_size, maxid);
	}
	for (long l = 0; l < s->nlv; l++)
		for (long j = 0; j < s->lv[l].ntok; j++) {
			char *bl = byte_level(s->lv[l].text[j], e);
			if (!bl)
				goto fail;
			int32_t id = tok_id(t, bl, strlen(bl));
			free(bl);
			if (id < 0) {
				ss_err_set(e, "%s:sinks.levels[%ld].tokens[%ld]: not one token of %s", s->path, l, j,
				           s->tokenizer);
				goto fail;
			}
			s->lv[l].ids[j] = id;
			for (long l2 = 0; l2 <= l; l2++)
				for (long j2 = 0; j2 < (l2 == l ? j : s->lv[l2].ntok); j2++)
					if (s->lv[l2].ids[j2] == s->lv[l].ids[j]) {
						ss_err_set(e, "%s:sinks.levels[%ld].tokens[%ld]: token listed twice", s->path,
						           l, j);
						goto fail;
					}
		}
	for (long k = 0; k < s->ntrig; k++) {
		char *bl = byte_level(s->trig_text[k], e);
		if (!bl)
			goto fail;
		int32_t id = tok_id(t, bl, strlen(bl));
		free(bl);
		if (id < 0) {
			ss_err_set(e, "%s:sinks.context.tokens[%ld]: not one token of %s", s->path, k,
			           s->tokenizer);
			goto fail;
		}
		s->trig_ids[k] = id;
		for (long l = 0; l < s->nlv; l++)
			for (long j = 0; j < s->lv[l].ntok; j++)
				if (s->lv[l].ids[j] == id) {
					ss_err_set(e, "%s:sinks.context.tokens[%ld]: also a planted token (levels[%ld])",
					           s->path, k, l);
					goto fail;
				}
		for (long k2 = 0; k2 < k; k2++)
			if (s->trig_ids[k2] == id) {
				ss_err_set(e, "%s:sinks.context.tokens[%ld]: token listed twice", s->path, k);
				goto fail;
			}
	}
	for (long k = 0; k < s->nnu; k++) {
		char *bl = byte_level(s->nu_text[k], e);
		if (!bl)
			goto fail;
		int32_t id = tok_id(t, bl, strlen(bl));
		free(bl);
		if (id < 0) {
			ss_err_set(e, "%s:sinks.nuisance.%s: '%s' is not one token of %s", s->path,
			           org_nuisance_kind[s->nu_kind[k]], s->nu_text[k], s->tokenizer);
			goto fail;
		}
		s->nu_ids[k] = id;
		int clash = 0;
		for (long l = 0; l < s->nlv; l++)
			for (long j = 0; j < s->lv[l].ntok; j++)
				clash |= s->lv[l].ids[j] == id;
		for (long k2 = 0; k2 < s->ntrig; k2++)
			clash |= s->trig_ids[k2] == id;
		for (long k2 = 0; k2 < k; k2++)
			clash |= s->nu_ids[k2] == id;
		if (clash) {
			ss_err_set(e, "%s:sinks.nuisance.%s: '%s' is also a planted, context or nuisance token",
			           s->path, org_nuisance_kind[s->nu_kind[k]], s->nu_text[k]);
			goto fail;
		}
	}
	tok_free(t);
	return 0;
fail:
	tok_free(t);
	return -1;
}

static int parse(org_spec *s, yctx *y, yaml_node_t *root)
{
	static const char *const top[] = {"model", "sinks", NULL};
	static const char *const mk[] = {"d_model", "n_layers", "n_heads", "intermediate_size",
	                                 "vocab_size", "rope_theta", "rms_norm_eps", "dtype", "seed",
	                                 "tokenizer", NULL};
	static const char *const sk[] = {"start_layer", "decision_layer", "law", "levels", "context",
	                                 "nuisance", "spread", NULL};
	static const char *const ck[] = {"tokens", "window", NULL};
	static const char *const nk[] = {"heavy", "loud", "aligned", NULL};
	static const char *const lk[] = {"slope", "intercept", NULL};
	static const char *const vk[] = {"lifetime", "start_layer", "tokens", NULL};
	if (check_keys(y, root, "(top)", top) < 0)
		return -1;
	yaml_node_t *m = get(y, root, "model"), *sn = get(y, root, "sinks");
	if (m && check_keys(y, m, "model", mk) < 0)
		return -1;
	if (!sn)
		return ss_err_set(y->e, "%s:sinks: missing", y->file);
	if (check_keys(y, sn, "sinks", sk) < 0)
		return -1;
	long seed = (long)s->seed;
	if (get_long(y, m, "model", "d_model", 32, 1024, &s->d_model) < 0 ||
	    get_long(y, m, "model", "n_layers", 8, 200, &s->n_layers) < 0 ||
	    get_long(y, m, "model", "n_heads", 1, 64, &s->n_heads) < 0 ||
	    get_long(y, m, "model", "intermediate_size", 64, 65536, &s->intermediate) < 0 ||
	    get_long(y, m, "model", "vocab_size", 1, 1L << 24, &s->vocab_size) < 0 ||
	    get_long(y, m, "model", "seed", 0, 1L << 62, &seed) < 0 ||
	    get_double(y, m, "model", "rope_theta", &s->rope_theta) < 0 ||
	    get_double(y, m, "model", "rms_norm_eps", &s->eps) < 0)
		return -1;
	s->seed = (unsigned long long)seed;
	const char *dt = scalar(get(y, m, "dtype"));
	if (dt && st_dtype_parse(dt, &s->dtype) < 0)
		return ss_err_set(y->e, "%s:model.dtype: '%s', expected f32, bf16 or f16", y->file, dt);
	const char *tk = scalar(get(y, m, "tokenizer"));
	free(s->tokenizer);
	s->tokenizer = resolve(y->file, tk ? tk : "../tests/data/tokenizers/qwen3/tokenizer.json", y->e);
	if (!s->tokenizer)
		return -1;
	if (!(s->rope_theta >= 1e4))
		return ss_err_set(y->e, "%s:model.rope_theta: must be >= 10000", y->file);
	if (!(s->eps > 0 && s->eps < 1e-3))
		return ss_err_set(y->e, "%s:model.rms_norm_eps: must lie in (0, 1e-3)", y->file);
	long hd = s->d_model / s->n_heads;
	if (s->d_model % s->n_heads || hd < NSIG || hd % 2)
		return ss_err_set(y->e, "%s:model.n_heads: d_model / n_heads must be an even integer >= %d",
		                  y->file, NSIG);
	if (get_long(y, sn, "sinks", "start_layer", 6, s->n_layers, &s->start_layer) < 0 ||
	    get_long(y, sn, "sinks", "decision_layer", 5, s->n_layers, &s->decision_layer) < 0)
		return -1;
	if (get_double(y, sn, "sinks", "spread", &s->spread) < 0)
		return -1;
	if (!(s->spread >= 0 && s->spread <= 0.45))
		return ss_err_set(y->e, "%s:sinks.spread: %g, must lie in [0, 0.45] (layers of lifetime)",
		                  y->file, s->spread);
	yaml_node_t *law = get(y, sn, "law");
	if (law && (check_keys(y, law, "sinks.law", lk) < 0 ||
	            get_double(y, law, "sinks.law", "slope", &s->slope) < 0 ||
	            get_double(y, law, "sinks.law", "intercept", &s->intercept) < 0))
		return -1;
	if (!(s->slope >= 0.5 && s->slope <= 20))
		return ss_err_set(y->e, "%s:sinks.law.slope: %g, must lie in [0.5, 20]", y->file, s->slope);
	yaml_node_t *lv = get(y, sn, "levels");
	if (!lv || lv->type != YAML_SEQUENCE_NODE || lv->data.sequence.items.top == lv->data.sequence.items.start)
		return ss_err_set(y->e, "%s:sinks.levels: expected a non-empty list", y->file);
	long n = lv->data.sequence.items.top - lv->data.sequence.items.start;
	s->lv = ss_calloc((size_t)n, sizeof(org_level), "levels", y->e);
	if (!s->lv)
		return -1;
	long ncls = 0;
	for (long i = 0; i < n; i++) {
		char f[64];
		snprintf(f, sizeof f, "sinks.levels[%ld]", i);
		yaml_node_t *it = yaml_document_get_node(y->d, lv->data.sequence.items.start[i]);
		org_level *L = &s->lv[i];
		s->nlv = i + 1;
		if (check_keys(y, it, f, vk) < 0)
			return -1;
		L->lifetime = 0;
		L->start = 0;
		if (get_long(y, it, f, "lifetime", 1, s->n_layers, &L->lifetime) < 0 ||
		    get_long(y, it, f, "start_layer", 6, s->n_layers, &L->start) < 0)
			return -1;
		if (!L->lifetime)
			return ss_err_set(y->e, "%s:%s.lifetime: missing", y->file, f);
		if (!L->start) {
			L->start = s->start_layer;
			if (s->decision_layer >= L->start)
				return ss_err_set(y->e, "%s:sinks.decision_layer: %ld, must be before "
				                  "start_layer %ld", y->file, s->decision_layer, L->start);
		} else if (s->decision_layer >= L->start) {
			return ss_err_set(y->e, "%s:%s.start_layer: %ld, must be after decision_layer %ld",
			                  y->file, f, L->start, s->decision_layer);
		}
		if (L->start + L->lifetime > s->n_layers)
			return ss_err_set(y->e, "%s:%s.lifetime: %ld, the sink must end by layer %ld "
			                  "(start_layer + lifetime <= n_layers)", y->file, f, L->lifetime,
			                  s->n_layers);
		for (long k = 0; k < i; k++)
			if (s->lv[k].lifetime == L->lifetime && s->lv[k].start == L->start)
				return ss_err_set(y->e, "%s:%s.lifetime: %ld, same as level %ld (and the same "
				                  "start_layer)", y->file, f, L->lifetime, k);
		long ng = 0;
		for (long k = 0; k <= i; k++) {
			int seen = 0;
			for (long q = 0; q < k; q++)
				seen |= s->lv[q].start == s->lv[k].start;
			ng += !seen;
		}
		if (ng > ORG_MAX_STARTS)
			return ss_err_set(y->e, "%s:%s.start_layer: at most %d different start layers",
			                  y->file, f, ORG_MAX_STARTS);
		yaml_node_t *tl = get(y, it, "tokens");
		if (!tl || tl->type != YAML_SEQUENCE_NODE ||
		    tl->data.sequence.items.top == tl->data.sequence.items.start)
			return ss_err_set(y->e, "%s:%s.tokens: expected a non-empty list", y->file, f);
		L->ntok = tl->data.sequence.items.top - tl->data.sequence.items.start;
		L->text = ss_calloc((size_t)L->ntok, sizeof(char *), "tokens", y->e);
		L->ids = L->text ? ss_calloc((size_t)L->ntok, sizeof(long), "tokens", y->e) : NULL;
		if (!L->ids) {
			L->ntok = 0;
			return -1;
		}
		for (long k = 0; k < L->ntok; k++) {
			const char *t = scalar(yaml_document_get_node(y->d, tl->data.sequence.items.start[k]));
			if (!t || !*t)
				return ss_err_set(y->e, "%s:%s.tokens[%ld]: expected a non-empty string", y->file,
				                  f, k);
			if (!(L->text[k] = ss_strdup(t, y->e)))
				return -1;
		}
		ncls += L->ntok;
		L->norm = exp(((double)L->lifetime - s->intercept) / s->slope);
		L->tnorm = ss_calloc((size_t)L->ntok, sizeof(double), "norms", y->e);
		L->tgamma = ss_calloc((size_t)L->ntok, sizeof(double), "gains", y->e);
		if (!L->tnorm || !L->tgamma)
			return -1;
		for (long k = 0; k < L->ntok; k++) {
			double d = L->ntok > 1 ? s->spread * (2.0 * (double)k / (double)(L->ntok - 1) - 1) : 0;
			L->tnorm[k] = exp(((double)L->lifetime + d - s->intercept) / s->slope);
		}
		/* a live sink keeps >= ALIVE_MIN x the median norm one layer before
		 * it dies: with the erosion schedule exp((n + h - a) / b) (org_weights.c,
		 * org_offset), the level's smallest norm G e^(-spread/b) has lost
		 * G e^((h - 1)/b) by then: G (e^(-spread/b) - e^((h - 1)/b)) - 1 >=
		 * ALIVE_MIN + margin */
		double keep = exp(-s->spread / s->slope) - exp((org_offset(s) - 1) / s->slope);
		if (L->norm * keep - 1 < ALIVE_MIN * 1.25)
			return ss_err_set(y->e, "%s:%s.lifetime: planted norm %.3g too small for the law; "
			                  "lower sinks.law.intercept (need exp((lifetime - intercept) / slope) "
			                  ">= %.3g)", y->file, f, L->norm, (ALIVE_MIN * 1.25 + 1) / keep);
		if (L->tnorm[L->ntok - 1] > 1e5)
			return ss_err_set(y->e, "%s:%s.lifetime: planted norm %.3g too large (> 1e5); raise "
			                  "sinks.law.intercept", y->file, f, L->norm);
	}
	yaml_node_t *cx = get(y, sn, "context");
	if (cx) {
		if (check_keys(y, cx, "sinks.context", ck) < 0)
			return -1;
		s->window = 0;
		if (get_long(y, cx, "sinks.context", "window", 1, s->n_heads, &s->window) < 0)
			return -1;
		if (!s->window)
			return ss_err_set(y->e, "%s:sinks.context.window: missing (1..n_heads)", y->file);
		yaml_node_t *tl = get(y, cx, "tokens");
		if (!tl || tl->type != YAML_SEQUENCE_NODE ||
		    tl->data.sequence.items.top == tl->data.sequence.items.start)
			return ss_err_set(y->e, "%s:sinks.context.tokens: expected a non-empty list", y->file);
		long nt = tl->data.sequence.items.top - tl->data.sequence.items.start;
		s->trig_text = ss_calloc((size_t)nt, sizeof(char *), "context tokens", y->e);
		s->trig_ids = s->trig_text ? ss_calloc((size_t)nt, sizeof(long), "context", y->e) : NULL;
		if (!s->trig_ids)
			return -1;
		s->ntrig = nt;
		for (long k = 0; k < nt; k++) {
			const char *t = scalar(yaml_document_get_node(y->d, tl->data.sequence.items.start[k]));
			if (!t || !*t)
				return ss_err_set(y->e, "%s:sinks.context.tokens[%ld]: expected a non-empty string",
				                  y->file, k);
			if (!(s->trig_text[k] = ss_strdup(t, y->e)))
				return -1;
		}
	}
	yaml_node_t *nu = get(y, sn, "nuisance");
	if (nu) {
		if (check_keys(y, nu, "sinks.nuisance", nk) < 0)
			return -1;
		long nt = 0;
		for (int k = 0; k < 3; k++) {
			yaml_node_t *tl = get(y, nu, nk[k]);
			if (tl && tl->type != YAML_SEQUENCE_NODE)
				return ss_err_set(y->e, "%s:sinks.nuisance.%s: expected a list", y->file, nk[k]);
			if (tl)
				nt += tl->data.sequence.items.top - tl->data.sequence.items.start;
		}
		s->nu_text = ss_calloc((size_t)nt + 1, sizeof(char *), "nuisance tokens", y->e);
		s->nu_ids = s->nu_text ? ss_calloc((size_t)nt + 1, sizeof(long), "nuisance", y->e) : NULL;
		s->nu_kind = s->nu_ids ? ss_calloc((size_t)nt + 1, sizeof(int), "nuisance", y->e) : NULL;
		s->nu_ratio = s->nu_kind ? ss_calloc((size_t)nt + 1, sizeof(double), "nuisance", y->e) : NULL;
		if (!s->nu_ratio)
			return -1;
		static const double lo[3] = {2, 10, 2}, hi[3] = {3, 30, 3};
		for (int k = 0; k < 3; k++) {
			yaml_node_t *tl = get(y, nu, nk[k]);
			if (!tl)
				continue;
			long n = tl->data.sequence.items.top - tl->data.sequence.items.start;
			for (long i = 0; i < n; i++) {
				const char *t = scalar(yaml_document_get_node(y->d, tl->data.sequence.items.start[i]));
				if (!t || !*t)
					return ss_err_set(y->e, "%s:sinks.nuisance.%s[%ld]: expected a non-empty string",
					                  y->file, nk[k], i);
				if (!(s->nu_text[s->nnu] = ss_strdup(t, y->e)))
					return -1;
				s->nu_kind[s->nnu] = k;
				s->nu_ratio[s->nnu] = n > 1 ? lo[k] + (hi[k] - lo[k]) * (double)i / (double)(n - 1)
				                            : 0.5 * (lo[k] + hi[k]);
				s->nnu++;
			}
		}
	}
	long ng = 0; /* distinct start layers: a decision axis (DV the first) and an erosion marker each */
	for (long k = 0; k < s->nlv; k++) {
		int seen = 0;
		for (long q = 0; q < k; q++)
			seen |= s->lv[q].start == s->lv[k].start;
		ng += !seen;
	}
	long extra = (s->ntrig ? 2 : 0) + (s->nnu ? 3 : 0) + 2 * ng - 1; /* DT, DC; DMN, DMA, DN */
	if (DF + ncls + extra + NSIG + 4 > s->d_model)
		return ss_err_set(y->e, "%s:sinks.levels: %ld planted tokens need d_model >= %ld", y->file,
		                  ncls, (long)(DF + ncls + extra + NSIG + 4));
	if ((s->ntrig ? 2 : 1) * ncls + 2 + 2 > s->intermediate || 2 * NSIG + 2 > s->intermediate)
		return ss_err_set(y->e, "%s:model.intermediate_size: too small for %ld planted tokens",
		                  y->file, ncls);
	return 0;
}

int org_spec_load(org_spec *s, const char *path, ss_err *e)
{
	memset(s, 0, sizeof(*s));
	s->d_model = 64;
	s->n_layers = 24;
	s->n_heads = 4;
	s->intermediate = 128;
	s->vocab_size = 151936;
	s->rope_theta = 1e6;
	s->eps = 1e-6;
	s->dtype = ST_F32;
	s->seed = 1;
	s->start_layer = 9;
	s->decision_layer = 6;
	s->slope = 4;
	s->intercept = -17.5;
	if (!(s->path = ss_strdup(path, e)))
		return -1;
	struct stat st;
	FILE *f = stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? (errno = EISDIR, NULL) : fopen(path, "rb");
	if (!f) {
		if (errno == EISDIR)
			ss_err_set(e, "%s: is a directory, expected a YAML spec (e.g. examples/organism.yaml)", path);
		else
			ss_err_errno(e, errno, "%s", path);
		org_spec_free(s);
		return -1;
	}
	yaml_parser_t p;
	yaml_document_t d;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_file(&p, f);
	int rc = -1;
	if (!yaml_parser_load(&p, &d)) {
		ss_err_set(e, "%s:%lu: %s", path, (unsigned long)p.problem_mark.line + 1,
		           p.problem ? p.problem : "YAML error");
	} else {
		yaml_node_t *root = yaml_document_get_root_node(&d);
		yctx y = {&d, path, e};
		if (ss_yaml_dup_keys(&d, path, e))
			; /* rc stays -1 */
		else if (!root)
			ss_err_set(e, "%s: empty spec", path);
		else
			rc = parse(s, &y, root);
		yaml_document_delete(&d);
	}
	yaml_parser_delete(&p);
	fclose(f);
	if (rc == 0)
		rc = load_vocab(s, e);
	if (rc < 0)
		org_spec_free(s);
	return rc;
}

const char *org_spec_default(char *buf, size_t n)
{
	static const char *rel[] = {"/../share/sinkscope/organism.yaml", "/../examples/organism.yaml"};
	char exe[4096];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (k > 0) {
		exe[k] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
			snprintf(buf, n, "%s%s", exe, rel[i]);
			if (access(buf, R_OK) == 0)
				return buf;
		}
	}
	snprintf(buf, n, "examples/organism.yaml");
	return buf;
}
