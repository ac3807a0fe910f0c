/* bytes.c — byte strings in JSON (a string or {"base64": ...}) and the
 * escaping of text for display. */
#include "bytes.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- base64 (RFC 4648, with padding) ----------------------------------- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const unsigned char *p, size_t n)
{
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;

	if (!out)
		abort();
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		*o++ = b64[v >> 18 & 63];
		*o++ = b64[v >> 12 & 63];
		*o++ = i + 1 < n ? b64[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? b64[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

static int b64_value(char c)
{
	const char *at = c ? strchr(b64, c) : NULL;

	return at ? (int)(at - b64) : -1;
}

/* Decode exactly the canonical form b64_encode writes. Returns a malloc'd
 * buffer (NUL after *n bytes) or NULL. */
static char *b64_decode(const char *s, size_t len, size_t *n)
{
	char *out;
	size_t pad = 0, o = 0;

	if (len % 4)
		return NULL;
	if (len && s[len - 1] == '=')
		pad = len >= 2 && s[len - 2] == '=' ? 2 : 1;
	out = malloc(len / 4 * 3 + 1);
	if (!out)
		abort();
	for (size_t i = 0; i < len; i += 4) {
		bool last = i + 4 == len;
		uint32_t v = 0;

		for (size_t k = 0; k < 4; k++) {
			int d = b64_value(s[i + k]);

			if (d < 0 && !(last && k >= 4 - pad)) {
				free(out);
				return NULL;
			}
			v = v << 6 | (uint32_t)(d < 0 ? 0 : d);
		}
		out[o++] = (char)(v >> 16);
		if (!last || pad < 2)
			out[o++] = (char)(v >> 8);
		if (!last || pad < 1)
			out[o++] = (char)v;
		/* bits the padding drops must be zero (one spelling per value) */
		if (last && ((pad == 1 && (v & 0xFF)) || (pad == 2 && (v & 0xFFFF)))) {
			free(out);
			return NULL;
		}
	}
	out[o] = '\0';
	*n = o;
	return out;
}

/* ---- the JSON forms ---------------------------------------------------- */

json_t *gf_bytes_json(const char *s, size_t n)
{
	json_t *v = NULL;
	char *enc;

	if (!memchr(s, '\0', n) && gf_utf8_valid(s, n))
		v = json_stringn(s, n);
	if (v)
		return v;
	enc = b64_encode((const unsigned char *)s, n);
	v = json_pack("{s:s}", "base64", enc);
	free(enc);
	if (!v)
		abort();
	return v;
}

json_t *gf_cstr_json(const char *s)
{
	return gf_bytes_json(s, strlen(s));
}

int gf_bytes_from_json(const json_t *v, const char *what, char **out, size_t *n,
		       struct gf_err *e)
{
	const json_t *b;

	if (json_is_string(v)) {
		*n = json_string_length(v);
		*out = malloc(*n + 1);
		if (!*out)
			abort();
		memcpy(*out, json_string_value(v), *n + 1);
		return 0;
	}
	b = json_object_get(v, "base64");
	if (!json_is_object(v) || json_object_size(v) != 1 || !json_is_string(b))
		return gf_err_set(e, "%s must be a string or {\"base64\": \"...\"}", what);
	*out = b64_decode(json_string_value(b), json_string_length(b), n);
	if (!*out)
		return gf_err_set(e, "%s has malformed base64 (expected RFC 4648 with padding)",
				  what);
	return 0;
}

char *gf_cstr_from_json(const json_t *v, const char *what, struct gf_err *e)
{
	char *s;
	size_t n;

	if (gf_bytes_from_json(v, what, &s, &n, e))
		return NULL;
	if (strlen(s) != n) {
		free(s);
		gf_err_set(e, "%s contains a NUL byte", what);
		return NULL;
	}
	return s;
}

/* ---- escaping ---------------------------------------------------------- */

/* The escape of one control or invalid byte into tmp (NUL-terminated). */
static void escape_byte(unsigned char c, char tmp[5])
{
	static const char named[] = "\aa\bb\tt\nn\vv\ff\rr\033e";
	static const char hex[] = "0123456789abcdef";
	const char *at = c ? memchr(named, c, sizeof named - 1) : NULL;

	tmp[0] = '\\';
	if (at && (at - named) % 2 == 0) {
		tmp[1] = at[1];
		tmp[2] = '\0';
		return;
	}
	tmp[1] = 'x';
	tmp[2] = hex[c >> 4];
	tmp[3] = hex[c & 15];
	tmp[4] = '\0';
}

size_t gf_escape(char *dst, size_t size, const char *s, size_t n, int flags)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t need = 0, at = 0, i = 0;
	bool full = size == 0;

	while (i < n) {
		char unit[16];
		size_t len, ulen;
		uint32_t cp = 0;

		len = gf_utf8_seq(p + i, n - i, &cp);
		if (len == 0 || (len == 1 && gf_is_control(cp))) {
			escape_byte(p[i], unit);
			len = 1;
		} else if (len == 2 && gf_is_control(cp)) {
			escape_byte(p[i], unit);
			escape_byte(p[i + 1], unit + strlen(unit));
		} else if (len == 1 && (flags & GF_ESC_SHELL) && (cp == '\\' || cp == '\'')) {
			unit[0] = '\\';
			unit[1] = (char)cp;
			unit[2] = '\0';
		} else {
			memcpy(unit, p + i, len);
			unit[len] = '\0';
		}
		ulen = strlen(unit);
		if (!full && at + ulen < size) {
			memcpy(dst + at, unit, ulen);
			at += ulen;
		} else {
			full = true;
		}
		need += ulen;
		i += len;
	}
	if (size)
		dst[at] = '\0';
	return need;
}

int gf_needs_escape(const char *s, size_t n)
{
	return !gf_text_printable(s, n);
}
