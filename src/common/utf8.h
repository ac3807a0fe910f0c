/* utf8.h — strict UTF-8: no overlong forms, surrogates or code points past
 * U+10FFFF (as jansson accepts it). Plain bytes in and out, no JSON. */
#ifndef GF_UTF8_H
#define GF_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1-4) of the valid sequence at p (n bytes left), 0 when the byte
 * there starts none; *cp gets its code point. */
size_t gf_utf8_seq(const unsigned char *p, size_t n, uint32_t *cp);
int gf_utf8_valid(const char *s, size_t n);
/* How many of the n bytes at s are whole, valid UTF-8 from the start. */
size_t gf_utf8_prefix(const char *s, size_t n);
/* Code point cp (at most U+10FFFF, not a surrogate) as UTF-8 into out;
 * its length. */
size_t gf_utf8_put(char out[4], uint32_t cp);

/* The value of hex digit c (a \u escape's, a 0x number's), -1 for none. */
static inline int gf_hex_digit(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A C0 control, DEL or a C1 control (U+0080..U+009F). */
int gf_is_control(uint32_t cp);
/* Text a name may hold: valid UTF-8 without C0 controls, DEL or C1
 * controls. */
int gf_text_printable(const char *s, size_t n);

#endif
