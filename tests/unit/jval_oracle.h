/* jval_oracle.h — jansson's answers for test_jval.c and fuzz_json.c
 * (jval_oracle.c). Flags are jansson's numbers, which jval.h keeps. */
#ifndef JVAL_ORACLE_H
#define JVAL_ORACLE_H

#include <stddef.h>

char *jansson_pack(int k, size_t flags);
char *jansson_ops(int k, size_t flags);
char *jansson_numbers(size_t flags);
char *jansson_roundtrip(const char *in, size_t n, size_t lflags, size_t dflags, char *err, size_t size);
/* Whether jval means to read `in` as jansson does: not when it holds a NUL
 * byte outside a string, which jansson skips after a number or a word (and
 * may then quote bytes past the end of its input); jval refuses it. */
int jansson_comparable(const char *in, size_t n);

#endif
