/* jvalint.h — what jval.c and jvalread.c share inside jval (jval.h). */
#ifndef GF_JVALINT_H
#define GF_JVALINT_H

#include <stddef.h>
#include <stdint.h>

#include "jval.h"

struct gj_member {
	char *key;
	size_t klen;
	uint64_t hash;
	json_t *v;
};

/* malloc that aborts when memory is out, as the client does. */
void *gj_alloc(size_t n);
/* A string value of n bytes, not checked (the caller has). */
json_t *gj_string_of(const char *s, size_t n);
uint64_t gj_hash_key(const char *k, size_t n);
/* The member of object o whose key is k (klen bytes, hash h), or -1. */
long gj_find(const json_t *o, const char *k, size_t klen, uint64_t h);
/* Set key k (klen bytes, checked) of o to v, whose reference it takes; a
 * new member keeps `owned` (malloc'd k, else NULL: a copy is made), which
 * is freed when not kept. */
void gj_set_member(json_t *o, const char *k, size_t klen, json_t *v, char *owned);

#endif
