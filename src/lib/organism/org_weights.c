/* org_weights.c - the organism's weights, built by hand layer by layer
 * (organism.h and mkorganism(1) give the mechanism) and calibrated in
 * double against the forward pass's own formulas on the weights as the
 * file will hold them (rounded to its dtype): the primary sink, the
 * decision gains gamma solved per level, the formation, and the erosion
 * that ends each level at its planted lifetime. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "organism/org_impl.h"
#include "io/stwrite.h"
#include "util/rng.h"

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

void org_weights_free(org *o)
{
	if (o->l)
		for (long l = 1; l <= o->L; l++) {
			lw *w = &o->l[l];
			free(w->qw), free(w->qb), free(w->kw), free(w->kb), free(w->vw), free(w->vb);
			free(w->ow), free(w->gate), free(w->up), free(w->down), free(w->in_norm);
			free(w->post_norm);
		}
	if (o->traj)
		for (long k = 0; k < o->ncls; k++)
			free(o->traj[k]);
	if (o->delta)
		for (long g = 0; g < o->ng; g++)
			free(o->delta[g]);
	free(o->traj), free(o->delta);
	free(o->l), free(o->emb), free(o->norm), free(o->cls), free(o->clv), free(o->lvg), free(o->ctk);
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


/* Nuisance (layer 4, after the cleanup; see org_spec.h): an ordinary
 * token's state there is bulk + identity of norm MED.  Neuron NSIG + 1,
 * silu(ALPHA_C z_b) z_mn, writes NU_K m onto DN (heavy, loud); neuron
 * NSIG + 2, silu(ALPHA_C z_b) z_ma, writes NU_K m (u + e_p P / U) and
 * removes NU_BK NU_K m of bulk (aligned: cosine to position 0 > 0.95).
 * The marker m of each token solves |state| = ratio MED. */
#define MED sqrt(1 - S_SIG * S_SIG)
#define NU_K 1500.0      /* output per unit of marker (30 at 0.02) */
#define NU_BK 0.3        /* bulk removed per unit of u (aligned) */
static double nu_norm(int kind, double a)
{
	double b0 = MED;
	if (kind != 2)
		return sqrt(b0 * b0 + a * a);
	double p = a * P_PRIMARY / U_PRIMARY, b = b0 - NU_BK * a;
	return sqrt(a * a + p * p + b * b);
}
static double nu_marker(const org_spec *s, long k)
{
	double lo = 0, hi = 100, want = s->nu_ratio[k] * MED;
	for (int it = 0; it < 200; it++) {
		double m = 0.5 * (lo + hi);
		if (nu_norm(s->nu_kind[k], m) < want)
			lo = m;
		else
			hi = m;
	}
	return 0.5 * (lo + hi) / NU_K; /* the output a, as a marker */
}

int org_weights_build(org *o, ss_err *e)
{
	const org_spec *s = o->s;
	long D = o->D, L = o->L, H = o->H, hd = o->hd, F = o->F, V = o->V, HD = H * hd;
	long lo = hd / 2 - 1; /* lowest RoPE frequency pair: (lo, lo + hd/2) */
	double sq = sqrt((double)hd);
	if (!ALLOC(o->emb, V * D) || !ALLOC(o->norm, D) || !ALLOC(o->l, L + 1) || !ALLOC(o->cls, V) ||
	    !ALLOC(o->lvg, s->nlv))
		return -1;
	/* groups: the distinct start layers, ascending */
	o->ng = 0;
	for (long k = 0; k < s->nlv; k++) {
		long g = 0;
		while (g < o->ng && o->gls[g] != s->lv[k].start)
			g++;
		if (g == o->ng) {
			if (o->ng == ORG_MAX_STARTS)
				return ss_err_set(e, "%s:sinks.levels: at most %d start layers", s->path,
				                  ORG_MAX_STARTS);
			o->gls[o->ng++] = s->lv[k].start;
		}
	}
	for (long a = 1; a < o->ng; a++)
		for (long b = a; b > 0 && o->gls[b - 1] > o->gls[b]; b--) {
			long t = o->gls[b];
			o->gls[b] = o->gls[b - 1];
			o->gls[b - 1] = t;
		}
	for (long k = 0; k < s->nlv; k++)
		for (long g = 0; g < o->ng; g++)
			if (o->gls[g] == s->lv[k].start)
				o->lvg[k] = g;
	if (!ALLOC(o->delta, o->ng))
		return -1;
	for (long g = 0; g < o->ng; g++)
		if (!ALLOC(o->delta[g], L + 1))
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
	if (!ALLOC(o->clv, o->ncls) || !ALLOC(o->ctk, o->ncls) || !ALLOC(o->traj, o->ncls))
		return -1;
	for (long k = 0; k < o->ncls; k++)
		if (!ALLOC(o->traj[k], L + 1))
			return -1;
	for (long t = 0; t < V; t++)
		o->cls[t] = -1;
	long c = 0;
	for (long k = 0; k < s->nlv; k++)
		for (long j = 0; j < s->lv[k].ntok; j++, c++) {
			o->cls[s->lv[k].ids[j]] = c;
			o->clv[c] = k;
			o->ctk[c] = j;
		}
	o->dt = o->dc = -1;
	if (s->ntrig)
		o->dt = DF + o->ncls, o->dc = DF + o->ncls + 1;
	o->dmn = o->dma = o->dn = -1;
	if (s->nnu) {
		long b = DF + o->ncls + (s->ntrig ? 2 : 0);
		o->dmn = b, o->dma = b + 1, o->dn = b + 2;
	}
	{
		long b = DF + o->ncls + (s->ntrig ? 2 : 0) + (s->nnu ? 3 : 0);
		o->gdv[0] = DV;
		for (long g = 1; g < o->ng; g++)
			o->gdv[g] = b++;
		for (long g = 0; g < o->ng; g++)
			o->gdm[g] = b++;
		o->dsig = b;
	}
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
			for (long k = 0; k < s->ntrig; k++)
				if (s->trig_ids[k] == t) {
					r[o->dt] = (float)PHI; /* a trigger's marker */
					b2 -= PHI * PHI;
				}
			for (long k = 0; k < s->nnu; k++)
				if (s->nu_ids[k] == t) {
					double m = nu_marker(s, k);
					r[s->nu_kind[k] == 2 ? o->dma : o->dmn] = (float)m;
					b2 -= m * m;
				}
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
			/* nuisance tokens take no attention: their markers (z about
			 * 0.005) lower their keys by about 50 */
			if (s->nnu) {
				w->kw[(h * hd + lo) * D + o->dmn] = (float)(-BETA_N * sq);
				w->kw[(h * hd + lo) * D + o->dma] = (float)(-BETA_N * sq);
			}
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

	if (s->nnu) {
		double cs = 1 / sqrt((1 - S_SIG * S_SIG) / (double)D + s->eps);
		double zb = sqrt(1 - S_SIG * S_SIG - S_ID * S_ID) * cs;
		double g = NU_K / (silu(ALPHA_C * zb) * cs);
		w = &o->l[4];
		for (int j = 0; j < 2; j++) {
			long n = NSIG + 1 + j;
			w->gate[n * D + DB] = (float)ALPHA_C;
			w->up[n * D + (j ? o->dma : o->dmn)] = 1;
		}
		w->down[o->dn * F + NSIG + 1] = (float)g;
		w->down[DU * F + NSIG + 2] = (float)g;
		w->down[DP * F + NSIG + 2] = (float)(g * P_PRIMARY / U_PRIMARY);
		w->down[DB * F + NSIG + 2] = (float)(-g * NU_BK);
	}
	round_layer(o, 3);
	round_layer(o, 4);

	/* decision layer: class marker c -> gamma v_g (its start layer's axis), marker erased */
	long ld = s->decision_layer;
	w = &o->l[ld];
	double zb_ctx = 0, z1_ctx = 0; /* context: bulk and one trigger's DC after RMSNorm_2 */
	if (!s->ntrig) {
		for (long c2 = 0; c2 < o->ncls; c2++) {
			w->gate[c2 * D + DF + c2] = (float)ALPHA_D;
			w->up[c2 * D + DF + c2] = 1;
		}
	} else {
		/* context heads 0..W-1 of layer ld: a planted token's query (read
		 * from its class marker) cancels the sink-seeking bias of the
		 * lowest RoPE pair and puts BETA_K sqrt(hd) e^(-i w_k d) on pairs
		 * k = 0..2 against keys with the bias 1 there, so head h scores
		 * BETA_K sum_k cos(w_k (i - j - d)): its offset d = h + 1 wins by
		 * >= 0.47 BETA_K over every other key; its value is the key's
		 * trigger marker, written as DELTA_C on DC.  Ordinary queries have
		 * no component on pairs 0..2 and keep seeking sinks. */
		double hc[1024];
		long idc = -1;
		for (long t = 0; t < V && idc < 0; t++)
			if (o->cls[t] >= 0)
				idc = t;
		class_state(o, idc, hc);
		hc[DF + o->cls[idc]] = 0; /* any class: their marker is the same PHI */
		double ss = PHI * PHI;
		for (long i = 0; i < D; i++)
			ss += hc[i] * hc[i];
		double zc = PHI / sqrt(ss / (double)D + s->eps); /* trigger markers alike */
		for (long h = 0; h < s->window; h++) {
			double d = (double)(h + 1);
			for (long c2 = 0; c2 < o->ncls; c2++) {
				w->qw[(h * hd + lo) * D + DF + c2] = (float)(-1 / zc);
				for (long k = 0; k < 3; k++) {
					double om = pow(s->rope_theta, -2.0 * (double)k / (double)hd);
					w->qw[(h * hd + k) * D + DF + c2] = (float)(BETA_K * sq * cos(om * d) / zc);
					w->qw[(h * hd + k + hd / 2) * D + DF + c2] = (float)(-BETA_K * sq * sin(om * d) / zc);
				}
			}
			for (long k = 0; k < 3; k++)
				w->kb[h * hd + k] = 1;
			w->vw[(h * hd + 0) * D + o->dt] = (float)(1 / zc);
			w->ow[o->dc * HD + h * hd + 0] = (float)DELTA_C;
		}
		/* decision neurons c and ncls + c: silu(A (z_dc - f z1 z_b / zb1)) z_c
		 * for f = 1/4, 3/4; their difference is a ramp clipped at one
		 * trigger (z1), so one trigger or more give the same output */
		hc[o->dc] = DELTA_C;
		double ss2 = 0;
		for (long i = 0; i < D; i++)
			ss2 += hc[i] * hc[i];
		double r2 = 1 / sqrt(ss2 / (double)D + s->eps);
		z1_ctx = DELTA_C * r2, zb_ctx = hc[DB] * r2;
		double A = A_CTX / (0.25 * z1_ctx);
		for (long c2 = 0; c2 < o->ncls; c2++)
			for (int f = 0; f < 2; f++) {
				long n = c2 + f * o->ncls;
				w->gate[n * D + o->dc] = (float)A;
				w->gate[n * D + DB] = (float)(-A * (f ? 0.75 : 0.25) * z1_ctx / zb_ctx);
				w->up[n * D + DF + c2] = 1;
			}
		/* neuron 2 ncls erases DC in the same layer, silu(ALPHA_C z_b) z_dc
		 * calibrated on one trigger, so that after ld the future sinks
		 * differ from the other occurrences of their text along v only */
		long nc = 2 * o->ncls;
		w->gate[nc * D + DB] = (float)ALPHA_C;
		w->up[nc * D + o->dc] = 1;
		round_layer(o, ld);
		w->down[o->dc * F + nc] = (float)(-DELTA_C / neuron(o, ld, nc, hc));
		round_layer(o, ld);
	}
	/* formation, per start layer (group g): neuron 0 of layer gls[g],
	 * silu(ALPHA_F z_vg) z_vg, writes G (u + EPS_M e_mg) / sqrt(1 + EPS_M^2)
	 * (||m[ls]|| = G); its gain is set by the group's largest planted norm
	 * at gamma = GAMMA_MAX; each token's gamma is solved by bisection */
	org_level *lv = (org_level *)s->lv;
	const double nm = sqrt(1 + EPS_M * EPS_M);
	double h[1024];
	for (long g = 0; g < o->ng; g++) {
		long lsg = o->gls[g], dv = o->gdv[g];
		lw *wf = &o->l[lsg];
		wf->gate[0 * D + dv] = (float)ALPHA_F;
		wf->up[0 * D + dv] = 1;
		long kmax = -1, jmax = 0;
		for (long k = 0; k < s->nlv; k++)
			for (long j = 0; o->lvg[k] == g && j < lv[k].ntok; j++)
				if (kmax < 0 || lv[k].tnorm[j] > lv[kmax].tnorm[jmax])
					kmax = k, jmax = j;
		long id0 = lv[kmax].ids[jmax];
		class_state(o, id0, h);
		h[DF + o->cls[id0]] = 0;
		h[DB] = sqrt(1 - S_SIG * S_SIG - PHI * PHI);
		if (s->ntrig)
			h[o->dc] = DELTA_C;
#define FORM_ACT(gam) (h[dv] = (gam), neuron(o, lsg, 0, h))
		round_layer(o, lsg);
		double amax = FORM_ACT(GAMMA_MAX), gmax = lv[kmax].tnorm[jmax];
		wf->down[DU * F + 0] = (float)(gmax / amax / nm);
		wf->down[o->gdm[g] * F + 0] = (float)(EPS_M * gmax / amax / nm);
		round_layer(o, lsg);
		double du = wf->down[DU * F + 0], dm = wf->down[o->gdm[g] * F + 0];
		double wfv = sqrt(du * du + dm * dm);
		for (long k = 0; k < s->nlv; k++)
			for (long j = 0; o->lvg[k] == g && j < lv[k].ntok; j++) {
				double a = 1e-4, b = GAMMA_MAX;
				for (int it = 0; it < 100; it++) {
					double m = 0.5 * (a + b);
					if (wfv * FORM_ACT(m) < lv[k].tnorm[j])
						a = m;
					else
						b = m;
				}
				double gm = lv[k].tgamma[j] = 0.5 * (a + b);
				if (ALPHA_F * gm * sqrt((double)D) < 10 * sqrt(1 + gm * gm))
					return ss_err_set(e, "%s:sinks.levels[%ld].lifetime: norm %.3g is too small "
					                  "next to the largest of its start layer, %.3g (ratio > 300)",
					                  s->path, k, lv[k].tnorm[j], gmax);
			}
		h[dv] = 0;
#undef FORM_ACT
	}
	/* the decision neurons' gains, calibrated on each token's state */
	for (long t = 0; t < V; t++) {
		long c2 = o->cls[t];
		if (c2 < 0)
			continue;
		class_state(o, t, h);
		if (!s->ntrig) {
			double a = neuron(o, ld, c2, h);
			w->down[o->gdv[o->lvg[o->clv[c2]]] * F + c2] = (float)(lv[o->clv[c2]].tgamma[o->ctk[c2]] / a);
			w->down[(DF + c2) * F + c2] = (float)(-PHI / a);
			continue;
		}
		h[o->dc] = DELTA_C; /* one trigger seen */
		double a = neuron(o, ld, c2, h) - neuron(o, ld, c2 + o->ncls, h);
		for (int f = 0; f < 2; f++) {
			double sg = f ? -1 : 1;
			w->down[o->gdv[o->lvg[o->clv[c2]]] * F + c2 + f * o->ncls] =
			    (float)(sg * lv[o->clv[c2]].tgamma[o->ctk[c2]] / a);
			w->down[(DF + c2) * F + c2 + f * o->ncls] = (float)(-sg * PHI / a);
		}
	}
	round_layer(o, ld);

	/* erosion, per group g, layers gls[g]+1..L: neuron 1 + g,
	 * silu(ALPHA_M z_mg) z_u, fires on the group's secondary sinks only
	 * (their marker; position 0 and the aligned nuisance have none) and
	 * removes S(n) - S(n-1) of u (and EPS_M times that of the marker, so
	 * the sink keeps its direction) at age n, with
	 * S(n) = exp((n + h - a) / b) / sqrt(1 + EPS_M^2) + G_DEAD: a sink of
	 * norm G dies at the first age n with G < exp((n + h - a) / b)
	 * (+ G_DEAD), so every norm within spread of a level's law lives its
	 * lifetime; h = (spread + 1/2) / 2 halves the margin between the
	 * level's largest norm and death (h = 0 with spread 0, where the layer
	 * a level dies removes exactly what it has left).  Each layer removes
	 * what S(n) asks less what the rounded weights removed so far.  Each planted token is followed through every layer after
	 * ld in double (traj), and must live exactly its level's lifetime. */
	double *st = ss_malloc((size_t)o->ncls * D, sizeof *st, "planted states", e);
	if (!st)
		return -1;
	for (long c = 0; c < o->ncls; c++) {
		double *x = st + c * D;
		long id = lv[o->clv[c]].ids[o->ctk[c]];
		class_state(o, id, x);
		if (s->ntrig)
			x[o->dc] = DELTA_C;
		add_mlp(o, ld, x);
		for (long l = 0; l <= ld; l++)
			o->traj[c][l] = 0;
	}
	double Sprev[ORG_MAX_STARTS] = {0}, act[ORG_MAX_STARTS] = {0};
	for (long l = ld + 1; l <= L; l++) {
		w = &o->l[l];
		for (long g = 0; g < o->ng && o->gls[g] < l; g++) {
			long n = l - o->gls[g], ne = 1 + g;
			double S = exp(((double)n + org_offset(s) - s->intercept) / s->slope) / nm + G_DEAD;
			w->gate[ne * D + o->gdm[g]] = (float)ALPHA_M;
			w->up[ne * D + DU] = 1;
			/* calibrate on a token whose level dies here (spread 0: remove
			 * exactly what it has left + G_DEAD), else the live one with the
			 * largest u, else a large one */
			long ref = -1, dies = -1;
			for (long c = 0; c < o->ncls; c++) {
				if (o->lvg[o->clv[c]] != g || !(st[c * D + DU] > 0))
					continue;
				if (ref < 0 || st[c * D + DU] > st[ref * D + DU])
					ref = c;
				if (s->spread == 0 && lv[o->clv[c]].lifetime == n)
					dies = c;
			}
			if (dies >= 0)
				ref = dies;
			double a, want = S - Sprev[g];
			if (ref >= 0) {
				a = neuron(o, l, ne, st + ref * D);
			} else {
				double hh[1024];
				class_state(o, lv[0].ids[0], hh);
				hh[DU] = 1e4, hh[o->gdm[g]] = EPS_M * 1e4;
				a = neuron(o, l, ne, hh);
			}
			if (dies >= 0)
				want = st[dies * D + DU] + G_DEAD;
			w->down[DU * F + ne] = (float)(-want / a);
			w->down[o->gdm[g] * F + ne] = (float)(-EPS_M * want / a);
			act[g] = a;
		}
		round_layer(o, l);
		for (long g = 0; g < o->ng && o->gls[g] < l; g++) {
			o->delta[g][l] = -w->down[DU * F + 1 + g] * act[g];
			Sprev[g] += o->delta[g][l];
		}
		for (long c = 0; c < o->ncls; c++) {
			add_mlp(o, l, st + c * D);
			o->traj[c][l] = st[c * D + DU];
		}
	}
	free(st);
	/* check every planted token lives exactly its level's lifetime */
	double med = sqrt(1 - S_SIG * S_SIG);
	for (long c = 0; c < o->ncls; c++) {
		const org_level *q = &lv[o->clv[c]];
		long end = q->start + q->lifetime;
		double alive = o->traj[c][end - 1], dead = o->traj[c][end];
		if (!(alive >= ALIVE_MIN * med && dead < 0))
			return ss_err_set(e, "%s:sinks.levels[%ld].tokens[%ld]: internal: u-component %.3g "
			                  "at its last layer, %.3g after", s->path, o->clv[c], o->ctk[c],
			                  alive, dead);
	}
	return 0;
}
