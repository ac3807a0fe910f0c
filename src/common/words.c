/* words.c — one command-line string into argv words, shell quoting
 * without a shell (see words.h). */
#include "words.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUOTE_MAX 60

static int refuse(struct gf_err *e, const char *s, const char *why)
{
	size_t len = strlen(s);

	return gf_err_set(e, "invalid command '%.*s%s': %s", (int)(len > QUOTE_MAX ? QUOTE_MAX : len), s,
			  len > QUOTE_MAX ? "..." : "", why);
}

void gf_words_free(char **words)
{
	for (size_t i = 0; words && words[i]; i++)
		free(words[i]);
	free(words);
}

int gf_split_words(const char *s, char ***words, size_t *nout, struct gf_err *e)
{
	size_t len = strlen(s), n = 0;
	char **v = calloc(len / 2 + 2, sizeof *v), *cur = malloc(len + 1);
	size_t k = 0;
	bool in_word = false;
	char why[96];

	if (!v || !cur) {
		free(v);
		free(cur);
		return gf_err_set(e, "out of memory");
	}
	for (const char *p = s;; p++) {
		char c = *p;

		if (c == '\0' || c == ' ' || c == '\t') {
			if (in_word) {
				cur[k] = '\0';
				if (!(v[n++] = strdup(cur)))
					goto oom;
				k = 0;
				in_word = false;
			}
			if (c == '\0')
				break;
			continue;
		}
		in_word = true;
		if (c == '\'') {
			const char *q = strchr(p + 1, '\'');

			if (!q)
				goto unclosed;
			memcpy(cur + k, p + 1, (size_t)(q - p - 1));
			k += (size_t)(q - p - 1);
			p = q;
		} else if (c == '"') {
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1] && strchr("\"\\$`", p[1]))
					p++;
				cur[k++] = *p;
			}
			if (!*p)
				goto unclosed;
		} else if (c == '\\') {
			if (!p[1]) {
				snprintf(why, sizeof why, "it ends in a lone backslash");
				goto bad;
			}
			cur[k++] = *++p;
		} else if (strchr("|&;<>()`\n", c)) {
			snprintf(why, sizeof why,
				 "'%s' needs a shell, and gflow runs no shell: quote it, or run sh -c yourself",
				 c == '\n' ? "\\n" : (char[]){ c, 0 });
			goto bad;
		} else {
			cur[k++] = c;
		}
	}
	free(cur);
	if (!n) {
		free(v);
		return refuse(e, s, "it holds no word");
	}
	*words = v;
	*nout = n;
	return 0;
unclosed:
	snprintf(why, sizeof why, "a quote is not closed");
bad:
	gf_words_free(v);
	free(cur);
	return refuse(e, s, why);
oom:
	gf_words_free(v);
	free(cur);
	return gf_err_set(e, "out of memory");
}
