/* kvevict.c - KV-cache eviction policies; see kvevict.h.  Here: the
 * policy names, the episode table, the results and their tables; the
 * policies and the selection are in kvevict_pol.c, the passes and the
 * measures in kvevict_run.c.
 */
#include "interv/kvevict.h"

#include <stdlib.h>
#include <string.h>

#include "interv/kvevict_int.h"
#include "io/episodes.h"
#include "io/tsv.h"

const char *const kv_policy_names[KV_NPOL] = {"full", "window", "streaming", "sinks", "heavy", "random"};

int kv_policy_parse(const char *name, kv_policy *p, ss_err *e)
{
	for (int i = 0; i < KV_NPOL; i++)
		if (!strcmp(name, kv_policy_names[i])) {
			*p = (kv_policy)i;
			return 0;
		}
	return ss_err_status(e, SS_EXIT_USAGE,
	                     "--policies: unknown policy '%s' (full, window, streaming, sinks, heavy, random)", name);
}

/* ---- the episode table ------------------------------------------------- */

int kv_episodes_read(const char *path, const char *trace, const int32_t *ids, long T, long L,
                     kv_episode **eps, size_t *n, ss_err *e)
{
	ss_eptab t = {0};
	*eps = NULL;
	*n = 0;
	if (eptab_read(&t, path, EP_BIT(EP_POS) | EP_BIT(EP_L_START), e) < 0)
		return -1;
	int rc = -1, has_end = !!(t.cols & EP_BIT(EP_L_END));
	if (!has_end && !(t.cols & EP_BIT(EP_LIFETIME))) {
		ss_err_set(e, "%s: missing column 'l_end' (or 'lifetime')", path);
		goto done;
	}
	if (!(*eps = ss_malloc(t.n + 1, sizeof **eps, "episodes", e)))
		goto done;
	for (size_t x = 0; x < t.n; x++) {
		const ss_episode *p = &t.ep[x];
		if ((t.cols & EP_BIT(EP_TRACE)) && strcmp(t.trace[x], t.trace[0])) {
			ss_err_set(e, "%s:%ld: episodes of traces %s and %s: give the table of this trace only", path,
			           t.line[x], t.trace[0], t.trace[x]);
			goto done;
		}
		kv_episode k = {p->pos, p->l_start, has_end ? p->l_end : p->l_start + p->lifetime - 1,
		                p->pos == 0 || p->primary};
		if (k.pos >= T) {
			ss_err_set(e, "%s:%ld: pos %ld beyond the %ld tokens of trace %s (an episode table of another trace?)",
			           path, t.line[x], k.pos, T, trace);
			goto done;
		}
		if ((t.cols & EP_BIT(EP_TOKEN)) && p->token != ids[k.pos]) {
			ss_err_set(e, "%s:%ld: token %d at pos %ld, trace %s has %d there (an episode table of another trace)",
			           path, t.line[x], p->token, k.pos, trace, ids[k.pos]);
			goto done;
		}
		if (k.l_end < k.l_start || k.l_end > L) {
			ss_err_set(e, "%s:%ld: layers %ld-%ld outside 1-%ld", path, t.line[x], k.l_start, k.l_end, L);
			goto done;
		}
		(*eps)[(*n)++] = k;
	}
	rc = 0;
done:
	if (rc) {
		free(*eps);
		*eps = NULL;
		*n = 0;
	}
	eptab_free(&t);
	return rc;
}

/* ---- results ----------------------------------------------------------- */

void kv_result_free(kv_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; r->rec && i < r->np * (size_t)r->L; i++) {
		free(r->rec[i].lo);
		free(r->rec[i].nk);
		free(r->rec[i].kept);
		free(r->rec[i].off);
	}
	free(r->rec);
	free(r->pairs);
	free(r->tot);
	free(r->lay);
	free(r->window);
	free(r);
}

const kv_total *kv_result_total(const kv_result *r, size_t pair)
{
	return &r->tot[pair];
}

const kv_layer *kv_result_layer(const kv_result *r, size_t pair, long l)
{
	return r->lay ? &r->lay[pair * (size_t)r->L + (size_t)(l - 1)] : NULL;
}

/* ---- tables -------------------------------------------------------------- */

static void put_head(FILE *f, const char *trace, const kv_pair *p)
{
	tsv_put_escaped(f, trace, strlen(trace));
	fprintf(f, "\t%s\t%ld", kv_policy_names[p->pol], p->budget);
}

void kv_totals_write(FILE *f, const char *trace, const kv_result *r)
{
	fputs(KV_TOTALS_HEADER, f);
	for (size_t p = 0; p < r->np; p++) {
		const kv_total *t = &r->tot[p];
		put_head(f, trace, &r->pairs[p]);
		fprintf(f, "\t%ld", r->T);
		double v[] = {t->nll, t->nll_full, t->ppl_ratio, t->kl, t->top1};
		tsv_put_row_end(f, v, 5);
	}
}

void kv_layers_write(FILE *f, const char *trace, const kv_result *r)
{
	fputs(KV_LAYERS_HEADER, f);
	for (size_t p = 0; r->lay && p < r->np; p++)
		for (long l = 1; l <= r->L; l++) {
			const kv_layer *y = kv_result_layer(r, p, l);
			put_head(f, trace, &r->pairs[p]);
			fprintf(f, "\t%ld", l);
			double v[] = {y->lost, y->primary, y->secondary, y->rest};
			tsv_put_row_end(f, v, 4);
		}
}

void kv_masks_write(FILE *f, const kv_result *r)
{
	fputs(KV_MASKS_HEADER, f);
	for (size_t p = 0; r->rec && p < r->np; p++) {
		if (r->pairs[p].pol == KV_FULL)
			continue;
		for (long l = 0; l < r->L; l++) {
			const kv_rec *x = &r->rec[p * (size_t)r->L + (size_t)l];
			for (long i = 0; i < r->T; i++) {
				const long *K = x->kept + x->off[i / x->chunk];
				long c = x->off[i / x->chunk + 1] - x->off[i / x->chunk], lo, k0, k1;
				ss_attn_sel z = {x->lo + i, x->nk + i, K, c};
				attn_keys(r->window[l], &z, 0, i, &lo, &k0, &k1);   /* what the engine shows */
				if (lo == 0)
					continue;
				fprintf(f, "%s\t%ld\t%ld\t%ld\t%ld\t", kv_policy_names[r->pairs[p].pol], r->pairs[p].budget,
				        l + 1, i, lo);
				for (long k = k0; k < k1; k++)
					fprintf(f, k > k0 ? ",%ld" : "%ld", K[k]);
				fputs(k1 > k0 ? "\n" : "-\n", f);
			}
		}
	}
}
