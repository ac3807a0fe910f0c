/* grow.h — the one way a growing array of the daemon (and of jval, the
 * client's JSON values) grows: its capacity doubled (from `first`) until it
 * holds `need` elements. Out of memory aborts, as everywhere in the daemon
 * and the client. */
#ifndef GF_GROW_H
#define GF_GROW_H

#include <stdlib.h>

/* v grown to hold at least `need` elements of `size` bytes; *cap is its
 * capacity, updated. Use: a = gf_grow(a, &cap, n + 1, sizeof *a, 16). */
static inline void *gf_grow(void *v, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t c = *cap ? *cap : first;

	if (need <= *cap)
		return v;
	while (c < need)
		c *= 2;
	if (!(v = realloc(v, c * size)))
		abort();
	*cap = c;
	return v;
}

#endif
