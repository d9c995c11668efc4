/* tokclass.c - token classes and the control set; see tokclass.h. */
#include "sinks/tokclass.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

int tokclass_parse(const char *s, unsigned *mask, ss_err *e)
{
	*mask = 0;
	if (!strcmp(s, "all")) {
		*mask = SS_TC_DEFAULT;
		return 0;
	}
	if (!strcmp(s, "none"))
		return 0;
	const char *p = s;
	while (*p) {
		size_t n = strcspn(p, ",");
		if (n == 5 && !strncmp(p, "space", 5))
			*mask |= SS_TC_SPACE;
		else if (n == 5 && !strncmp(p, "punct", 5))
			*mask |= SS_TC_PUNCT;
		else if (n == 5 && !strncmp(p, "digit", 5))
			*mask |= SS_TC_DIGIT;
		else
			return ss_err_status(e, SS_EXIT_USAGE,
			                     "token classes '%s': unknown class '%.*s' (space, punct, digit, all, none)",
			                     s, (int)n, p);
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

static unsigned cp_class(utf8proc_int32_t c)
{
	/* White_Space: the C0 spaces, NEL, and the Z categories; U+2581 is
	 * SentencePiece's visible space. */
	if ((c >= 9 && c <= 13) || c == 0x85 || c == 0x2581)
		return SS_TC_SPACE;
	switch (utf8proc_category(c)) {
	case UTF8PROC_CATEGORY_ZS:
	case UTF8PROC_CATEGORY_ZL:
	case UTF8PROC_CATEGORY_ZP:
		return SS_TC_SPACE;
	case UTF8PROC_CATEGORY_PC:
	case UTF8PROC_CATEGORY_PD:
	case UTF8PROC_CATEGORY_PS:
	case UTF8PROC_CATEGORY_PE:
	case UTF8PROC_CATEGORY_PI:
	case UTF8PROC_CATEGORY_PF:
	case UTF8PROC_CATEGORY_PO:
	case UTF8PROC_CATEGORY_SM:
	case UTF8PROC_CATEGORY_SC:
	case UTF8PROC_CATEGORY_SK:
	case UTF8PROC_CATEGORY_SO:
		return SS_TC_PUNCT;
	case UTF8PROC_CATEGORY_ND:
		return SS_TC_DIGIT;
	default:
		return 0;
	}
}

int tokclass_is_noninformative(const char *piece, unsigned mask)
{
	const utf8proc_uint8_t *s = (const utf8proc_uint8_t *)piece;
	utf8proc_ssize_t n = (utf8proc_ssize_t)strlen(piece);
	if (n == 0 || mask == 0)
		return 0;
	while (n > 0) {
		utf8proc_int32_t c;
		utf8proc_ssize_t k = utf8proc_iterate(s, n, &c);
		if (k <= 0 || c < 0)
			return 0;
		if (!(cp_class(c) & mask))
			return 0;
		s += k;
		n -= k;
	}
	return 1;
}

int tokclass_controls(const ss_trace *tr, const ss_sink_params *p, unsigned mask,
                      unsigned char *is_control, ss_err *e)
{
	long L = tr->L, T = tr->T;
	unsigned char *m = ss_malloc((size_t)(L + 1) * (size_t)T, 1, "sink mask", e);
	if (!m)
		return -1;
	if (sink_mask(tr, p, m, e)) {
		free(m);
		return -1;
	}
	for (long j = 0; j < T; j++) {
		int sink = 0;
		for (long l = 0; l <= L && !sink; l++)
			sink = m[(size_t)l * T + j];
		is_control[j] = j > 0 && !sink && tokclass_is_noninformative(tr->text[j], mask);
	}
	free(m);
	return 0;
}
