/* table.h — rows of text cells rendered as an aligned table, CSV or JSON.
 *
 * Text tables separate columns by two spaces, pad by character count
 * (UTF-8 aware, so tree lines align) and drop trailing blanks. A section
 * row is a title line shown between rows of the text form only. */
#ifndef GF_CLIENT_TABLE_H
#define GF_CLIENT_TABLE_H

#include <stddef.h>
#include <stdio.h>

#include "err.h"

enum table_fmt { TABLE_TEXT, TABLE_CSV, TABLE_JSON };

struct table;

struct table *table_new(size_t ncols, const char *const *headers);
void table_free(struct table *t);

/* Copy one row of ncols cells (NULL cells are empty). */
void table_add_row(struct table *t, const char *const *cells);
/* A title line (text form only). */
void table_add_section(struct table *t, const char *title);

size_t table_nrows(const struct table *t); /* data rows, not sections */
/* Cell of data row r (0-based) and column c; NULL when out of range. */
const char *table_cell(const struct table *t, size_t r, size_t c);

/* The whole table as text (malloc'd). Text and CSV end with a newline;
 * JSON is an array of objects keyed by the headers. */
char *table_render(const struct table *t, enum table_fmt fmt);

/* The same forms written row by row as rows come, byte for byte what
 * table_render writes: CSV and JSON rows go out at once; text keeps each
 * row's escaped cells (compact, in one buffer) until table_out_end knows
 * the widths. No section rows. At most QUEUE_COLS_MAX columns. */
#define QUEUE_COLS_MAX 32
struct table_out;
struct table_out *table_out_new(enum table_fmt fmt, size_t ncols,
    const char *const *headers, FILE *out);
void table_out_row(struct table_out *t, const char *const *cells);
/* Text: keep at most `hold` rows (0: all, the default) for the widths;
 * the row after them writes the kept ones and flushes, and from then on
 * each row goes out as it comes, a cell wider than its column widening
 * the column from that row on. A list of up to `hold` rows is written
 * exactly as without. */
void table_out_flow(struct table_out *t, size_t hold);
/* Write what is left and free t. */
void table_out_end(struct table_out *t);
/* Free t without writing more (an answer that failed). */
void table_out_free(struct table_out *t);

/* "table", "csv" or "json". */
int table_parse_format(const char *s, enum table_fmt *out, struct gf_err *e);

/* Display width of UTF-8 text: one column per code point. */
size_t utf8_width(const char *s);

#endif
