/* bytes.h — byte strings inside JSON, and text safe to print.
 *
 * On Unix an argument, an environment entry or a path is bytes, not text.
 * JSON strings hold only UTF-8 text, so such a value crosses JSON (the API,
 * the store) as a plain string when its bytes are valid UTF-8 without NUL,
 * else as {"base64": "<RFC 4648 base64, padded>"} (docs/api.md). Decoding
 * takes either form, so rows stored before this encoding still load.
 *
 * gf_escape() is the one way user-controlled text is made safe to show on
 * a terminal: control characters and invalid bytes become C escapes. */
#ifndef GF_BYTES_H
#define GF_BYTES_H

#include <stddef.h>

#include "err.h"
#include "jsonapi.h"
#include "utf8.h"

/* The JSON form of n bytes: a string, or {"base64": ...}. Never NULL. */
json_t *gf_bytes_json(const char *s, size_t n);
/* The same for a C string. */
json_t *gf_cstr_json(const char *s);

/* Decode either form into a malloc'd buffer with a NUL after its *n bytes.
 * `what` names the value in messages ("'command' item 2"). Returns 0, or -1
 * with e set when v is neither form or its base64 is malformed. */
int gf_bytes_from_json(const json_t *v, const char *what, char **out, size_t *n,
		       struct gf_err *e);
/* The same, refusing NUL bytes (the value becomes a C string). */
char *gf_cstr_from_json(const json_t *v, const char *what, struct gf_err *e);

/* Escape for display: C0 controls and DEL as \a \b \t \n \v \f \r \e or
 * \xNN, C1 controls by their two UTF-8 bytes (\xc2\x9b), and bytes that are
 * not valid UTF-8 as \xNN; everything else is copied. With GF_ESC_SHELL,
 * backslash and single quote are escaped too, so the result is exact
 * inside bash's $'...'. Writes at most size bytes including a NUL (whole
 * characters and escapes only) and returns the length the whole result
 * needs, like snprintf. Plain escaping is idempotent. */
#define GF_ESC_SHELL 1
size_t gf_escape(char *dst, size_t size, const char *s, size_t n, int flags);
/* Does s need any escape (without GF_ESC_SHELL)? */
int gf_needs_escape(const char *s, size_t n);

#endif
