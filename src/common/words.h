/* words.h — a command line given as one string (`gjob update -c "python
 * train.py --lr 0.1"`) cut into argv words the way a shell would quote
 * them, but never run by one: '…' keeps everything, "…" keeps everything
 * but \" \\ \$ \` (their backslash goes), a backslash outside quotes keeps
 * the next character. Nothing is expanded (gflow's own $GFLOW_* job
 * variables are, later, by the runner). What only a shell could do — an
 * unquoted | & ; < > ( ) ` or a newline — is refused, naming it. */
#ifndef GF_WORDS_H
#define GF_WORDS_H

#include <stddef.h>

#include "err.h"

/* On success *words is a NULL-terminated malloc'd vector of malloc'd
 * words (free with gf_words_free) and *n their count (>= 1). */
int gf_split_words(const char *s, char ***words, size_t *n, struct gf_err *e);
void gf_words_free(char **words);

#endif
