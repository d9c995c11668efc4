/* organism.c - the model organism; see organism.h and mkorganism(1).
 *
 * Residual coordinates (d_model = D): one basis vector per role, so every
 * planted direction is a coordinate axis:
 *   DU  u, the sink direction          DB  bulk (every token has ~1 here)
 *   DQ  sign coordinate of layer 1     DP  primary marker (position 0 only)
 *   DV  v, the decision direction      DF+c  marker of planted token c
 *   DSIG.. 16 dims of per-token signature (layer 1 only)
 *   the rest: a small per-token identity (so tokens stay distinct)
 * Every embedding row has norm 1, so layer 1's RMSNorm is the same scale
 * for all tokens and the signature cancels exactly at position 0.
 */
#include "organism/organism.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <ftw.h>
#include <yaml.h>

#include "util/ofile.h"
#include "io/stwrite.h"
#include "io/tsv.h"
#include "util/opt.h"
#include "util/rng.h"
#include "tok/tok.h"

/* ---- constants of the construction (see mkorganism(1)) ---- */
#define NSIG 16          /* signature dims (one head of values) */
#define S_SIG 0.3        /* |signature| */
#define S_ID 0.02        /* |identity| (none on planted tokens) */
#define PHI 0.02         /* class marker of planted tokens */
#define TAU 0.002        /* layer 1: position 0 when |res|^2 < TAU |bulk|^2 */
#define W_Q 0.01         /* scale of the sign coordinate */
#define BETA_P 500.0     /* layer 2: sharpness of the primary neuron */
#define U_PRIMARY 2000.0 /* norm of the primary sink along u */
#define P_PRIMARY 40.0   /* primary marker (kappa = 2 U / P) */
#define BETA2 500.0      /* layer 2 keys: -BETA2 z_q */
#define BETA_U 4.0       /* layers >= 3 keys: BETA_U z_u - BETA_B (h+1) z_b */
#define BETA_B 40.0
#define ALPHA_C 5.0      /* cleaning gate */
#define ALPHA_D 200.0    /* decision gate */
#define ALPHA_F 60.0     /* formation gate */
#define ALPHA_E 5.0      /* erosion gate */
#define GAMMA_MAX 0.1    /* decision gain of the longest-lived level */
#define ALIVE_MIN 20.0   /* a live sink keeps >= 20x the median norm */
#define G_DEAD 2.0       /* a sink dies with u-component -G_DEAD */

enum { DU = 0, DB, DQ, DP, DV, DF };

/* ------------------------------------------------------------------ spec */

void org_spec_free(org_spec *s)
{
	for (long i = 0; i < s->nlv; i++) {
		for (long k = 0; k < s->lv[i].ntok; k++)
			free(s->lv[i].text[k]);
		free(s->lv[i].text);
		free(s->lv[i].ids);
	}
	free(s->lv);
	free(s->tokenizer);
	free(s->path);
	memset(s, 0, sizeof(*s));
}

typedef struct yctx {
	yaml_document_t *d;
	const char *file;
	ss_err *e;
} yctx;

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

/* GPT-2 byte-level alphabet: byte -> code point of its printable stand-in. */
static unsigned byte_cp(unsigned char b)
{
	if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)
		return b;
	unsigned n = 0;
	for (unsigned c = 0; c < b; c++)
		if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174))
			n++;
	return 256 + n;
}

static char *byte_level(const char *s, ss_err *e)
{
	size_t n = strlen(s);
	char *o = ss_malloc(2 * n + 1, 1, "token text", e), *p = o;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned cp = byte_cp((unsigned char)s[i]);
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
	static const char *const sk[] = {"start_layer", "decision_layer", "law", "levels", NULL};
	static const char *const lk[] = {"slope", "intercept", NULL};
	static const char *const vk[] = {"lifetime", "tokens", NULL};
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
	if (dt) {
		if (!strcmp(dt, "f32"))
			s->dtype = ST_F32;
		else if (!strcmp(dt, "bf16"))
			s->dtype = ST_BF16;
		else if (!strcmp(dt, "f16"))
			s->dtype = ST_F16;
		else
			return ss_err_set(y->e, "%s:model.dtype: '%s', expected f32, bf16 or f16", y->file, dt);
	}
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
	if (s->decision_layer >= s->start_layer)
		return ss_err_set(y->e, "%s:sinks.decision_layer: %ld, must be before start_layer %ld",
		                  y->file, s->decision_layer, s->start_layer);
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
		if (get_long(y, it, f, "lifetime", 1, s->n_layers, &L->lifetime) < 0)
			return -1;
		if (!L->lifetime)
			return ss_err_set(y->e, "%s:%s.lifetime: missing", y->file, f);
		if (s->start_layer + L->lifetime > s->n_layers)
			return ss_err_set(y->e, "%s:%s.lifetime: %ld, the sink must end by layer %ld "
			                  "(start_layer + lifetime <= n_layers)", y->file, f, L->lifetime,
			                  s->n_layers);
		for (long k = 0; k < i; k++)
			if (s->lv[k].lifetime == L->lifetime)
				return ss_err_set(y->e, "%s:%s.lifetime: %ld, same as level %ld", y->file, f,
				                  L->lifetime, k);
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
		/* a live sink keeps >= ALIVE_MIN x the median norm one layer before
		 * it dies: G (1 - e^(-1/b)) - 1 >= ALIVE_MIN + margin */
		if (L->norm * (1 - exp(-1 / s->slope)) - 1 < ALIVE_MIN * 1.25)
			return ss_err_set(y->e, "%s:%s.lifetime: planted norm %.3g too small for the law; "
			                  "lower sinks.law.intercept (need exp((lifetime - intercept) / slope) "
			                  ">= %.3g)", y->file, f, L->norm,
			                  (ALIVE_MIN * 1.25 + 1) / (1 - exp(-1 / s->slope)));
		if (L->norm > 1e5)
			return ss_err_set(y->e, "%s:%s.lifetime: planted norm %.3g too large (> 1e5); raise "
			                  "sinks.law.intercept", y->file, f, L->norm);
	}
	if (DF + ncls + NSIG + 4 > s->d_model)
		return ss_err_set(y->e, "%s:sinks.levels: %ld planted tokens need d_model >= %ld", y->file,
		                  ncls, (long)(DF + ncls + NSIG + 4));
	if (ncls + 2 > s->intermediate || 2 * NSIG + 2 > s->intermediate)
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
	FILE *f = fopen(path, "rb");
	if (!f) {
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
		if (!root)
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

/* --------------------------------------------------------------- weights */

typedef struct lw {
	float *qw, *qb, *kw, *kb, *vw, *vb, *ow; /* q/k/v [H*hd][D], o [D][H*hd] */
	float *gate, *up, *down;                 /* [F][D], [F][D], [D][F] */
	float *in_norm, *post_norm;              /* [D] */
} lw;

typedef struct org {
	const org_spec *s;
	long D, L, H, hd, F, V, dsig, did, nid;
	float *emb;   /* [V][D] */
	float *norm;  /* [D] */
	lw *l;        /* [L+1], index = layer number 1..L */
	long *cls;    /* [V]: planted class index or -1 */
	long *clv;    /* [ncls]: level of class c */
	long ncls;
	double *delta; /* [L+1]: erosion removed at layer l */
	double **traj; /* [nlv][L+1]: u-component of each level after layer l */
} org;

static double silu(double x) { return x / (1 + exp(-x)); }

/* out = MLP_l(RMSNorm_2(h)) in double (the formula of the forward pass). */
static void mlp_apply(const org *o, long l, const double *h, double *out)
{
	const lw *w = &o->l[l];
	long D = o->D, F = o->F;
	double ss = 0;
	for (long i = 0; i < D; i++)
		ss += h[i] * h[i];
	double r = 1 / sqrt(ss / (double)D + o->s->eps);
	for (long i = 0; i < D; i++)
		out[i] = 0;
	for (long j = 0; j < F; j++) {
		double g = 0, u = 0;
		for (long i = 0; i < D; i++) {
			double x = h[i] * r * w->post_norm[i];
			g += w->gate[j * D + i] * x;
			u += w->up[j * D + i] * x;
		}
		double a = silu(g) * u;
		if (a != 0)
			for (long i = 0; i < D; i++)
				out[i] += w->down[i * F + j] * a;
	}
}

/* Activation of neuron j of layer l's MLP on state h. */
static double neuron(const org *o, long l, long j, const double *h)
{
	const lw *w = &o->l[l];
	long D = o->D;
	double ss = 0, g = 0, u = 0;
	for (long i = 0; i < D; i++)
		ss += h[i] * h[i];
	double r = 1 / sqrt(ss / (double)D + o->s->eps);
	for (long i = 0; i < D; i++) {
		g += w->gate[j * D + i] * h[i] * r;
		u += w->up[j * D + i] * h[i] * r;
	}
	return silu(g) * u;
}

static void add_mlp(const org *o, long l, double *h)
{
	double out[1024];
	mlp_apply(o, l, h, out);
	for (long i = 0; i < o->D; i++)
		h[i] += out[i];
}

/* Round weights to the file's dtype in place, so that every calibration
 * below sees the weights a reader of the file gets. */
static void round_arr(const org *o, float *p, long n)
{
	if (o->s->dtype != ST_F32)
		for (long i = 0; i < n; i++)
			p[i] = stw_round(o->s->dtype, p[i]);
}
static void round_layer(const org *o, long l)
{
	lw *w = &o->l[l];
	long D = o->D, HD = o->H * o->hd, F = o->F;
	round_arr(o, w->qw, HD * D), round_arr(o, w->qb, HD), round_arr(o, w->kw, HD * D);
	round_arr(o, w->kb, HD), round_arr(o, w->vw, HD * D), round_arr(o, w->vb, HD);
	round_arr(o, w->ow, D * HD), round_arr(o, w->gate, F * D), round_arr(o, w->up, F * D);
	round_arr(o, w->down, D * F);
}

static void org_free(org *o)
{
	if (o->l)
		for (long l = 1; l <= o->L; l++) {
			lw *w = &o->l[l];
			free(w->qw), free(w->qb), free(w->kw), free(w->kb), free(w->vw), free(w->vb);
			free(w->ow), free(w->gate), free(w->up), free(w->down), free(w->in_norm);
			free(w->post_norm);
		}
	if (o->traj)
		for (long k = 0; k < o->s->nlv; k++)
			free(o->traj[k]);
	free(o->traj), free(o->delta);
	free(o->l), free(o->emb), free(o->norm), free(o->cls), free(o->clv);
}

#define ALLOC(p, n) ((p) = ss_calloc((size_t)(n), sizeof(*(p)), #p, e))

/* The state of a planted token of class c just before the decision layer:
 * embedding minus its signature (removed at layers 1, 3 and 4). */
static void class_state(const org *o, long id, double *h)
{
	for (long i = 0; i < o->D; i++)
		h[i] = o->emb[id * o->D + i];
	for (long k = 0; k < NSIG; k++)
		h[o->dsig + k] = 0;
}

static double u_of(const double *h) { return h[DU]; }

static int build_weights(org *o, ss_err *e)
{
	const org_spec *s = o->s;
	long D = o->D, L = o->L, H = o->H, hd = o->hd, F = o->F, V = o->V, HD = H * hd;
	long lo = hd / 2 - 1; /* lowest RoPE frequency pair: (lo, lo + hd/2) */
	double sq = sqrt((double)hd);
	if (!ALLOC(o->emb, V * D) || !ALLOC(o->norm, D) || !ALLOC(o->l, L + 1) || !ALLOC(o->cls, V) ||
	    !ALLOC(o->delta, L + 1) || !ALLOC(o->traj, s->nlv))
		return -1;
	for (long k = 0; k < s->nlv; k++)
		if (!ALLOC(o->traj[k], L + 1))
			return -1;
	for (long l = 1; l <= L; l++) {
		lw *w = &o->l[l];
		if (!ALLOC(w->qw, HD * D) || !ALLOC(w->qb, HD) || !ALLOC(w->kw, HD * D) ||
		    !ALLOC(w->kb, HD) || !ALLOC(w->vw, HD * D) || !ALLOC(w->vb, HD) ||
		    !ALLOC(w->ow, D * HD) || !ALLOC(w->gate, F * D) || !ALLOC(w->up, F * D) ||
		    !ALLOC(w->down, D * F) || !ALLOC(w->in_norm, D) || !ALLOC(w->post_norm, D))
			return -1;
		for (long i = 0; i < D; i++)
			w->in_norm[i] = w->post_norm[i] = 1;
	}
	for (long i = 0; i < D; i++)
		o->norm[i] = 1;

	/* planted classes */
	o->ncls = 0;
	for (long k = 0; k < s->nlv; k++)
		o->ncls += s->lv[k].ntok;
	if (!ALLOC(o->clv, o->ncls))
		return -1;
	for (long t = 0; t < V; t++)
		o->cls[t] = -1;
	long c = 0;
	for (long k = 0; k < s->nlv; k++)
		for (long j = 0; j < s->lv[k].ntok; j++, c++) {
			o->cls[s->lv[k].ids[j]] = c;
			o->clv[c] = k;
		}
	o->dsig = DF + o->ncls;
	o->did = o->dsig + NSIG;
	o->nid = D - o->did;

	/* embeddings: bulk + signature + identity (+ class marker), norm 1 */
	uint64_t rs = s->seed * 0x2545f4914f6cdd1dull + 1;
	for (long t = 0; t < V; t++) {
		float *r = o->emb + t * D;
		double g[1024], n2 = 0, m2 = 0;
		for (long k = 0; k < NSIG; k++)
			{ g[k] = ss_rng_gauss(&rs); n2 += g[k] * g[k]; }
		for (long k = 0; k < o->nid; k++)
			{ g[NSIG + k] = ss_rng_gauss(&rs); m2 += g[NSIG + k] * g[NSIG + k]; }
		for (long k = 0; k < NSIG; k++)
			r[o->dsig + k] = (float)(S_SIG * g[k] / sqrt(n2));
		double b2 = 1 - S_SIG * S_SIG;
		if (o->cls[t] >= 0) {
			/* a planted token's identity is its marker, so the decision
			 * feature it gets is uncorrelated with any identity */
			r[DF + o->cls[t]] = (float)PHI;
			b2 -= PHI * PHI;
		} else {
			for (long k = 0; k < o->nid; k++)
				r[o->did + k] = (float)(S_ID * g[NSIG + k] / sqrt(m2));
			b2 -= S_ID * S_ID;
		}
		r[DB] = (float)sqrt(b2);
	}

	round_arr(o, o->emb, V * D);

	/* layer 1: a uniform head (q = k = 0) whose value is minus the
	 * signature: position 0 sees only itself, so its signature cancels */
	double c1 = 1 / sqrt(1.0 / (double)D + s->eps); /* RMSNorm scale of a norm-1 row */
	lw *w = &o->l[1];
	for (long k = 0; k < NSIG; k++) {
		w->vw[k * D + o->dsig + k] = (float)(-1 / c1);
		w->ow[(o->dsig + k) * HD + k] = 1;
	}
	/* ... and the MLP writes W_Q (|z_sig|^2 - TAU z_b^2) into DQ, with exact
	 * squares: silu(z) z + silu(-z) (-z) = z^2 */
	for (long k = 0; k < NSIG; k++) {
		w->gate[(2 * k) * D + o->dsig + k] = 1, w->up[(2 * k) * D + o->dsig + k] = 1;
		w->gate[(2 * k + 1) * D + o->dsig + k] = -1, w->up[(2 * k + 1) * D + o->dsig + k] = -1;
	}
	w->gate[(2 * NSIG) * D + DB] = 1, w->up[(2 * NSIG) * D + DB] = (float)-TAU;
	w->gate[(2 * NSIG + 1) * D + DB] = -1, w->up[(2 * NSIG + 1) * D + DB] = (float)TAU;
	for (long j = 0; j < 2 * NSIG + 2; j++)
		w->down[DQ * F + j] = (float)W_Q;

	round_layer(o, 1);

	/* layer 2: keys favour a negative sign coordinate (position 0); the MLP
	 * neuron silu(-BETA_P z_q) z_b writes the primary sink U u + P e_p */
	w = &o->l[2];
	for (long h = 0; h < H; h++) {
		w->qb[h * hd + lo] = 1;
		w->kw[(h * hd + lo) * D + DQ] = (float)(-BETA2 * sq);
	}
	w->gate[0 * D + DQ] = (float)-BETA_P;
	w->up[0 * D + DB] = 1;
	{
		double h0[1024], out[1024];
		class_state(o, 0, h0); /* any ordinary token at position 0 */
		if (o->cls[0] >= 0)
			h0[DF + o->cls[0]] = 0;
		mlp_apply(o, 1, h0, out);
		for (long i = 0; i < D; i++)
			h0[i] += out[i];
		double a = neuron(o, 2, 0, h0);
		if (!(a > 1))
			return ss_err_set(e, "organism: internal: primary neuron inactive (%g)", a);
		w->down[DU * F + 0] = (float)(U_PRIMARY / a);
		w->down[DP * F + 0] = (float)(P_PRIMARY / a);
	}
	round_layer(o, 2);

	/* layers >= 3: every head's query (a bias) favours keys with a large u
	 * and a small bulk coordinate, i.e. sinks, and larger-norm sinks more */
	for (long l = 3; l <= L; l++) {
		w = &o->l[l];
		for (long h = 0; h < H; h++) {
			w->qb[h * hd + lo] = 1;
			w->kw[(h * hd + lo) * D + DU] = (float)(BETA_U * sq);
			w->kw[(h * hd + lo) * D + DB] = (float)(-BETA_B * (double)(h % 4 + 1) * sq);
		}
	}

	/* layers 3 and 4: erase the signature residue and the sign coordinate
	 * (neurons silu(ALPHA_C z_b) z_k, calibrated on an ordinary token) */
	{
		double cs = 1 / sqrt((1 - S_SIG * S_SIG) / (double)D + s->eps);
		double zb = sqrt(1 - S_SIG * S_SIG - S_ID * S_ID) * cs;
		double wc = -1 / (silu(ALPHA_C * zb) * cs);
		for (long l = 3; l <= 4; l++) {
			w = &o->l[l];
			for (long k = 0; k <= NSIG; k++) {
				long dim = k < NSIG ? o->dsig + k : DQ;
				w->gate[k * D + DB] = (float)ALPHA_C;
				w->up[k * D + dim] = 1;
				w->down[dim * F + k] = (float)wc;
			}
		}
	}

	round_layer(o, 3);
	round_layer(o, 4);

	/* decision layer: class marker c -> gamma_level v, marker erased */
	long ld = s->decision_layer, ls = s->start_layer;
	w = &o->l[ld];
	for (long c2 = 0; c2 < o->ncls; c2++) {
		w->gate[c2 * D + DF + c2] = (float)ALPHA_D;
		w->up[c2 * D + DF + c2] = 1;
	}
	/* formation: neuron 0 of layer ls, silu(ALPHA_F z_v) z_v -> u; its gain
	 * is set by the longest-lived level at gamma = GAMMA_MAX; the other
	 * levels' gammas are solved by bisection */
	lw *wf = &o->l[ls];
	wf->gate[0 * D + DV] = (float)ALPHA_F;
	wf->up[0 * D + DV] = 1;
	org_level *lv = (org_level *)s->lv;
	long kmax = 0;
	for (long k = 1; k < s->nlv; k++)
		if (lv[k].lifetime > lv[kmax].lifetime)
			kmax = k;
	long id0 = lv[kmax].ids[0];
	double h[1024];
	class_state(o, id0, h);
	h[DF + o->cls[id0]] = 0;
	h[DB] = sqrt(1 - S_SIG * S_SIG - PHI * PHI);
#define FORM_ACT(gam) (h[DV] = (gam), neuron(o, ls, 0, h))
	round_layer(o, ls);
	double amax = FORM_ACT(GAMMA_MAX);
	wf->down[DU * F + 0] = (float)(lv[kmax].norm / amax);
	round_layer(o, ls);
	double wfv = wf->down[DU * F + 0];
	for (long k = 0; k < s->nlv; k++) {
		double a = 1e-4, b = GAMMA_MAX;
		for (int it = 0; it < 100; it++) {
			double m = 0.5 * (a + b);
			if (wfv * FORM_ACT(m) < lv[k].norm)
				a = m;
			else
				b = m;
		}
		lv[k].gamma = 0.5 * (a + b);
		if (ALPHA_F * lv[k].gamma * sqrt((double)D) < 10 * sqrt(1 + lv[k].gamma * lv[k].gamma))
			return ss_err_set(e, "%s:sinks.levels[%ld].lifetime: norm %.3g is too small next to "
			                  "the longest-lived level's %.3g (ratio > 300)", s->path, k,
			                  lv[k].norm, lv[kmax].norm);
	}
	/* the decision neurons' gains, calibrated on each token's state */
	for (long t = 0; t < V; t++) {
		long c2 = o->cls[t];
		if (c2 < 0)
			continue;
		class_state(o, t, h);
		double a = neuron(o, ld, c2, h);
		w->down[DV * F + c2] = (float)(lv[o->clv[c2]].gamma / a);
		w->down[(DF + c2) * F + c2] = (float)(-PHI / a);
	}
	round_layer(o, ld);

	/* erosion, layers ls+1..L: neuron 1, silu(ALPHA_E (z_u - kappa z_p)) z_u,
	 * fires on secondary sinks only (kappa P / U = 2 switches it off on the
	 * primary); it removes S(n) - S(n-1) at age n */
	double kappa = 2 * U_PRIMARY / P_PRIMARY;
	double st[64][1024];
	if (s->nlv > 64)
		return ss_err_set(e, "%s:sinks.levels: at most 64 levels", s->path);
	for (long k = 0; k < s->nlv; k++) {
		class_state(o, lv[k].ids[0], st[k]);
		add_mlp(o, ld, st[k]);
		add_mlp(o, ls, st[k]);
		for (long l = 0; l < ls; l++)
			o->traj[k][l] = 0;
		o->traj[k][ls] = u_of(st[k]);
	}
	double Sprev = 0;
	for (long l = ls + 1; l <= L; l++) {
		long n = l - ls;
		double S = exp(((double)n - s->intercept) / s->slope) + G_DEAD;
		w = &o->l[l];
		w->gate[1 * D + DU] = (float)ALPHA_E;
		w->gate[1 * D + DP] = (float)(-ALPHA_E * kappa);
		w->up[1 * D + DU] = 1;
		/* calibrate on the level that dies here, else on a live one */
		long ref = -1;
		for (long k = 0; k < s->nlv; k++)
			if (lv[k].lifetime == n)
				ref = k;
		for (long k = 0; ref < 0 && k < s->nlv; k++)
			if (lv[k].lifetime > n)
				ref = k;
		double a;
		if (ref >= 0) {
			a = neuron(o, l, 1, st[ref]);
		} else {
			double hh[1024];
			class_state(o, lv[0].ids[0], hh);
			hh[DU] = 1e4;
			a = neuron(o, l, 1, hh);
		}
		/* where a level dies, remove exactly what it has left + G_DEAD
		 * (equal to S(n) - S(n-1) up to the rounding of earlier weights) */
		double want = S - Sprev;
		if (ref >= 0 && lv[ref].lifetime == n)
			want = u_of(st[ref]) + G_DEAD;
		w->down[DU * F + 1] = (float)(-want / a);
		round_layer(o, l);
		o->delta[l] = -w->down[DU * F + 1] * a;
		Sprev = S;
		for (long k = 0; k < s->nlv; k++) {
			add_mlp(o, l, st[k]);
			o->traj[k][l] = u_of(st[k]);
		}
	}
	/* check every level lives exactly its lifetime */
	double med = sqrt(1 - S_SIG * S_SIG);
	for (long k = 0; k < s->nlv; k++) {
		double alive = o->traj[k][ls + lv[k].lifetime - 1], dead = o->traj[k][ls + lv[k].lifetime];
		if (!(alive >= ALIVE_MIN * med && dead < 0))
			return ss_err_set(e, "%s:sinks.levels[%ld]: internal: u-component %.3g at its last "
			                  "layer, %.3g after", s->path, k, alive, dead);
	}
	return 0;
}

/* ---------------------------------------------------------------- output */

/* out = a + b (paths are checked to be short enough up front) */
static void pjoin(char *out, size_t n, const char *a, const char *b)
{
	if ((size_t)snprintf(out, n, "%s%s", a, b) >= n)
		out[0] = 0;
}

static int write_text(const char *path, const char *text, size_t n, ss_err *e)
{
	ss_ofile o;
	if (ss_ofile_open(&o, path, e) < 0)
		return -1;
	if (fwrite(text, 1, n, o.f) != n) {
		ss_ofile_abort(&o);
		return ss_err_errno(e, errno, "%s: write", path);
	}
	return ss_ofile_commit(&o, e);
}

static int copy_file(const char *from, const char *to, ss_err *e)
{
	FILE *f = fopen(from, "rb");
	if (!f)
		return ss_err_errno(e, errno, "%s", from);
	char *buf = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (n == cap) {
			cap = cap ? 2 * cap : 1 << 20;
			char *b = realloc(buf, cap);
			if (!b) {
				free(buf);
				fclose(f);
				return ss_err_set(e, "%s: out of memory", from);
			}
			buf = b;
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	int rc = bad ? ss_err_errno(e, EIO, "%s: read", from) : write_text(to, buf, n, e);
	free(buf);
	return rc;
}

static int write_safetensors(const org *o, const char *path, ss_err *e)
{
	const org_spec *s = o->s;
	long D = o->D, HD = o->H * o->hd, F = o->F;
	stw *w = stw_new(e);
	if (!w)
		return -1;
	char name[128];
	int rc = -1;
	long sh[2];
	sh[0] = o->V, sh[1] = D;
	if (stw_add(w, "model.embed_tokens.weight", s->dtype, 2, sh, o->emb, e) < 0)
		goto done;
	sh[0] = D;
	if (stw_add(w, "model.norm.weight", s->dtype, 1, sh, o->norm, e) < 0)
		goto done;
	for (long l = 1; l <= o->L; l++) {
		const lw *x = &o->l[l];
		struct { const char *n; float *p; long r, c; } t[] = {
			{"input_layernorm.weight", x->in_norm, D, 0},
			{"self_attn.q_proj.weight", x->qw, HD, D}, {"self_attn.q_proj.bias", x->qb, HD, 0},
			{"self_attn.k_proj.weight", x->kw, HD, D}, {"self_attn.k_proj.bias", x->kb, HD, 0},
			{"self_attn.v_proj.weight", x->vw, HD, D}, {"self_attn.v_proj.bias", x->vb, HD, 0},
			{"self_attn.o_proj.weight", x->ow, D, HD},
			{"post_attention_layernorm.weight", x->post_norm, D, 0},
			{"mlp.gate_proj.weight", x->gate, F, D}, {"mlp.up_proj.weight", x->up, F, D},
			{"mlp.down_proj.weight", x->down, D, F},
		};
		for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
			snprintf(name, sizeof name, "model.layers.%ld.%s", l - 1, t[i].n);
			sh[0] = t[i].r, sh[1] = t[i].c;
			if (stw_add(w, name, s->dtype, t[i].c ? 2 : 1, sh, t[i].p, e) < 0)
				goto done;
		}
	}
	rc = stw_write(w, path, e);
done:
	stw_free(w);
	return rc;
}

static int write_config(const org *o, const char *path, ss_err *e)
{
	const org_spec *s = o->s;
	const char *dt = s->dtype == ST_F32 ? "float32" : s->dtype == ST_BF16 ? "bfloat16" : "float16";
	json_t *c = json_pack(
		"{s:[s], s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:I, s:f, s:f, s:b, s:s, s:b, s:I, s:I,"
		" s:f, s:I, s:b}",
		"architectures", "Qwen2ForCausalLM", "model_type", "qwen2", "hidden_size", (json_int_t)o->D,
		"intermediate_size", (json_int_t)o->F, "num_hidden_layers", (json_int_t)o->L,
		"num_attention_heads", (json_int_t)o->H, "num_key_value_heads", (json_int_t)o->H,
		"vocab_size", (json_int_t)o->V, "hidden_act", "silu", "max_position_embeddings",
		(json_int_t)32768, "rms_norm_eps", s->eps, "rope_theta", s->rope_theta,
		"tie_word_embeddings", 1, "torch_dtype", dt, "use_sliding_window", 0, "bos_token_id",
		(json_int_t)151643, "eos_token_id", (json_int_t)151643, "attention_dropout", 0.0,
		"max_window_layers", (json_int_t)o->L, "use_cache", 1);
	char *js = c ? json_dumps(c, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) : NULL;
	json_decref(c);
	if (!js)
		return ss_err_set(e, "%s: cannot encode", path);
	size_t n = strlen(js);
	js[n] = 0;
	char *t = realloc(js, n + 2);
	if (!t) {
		free(js);
		return ss_err_set(e, "out of memory");
	}
	t[n] = '\n', t[n + 1] = 0;
	int rc = write_text(path, t, n + 1, e);
	free(t);
	return rc;
}

/* token text as written in tables: tsv-escaped */
static void put_tok(FILE *f, const char *s) { tsv_put_escaped(f, s, strlen(s)); }

static int write_truth(const org *o, const char *dir, ss_err *e)
{
	const org_spec *s = o->s;
	long ls = s->start_layer, ld = s->decision_layer;
	char p[4096];
	ss_ofile f;
	/* levels */
	pjoin(p, sizeof p, dir, "/levels.tsv");
	if (ss_ofile_open(&f, p, e) < 0)
		return -1;
	fprintf(f.f, "level\tl_start\tlifetime\tl_end\tnorm\tnorm_law\tln_norm\tgamma\tn_tokens\t"
	        "tokens\tids\n");
	for (long k = 0; k < s->nlv; k++) {
		const org_level *L = &s->lv[k];
		double g = o->traj[k][ls];
		fprintf(f.f, "%ld\t%ld\t%ld\t%ld\t%.6g\t%.6g\t%.6g\t%.6g\t%ld\t", k + 1, ls, L->lifetime,
		        ls + L->lifetime - 1, g, L->norm, log(g), L->gamma, L->ntok);
		for (long j = 0; j < L->ntok; j++) {
			if (j)
				fputc(' ', f.f);
			put_tok(f.f, L->text[j]);
		}
		fputc('\t', f.f);
		for (long j = 0; j < L->ntok; j++)
			fprintf(f.f, "%s%ld", j ? "," : "", L->ids[j]);
		fputc('\n', f.f);
	}
	if (ss_ofile_commit(&f, e) < 0)
		return -1;
	/* tokens */
	pjoin(p, sizeof p, dir, "/tokens.tsv");
	if (ss_ofile_open(&f, p, e) < 0)
		return -1;
	fprintf(f.f, "id\ttoken\tlevel\tl_start\tlifetime\tnorm\tgamma\n");
	for (long k = 0; k < s->nlv; k++)
		for (long j = 0; j < s->lv[k].ntok; j++) {
			fprintf(f.f, "%ld\t", s->lv[k].ids[j]);
			put_tok(f.f, s->lv[k].text[j]);
			fprintf(f.f, "\t%ld\t%ld\t%ld\t%.6g\t%.6g\n", k + 1, ls, s->lv[k].lifetime,
			        o->traj[k][ls], s->lv[k].gamma);
		}
	if (ss_ofile_commit(&f, e) < 0)
		return -1;
	/* law */
	pjoin(p, sizeof p, dir, "/law.tsv");
	if (ss_ofile_open(&f, p, e) < 0)
		return -1;
	fprintf(f.f, "x\ty\tslope\tintercept\tr\tn\n");
	fprintf(f.f, "ln_norm\tlifetime\t%.6g\t%.6g\t1\t%ld\n", s->slope, s->intercept, s->nlv);
	fprintf(f.f, "log10_norm\tlifetime\t%.6g\t%.6g\t1\t%ld\n", s->slope * log(10.0), s->intercept,
	        s->nlv);
	if (ss_ofile_commit(&f, e) < 0)
		return -1;
	/* directions: u (sink) and v (decision), as unit vectors of the residual
	 * stream (= of MLP inputs: every RMSNorm weight is 1) */
	pjoin(p, sizeof p, dir, "/directions.tsv");
	if (ss_ofile_open(&f, p, e) < 0)
		return -1;
	fprintf(f.f, "name\tlayer\tcomponent\tdim\tvector\n");
	for (int r = 0; r < 2; r++) {
		long dim = r ? DV : DU;
		fprintf(f.f, "%s\t%ld\t%s\t%ld\t", r ? "decision" : "sink", r ? ls : ls,
		        r ? "mlp_in" : "resid", dim);
		for (long i = 0; i < o->D; i++)
			fprintf(f.f, "%s%d", i ? "," : "", i == dim);
		fputc('\n', f.f);
	}
	if (ss_ofile_commit(&f, e) < 0)
		return -1;
	/* decision: what swapping a future sink's component at layer l does to
	 * the sink at ls (1 = prevents it) */
	pjoin(p, sizeof p, dir, "/decision.tsv");
	if (ss_ofile_open(&f, p, e) < 0)
		return -1;
	fprintf(f.f, "l_decision\tl_start\tlayer\tcomponent\tprevents\n");
	for (long l = 1; l <= ls; l++) {
		if (l < ls)
			fprintf(f.f, "%ld\t%ld\t%ld\tresid\t1\n", ld, ls, l);
		fprintf(f.f, "%ld\t%ld\t%ld\tattn_out\t0\n", ld, ls, l);
		fprintf(f.f, "%ld\t%ld\t%ld\tmlp_out\t%d\n", ld, ls, l, l == ld || l == ls);
	}
	if (ss_ofile_commit(&f, e) < 0)
		return -1;
	/* layers: the role of each layer, the erosion and each level's u */
	pjoin(p, sizeof p, dir, "/layers.tsv");
	if (ss_ofile_open(&f, p, e) < 0)
		return -1;
	fprintf(f.f, "layer\trole\terosion");
	for (long k = 0; k < s->nlv; k++)
		fprintf(f.f, "\tu_level%ld", k + 1);
	fputc('\n', f.f);
	for (long l = 1; l <= o->L; l++) {
		const char *role = l == 1 ? "signature cancel; position-0 sign"
		                   : l == 2 ? "primary sink written"
		                   : l <= 4 ? "cleanup"
		                   : l == ld ? "decision"
		                   : l == ls ? "formation"
		                   : l > ls ? "erosion" : "idle";
		fprintf(f.f, "%ld\t%s\t%.6g", l, role, o->delta[l]);
		for (long k = 0; k < s->nlv; k++)
			fprintf(f.f, "\t%.6g", o->traj[k][l]);
		fputc('\n', f.f);
	}
	return ss_ofile_commit(&f, e);
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

static int build_in(org_spec *s, const char *dir, ss_err *e)
{
	org o = {0};
	o.s = s;
	o.D = s->d_model, o.L = s->n_layers, o.H = s->n_heads, o.hd = s->d_model / s->n_heads;
	o.F = s->intermediate, o.V = s->vocab_size;
	struct stat sb;
	int exists = stat(dir, &sb) == 0;
	char p[4096], tmp[4096], old[4096];
	if (strlen(dir) > 3000)
		return ss_err_set(e, "%s: path too long", dir);
	if (exists) {
		pjoin(p, sizeof p, dir, "/truth/levels.tsv");
		int empty = 0;
		if (S_ISDIR(sb.st_mode)) {
			empty = rmdir(dir) == 0;
			if (empty)
				exists = 0;
		}
		if (!empty && (!S_ISDIR(sb.st_mode) || access(p, F_OK) != 0))
			return ss_err_set(e, "%s: exists and is not an organism folder (no truth/levels.tsv)",
			                  dir);
	}
	if (build_weights(&o, e) < 0) {
		org_free(&o);
		return -1;
	}
	snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", dir);
	if (!mkdtemp(tmp)) {
		org_free(&o);
		return ss_err_errno(e, errno, "%s", tmp);
	}
	mode_t um = umask(0); /* mkdtemp makes it 0700: give it mkdir's mode */
	umask(um);
	chmod(tmp, 0777 & ~um);
	int rc = -1;
	const char *sl = strrchr(s->tokenizer, '/');
	size_t dn = sl ? (size_t)(sl - s->tokenizer) + 1 : 0;
	char tc[4096];
	snprintf(tc, sizeof tc, "%.*stokenizer_config.json", (int)dn, s->tokenizer);
	pjoin(p, sizeof p, tmp, "/truth");
	if (mkdir(p, 0755) < 0) {
		ss_err_errno(e, errno, "%s", p);
		goto fail;
	}
	if (write_truth(&o, p, e) < 0)
		goto fail;
	pjoin(p, sizeof p, tmp, "/config.json");
	if (write_config(&o, p, e) < 0)
		goto fail;
	pjoin(p, sizeof p, tmp, "/tokenizer.json");
	if (copy_file(s->tokenizer, p, e) < 0)
		goto fail;
	pjoin(p, sizeof p, tmp, "/tokenizer_config.json");
	if (access(tc, R_OK) == 0 && copy_file(tc, p, e) < 0)
		goto fail;
	pjoin(p, sizeof p, tmp, "/organism.yaml");
	if (copy_file(s->path, p, e) < 0)
		goto fail;
	pjoin(p, sizeof p, tmp, "/model.safetensors");
	if (write_safetensors(&o, p, e) < 0)
		goto fail;
	if (exists) {
		snprintf(old, sizeof old, "%s.old.XXXXXX", dir);
		if (!mkdtemp(old) || rename(dir, old) < 0) {
			ss_err_errno(e, errno, "%s", dir);
			goto fail;
		}
	}
	if (rename(tmp, dir) < 0) {
		ss_err_errno(e, errno, "%s", dir);
		if (exists)
			rename(old, dir);
		goto fail;
	}
	if (exists)
		nftw(old, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	rc = 0;
	goto done;
fail:
	nftw(tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
done:
	org_free(&o);
	return rc;
}

/* -o DIR follows ofile.h's policy for symlinks: a link to a folder is kept
 * and the folder it names is rebuilt. */
int org_build(org_spec *s, const char *dir, ss_err *e)
{
	char *real;
	if (ss_path_follow(dir, &real, e))
		return -1;
	int rc = build_in(s, real, e);
	free(real);
	return rc;
}
