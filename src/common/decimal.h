/* decimal.h — plain decimals ("-12.5") read to the double strtod gives,
 * fast: the daemon's times are 17-digit decimals, a million of them in a
 * listing or a start, where musl's strtod (the static client's) and
 * glibc's slow path for 17 digits cost the most. */
#ifndef GF_DECIMAL_H
#define GF_DECIMAL_H

/* s: at most 19 digits, 15 of them after the point, not zero, no
 * exponent, NUL-ended. Its nearest double (ties to even), exactly as
 * strtod rounds it: 0. The quotient of digits and power of ten as
 * doubles, checked against its midpoints in 128-bit integers, and where
 * that does not settle it, a 128-bit long division. -1 for any other form
 * (and where the compiler has no 128-bit integers): ask strtod. */
int gf_decimal(const char *s, double *out);

#endif
