/* toml.h — a TOML 1.0 reader: one document, from memory, into a tree.
 *
 * The tree is read-only once parsed. Tables keep their keys in document
 * order. Every node (and every key) knows the line and column (1-based,
 * columns count UTF-8 characters) where it was written, so callers can point
 * at a bad value. Dates and times are validated and kept as the text that
 * was written, with type TOML_DATETIME.
 *
 * Errors read "line L, column C: <what is wrong>". */
#ifndef GF_TOML_H
#define GF_TOML_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Guards against hostile input. */
#define TOML_MAX_SIZE (4u << 20)   /* bytes in one document */
#define TOML_MAX_DEPTH 64          /* tables and arrays nested in each other */

enum toml_type {
	TOML_STRING,
	TOML_INTEGER,
	TOML_FLOAT,
	TOML_BOOLEAN,
	TOML_DATETIME,
	TOML_ARRAY,
	TOML_TABLE,
};

struct toml_value;

/* Parse text[0..len) (need not be NUL-terminated). Returns the root table,
 * which the caller frees with toml_free(), or NULL with e set. */
struct toml_value *toml_parse(const char *text, size_t len, struct gf_err *e);
void toml_free(struct toml_value *v);

enum toml_type toml_type(const struct toml_value *v);
/* "string", "integer", "float", "boolean", "date-time", "array", "table". */
const char *toml_type_name(enum toml_type t);
int toml_line(const struct toml_value *v);
int toml_col(const struct toml_value *v);

/* Tables; i counts keys in document order. */
size_t toml_table_len(const struct toml_value *t);
const char *toml_table_key(const struct toml_value *t, size_t i);
size_t toml_table_key_len(const struct toml_value *t, size_t i); /* keys may hold NUL */
int toml_table_key_line(const struct toml_value *t, size_t i);
int toml_table_key_col(const struct toml_value *t, size_t i);
const struct toml_value *toml_table_at(const struct toml_value *t, size_t i);
/* NULL when t has no such key. */
const struct toml_value *toml_table_get(const struct toml_value *t, const char *key);

/* Arrays (both [1, 2] and [[array.of.tables]]). */
size_t toml_array_len(const struct toml_value *a);
const struct toml_value *toml_array_at(const struct toml_value *a, size_t i);

/* Scalars; each must be called on a value of its own type. toml_string()
 * also returns the text of a TOML_DATETIME. Strings are NUL-terminated;
 * toml_string_len() tells when one holds a NUL itself (from \u0000). */
const char *toml_string(const struct toml_value *v);
size_t toml_string_len(const struct toml_value *v);
int64_t toml_integer(const struct toml_value *v);
double toml_float(const struct toml_value *v);
int toml_boolean(const struct toml_value *v);

#endif
