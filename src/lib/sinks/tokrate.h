/* tokrate.h - which tokens become sinks, as numbers (sinkdetect(1)
 * --tokens): per token text over one or more traces, how often it occurs
 * (positions after 0), how many of those occurrences start at least one
 * secondary episode (sinks), the rate sinks / occurrences, the secondary
 * episodes on it, and those episodes split by level (levels_find over
 * every secondary episode of the traces, as sinklevels(1) finds them).
 * The paper's "semantically uninformative tokens" claim as a measurement.
 */
#ifndef SS_TOKRATE_H
#define SS_TOKRATE_H

#include <stddef.h>
#include <stdio.h>

#include "util/err.h"
#include "io/episodes.h"
#include "io/trace.h"
#include "sinks/levels.h"

typedef struct ss_tokrate ss_tokrate;

ss_tokrate *tokrate_new(ss_err *e);
/* Count the occurrences of tr's texts and its secondary episodes ep[n]
 * (sink_episodes of tr). */
int tokrate_add(ss_tokrate *r, const ss_trace *tr, const ss_episode *ep, size_t n, ss_err *e);
/* The table: header, then one row per token text
 *   token occurrences sinks rate episodes level1 .. levelN none
 * (levelK: its episodes in level K, levels 1-based as sinklevels numbers
 * them with parameters p; none: in no level), ordered by sinks, then
 * occurrences (both descending), then text. */
int tokrate_write_tsv(FILE *f, ss_tokrate *r, const ss_level_params *p, ss_err *e);
void tokrate_free(ss_tokrate *r);

#endif
