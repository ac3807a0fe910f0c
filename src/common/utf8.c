/* utf8.c — UTF-8 as gflow reads it everywhere: strict (as jansson is),
 * with the C0 and C1 controls told apart for display (see utf8.h). */
#include "utf8.h"

size_t gf_utf8_seq(const unsigned char *p, size_t n, uint32_t *cp)
{
	size_t len, i;
	uint32_t c = p[0];

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		c &= 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		c &= 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		c &= 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (p[i] & 0x3F);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) || c > 0x10FFFF ||
	    (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return len;
}

size_t gf_utf8_prefix(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;
	size_t i = 0, l;

	while (i < n && (l = gf_utf8_seq(p + i, n - i, &cp)))
		i += l;
	return i;
}

int gf_utf8_valid(const char *s, size_t n)
{
	return gf_utf8_prefix(s, n) == n;
}

size_t gf_utf8_put(char out[4], uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

int gf_is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
}

int gf_text_printable(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;

	for (size_t i = 0, l; i < n; i += l)
		if (!(l = gf_utf8_seq(p + i, n - i, &cp)) || gf_is_control(cp))
			return 0;
	return 1;
}

