/* decimal.c — a plain decimal read to the nearest double (see decimal.h). */
#include "decimal.h"

#include <math.h>
#include <stdint.h>

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
