/* tokclass.h - token classes and the control set.
 *
 * "Non-informative" tokens (the paper's term) are those whose decoded piece
 * consists only of characters of chosen classes: whitespace, punctuation,
 * digits (the default set).  The control set of a trace is its
 * non-informative tokens that are never a sink at any layer under the sink
 * rule: one definition, used by tsne, swapexp and pcaprobe alike.
 */
#ifndef SS_TOKCLASS_H
#define SS_TOKCLASS_H

#include "util/err.h"
#include "sinks/sinks.h"
#include "io/trace.h"

enum {
	SS_TC_SPACE = 1, /* Unicode White_Space, incl. '\n' and SentencePiece's U+2581 */
	SS_TC_PUNCT = 2, /* Unicode P* and S* categories */
	SS_TC_DIGIT = 4, /* Unicode Nd */
	SS_TC_DEFAULT = 7,
};

/* Parse "space,punct,digit" (or "all"/"none") into a mask. */
int tokclass_parse(const char *s, unsigned *mask, ss_err *e);
/* 1 when the piece is non-empty and every code point is in the classes of
 * mask (invalid UTF-8 never is). */
int tokclass_is_noninformative(const char *piece, unsigned mask);
/* is_control[j] = 1 for non-informative positions j > 0 never a sink. */
int tokclass_controls(const ss_trace *tr, const ss_sink_params *p, unsigned mask,
                      unsigned char *is_control, ss_err *e);

#endif
