/* jval.h — JSON values for the client, in place of jansson.
 *
 * The client (gflow and its gbatch, gqueue … links) starts once per
 * command. Linked with glibc, each start pays glibc's CPU probe: 68
 * CPUID instructions, each a trap to the hypervisor on a virtual machine
 * (~10 µs apiece on the machines gflow is measured on, docs/benchmarks.md).
 * Linked with musl it pays none — but jansson is built for glibc only. So
 * the client has its own JSON values: the part of jansson's API it uses,
 * with jansson's names (macros onto gj_*, so that a test can hold the two
 * side by side: tests/unit/test_jval.c) and jansson's behaviour where the
 * client can see it:
 *   - reference counts: *_new and "o" in json_pack take the caller's
 *     reference, json_object_set / json_array_append / "O" add one;
 *     json_true(), json_false() and json_null() are never freed;
 *   - strings are strict UTF-8 (json_string of anything else is NULL) and
 *     may hold NUL only through json_stringn;
 *   - objects keep their keys in insertion order; setting a key that is
 *     there replaces its value in place;
 *   - json_loadb accepts what jansson accepts (RFC 8259, an object or an
 *     array at the top unless JSON_DECODE_ANY, no \u0000, integers that fit
 *     a long long, finite reals) and fails with jansson's words at the same
 *     place — but for a NUL byte outside a string, which jval refuses
 *     always (jansson skips one that ends a number or a word);
 *   - json_dumps writes jansson's bytes (JSON_COMPACT, JSON_INDENT(n),
 *     JSON_ENCODE_ANY; order is always kept): scalars through jsonw.c.
 * The daemon keeps jansson (jsonapi.h says which a file is built with). */
#ifndef GF_JVAL_H
#define GF_JVAL_H

#include <stdarg.h>
#include <stddef.h>

typedef enum {
	JSON_OBJECT,
	JSON_ARRAY,
	JSON_STRING,
	JSON_INTEGER,
	JSON_REAL,
	JSON_TRUE,
	JSON_FALSE,
	JSON_NULL
} json_type;

typedef long long json_int_t;
typedef struct gj json_t;

struct gj_member;

struct gj {
	json_type type;
	int refcount;	/* -1: a constant (true, false, null) */
	union {
		struct {
			struct gj_member *m;
			size_t n, cap;
			unsigned *index;	/* hash of member positions + 1, once n > 8 */
			size_t icap;
		} obj;
		struct {
			json_t **v;
			size_t n, cap;
		} arr;
		struct {
			char *s;	/* NUL after len bytes */
			size_t len;
		} str;
		json_int_t i;
		double r;
	} u;
};

#define JSON_ERROR_TEXT_LENGTH 160
#define JSON_ERROR_SOURCE_LENGTH 80
typedef struct {
	int line, column, position;
	char source[JSON_ERROR_SOURCE_LENGTH];
	char text[JSON_ERROR_TEXT_LENGTH];
} json_error_t;

/* Encoding flags (json_dumps), as jansson numbers them. */
#define JSON_INDENT(n) ((size_t)(n) & 0x1F)
#define JSON_COMPACT 0x20
#define JSON_PRESERVE_ORDER 0x100	/* always so */
#define JSON_ENCODE_ANY 0x200
/* Decoding flags (json_loadb). */
#define JSON_REJECT_DUPLICATES 0x1
#define JSON_DECODE_ANY 0x4

json_t *gj_object(void);
json_t *gj_array(void);
json_t *gj_string(const char *s);
json_t *gj_stringn(const char *s, size_t len);
json_t *gj_integer(json_int_t v);
json_t *gj_real(double v);
json_t *gj_true(void);
json_t *gj_false(void);
json_t *gj_null(void);

json_t *gj_incref(json_t *v);
void gj_decref(json_t *v);

json_t *gj_object_get(const json_t *o, const char *key);
int gj_object_set_new(json_t *o, const char *key, json_t *v);
int gj_object_set(json_t *o, const char *key, json_t *v);
int gj_object_del(json_t *o, const char *key);
size_t gj_object_size(const json_t *o);
int gj_object_update(json_t *o, json_t *other);
/* The i-th key and value, in insertion order (NULL past the end). */
const char *gj_object_key_at(const json_t *o, size_t i);
json_t *gj_object_value_at(const json_t *o, size_t i);

size_t gj_array_size(const json_t *a);
json_t *gj_array_get(const json_t *a, size_t i);
int gj_array_append_new(json_t *a, json_t *v);
int gj_array_append(json_t *a, json_t *v);
int gj_array_remove(json_t *a, size_t i);
int gj_array_clear(json_t *a);

const char *gj_string_value(const json_t *v);
size_t gj_string_length(const json_t *v);
json_int_t gj_integer_value(const json_t *v);
double gj_real_value(const json_t *v);
double gj_number_value(const json_t *v);

int gj_equal(const json_t *a, const json_t *b);
json_t *gj_deep_copy(const json_t *v);

json_t *gj_loadb(const char *buf, size_t len, size_t flags, json_error_t *err);
json_t *gj_loads(const char *s, size_t flags, json_error_t *err);
char *gj_dumps(const json_t *v, size_t flags);
typedef int (*json_dump_callback_t)(const char *buf, size_t size, void *data);
int gj_dump_callback(const json_t *v, json_dump_callback_t cb, void *data, size_t flags);

/* jansson's packing language, the part the client writes: { } [ ] and
 * s (string), b (int as boolean), i (int), I (json_int_t), f (double),
 * n (null), o (a value, its reference taken), O (a value, a reference
 * added), o? and O? (NULL becomes null); white space, ':' and ',' are
 * ignored. NULL when an argument is unfit (a NULL string, a NaN). */
json_t *gj_pack(const char *fmt, ...);

#define json_object gj_object
#define json_array gj_array
#define json_string gj_string
#define json_stringn gj_stringn
#define json_integer gj_integer
#define json_real gj_real
#define json_true gj_true
#define json_false gj_false
#define json_null gj_null
#define json_boolean(b) ((b) ? gj_true() : gj_false())
#define json_incref gj_incref
#define json_decref gj_decref
#define json_typeof(v) ((v)->type)
#define json_is_object(v) ((v) && (v)->type == JSON_OBJECT)
#define json_is_array(v) ((v) && (v)->type == JSON_ARRAY)
#define json_is_string(v) ((v) && (v)->type == JSON_STRING)
#define json_is_integer(v) ((v) && (v)->type == JSON_INTEGER)
#define json_is_real(v) ((v) && (v)->type == JSON_REAL)
#define json_is_number(v) (json_is_integer(v) || json_is_real(v))
#define json_is_true(v) ((v) && (v)->type == JSON_TRUE)
#define json_is_false(v) ((v) && (v)->type == JSON_FALSE)
#define json_is_boolean(v) (json_is_true(v) || json_is_false(v))
#define json_is_null(v) ((v) && (v)->type == JSON_NULL)
#define json_object_get gj_object_get
#define json_object_set_new gj_object_set_new
#define json_object_set gj_object_set
#define json_object_del gj_object_del
#define json_object_size gj_object_size
#define json_object_update gj_object_update
#define json_object_foreach(o, key, value)                                                   \
	for (size_t gj_at_ = 0; ((key) = gj_object_key_at((o), gj_at_)) != NULL &&            \
				((value) = gj_object_value_at((o), gj_at_), 1);                \
	     gj_at_++)
#define json_array_size gj_array_size
#define json_array_get gj_array_get
#define json_array_append_new gj_array_append_new
#define json_array_append gj_array_append
#define json_array_remove gj_array_remove
#define json_array_clear gj_array_clear
#define json_array_foreach(a, index, value)                                                  \
	for ((index) = 0; (index) < gj_array_size(a) && ((value) = gj_array_get((a), (index))); \
	     (index)++)
#define json_string_value gj_string_value
#define json_string_length gj_string_length
#define json_integer_value gj_integer_value
#define json_real_value gj_real_value
#define json_number_value gj_number_value
#define json_equal gj_equal
#define json_deep_copy gj_deep_copy
#define json_loadb gj_loadb
#define json_loads gj_loads
#define json_dumps gj_dumps
#define json_dump_callback gj_dump_callback
#define json_pack gj_pack

#endif
