/* org_build.c - org_build: the organism's model folder (config.json,
 * model.safetensors, tokenizer.json and its config, organism.yaml) and its
 * ground truth (truth/levels, tokens, law, directions, decision and
 * layers .tsv), written into a temporary folder that replaces DIR only
 * when complete. */
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "organism/org_impl.h"
#include "util/ofile.h"
#include "io/stwrite.h"
#include "io/tsv.h"

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
	long ld = s->decision_layer;
	char p[4096];
	ss_ofile f;
	/* levels */
	pjoin(p, sizeof p, dir, "/levels.tsv");
	if (ss_ofile_open(&f, p, e) < 0)
		return -1;
	/* norm: the median of the level's planted norms (its law norm when the
	 * count is odd or spread 0); norm_law: the law's; norm_min, norm_max:
	 * their range (sinks.spread) */
	fprintf(f.f, "level\tl_start\tlifetime\tl_end\tnorm\tnorm_law\tln_norm\tgamma\tn_tokens\t"
	        "tokens\tids\tnorm_min\tnorm_max\n");
	for (long k = 0; k < s->nlv; k++) {
		const org_level *L = &s->lv[k];
		long m = L->ntok / 2, ls = L->start;
		double g = L->ntok % 2 ? L->tnorm[m] : sqrt(L->tnorm[m - 1] * L->tnorm[m]);
		double gm = L->ntok % 2 ? L->tgamma[m] : 0.5 * (L->tgamma[m - 1] + L->tgamma[m]);
		fprintf(f.f, "%ld\t%ld\t%ld\t%ld\t%.6g\t%.6g\t%.6g\t%.6g\t%ld\t", k + 1, ls, L->lifetime,
		        ls + L->lifetime - 1, g, L->norm, log(g), gm, L->ntok);
		for (long j = 0; j < L->ntok; j++) {
			if (j)
				fputc(' ', f.f);
			put_tok(f.f, L->text[j]);
		}
		fputc('\t', f.f);
		for (long j = 0; j < L->ntok; j++)
			fprintf(f.f, "%s%ld", j ? "," : "", L->ids[j]);
		fprintf(f.f, "\t%.6g\t%.6g\n", L->tnorm[0], L->tnorm[L->ntok - 1]);
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
			fprintf(f.f, "\t%ld\t%ld\t%ld\t%.6g\t%.6g\n", k + 1, s->lv[k].start,
			        s->lv[k].lifetime, s->lv[k].tnorm[j], s->lv[k].tgamma[j]);
		}
	if (ss_ofile_commit(&f, e) < 0)
		return -1;
	/* law */
	pjoin(p, sizeof p, dir, "/law.tsv");
	if (ss_ofile_open(&f, p, e) < 0)
		return -1;
	fprintf(f.f, "x\ty\tslope\tintercept\tr\tn\n");
	/* the planted law; n: the planted norms (tokens), r: the correlation of
	 * lifetime with ln(norm) over them (1 with spread 0) */
	{
		double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, nn = 0;
		for (long k = 0; k < s->nlv; k++)
			for (long j = 0; j < s->lv[k].ntok; j++) {
				double x = log(s->lv[k].tnorm[j]), y = (double)s->lv[k].lifetime;
				sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y, nn++;
			}
		double vx = sxx - sx * sx / nn, vy = syy - sy * sy / nn, cxy = sxy - sx * sy / nn;
		double r = vx > 0 && vy > 0 ? cxy / sqrt(vx * vy) : 1;
		fprintf(f.f, "ln_norm\tlifetime\t%.6g\t%.6g\t%.6g\t%.0f\n", s->slope, s->intercept, r, nn);
		fprintf(f.f, "log10_norm\tlifetime\t%.6g\t%.6g\t%.6g\t%.0f\n", s->slope * log(10.0),
		        s->intercept, r, nn);
	}
	if (ss_ofile_commit(&f, e) < 0)
		return -1;
	/* directions: u (sink) and v (decision), as unit vectors of the residual
	 * stream (= of MLP inputs: every RMSNorm weight is 1) */
	pjoin(p, sizeof p, dir, "/directions.tsv");
	if (ss_ofile_open(&f, p, e) < 0)
		return -1;
	fprintf(f.f, "name\tlayer\tcomponent\tdim\tvector\n");
	/* one sink row and one decision row per start layer (its own axis) */
	for (long g = 0; g < o->ng; g++)
		for (int r = 0; r < 2; r++) {
			long dim = r ? o->gdv[g] : DU;
			fprintf(f.f, "%s\t%ld\t%s\t%ld\t", r ? "decision" : "sink", o->gls[g],
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
	for (long g = 0; g < o->ng; g++) {
		long ls = o->gls[g];
		for (long l = 1; l <= ls; l++) {
			if (l < ls)
				fprintf(f.f, "%ld\t%ld\t%ld\tresid\t1\n", ld, ls, l);
			/* with a context, the decision layer's attention carries it */
			fprintf(f.f, "%ld\t%ld\t%ld\tattn_out\t%d\n", ld, ls, l, s->ntrig && l == ld);
			fprintf(f.f, "%ld\t%ld\t%ld\tmlp_out\t%d\n", ld, ls, l, l == ld || l == ls);
		}
	}
	if (ss_ofile_commit(&f, e) < 0)
		return -1;
	/* context: the trigger tokens and the window (none: every occurrence
	 * of a planted token becomes a sink) */
	pjoin(p, sizeof p, dir, "/context.tsv");
	if (ss_ofile_open(&f, p, e) < 0)
		return -1;
	fprintf(f.f, "id\ttoken\twindow\tlayer\n");
	for (long k = 0; k < s->ntrig; k++) {
		fprintf(f.f, "%ld\t", s->trig_ids[k]);
		put_tok(f.f, s->trig_text[k]);
		fprintf(f.f, "\t%ld\t%ld\n", s->window, ld);
	}
	if (ss_ofile_commit(&f, e) < 0)
		return -1;
	/* nuisance: ordinary tokens given a large norm (heavy, loud) or a
	 * direction like position 0's (aligned) from layer 4 on, that the sink
	 * rule must not report; ratio: planted norm over the median */
	pjoin(p, sizeof p, dir, "/nuisance.tsv");
	if (ss_ofile_open(&f, p, e) < 0)
		return -1;
	fprintf(f.f, "id\ttoken\tkind\tratio\taligned\tlayer\n");
	for (long k = 0; k < s->nnu; k++) {
		fprintf(f.f, "%ld\t", s->nu_ids[k]);
		put_tok(f.f, s->nu_text[k]);
		fprintf(f.f, "\t%s\t%.4g\t%d\t4\n", org_nuisance_kind[s->nu_kind[k]], s->nu_ratio[k],
		        s->nu_kind[k] == 2);
	}
	if (ss_ofile_commit(&f, e) < 0)
		return -1;
	/* layers: the role of each layer, the erosion of the first start
	 * layer's sinks (erosion_lN: of those starting at N, when several) and
	 * each level's u (its first token's) */
	pjoin(p, sizeof p, dir, "/layers.tsv");
	if (ss_ofile_open(&f, p, e) < 0)
		return -1;
	fprintf(f.f, "layer\trole\terosion");
	for (long g = 1; g < o->ng; g++)
		fprintf(f.f, "\terosion_l%ld", o->gls[g]);
	for (long k = 0; k < s->nlv; k++)
		fprintf(f.f, "\tu_level%ld", k + 1);
	fputc('\n', f.f);
	for (long l = 1; l <= o->L; l++) {
		int form = 0;
		for (long g = 0; g < o->ng; g++)
			form |= l == o->gls[g];
		const char *role = l == 1 ? "signature cancel; position-0 sign"
		                   : l == 2 ? "primary sink written"
		                   : l <= 4 ? "cleanup"
		                   : l == ld ? (s->ntrig ? "decision (context heads, gated MLP)" : "decision")
		                   : form ? (l > o->gls[0] ? "formation; erosion" : "formation")
		                   : l > o->gls[0] ? "erosion" : "idle";
		fprintf(f.f, "%ld\t%s", l, role);
		for (long g = 0; g < o->ng; g++)
			fprintf(f.f, "\t%.6g", o->delta[g][l]);
		for (long k = 0; k < s->nlv; k++) {
			long c = 0;
			for (long q = 0; q < k; q++)
				c += s->lv[q].ntok;
			fprintf(f.f, "\t%.6g", o->traj[c][l]);
		}
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
	if (org_weights_build(&o, e) < 0) {
		org_weights_free(&o);
		return -1;
	}
	snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", dir);
	if (!mkdtemp(tmp)) {
		org_weights_free(&o);
		return ss_err_errno(e, errno, "%s: cannot create the folder", dir);
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
	org_weights_free(&o);
	return rc;
}

/* -o DIR follows ofile.h's policy for symlinks: a link to a folder is kept
 * and the folder it names is rebuilt. */
int org_build(org_spec *s, const char *dir, ss_err *e)
{
	/* "DIR/" (as a shell completes it) is DIR: the temporary folder and
	 * the old one are its siblings, never inside it */
	char *d = strdup(dir), *real;
	if (!d)
		return ss_err_set(e, "%s: out of memory", dir);
	for (size_t n = strlen(d); n > 1 && d[n - 1] == '/'; n--)
		d[n - 1] = '\0';
	if (ss_path_follow(d, &real, e)) {
		free(d);
		return -1;
	}
	free(d);
	int rc = build_in(s, real, e);
	free(real);
	return rc;
}
