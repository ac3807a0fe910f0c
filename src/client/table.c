/* table.c — aligned text tables, CSV and JSON rendering of rows. */
#include "table.h"

#include <stdlib.h>
#include <string.h>

#include "jsonapi.h"

#include "bytes.h"
#include "format.h"
#include "jsonw.h"
#include "util.h"

struct row {
	char **cells; /* NULL for a section row */
	char *title;
};

struct table {
	size_t ncols;
	char **headers;
	struct row *rows;
	size_t nrows, cap;
};

struct table *table_new(size_t ncols, const char *const *headers)
{
	struct table *t = xcalloc(1, sizeof *t);
	size_t i;

	t->ncols = ncols;
	t->headers = xcalloc(ncols, sizeof *t->headers);
	for (i = 0; i < ncols; i++)
		t->headers[i] = xstrdup(headers[i] ? headers[i] : "");
	return t;
}

void table_free(struct table *t)
{
	size_t i, j;

	if (!t)
		return;
	for (i = 0; i < t->nrows; i++) {
		if (t->rows[i].cells)
			for (j = 0; j < t->ncols; j++)
				free(t->rows[i].cells[j]);
		free(t->rows[i].cells);
		free(t->rows[i].title);
	}
	for (j = 0; j < t->ncols; j++)
		free(t->headers[j]);
	free(t->headers);
	free(t->rows);
	free(t);
}

static struct row *new_row(struct table *t)
{
	if (t->nrows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->rows = xrealloc(t->rows, t->cap * sizeof *t->rows);
	}
	memset(&t->rows[t->nrows], 0, sizeof t->rows[0]);
	return &t->rows[t->nrows++];
}

void table_add_row(struct table *t, const char *const *cells)
{
	struct row *r = new_row(t);
	size_t j;

	r->cells = xcalloc(t->ncols, sizeof *r->cells);
	for (j = 0; j < t->ncols; j++)
		r->cells[j] = xstrdup(cells[j] ? cells[j] : "");
}

void table_add_section(struct table *t, const char *title)
{
	new_row(t)->title = xstrdup(title);
}

size_t table_nrows(const struct table *t)
{
	size_t i, n = 0;

	for (i = 0; i < t->nrows; i++)
		n += t->rows[i].cells != NULL;
	return n;
}

const char *table_cell(const struct table *t, size_t r, size_t c)
{
	size_t i;

	if (c >= t->ncols)
		return NULL;
	for (i = 0; i < t->nrows; i++) {
		if (!t->rows[i].cells)
			continue;
		if (r-- == 0)
			return t->rows[i].cells[c];
	}
	return NULL;
}

size_t utf8_width(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

/* Escaped copies of a row's cells (text and CSV are read on terminals;
 * JSON stays exact). */
static char **escaped_row(char *const *cells, size_t ncols)
{
	char **v = xcalloc(ncols, sizeof *v);
	size_t j;

	for (j = 0; j < ncols; j++)
		v[j] = fmt_escaped(cells[j]);
	return v;
}

static void free_row(char **v, size_t ncols)
{
	size_t j;

	for (j = 0; j < ncols; j++)
		free(v[j]);
	free(v);
}

/* One text line: cells padded to widths, two spaces apart, no trailing
 * blanks. */
static void text_line(struct sbuf *b, char *const *cells, size_t ncols,
    const size_t *width)
{
	size_t j, start = b->len;

	static const char spaces[] = "                                ";

	for (j = 0; j < ncols; j++) {
		size_t w = utf8_width(cells[j]);

		sbuf_adds(b, cells[j]);
		if (j + 1 < ncols)
			while (w < width[j] + 2) {
				size_t k = width[j] + 2 - w;

				k = k < sizeof spaces - 1 ? k : sizeof spaces - 1;
				sbuf_add(b, spaces, k);
				w += k;
			}
	}
	while (b->len > start && b->p[b->len - 1] == ' ')
		b->p[--b->len] = '\0';
	sbuf_addc(b, '\n');
}

static char *render_text(const struct table *t)
{
	size_t *width = xcalloc(t->ncols, sizeof *width);
	char ***esc = xcalloc(t->nrows + 1, sizeof *esc);
	struct sbuf b = { 0 };
	size_t i, j;

	for (j = 0; j < t->ncols; j++)
		width[j] = utf8_width(t->headers[j]);
	for (i = 0; i < t->nrows; i++) {
		if (!t->rows[i].cells)
			continue;
		esc[i] = escaped_row(t->rows[i].cells, t->ncols);
		for (j = 0; j < t->ncols; j++) {
			size_t w = utf8_width(esc[i][j]);

			if (w > width[j])
				width[j] = w;
		}
	}
	text_line(&b, t->headers, t->ncols, width);
	for (i = 0; i < t->nrows; i++) {
		if (esc[i]) {
			text_line(&b, esc[i], t->ncols, width);
			free_row(esc[i], t->ncols);
		} else {
			fmt_text(&b, t->rows[i].title);
			sbuf_addc(&b, '\n');
		}
	}
	free(esc);
	free(width);
	return sbuf_take(&b);
}

static void csv_cell(struct sbuf *b, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		sbuf_adds(b, s);
		return;
	}
	sbuf_addc(b, '"');
	for (; *s; s++) {
		if (*s == '"')
			sbuf_addc(b, '"');
		sbuf_addc(b, *s);
	}
	sbuf_addc(b, '"');
}

static void csv_line(struct sbuf *b, char *const *cells, size_t ncols)
{
	size_t j;

	for (j = 0; j < ncols; j++) {
		if (j)
			sbuf_addc(b, ',');
		csv_cell(b, cells[j]);
	}
	sbuf_addc(b, '\n');
}

static char *render_csv(const struct table *t)
{
	struct sbuf b = { 0 };
	size_t i;

	csv_line(&b, t->headers, t->ncols);
	for (i = 0; i < t->nrows; i++)
		if (t->rows[i].cells) {
			char **esc = escaped_row(t->rows[i].cells, t->ncols);

			csv_line(&b, esc, t->ncols);
			free_row(esc, t->ncols);
		}
	return sbuf_take(&b);
}

static char *render_json(const struct table *t)
{
	json_t *arr = json_array();
	char *s, *out;
	size_t i, j;

	for (i = 0; i < t->nrows; i++) {
		json_t *o;

		if (!t->rows[i].cells)
			continue;
		o = json_object();
		for (j = 0; j < t->ncols; j++)
			json_object_set_new(o, t->headers[j],
			    json_string(t->rows[i].cells[j]));
		json_array_append_new(arr, o);
	}
	s = json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(arr);
	out = xmalloc(strlen(s ? s : "[]") + 2);
	strcpy(out, s ? s : "[]");
	strcat(out, "\n");
	free(s);
	return out;
}

char *table_render(const struct table *t, enum table_fmt fmt)
{
	switch (fmt) {
	case TABLE_CSV:
		return render_csv(t);
	case TABLE_JSON:
		return render_json(t);
	case TABLE_TEXT:
		break;
	}
	return render_text(t);
}

int table_parse_format(const char *s, enum table_fmt *out, struct gf_err *e)
{
	if (strcmp(s, "table") == 0)
		*out = TABLE_TEXT;
	else if (strcmp(s, "csv") == 0)
		*out = TABLE_CSV;
	else if (strcmp(s, "json") == 0)
		*out = TABLE_JSON;
	else
		return gf_err_set(e, "invalid output format '%s': expected "
		    "table, json or csv", s);
	return 0;
}

/* ---- rows written as they come (table_out) ------------------------------ */

struct table_out {
	enum table_fmt fmt;
	size_t ncols, nrows;
	char **headers;
	FILE *out;
	struct sbuf line;	/* one row's text (CSV, JSON) */
	/* text: every row's escaped cells, each NUL-ended, kept until the
	 * widths are known */
	struct sbuf cells;
	size_t *width;
	/* table_out_flow: past `hold` rows the kept ones are written with the
	 * widths so far, and every later row at once (flowing) */
	size_t hold;
	int flowing;
	/* JSON: the columns that become keys (a repeated header keeps its
	 * first place and its last value, as a JSON object does) */
	size_t *key_col, nkeys;
};

struct table_out *table_out_new(enum table_fmt fmt, size_t ncols,
    const char *const *headers, FILE *out)
{
	struct table_out *t = xcalloc(1, sizeof *t);
	size_t i, k;

	t->fmt = fmt;
	t->ncols = ncols;
	t->out = out;
	t->headers = xcalloc(ncols, sizeof *t->headers);
	t->width = xcalloc(ncols, sizeof *t->width);
	t->key_col = xcalloc(ncols, sizeof *t->key_col);
	for (i = 0; i < ncols; i++) {
		t->headers[i] = xstrdup(headers[i] ? headers[i] : "");
		t->width[i] = utf8_width(t->headers[i]);
		for (k = 0; k < t->nkeys; k++)
			if (!strcmp(t->headers[t->key_col[k]], t->headers[i]))
				break;
		if (k == t->nkeys)
			t->key_col[t->nkeys++] = i;
	}
	for (k = 0; k < t->nkeys; k++) /* the last column of that name */
		for (i = 0; i < ncols; i++)
			if (!strcmp(t->headers[i], t->headers[t->key_col[k]]))
				t->key_col[k] = i;
	if (fmt == TABLE_CSV) {
		csv_line(&t->line, t->headers, ncols);
		fwrite(t->line.p, 1, t->line.len, out);
		t->line.len = 0;
	}
	return t;
}

/* The escaped form of s appended to b, NUL-ended; its display width. */
static size_t add_escaped(struct sbuf *b, const char *s)
{
	size_t start = b->len, n = 0;

	while (s[n] >= 0x20 && s[n] < 0x7f)	/* plain ASCII: as it is */
		n++;
	if (!s[n]) {
		sbuf_add(b, s, n + 1);
		return n;
	}
	n += strlen(s + n);
	if (gf_needs_escape(s, n))
		fmt_text(b, s);
	else
		sbuf_add(b, s, n);
	sbuf_addc(b, '\0');
	return utf8_width(b->p + start);
}

static void json_row(struct table_out *t, const char *const *cells)
{
	struct jsonw w = { 0 };
	size_t k, shown = 0;

	sbuf_adds(&t->line, t->nrows ? ",\n  {" : "[\n  {");
	for (k = 0; k < t->nkeys; k++) {
		const char *v = cells[t->key_col[k]] ? cells[t->key_col[k]] : "";

		if (!gf_utf8_valid(v, strlen(v)))
			continue; /* JSON holds no such string */
		w.len = 0;
		sbuf_adds(&t->line, shown++ ? ",\n    " : "\n    ");
		jw_cstr(&w, t->headers[t->key_col[k]]);
		jw_lit(&w, ": ");
		jw_cstr(&w, v);
		sbuf_add(&t->line, w.p, w.len);
	}
	sbuf_adds(&t->line, shown ? "\n  }" : "}");
	jw_free(&w);
}

void table_out_flow(struct table_out *t, size_t hold)
{
	t->hold = hold;
}

/* The header and the kept rows, with the widths they make. */
static void text_kept(struct table_out *t)
{
	char **row = xcalloc(t->ncols, sizeof *row);
	const char *p = t->cells.p;
	size_t i, j;

	text_line(&t->line, t->headers, t->ncols, t->width);
	for (i = 0; i < t->nrows; i++) {
		for (j = 0; j < t->ncols; j++) {
			row[j] = (char *)p;
			p += strlen(p) + 1;
		}
		text_line(&t->line, row, t->ncols, t->width);
		if (t->line.len >= 65536) {
			fwrite(t->line.p, 1, t->line.len, t->out);
			t->line.len = 0;
		}
	}
	free(row);
	t->cells.len = 0;
}

/* A row of a flowing table: written now; a cell wider than its column
 * widens the column from this row on. */
static void text_flow_row(struct table_out *t, const char *const *cells)
{
	char *row[QUEUE_COLS_MAX];
	size_t at[QUEUE_COLS_MAX], j;

	t->cells.len = 0;
	for (j = 0; j < t->ncols && j < QUEUE_COLS_MAX; j++) {
		size_t w;

		at[j] = t->cells.len;
		w = add_escaped(&t->cells, cells[j] ? cells[j] : "");
		if (w > t->width[j])
			t->width[j] = w;
	}
	for (j = 0; j < t->ncols && j < QUEUE_COLS_MAX; j++)
		row[j] = t->cells.p + at[j];
	text_line(&t->line, row, j, t->width);
}

void table_out_row(struct table_out *t, const char *const *cells)
{
	size_t j;

	switch (t->fmt) {
	case TABLE_TEXT:
		if (t->flowing) {
			text_flow_row(t, cells);
			t->nrows++;
			if (t->line.len >= 65536) {
				fwrite(t->line.p, 1, t->line.len, t->out);
				t->line.len = 0;
			}
			return;
		}
		if (t->hold && t->nrows == t->hold) {	/* enough kept: the screen fills now */
			text_kept(t);
			t->flowing = 1;
			text_flow_row(t, cells);
			t->nrows++;
			fwrite(t->line.p, 1, t->line.len, t->out);
			t->line.len = 0;
			fflush(t->out);
			return;
		}
		for (j = 0; j < t->ncols; j++) {
			size_t w = add_escaped(&t->cells, cells[j] ? cells[j] :
			    "");

			if (w > t->width[j])
				t->width[j] = w;
		}
		break;
	case TABLE_CSV: {
		char *esc[QUEUE_COLS_MAX];
		struct sbuf e = { 0 };
		size_t at[QUEUE_COLS_MAX];

		for (j = 0; j < t->ncols && j < QUEUE_COLS_MAX; j++) {
			at[j] = e.len;
			add_escaped(&e, cells[j] ? cells[j] : "");
		}
		for (j = 0; j < t->ncols && j < QUEUE_COLS_MAX; j++)
			esc[j] = e.p + at[j];
		csv_line(&t->line, esc, j);
		sbuf_free(&e);
		break;
	}
	case TABLE_JSON:
		json_row(t, cells);
		break;
	}
	t->nrows++;
	if (t->line.len) {
		fwrite(t->line.p, 1, t->line.len, t->out);
		t->line.len = 0;
	}
}

void table_out_end(struct table_out *t)
{
	switch (t->fmt) {
	case TABLE_TEXT:
		if (!t->flowing)
			text_kept(t);
		break;
	case TABLE_CSV:
		break;
	case TABLE_JSON:
		sbuf_adds(&t->line, t->nrows ? "\n]\n" : "[]\n");
		break;
	}
	fwrite(t->line.p, 1, t->line.len, t->out);
	table_out_free(t);
}

void table_out_free(struct table_out *t)
{
	size_t j;

	for (j = 0; j < t->ncols; j++)
		free(t->headers[j]);
	free(t->headers);
	free(t->width);
	free(t->key_col);
	sbuf_free(&t->line);
	sbuf_free(&t->cells);
	free(t);
}
