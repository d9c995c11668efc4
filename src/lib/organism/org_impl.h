/* org_impl.h - the organism's construction shared by org_spec.c (the
 * spec's limits), org_weights.c (the weights) and org_build.c (the folder
 * and its truth tables); not an API (see organism.h).
 *
 * Residual coordinates (d_model = D): one basis vector per role, so every
 * planted direction is a coordinate axis:
 *   DU  u, the sink direction          DB  bulk (every token has ~1 here)
 *   DQ  sign coordinate of layer 1     DP  primary marker (position 0 only)
 *   DV  v, the decision direction      DF+c  marker of planted token c
 *   DT, DC trigger marker, context   (with sinks.context)
 *   DMN, DMA, DN nuisance markers (not aligned, aligned) and axis (with sinks.nuisance)
 *   DSIG.. 16 dims of per-token signature (layer 1 only)
 *   the rest: a small per-token identity (so tokens stay distinct)
 * Every embedding row has norm 1, so layer 1's RMSNorm is the same scale
 * for all tokens and the signature cancels exactly at position 0.
 */
#ifndef SS_ORG_IMPL_H
#define SS_ORG_IMPL_H

#include "organism/organism.h"

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
#define BETA_K 40.0      /* context heads: peak score 3 BETA_K at their offset */
#define DELTA_C 0.02     /* context coordinate written per trigger seen */
#define BETA_N 1e4       /* layers >= 3 keys: -BETA_N z_nuisance-marker */
#define A_CTX 12.0       /* decision gate: +-A_CTX at a quarter of one trigger's signal */
#define EPS_M 0.1        /* a secondary sink's marker of its start layer, per unit of u */
#define ALPHA_M 20.0     /* erosion gate on that marker */
#define ORG_MAX_STARTS 8 /* different start layers */

enum { DU = 0, DB, DQ, DP, DV, DF };

/* one decoder layer's weights, f32 (rounded to the file's dtype in place) */
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
	long dt, dc;  /* context: trigger marker and context coordinates (-1: none) */
	long dmn, dma, dn; /* nuisance: markers (not aligned, aligned) and its axis (-1: none) */
	/* start layers (groups of levels), ascending: group g forms at gls[g]
	 * from decision axis gdv[g] (DV for g = 0) and carries the erosion
	 * marker gdm[g] (EPS_M per unit of u) */
	long ng, gls[ORG_MAX_STARTS], gdv[ORG_MAX_STARTS], gdm[ORG_MAX_STARTS];
	long *lvg;     /* [nlv]: group of each level */
	long *ctk;     /* [ncls]: token index of class c in its level */
	double **delta; /* [ng][L+1]: erosion removed at layer l from group g's sinks */
	double **traj; /* [ncls][L+1]: u-component of each planted token after layer l */
} org;

/* The erosion schedule's offset h (org_weights.c): a sink of norm G
 * lives while G > exp((age + h - a) / b); (spread + 1/2) / 2, 0 with
 * spread 0. */
static inline double org_offset(const org_spec *s) { return s->spread > 0 ? 0.5 * (s->spread + 0.5) : 0; }

/* Every weight of o (o->s and the sizes D, L, H, hd, F, V set), with the
 * planted trajectories (delta, traj) the truth tables report; checks
 * that each level lives exactly its lifetime.  org_weights_free frees
 * what was built, also after a failure. */
int org_weights_build(org *o, ss_err *e);
void org_weights_free(org *o);

#endif
