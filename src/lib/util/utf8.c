/* utf8.c - UTF-8 sequences; see utf8.h. */
#include "util/utf8.h"

size_t ss_utf8_lead(unsigned c, unsigned *lo, unsigned *hi)
{
	*lo = 0x80;
	*hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		return 1;
	if (c >= 0xe0 && c <= 0xef) {
		if (c == 0xe0) *lo = 0xa0;
		if (c == 0xed) *hi = 0x9f; /* no surrogates */
		return 2;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (c == 0xf0) *lo = 0x90;
		if (c == 0xf4) *hi = 0x8f;
		return 3;
	}
	return 0;
}

size_t ss_utf8_len(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	if (!n)
		return 0;
	if (u[0] < 0x80)
		return 1;
	unsigned lo, hi;
	size_t k = ss_utf8_lead(u[0], &lo, &hi);
	if (!k || k >= n || u[1] < lo || u[1] > hi)
		return 0;
	for (size_t j = 2; j <= k; j++)
		if (u[j] < 0x80 || u[j] > 0xbf)
			return 0;
	return k + 1;
}
