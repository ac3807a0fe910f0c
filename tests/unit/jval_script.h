/* jval_script.h — the same uses of the JSON API, built twice: against
 * jansson (jval_oracle.c) and against jval (test_jval.c), which compares
 * what each wrote. Include after <jansson.h> or jval.h, with SIDE(name)
 * naming this side's functions. Each script returns the malloc'd text it
 * made (or "NULL" when the call under test gave none). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Not every includer calls every script. */
#define SCRIPT_FN static __attribute__((unused))
#define SCRIPT_DUMP(v, flags) ((v) ? json_dumps((v), (flags)) : strdup("NULL"))

/* A script's end: v written with flags (or "NULL"), and v, o and a let go. */
SCRIPT_FN char *SIDE(done)(json_t *v, json_t *o, json_t *a, size_t flags)
{
	char *out = SCRIPT_DUMP(v, flags);

	json_decref(v);
	json_decref(o);
	json_decref(a);
	return out;
}

/* json_pack with the formats the client writes. */
SCRIPT_FN char *SIDE(pack)(int k, size_t flags)
{
	json_t *v = NULL, *o = json_pack("{s:i}", "x", 1), *a = json_pack("[i,s]", 2, "two");

	switch (k) {
	case 0: v = json_pack("{s:o}", "jobs", json_array()); break;
	case 1: v = json_pack("{s:[{s:s,s:s}],s:b}", "jobs", "name", "n", "cmd", "c", "dry", 1); break;
	case 2: v = json_pack("{s:{s:I,s:O?,s:O?,s:s,s:O?,s:O?,s:O?,s:O?,s:O?,s:O?,s:O?,s:o},s:o,s:o,s:o,s:O?,s:o}",
			      "job", "id", (json_int_t)LLONG_MAX, "a", o, "b", (json_t *)NULL, "c", "see",
			      "d", a, "e", (json_t *)NULL, "f", o, "g", (json_t *)NULL, "h", a, "i", (json_t *)NULL,
			      "j", o, "k", json_integer(-5), "l", json_string("ell"), "m", json_real(2.5),
			      "n", json_null(), "p", (json_t *)NULL, "q", json_true());
		break;
	case 3: v = json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s,s:s},s:s}", "a", "b", "c", "d", "e", 0, "f", "g", "h",
			      "i", "j", "k", "l", "m", "n");
		break;
	case 4: v = json_pack("{s:I, s:s, s:s, s:s, s:I, s:f}", "a", (json_int_t)LLONG_MIN, "k", "v", "w", "x",
			      "y", "z", "n", (json_int_t)7, "r", 1733300000.123456);
		break;
	case 5: v = json_pack("{s:[o],s:O,s:[]}", "a", json_string("x"), "b", o, "c"); break;
	case 6: v = json_pack("{s:[O],s:[],s:O?,s:b}", "jobs", o, "env", "cwd", (json_t *)NULL, "dry_run", 1); break;
	case 7: v = json_pack("[O]", a); break;
	case 8: v = json_pack("{s:i,s:i,s:i}", "a", INT_MIN, "b", 0, "c", INT_MAX); break;
	case 9: v = json_pack("{s:s}", "bad", "\xff"); break;		/* not UTF-8: NULL */
	case 10: v = json_pack("{s:s}", "null", (const char *)NULL); break;	/* NULL */
	case 11: v = json_pack("{s:o}", "null", (json_t *)NULL); break;		/* NULL */
	case 12: v = json_pack("{s:I,s:f}", "t", (json_int_t)0, "f", -0.0); break;
	default: break;
	}
	return SIDE(done)(v, o, a, flags);
}
#define SCRIPT_NPACK 13

/* Objects and arrays changed in place. */
SCRIPT_FN char *SIDE(ops)(int k, size_t flags)
{
	json_t *o = json_object(), *a = json_array(), *b, *c, *v = NULL;
	char key[16];
	const char *kk;
	json_t *vv;
	size_t i;
	int n;

	json_object_set_new(o, "zeta", json_integer(1));
	json_object_set_new(o, "alpha", json_string("a\x01\x7f/\"\\\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80"));
	json_object_set_new(o, "mid", json_real(0.1));
	json_object_set_new(o, "zeta", json_integer(2));	/* replaced in place */
	for (n = 0; n < 40; n++) {				/* past the hash index's start */
		snprintf(key, sizeof key, "k%d", n * 7 % 40);
		json_object_set_new(o, key, json_integer(n));
	}
	json_array_append_new(a, json_object());
	json_array_append_new(a, json_array());
	json_array_append_new(a, json_stringn("nul\0inside", 10));
	json_array_append_new(a, json_real(1e20));
	json_array_append(a, o);
	switch (k) {
	case 0: v = json_incref(o); break;
	case 1: v = json_incref(a); break;
	case 2:
		json_object_del(o, "alpha");
		json_object_del(o, "k3");
		json_object_del(o, "absent");
		json_object_set_new(o, "k3", json_false());
		v = json_incref(o);
		break;
	case 3:
		b = json_deep_copy(a);
		json_array_remove(b, 0);
		json_array_remove(b, 1);
		json_array_remove(b, 99);
		v = json_pack("[O,b,b]", b, json_equal(a, b), json_equal(o, json_array_get(b, 2)));
		json_decref(b);
		break;
	case 4:
		b = json_pack("{s:i,s:s,s:n}", "k5", 500, "new", "n", "zeta", 0);
		json_object_update(o, b);
		json_decref(b);
		v = json_incref(o);
		break;
	case 5:	/* equality does not care about key order */
		b = json_pack("{s:i,s:i,s:f,s:n}", "x", 1, "y", 2, "r", 1.0, "z");
		c = json_pack("{s:n,s:f,s:i,s:i}", "z", "r", 1.0, "y", 2, "x", 1);
		v = json_pack("[b,b,b,b,b]", json_equal(b, c), json_equal(b, json_object_get(c, "x")),
			      json_equal(json_object_get(b, "r"), json_object_get(c, "x")),
			      json_equal(json_object_get(b, "z"), json_null()), json_equal(NULL, NULL));
		json_decref(b);
		json_decref(c);
		break;
	case 6:	/* foreach in insertion order, and keys read back */
		v = json_array();
		json_object_foreach(o, kk, vv)
			json_array_append_new(v, json_pack("[s,O]", kk, vv));
		json_array_foreach(a, i, vv)
			json_array_append_new(v, json_integer((json_int_t)(i * 10 + json_typeof(vv))));
		break;
	case 7:	/* what the setters refuse */
		v = json_array();
		json_array_append_new(v, json_integer(json_object_set_new(o, "\xff", json_true())));
		json_array_append_new(v, json_integer(json_object_set_new(o, "x", NULL)));
		json_array_append_new(v, json_integer(json_object_set_new(a, "x", json_true())));
		json_array_append_new(v, json_integer(json_array_append_new(o, json_true())));
		json_array_append_new(v, json_integer(json_array_append_new(a, NULL)));
		json_array_append_new(v, json_boolean(json_string("\xc0\x80") == NULL));
		json_array_append_new(v, json_boolean(json_string("\xed\xa0\x80") == NULL));
		json_array_append_new(v, json_boolean(json_real(1.0 / 0.0) == NULL));
		json_array_append_new(v, json_integer((json_int_t)json_object_size(o)));
		json_array_append_new(v, json_integer((json_int_t)json_array_size(o)));
		json_array_append_new(v, json_boolean(json_object_get(a, "x") == NULL));
		json_array_append_new(v, json_boolean(json_array_get(a, 99) == NULL));
		json_array_append_new(v, json_boolean(json_string_value(a) == NULL));
		json_array_append_new(v, json_real(json_number_value(json_array_get(a, 3)) +
						   json_number_value(json_object_get(o, "zeta"))));
		json_array_append_new(v, json_integer((json_int_t)json_string_length(json_array_get(a, 2))));
		break;
	case 8:
		json_array_clear(a);
		json_array_append_new(a, json_string(""));
		v = json_incref(a);
		break;
	default:
		break;
	}
	return SIDE(done)(v, o, a, flags);
}
#define SCRIPT_NOPS 9

/* Reals and integers as the writer spells them. */
SCRIPT_FN char *SIDE(numbers)(size_t flags)
{
	static const double r[] = { 0.0, -0.0, 1.0, -1.0, 0.1, 1e20, 1e21, 1e-5, 1e-7, 123456789012345678.0,
				    5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 3.0, 0.5, 1733300000.123456,
				    1733300000.0, 9007199254740993.0, 1e100, -2.5e-10, 100.0, 1e16, 1e17 };
	json_t *v = json_array();
	char *out;

	for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
		json_array_append_new(v, json_real(r[i]));
	json_array_append_new(v, json_integer(LLONG_MIN));
	json_array_append_new(v, json_integer(LLONG_MAX));
	json_array_append_new(v, json_integer(0));
	out = SCRIPT_DUMP(v, flags);
	json_decref(v);
	return out;
}

/* Text read with flags, then written with dflags; NULL when it is
 * refused (the error's text into errtext). */
SCRIPT_FN char *SIDE(roundtrip)(const char *in, size_t n, size_t lflags, size_t dflags, char *errtext, size_t size)
{
	json_error_t e;
	json_t *v = json_loadb(in, n, lflags, &e);
	char *out;

	if (!v) {
		snprintf(errtext, size, "%s (line %d, column %d, position %d)", e.text, e.line, e.column, e.position);
		return NULL;
	}
	out = json_dumps(v, dflags | JSON_ENCODE_ANY);
	json_decref(v);
	return out;
}
