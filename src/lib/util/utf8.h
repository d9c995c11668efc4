/* utf8.h - the suite's one reading of UTF-8 (RFC 3629): the tokenizer
 * validates and repairs text with it (tok_utf8_valid, tok_utf8_lossy), the
 * TSV writer escapes the bytes it finds invalid (tsv_put_escaped). */
#ifndef SS_UTF8_H
#define SS_UTF8_H

#include <stddef.h>

/* A lead byte c: the number of continuation bytes (1 to 3) and the range
 * [*lo, *hi] the first of them must lie in (no overlong forms, no
 * surrogates, nothing above U+10FFFF; the others lie in 0x80..0xbf); 0
 * when c cannot start a multi-byte sequence. */
size_t ss_utf8_lead(unsigned c, unsigned *lo, unsigned *hi);
/* The length (1 to 4) of the valid UTF-8 sequence at s[0..n), 0 when s
 * does not start with one (a stray, truncated or overlong sequence). */
size_t ss_utf8_len(const char *s, size_t n);

#endif
