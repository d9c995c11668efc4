/* tokrate.c - per token text: occurrences, sinks, rate, episodes by level;
 * see tokrate.h. */
#include "sinks/tokrate.h"

#include <stdlib.h>
#include <string.h>

#include "io/tsv.h"

typedef struct tr_ep {
	long text;        /* index into the texts */
	long trace, pos;  /* which occurrence */
	long l_start, lifetime;
	double mlp, score;
} tr_ep;

struct ss_tokrate {
	char **text;      /* every distinct text seen, in order of first sight */
	long *occ;        /* [ntext] occurrences */
	long ntext, cap;
	long *slot;       /* hash: index into text or -1 */
	long nslot;
	tr_ep *ep;
	size_t nep, epcap;
	long ntrace;
};

static unsigned long hash(const char *s)
{
	unsigned long h = 1469598103934665603ul;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ul;
	return h;
}

static int grow_hash(ss_tokrate *r, ss_err *e)
{
	long n = r->nslot ? 2 * r->nslot : 1024;
	long *s = ss_malloc((size_t)n, sizeof *s, "token table", e);
	if (!s)
		return -1;
	for (long i = 0; i < n; i++)
		s[i] = -1;
	for (long k = 0; k < r->ntext; k++) {
		unsigned long h = hash(r->text[k]) % (unsigned long)n;
		while (s[h] >= 0)
			h = (h + 1) % (unsigned long)n;
		s[h] = k;
	}
	free(r->slot);
	r->slot = s;
	r->nslot = n;
	return 0;
}

/* the index of text t, added when new; -1 on error */
static long text_id(ss_tokrate *r, const char *t, ss_err *e)
{
	if (2 * (r->ntext + 1) > r->nslot && grow_hash(r, e) < 0)
		return -1;
	unsigned long h = hash(t) % (unsigned long)r->nslot;
	while (r->slot[h] >= 0) {
		if (!strcmp(r->text[r->slot[h]], t))
			return r->slot[h];
		h = (h + 1) % (unsigned long)r->nslot;
	}
	if (r->ntext == r->cap) {
		long c = r->cap ? 2 * r->cap : 256;
		char **nt = realloc(r->text, (size_t)c * sizeof *nt);
		if (nt)
			r->text = nt;
		long *no = nt ? realloc(r->occ, (size_t)c * sizeof *no) : NULL;
		if (!no)
			return ss_err_set(e, "out of memory (token table)"), -1;
		r->occ = no;
		r->cap = c;
	}
	if (!(r->text[r->ntext] = ss_strdup(t, e)))
		return -1;
	r->occ[r->ntext] = 0;
	r->slot[h] = r->ntext;
	return r->ntext++;
}

ss_tokrate *tokrate_new(ss_err *e) { return ss_calloc(1, sizeof(ss_tokrate), "token table", e); }

void tokrate_free(ss_tokrate *r)
{
	if (!r)
		return;
	for (long k = 0; k < r->ntext; k++)
		free(r->text[k]);
	free(r->text), free(r->occ), free(r->slot), free(r->ep), free(r);
}

int tokrate_add(ss_tokrate *r, const ss_trace *tr, const ss_episode *ep, size_t n, ss_err *e)
{
	long *id = ss_malloc((size_t)(tr->T > 0 ? tr->T : 1), sizeof *id, "token table", e);
	if (!id)
		return -1;
	for (long j = 1; j < tr->T; j++) {
		if ((id[j] = text_id(r, tr->text && tr->text[j] ? tr->text[j] : "", e)) < 0) {
			free(id);
			return -1;
		}
		r->occ[id[j]]++;
	}
	for (size_t k = 0; k < n; k++) {
		if (ep[k].primary || ep[k].pos < 1 || ep[k].pos >= tr->T)
			continue;
		if (r->nep == r->epcap) {
			size_t c = r->epcap ? 2 * r->epcap : 256;
			tr_ep *ne = realloc(r->ep, c * sizeof *ne);
			if (!ne) {
				free(id);
				return ss_err_set(e, "out of memory (token table)");
			}
			r->ep = ne;
			r->epcap = c;
		}
		r->ep[r->nep++] = (tr_ep){id[ep[k].pos], r->ntrace, ep[k].pos, ep[k].l_start,
		                          ep[k].lifetime, ep[k].mlp_norm_start, ep[k].score};
	}
	r->ntrace++;
	free(id);
	return 0;
}

typedef struct row {
	long text, occ, sinks, eps;
} row;

static const ss_tokrate *cmp_ctx;
static int cmp_row(const void *a, const void *b)
{
	const row *x = a, *y = b;
	if (x->sinks != y->sinks)
		return x->sinks > y->sinks ? -1 : 1;
	if (x->occ != y->occ)
		return x->occ > y->occ ? -1 : 1;
	return strcmp(cmp_ctx->text[x->text], cmp_ctx->text[y->text]);
}

static int cmp_occ(const void *a, const void *b)
{
	const tr_ep *x = a, *y = b;
	if (x->trace != y->trace)
		return x->trace < y->trace ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

int tokrate_write_tsv(FILE *f, ss_tokrate *r, const ss_level_params *p, ss_err *e)
{
	size_t n = r->nep;
	long *ls = ss_malloc(n ? n : 1, sizeof *ls, "token table", e);
	long *lt = ss_malloc(n ? n : 1, sizeof *lt, "token table", e);
	long *as = ss_malloc(n ? n : 1, sizeof *as, "token table", e);
	double *mlp = ss_malloc(n ? n : 1, sizeof *mlp, "token table", e);
	double *sc = ss_malloc(n ? n : 1, sizeof *sc, "token table", e);
	row *rw = ss_calloc((size_t)(r->ntext ? r->ntext : 1), sizeof *rw, "token table", e);
	ss_level *lv = NULL;
	size_t nlv = 0;
	long *cnt = NULL;
	int rc = -1;
	if (!ls || !lt || !as || !mlp || !sc || !rw)
		goto done;
	/* occurrences in order, so the sinks (distinct occurrences) count once */
	if (n) /* no episodes: r->ep may be NULL, which qsort must not get */
		qsort(r->ep, n, sizeof *r->ep, cmp_occ);
	for (size_t i = 0; i < n; i++) {
		ls[i] = r->ep[i].l_start, lt[i] = r->ep[i].lifetime;
		mlp[i] = r->ep[i].mlp, sc[i] = r->ep[i].score;
	}
	if (levels_find(ls, lt, mlp, sc, n, p, as, &lv, &nlv, e) < 0)
		goto done;
	long nc = (long)nlv + 1; /* per text: levels 1..N, then none */
	if (!(cnt = ss_calloc((size_t)(r->ntext ? r->ntext : 1) * (size_t)nc, sizeof *cnt,
	                      "token table", e)))
		goto done;
	for (long k = 0; k < r->ntext; k++)
		rw[k] = (row){k, r->occ[k], 0, 0};
	for (size_t i = 0; i < n; i++) {
		const tr_ep *q = &r->ep[i];
		rw[q->text].eps++;
		if (!i || cmp_occ(q, q - 1))
			rw[q->text].sinks++;
		cnt[q->text * nc + (as[i] >= 0 ? as[i] : nc - 1)]++;
	}
	fputs("token\toccurrences\tsinks\trate\tepisodes", f);
	for (size_t k = 0; k < nlv; k++)
		fprintf(f, "\tlevel%zu", k + 1);
	fputs("\tnone\n", f);
	cmp_ctx = r;
	qsort(rw, (size_t)r->ntext, sizeof *rw, cmp_row);
	for (long k = 0; k < r->ntext; k++) {
		const row *q = &rw[k];
		tsv_put_escaped(f, r->text[q->text], strlen(r->text[q->text]));
		fprintf(f, "\t%ld\t%ld\t", q->occ, q->sinks);
		tsv_put_double(f, q->occ ? (double)q->sinks / (double)q->occ : 0);
		fprintf(f, "\t%ld", q->eps);
		for (long c = 0; c < nc; c++)
			fprintf(f, "\t%ld", cnt[q->text * nc + c]);
		fputc('\n', f);
	}
	rc = 0;
done:
	free(ls), free(lt), free(as), free(mlp), free(sc), free(rw), free(lv), free(cnt);
	return rc;
}
