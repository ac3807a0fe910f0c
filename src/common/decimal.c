/* decimal.c — a plain decimal read to the nearest double (see decimal.h). */
#include "decimal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __SIZEOF_INT128__
/* m/den against the midpoint (2c + side)·2^(e-1) beside c·2^e (side ±1):
 * below, at, above: -1, 0, 1. Both sides stay under 2^115 for the forms
 * gf_decimal takes (m < 2^64, den <= 10^15, c < 2^53, e <= 11). */
static int vs_midpoint(uint64_t m, uint64_t den, uint64_t c, int e, int side)
{
	unsigned __int128 l = m, r = (unsigned __int128)(side > 0 ? 2 * c + 1 : 2 * c - 1) * den;

	if (e <= 1)
		l <<= 1 - e;
	else
		r <<= e - 1;
	return (l > r) - (l < r);
}

/* The double m / den rounds to, when the division of the two doubles
 * gives it (it is within an ulp of it): c·2^e strictly between its
 * midpoints. 0, else -1 (the exact way below decides). */
static int quick(uint64_t m, uint64_t den, double *out)
{
	double x = (double)m / (double)den;
	uint64_t bits, c;
	int e;

	memcpy(&bits, &x, sizeof bits);
	c = (bits & ((UINT64_C(1) << 52) - 1)) | UINT64_C(1) << 52;
	e = (int)(bits >> 52 & 0x7ff) - 1075;
	/* (the bottom of a binade has a nearer midpoint below: left out) */
	if (c == UINT64_C(1) << 52 || vs_midpoint(m, den, c, e, -1) <= 0 || vs_midpoint(m, den, c, e, 1) >= 0)
		return -1;
	*out = x;
	return 0;
}
#endif

int gf_decimal(const char *s, double *out)
{
#ifdef __SIZEOF_INT128__
	const char *p = s;
	uint64_t m = 0, den = 1;
	int digits = 0, k = 0, neg = *p == '-', shift;
	unsigned __int128 num, d, q, rem;
	uint64_t mant;

	p += neg;
	for (; *p >= '0' && *p <= '9'; p++, digits++)
		m = m * 10 + (uint64_t)(*p - '0');
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++, digits++, k++) {
			m = m * 10 + (uint64_t)(*p - '0');
			den *= 10;
		}
	if (*p || digits > 19 || k > 15 || m == 0)
		return -1;	/* exponents, zeros, long or odd forms: strtod's */
	if (quick(m, den, out) == 0) {	/* nearly always */
		if (neg)
			*out = -*out;
		return 0;
	}
	/* q = floor(m * 2^shift / den) with 55 bits: 53 kept, a round bit
	 * and a sticky bit (with the remainder) */
	shift = 55 + (64 - __builtin_clzll(den)) - (64 - __builtin_clzll(m));
	for (;;) {
		num = (unsigned __int128)m << (shift > 0 ? shift : 0);
		d = (unsigned __int128)den << (shift < 0 ? -shift : 0);
		q = num / d;
		if (q >= (unsigned __int128)1 << 55)
			shift--;
		else if (q < (unsigned __int128)1 << 54)
			shift++;
		else
			break;
	}
	rem = num % d;
	mant = (uint64_t)(q >> 2);
	if (((q >> 1) & 1) && ((q & 1) || rem || (mant & 1)))
		mant++;
	if (mant == UINT64_C(1) << 53) {
		mant >>= 1;
		shift--;
	}
	*out = ldexp((double)mant, 2 - shift);
	if (neg)
		*out = -*out;
	return 0;
#else
	(void)s, (void)out;
	return -1;
#endif
}
