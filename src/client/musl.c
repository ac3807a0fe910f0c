/* musl.c — memcpy and memmove for the client linked with musl (meson.build:
 * musl_client), in place of musl's own.
 *
 * musl's x86-64 memcpy copies with `rep movsq`, whose start-up costs ~30 ns
 * on the machines gflow is measured on; glibc's copies a few bytes in 3.
 * The client copies a few bytes at a time by the million (gqueue -a of
 * 10,000 jobs: every cell, every escaped string): with musl's, that listing
 * took three times as long as with glibc. These copy small sizes with
 * overlapping unaligned loads and stores, and leave `rep movsb` the large
 * ones, where it is fast. musl's memmove calls into its memcpy's object, so
 * both are given here (an archive member is linked only for a symbol still
 * undefined).
 *
 * Built with -fno-builtin -fno-tree-loop-distribute-patterns: the compiler
 * must not turn these loops into calls to memcpy. */
#include <stddef.h>
#include <stdint.h>

typedef unsigned char v16 __attribute__((vector_size(16), aligned(1), may_alias));
typedef uint64_t u64 __attribute__((aligned(1), may_alias));
typedef uint32_t u32 __attribute__((aligned(1), may_alias));

void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);

/* n bytes, n <= 32, any overlap: every load before any store. */
static inline void copy_small(unsigned char *d, const unsigned char *s, size_t n)
{
	if (n >= 16) {
		v16 a = *(const v16 *)s, b = *(const v16 *)(s + n - 16);

		*(v16 *)d = a;
		*(v16 *)(d + n - 16) = b;
	} else if (n >= 8) {
		u64 a = *(const u64 *)s, b = *(const u64 *)(s + n - 8);

		*(u64 *)d = a;
		*(u64 *)(d + n - 8) = b;
	} else if (n >= 4) {
		u32 a = *(const u32 *)s, b = *(const u32 *)(s + n - 4);

		*(u32 *)d = a;
		*(u32 *)(d + n - 4) = b;
	} else if (n) {
		unsigned char a = s[0], b = s[n / 2], c = s[n - 1];

		d[0] = a;
		d[n / 2] = b;
		d[n - 1] = c;
	}
}

/* Front to back: also right for an overlap with d before s (no restrict). */
static inline __attribute__((always_inline)) void copy_forward(unsigned char *d, const unsigned char *s, size_t n)
{
	if (n <= 32) {
		copy_small(d, s, n);
		return;
	}
	if (n >= 512) {
		__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
		return;
	}
	v16 last = *(const v16 *)(s + n - 16);

	for (; n > 16; n -= 16, d += 16, s += 16)
		*(v16 *)d = *(const v16 *)s;
	*(v16 *)(d + n - 16) = last;
}

void *memcpy(void *restrict dst, const void *restrict src, size_t n)
{
	copy_forward(dst, src, n);
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (n <= 32) {
		copy_small(d, s, n);
		return dst;
	}
	if ((uintptr_t)d - (uintptr_t)s >= n) {	/* no overlap with d after s */
		copy_forward(d, s, n);
		return dst;
	}
	/* backwards, 16 bytes at a time; the first 16 saved before any store */
	v16 first = *(const v16 *)s;

	for (; n > 16; n -= 16)
		*(v16 *)(d + n - 16) = *(const v16 *)(s + n - 16);
	*(v16 *)d = first;
	return dst;
}
